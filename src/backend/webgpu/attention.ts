/**
 * Fused attention on the GPU (over 500 lines: six WGSL kernels that share one header of helpers, and the
 * two host functions that pick among them). Oracle: js/attention.ts.
 *
 * Forward, one of two kernels writes out and the log-sum-exp of each row:
 * - `tile` (flash attention): a workgroup of 64 threads per (b, h, 64 query rows), a thread per row holding
 *   its q row and its output accumulator; K and V stream through workgroup memory in tiles of BC keys and
 *   each thread keeps an online softmax (running max, sum, rescaled accumulator). No L×S matrix.
 * - `row` (decoding, L <= ROW_MAX_L): a workgroup per query row; the 64 threads score 64 keys at once, a
 *   tree in workgroup memory gives the tile's max and sum, then the threads split the value dims (and the
 *   keys, G groups of them when Dv < 64) for P·V and combine the groups in a fixed order.
 * With `weights`, a third kernel writes exp(score − lse) per (row, key): the simple path.
 * Backward: D = rowsum(dO∘O) (with lse, one vec2 per row), a dQ kernel (a thread per query row, K/V tiles in
 * workgroup memory) and a dK/dV kernel (a thread per key row, Q/dO tiles in workgroup memory). No atomics:
 * every output element has one writer and every sum a fixed order.
 *
 * −∞ in the bias is read by its bits (WGSL may assume no infinities in arithmetic), so a masked key is
 * skipped, never exponentiated; rows are told apart exactly as the js twin's arithmetic does: a row with no
 * key in reach (causal, S < L) writes out 0 and lse −∞; a row whose keys in reach are all masked writes NaN
 * (out, lse, its weights in reach) and backward gives NaN for its dq row and for the dk/dv rows in its reach.
 *
 * Head sizes d and dv up to 256 (a row per thread: q/k and accumulator rows live in registers); vec4 loads
 * and dots where a size is a multiple of 4.
 */
import type { AttentionParams, Backend } from '../backend.ts';
import { type GpuBuf, grid, type Param, f, i, u } from './context.ts';
import { buf } from './device.ts';
import { gpu, webgpuKernels } from './registry.ts';
import { INF } from './wgsl.ts';

/** Threads per workgroup of every kernel here (and query/key rows per workgroup of the tile kernels). */
const WG = 64;
/** Largest query length that takes the `row` kernel (a workgroup per row) rather than the tile kernel. */
const ROW_MAX_L = 16;
/** Largest head size (q/k and v) a thread's registers hold. */
export const MAX_HEAD = 256;
/** Workgroup memory the K/V (or Q/dO) tiles may take. */
const TILE_BYTES = 16384;

interface Shape {
  d: number;
  dv: number;
  /** Vector widths: 4 where the size is a multiple of 4, else 1. */
  wk: number;
  wv: number;
  /** Keys (or query rows) per tile in workgroup memory. */
  bc: number;
}

function shapeOf(d: number, dv: number): Shape {
  for (const [name, n] of [
    ['d', d],
    ['dv', dv],
  ] as const)
    if (!Number.isInteger(n) || n < 1 || n > MAX_HEAD)
      throw new Error(`webgpu attention: head size ${name} must be an integer in 1..${MAX_HEAD}, got ${n}`);
  let bc = 16;
  while (bc > 4 && bc * (d + dv + 2) * 4 > TILE_BYTES) bc /= 2;
  return { d, dv, wk: d % 4 === 0 ? 4 : 1, wv: dv % 4 === 0 ? 4 : 1, bc };
}

/**
 * The WGSL every kernel starts with: the parameter struct (`n` = workgroups or elements, `tiles` = tiles per
 * head), sizes as constants, the row types TK (q/k) and TV (v/out), and helpers: a row's reach `lim_of`,
 * the bias (0 without one), −∞ and NaN by their bits.
 */
function header(sh: Shape, bias: boolean, biasBinding: number): string {
  const vec = (w: number) => (w === 4 ? 'vec4f' : 'f32');
  const dot = (w: number) => (w === 4 ? 'dot(a, b)' : 'a * b');
  return /* wgsl */ `
struct P {
  n: u32, tiles: u32, h: u32, hk: u32, l: u32, s: u32, shift: i32, causal: u32, scale: f32, sb: u32, sh: u32, sl: u32
}
@group(0) @binding(0) var<uniform> p: P;
${bias ? `@group(0) @binding(${biasBinding}) var<storage, read> bias: array<f32>;` : ''}
const D = ${sh.d}u;
const DV = ${sh.dv}u;
const NK = ${sh.d / sh.wk}u;
const NV = ${sh.dv / sh.wv}u;
const BC = ${sh.bc}u;
alias TK = ${vec(sh.wk)};
alias TV = ${vec(sh.wv)};
fn dotk(a: TK, b: TK) -> f32 { return ${dot(sh.wk)}; }
fn dotv(a: TV, b: TV) -> f32 { return ${dot(sh.wv)}; }
${INF}
fn nan() -> f32 { var bits = 0x7fc00000u; return bitcast<f32>(bits); }
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_masked(x: f32) -> bool { return bitcast<u32>(x) == 0xff800000u; }
/** Keys 0 .. lim_of(i) − 1 are in reach of query row i. */
fn lim_of(i: u32) -> u32 {
  if (p.causal == 0u) { return p.s; }
  return u32(clamp(i32(i) + p.shift + 1, 0, i32(p.s)));
}
/** Where row i of head bh starts in the bias. */
fn bias_row(bh: u32, i: u32) -> u32 { return (bh / p.h) * p.sb + (bh % p.h) * p.sh + i * p.sl; }
/** The KV head query head bh reads (grouped-query attention: H / HK query heads share one; bh itself at HK = H). */
fn kvh(bh: u32) -> u32 { return (bh / p.h) * p.hk + (bh % p.h) / (p.h / p.hk); }
fn bias_at(x: u32) -> f32 { return ${bias ? 'bias[x]' : '0.0'}; }
`;
}

const MAIN_ARGS = `@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u,
  @builtin(num_workgroups) nwg: vec3u`;

/** WGSL loading rows [r0, r0 + BC) of `src` (rows of `n` items, from row `base`) into tile `dst`, 0 past `rows`. */
function loadTile(dst: string, src: string, n: string, base: string, r0: string, rows: string, zero: string): string {
  return /* wgsl */ `
    for (var e = lid.x; e < BC * ${n}; e += ${WG}u) {
      if (${r0} + e / ${n} < ${rows}) { ${dst}[e] = ${src}[(${base} + ${r0}) * ${n} + e]; }
      else { ${dst}[e] = ${zero}; }
    }`;
}

/** Forward, flash: a thread per query row, K/V tiles in workgroup memory, online softmax. */
function tileKernel(sh: Shape, bias: boolean): string {
  return /* wgsl */ `${header(sh, bias, 6)}
@group(0) @binding(1) var<storage, read> q: array<TK>;
@group(0) @binding(2) var<storage, read> k: array<TK>;
@group(0) @binding(3) var<storage, read> v: array<TV>;
@group(0) @binding(4) var<storage, read_write> o: array<TV>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
var<workgroup> ks: array<TK, BC * NK>;
var<workgroup> vs: array<TV, BC * NV>;

@compute @workgroup_size(${WG})
fn main(${MAIN_ARGS}) {
  let g = wid.x + wid.y * nwg.x;
  if (g >= p.n) { return; }
  let bh = g / p.tiles;
  let r0 = (g % p.tiles) * ${WG}u;
  let i = r0 + lid.x;
  let live = i < p.l;
  let lim = select(0u, lim_of(i), live);
  let wlim = lim_of(min(r0 + ${WG - 1}u, p.l - 1u));
  let row = bh * p.l + i;
  var qr: array<TK, NK>;
  if (live) { for (var e = 0u; e < NK; e++) { qr[e] = q[row * NK + e]; } }
  let bb = bias_row(bh, i);
  var acc: array<TV, NV>;
  var m = 0.0;
  var sum = 0.0;
  var seen = false;
  var sc: array<f32, BC>;
  for (var t0 = 0u; t0 < wlim; t0 += BC) {
    workgroupBarrier();
    ${loadTile('ks', 'k', 'NK', 'kvh(bh) * p.s', 't0', 'p.s', 'TK(0.0)')}
    ${loadTile('vs', 'v', 'NV', 'kvh(bh) * p.s', 't0', 'p.s', 'TV(0.0)')}
    workgroupBarrier();
    var okm = 0u;
    var tmax = m;
    for (var c = 0u; c < BC; c++) {
      let j = t0 + c;
      if (j >= lim) { break; }
      let bv = bias_at(bb + j);
      if (is_masked(bv)) { continue; }
      var s = 0.0;
      for (var e = 0u; e < NK; e++) { s += dotk(qr[e], ks[c * NK + e]); }
      s = s * p.scale + bv;
      sc[c] = s;
      tmax = select(s, max(tmax, s), seen || okm != 0u);
      okm |= 1u << c;
    }
    if (okm != 0u) {
      let alpha = select(1.0, exp(m - tmax), seen && tmax != m);
      sum *= alpha;
      for (var e = 0u; e < NV; e++) { acc[e] *= alpha; }
      m = tmax;
      seen = true;
      for (var c = 0u; c < BC; c++) {
        if ((okm & (1u << c)) == 0u) { continue; }
        let pe = exp(sc[c] - m);
        sum += pe;
        for (var e = 0u; e < NV; e++) { acc[e] += pe * vs[c * NV + e]; }
      }
    }
  }
  if (!live) { return; }
  let inv = 1.0 / sum;
  for (var e = 0u; e < NV; e++) {
    o[row * NV + e] = select(select(acc[e] * inv, TV(nan()), !seen), TV(0.0), lim == 0u);
  }
  lse[row] = select(select(m + log(sum), nan(), !seen), neg_inf(), lim == 0u);
}`;
}

/**
 * Forward, decoding: a workgroup per query row. Keys in tiles of 64 (a thread a key), trees for the tile's
 * max and sum; P·V with thread (group gg, dim c) summing keys gg, gg + G, ... of the tile for dims c, c + 64.
 */
function rowKernel(sh: Shape, bias: boolean): string {
  const dvc = Math.min(sh.dv, WG);
  const groups = Math.max(1, Math.floor(WG / sh.dv));
  const npt = Math.ceil(sh.dv / WG);
  const tree = (body: string) => /* wgsl */ `
    for (var w = ${WG / 2}u; w > 0u; w = w >> 1u) {
      if (lid.x < w) { ${body} }
      workgroupBarrier();
    }`;
  return /* wgsl */ `${header(sh, bias, 6)}
@group(0) @binding(1) var<storage, read> q: array<TK>;
@group(0) @binding(2) var<storage, read> k: array<TK>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
const DVC = ${dvc}u;
const G = ${groups}u;
const NPT = ${npt}u;
var<workgroup> qs: array<TK, NK>;
var<workgroup> rv: array<f32, ${WG}>;
var<workgroup> rok: array<u32, ${WG}>;
var<workgroup> rs: array<f32, ${WG}>;
var<workgroup> pr: array<f32, ${WG}>;

@compute @workgroup_size(${WG})
fn main(${MAIN_ARGS}) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.n) { return; }
  let bh = row / p.l;
  let i = row % p.l;
  let lim = lim_of(i);
  for (var e = lid.x; e < NK; e += ${WG}u) { qs[e] = q[row * NK + e]; }
  workgroupBarrier();
  let bb = bias_row(bh, i);
  let c = lid.x % DVC;
  let gg = lid.x / DVC;
  var acc: array<f32, NPT>;
  var m = 0.0;
  var sum = 0.0;
  var seen = false;
  for (var t0 = 0u; t0 < lim; t0 += ${WG}u) {
    let j = t0 + lid.x;
    var ok = j < lim;
    var s = 0.0;
    if (ok) {
      let bv = bias_at(bb + j);
      ok = !is_masked(bv);
      if (ok) {
        for (var e = 0u; e < NK; e++) { s += dotk(qs[e], k[(kvh(bh) * p.s + j) * NK + e]); }
        s = s * p.scale + bv;
      }
    }
    rv[lid.x] = s;
    rok[lid.x] = select(0u, 1u, ok);
    workgroupBarrier();
    ${tree(`let a = rv[lid.x];
      let b = rv[lid.x + w];
      let oa = rok[lid.x] != 0u;
      let ob = rok[lid.x + w] != 0u;
      rv[lid.x] = select(select(b, a, oa), max(a, b), oa && ob);
      rok[lid.x] = select(0u, 1u, oa || ob);`)}
    let tok = rok[0] != 0u;
    let nm = select(m, select(rv[0], max(m, rv[0]), seen), tok);
    let alpha = select(1.0, exp(m - nm), seen && nm != m);
    let pe = select(0.0, exp(s - nm), ok);
    pr[lid.x] = pe;
    rs[lid.x] = pe;
    workgroupBarrier();
    ${tree('rs[lid.x] += rs[lid.x + w];')}
    sum = sum * alpha + rs[0];
    m = nm;
    seen = seen || tok;
    if (gg < G) {
      for (var n = 0u; n < NPT; n++) {
        let dim = c + n * ${WG}u;
        if (dim < DV) {
          var a = acc[n] * alpha;
          let vb = kvh(bh) * p.s + t0;
          for (var cc = gg; cc < ${WG}u && t0 + cc < lim; cc += G) { a += pr[cc] * v[(vb + cc) * DV + dim]; }
          acc[n] = a;
        }
      }
    }
  }
  if (G > 1u) {
    workgroupBarrier();
    rs[lid.x] = acc[0];
    workgroupBarrier();
    if (gg == 0u) {
      var a = 0.0;
      for (var g2 = 0u; g2 < G; g2++) { a += rs[g2 * DVC + c]; }
      acc[0] = a;
    }
  }
  if (gg == 0u) {
    let inv = 1.0 / sum;
    for (var n = 0u; n < NPT; n++) {
      let dim = c + n * ${WG}u;
      if (dim < DV) { o[row * DV + dim] = select(select(acc[n] * inv, nan(), !seen), 0.0, lim == 0u); }
    }
  }
  if (lid.x == 0u) { lse[row] = select(select(m + log(sum), nan(), !seen), neg_inf(), lim == 0u); }
}`;
}

/** The flat index of a thread of a per-element kernel over a grid from {@link grid}. */
const ELEMENT = /* wgsl */ `@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let x = gid.x + gid.y * nwg.x * ${WG}u;
  if (x >= p.n) { return; }`;

/** weights[row, j] = exp(score − lse[row]) in reach (NaN for a fully masked row), 0 elsewhere. */
function weightsKernel(sh: Shape, bias: boolean): string {
  return /* wgsl */ `${header(sh, bias, 5)}
@group(0) @binding(1) var<storage, read> q: array<TK>;
@group(0) @binding(2) var<storage, read> k: array<TK>;
@group(0) @binding(3) var<storage, read> lse: array<f32>;
@group(0) @binding(4) var<storage, read_write> wt: array<f32>;
${ELEMENT}
  let j = x % p.s;
  let row = x / p.s;
  let i = row % p.l;
  let bh = row / p.l;
  var w = 0.0;
  if (j < lim_of(i)) {
    let ls = lse[row];
    let bv = bias_at(bias_row(bh, i) + j);
    if (is_nan(ls)) {
      w = nan();
    } else if (!is_masked(bv)) {
      var s = 0.0;
      for (var e = 0u; e < NK; e++) { s += dotk(q[row * NK + e], k[(kvh(bh) * p.s + j) * NK + e]); }
      w = exp(s * p.scale + bv - ls);
    }
  }
  wt[x] = w;
}`;
}

/** Backward's row statistics: st[row] = (lse, Σ dO∘O). */
function deltaKernel(sh: Shape): string {
  return /* wgsl */ `${header(sh, false, 0)}
@group(0) @binding(1) var<storage, read> o: array<TV>;
@group(0) @binding(2) var<storage, read> dout: array<TV>;
@group(0) @binding(3) var<storage, read> lse: array<f32>;
@group(0) @binding(4) var<storage, read_write> st: array<vec2f>;
${ELEMENT}
  var a = 0.0;
  for (var e = 0u; e < NV; e++) { a += dotv(dout[x * NV + e], o[x * NV + e]); }
  st[x] = vec2f(lse[x], a);
}`;
}

/** dQ: a thread per query row, K/V tiles in workgroup memory; dq = scale·Σ_j P(dP − D)·k_j. */
function dqKernel(sh: Shape, bias: boolean): string {
  return /* wgsl */ `${header(sh, bias, 7)}
@group(0) @binding(1) var<storage, read> q: array<TK>;
@group(0) @binding(2) var<storage, read> k: array<TK>;
@group(0) @binding(3) var<storage, read> v: array<TV>;
@group(0) @binding(4) var<storage, read> dout: array<TV>;
@group(0) @binding(5) var<storage, read> st: array<vec2f>;
@group(0) @binding(6) var<storage, read_write> dq: array<TK>;
var<workgroup> ks: array<TK, BC * NK>;
var<workgroup> vs: array<TV, BC * NV>;

@compute @workgroup_size(${WG})
fn main(${MAIN_ARGS}) {
  let g = wid.x + wid.y * nwg.x;
  if (g >= p.n) { return; }
  let bh = g / p.tiles;
  let r0 = (g % p.tiles) * ${WG}u;
  let i = r0 + lid.x;
  let live = i < p.l;
  let lim = select(0u, lim_of(i), live);
  let wlim = lim_of(min(r0 + ${WG - 1}u, p.l - 1u));
  let row = bh * p.l + i;
  var qr: array<TK, NK>;
  var dor: array<TV, NV>;
  var dqa: array<TK, NK>;
  var sv = vec2f(0.0);
  if (live) {
    for (var e = 0u; e < NK; e++) { qr[e] = q[row * NK + e]; }
    for (var e = 0u; e < NV; e++) { dor[e] = dout[row * NV + e]; }
    sv = st[row];
  }
  let bad = is_nan(sv.x);
  let work = select(0u, lim, !bad);
  let bb = bias_row(bh, i);
  for (var t0 = 0u; t0 < wlim; t0 += BC) {
    workgroupBarrier();
    ${loadTile('ks', 'k', 'NK', 'kvh(bh) * p.s', 't0', 'p.s', 'TK(0.0)')}
    ${loadTile('vs', 'v', 'NV', 'kvh(bh) * p.s', 't0', 'p.s', 'TV(0.0)')}
    workgroupBarrier();
    for (var c = 0u; c < BC; c++) {
      let j = t0 + c;
      if (j >= work) { break; }
      let bv = bias_at(bb + j);
      if (is_masked(bv)) { continue; }
      var s = 0.0;
      for (var e = 0u; e < NK; e++) { s += dotk(qr[e], ks[c * NK + e]); }
      let pe = exp(s * p.scale + bv - sv.x);
      var dp = 0.0;
      for (var e = 0u; e < NV; e++) { dp += dotv(dor[e], vs[c * NV + e]); }
      let ds = pe * (dp - sv.y);
      for (var e = 0u; e < NK; e++) { dqa[e] += ds * ks[c * NK + e]; }
    }
  }
  if (!live) { return; }
  for (var e = 0u; e < NK; e++) { dq[row * NK + e] = select(dqa[e] * p.scale, TK(nan()), bad && lim > 0u); }
}`;
}

/**
 * dK, dV: a thread per key row of a KV head, over the query heads it serves in order; Q/dO/statistics tiles in
 * workgroup memory.
 */
function dkvKernel(sh: Shape, bias: boolean): string {
  return /* wgsl */ `${header(sh, bias, 8)}
@group(0) @binding(1) var<storage, read> q: array<TK>;
@group(0) @binding(2) var<storage, read> k: array<TK>;
@group(0) @binding(3) var<storage, read> v: array<TV>;
@group(0) @binding(4) var<storage, read> dout: array<TV>;
@group(0) @binding(5) var<storage, read> st: array<vec2f>;
@group(0) @binding(6) var<storage, read_write> dk: array<TK>;
@group(0) @binding(7) var<storage, read_write> dv: array<TV>;
var<workgroup> qs: array<TK, BC * NK>;
var<workgroup> dos: array<TV, BC * NV>;
var<workgroup> sts: array<vec2f, BC>;

@compute @workgroup_size(${WG})
fn main(${MAIN_ARGS}) {
  let g = wid.x + wid.y * nwg.x;
  if (g >= p.n) { return; }
  let kv = g / p.tiles;
  let j0 = (g % p.tiles) * ${WG}u;
  let j = j0 + lid.x;
  let live = j < p.s;
  let key = kv * p.s + j;
  let group = p.h / p.hk;
  var kr: array<TK, NK>;
  var vr: array<TV, NV>;
  var dka: array<TK, NK>;
  var dva: array<TV, NV>;
  if (live) {
    for (var e = 0u; e < NK; e++) { kr[e] = k[key * NK + e]; }
    for (var e = 0u; e < NV; e++) { vr[e] = v[key * NV + e]; }
  }
  var bad = false;
  // Causal: key j is in reach of rows i >= j - shift; the first tile holds the workgroup's first such row.
  let first = select(0u, u32(max(i32(j0) - p.shift, 0)), p.causal != 0u);
  // The query heads of this KV head, in order: their dK and dV add up here (no atomics).
  for (var r = 0u; r < group; r++) {
  let bh = (kv / p.hk) * p.h + (kv % p.hk) * group + r;
  for (var t0 = (first / BC) * BC; t0 < p.l; t0 += BC) {
    workgroupBarrier();
    ${loadTile('qs', 'q', 'NK', 'bh * p.l', 't0', 'p.l', 'TK(0.0)')}
    ${loadTile('dos', 'dout', 'NV', 'bh * p.l', 't0', 'p.l', 'TV(0.0)')}
    if (lid.x < BC) { sts[lid.x] = select(vec2f(0.0), st[bh * p.l + min(t0 + lid.x, p.l - 1u)], t0 + lid.x < p.l); }
    workgroupBarrier();
    for (var c = 0u; c < select(0u, BC, live); c++) {
      let i = t0 + c;
      if (i >= p.l) { break; }
      if (j >= lim_of(i)) { continue; }
      let sv = sts[c];
      if (is_nan(sv.x)) {
        bad = true;
        continue;
      }
      let bv = bias_at(bias_row(bh, i) + j);
      if (is_masked(bv)) { continue; }
      var s = 0.0;
      for (var e = 0u; e < NK; e++) { s += dotk(kr[e], qs[c * NK + e]); }
      let pe = exp(s * p.scale + bv - sv.x);
      var dp = 0.0;
      for (var e = 0u; e < NV; e++) {
        let d = dos[c * NV + e];
        dp += dotv(vr[e], d);
        dva[e] += pe * d;
      }
      let ds = pe * (dp - sv.y);
      for (var e = 0u; e < NK; e++) { dka[e] += ds * qs[c * NK + e]; }
    }
  }
  }
  if (!live) { return; }
  for (var e = 0u; e < NK; e++) { dk[key * NK + e] = select(dka[e] * p.scale, TK(nan()), bad); }
  for (var e = 0u; e < NV; e++) { dv[key * NV + e] = select(dva[e], TV(nan()), bad); }
}`;
}

/** The parameter struct's values: `n` workgroups (or elements), `tiles` tiles per head. */
function params(p: AttentionParams, n: number, tiles: number): Param[] {
  const bias = p.bias;
  return [
    u(n),
    u(tiles),
    u(p.h),
    u(p.hk ?? p.h),
    u(p.l),
    u(p.s),
    i(p.s - p.l),
    u(p.causal ? 1 : 0),
    f(p.scale),
    u(bias?.strideB ?? 0),
    u(bias?.strideH ?? 0),
    u(bias?.strideL ?? 0),
  ];
}

/** Compile (once) and run kernel `name` over `groups` workgroups (`n` in the params) with `bufs`, then the bias. */
function dispatch(
  name: string,
  make: (sh: Shape, bias: boolean) => string,
  sh: Shape,
  p: AttentionParams,
  bufs: GpuBuf[],
  n: number,
  groups: number,
  tiles: number,
): void {
  if (groups === 0) return;
  const ctx = gpu();
  const bias = p.bias !== null;
  const prog = ctx.program(`attention.${name}.${sh.d}.${sh.dv}.${bias ? 'bias' : 'none'}`, make(sh, bias));
  ctx.run(prog, bias ? [...bufs, buf(p.bias!.data)] : bufs, params(p, n, tiles), grid(groups, 1));
}

/**
 * out (B,H,L,Dv) = softmax(q·kᵀ·scale + bias, causal)·v, lse (B,H,L), and weights (B,H,L,S) when given;
 * q (B,H,L,D), k (B,Hk,S,D), v (B,Hk,S,Dv), Hk = p.hk (default H) KV heads each read by H/Hk query heads.
 */
export const attention: Backend['attention'] = (q, k, v, out, lse, weights, p) => {
  const sh = shapeOf(p.d, p.dv);
  const rows = p.b * p.h * p.l;
  const bufs = [buf(q), buf(k), buf(v), buf(out), buf(lse)];
  if (p.l <= ROW_MAX_L) dispatch('row', rowKernel, sh, p, bufs, rows, rows, 0);
  else {
    const tiles = Math.ceil(p.l / WG);
    dispatch('tile', tileKernel, sh, p, bufs, p.b * p.h * tiles, p.b * p.h * tiles, tiles);
  }
  if (weights) {
    const n = rows * p.s;
    dispatch('weights', weightsKernel, sh, p, [buf(q), buf(k), buf(lse), buf(weights)], n, Math.ceil(n / WG), 0);
  }
};

/** dq, dk, dv (overwritten) from dout, recomputing the probabilities from lse. */
export const attentionBackward: Backend['attentionBackward'] = (q, k, v, out, dout, lse, dq, dk, dv, p) => {
  const sh = shapeOf(p.d, p.dv);
  const bhs = p.b * p.h;
  const rows = bhs * p.l;
  const ctx = gpu();
  const st = ctx.alloc(rows * 8, false);
  dispatch(
    'delta',
    deltaKernel,
    sh,
    { ...p, bias: null },
    [buf(out), buf(dout), buf(lse), st],
    rows,
    Math.ceil(rows / WG),
    0,
  );
  const qt = Math.ceil(p.l / WG);
  const inputs = [buf(q), buf(k), buf(v), buf(dout), st];
  dispatch('dq', dqKernel, sh, p, [...inputs, buf(dq)], bhs * qt, bhs * qt, qt);
  const kt = Math.ceil(p.s / WG);
  const kvs = p.b * (p.hk ?? p.h); // a workgroup per tile of a KV head's keys
  dispatch('dkv', dkvKernel, sh, p, [...inputs, buf(dk), buf(dv)], kvs * kt, kvs * kt, kt);
  ctx.release(st);
};

webgpuKernels.register('attention', { attention, attentionBackward });
