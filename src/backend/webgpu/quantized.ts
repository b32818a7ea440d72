/**
 * Quantized linear layers on the GPU: out (R, O) = x (R, I) · Wᵀ + bias with W int8 (O, I) and a scale per
 * row, or q4 (O, I) with a scale per block of 32 along I. The weights stay packed as this device keeps them
 * (int8 4 a u32 word, q4 8 a word, element e in bits 8(e%4) or 4(e%8) of word e/4 or e/8); q4 scales are
 * float32, or float16 two a word (scale k in bits 16(k%2) of word k/2), widened exactly (half-scales.ts).
 *
 * Two dispatches: x's rows quantized to int8 (packed 4 a word, rows padded with zeros to whole words) with
 * their scales, then the products summed exactly in i32 and scaled once per sum (int8) or once per block
 * and summed over the blocks in order (q4). Rows <= 8 (decoding) take a GEMV-shaped kernel (lanes along I,
 * outputs along O, a tree of integer sums, or for q4 the block sums of a chunk in workgroup memory summed in
 * order by one thread an output); more rows a 32×32 tile of outputs per workgroup (4×4 a thread, I in
 * tiles of 32 staged in workgroup memory).
 *
 * The results are the js twin's (js/quantized.ts) bit for bit: the integer arithmetic is exact, and every
 * float step is the twin's float32 operation, in its order, none left to the GPU's approximations:
 * - 127/max|x| and max|x|/127 are divided by {@link DIV_RN} (integer long division, rounded to nearest even),
 *   not WGSL's `/` (2.5 ULP); max|x| is taken on the bits (no flush of subnormals);
 * - an i32 sum beyond 2^24 becomes a float32 by one rounded addition of two exact halves ({@link I2F}), not a
 *   conversion whose rounding WGSL leaves open;
 * - a product that a sum then adds goes through {@link OPAQUE} (its bits ORed with a parameter that is 0), so
 *   no compiler fuses the two into one multiply-add (WGSL lets it);
 * - round() is WGSL's, ties to even like the twin's roundHalfEven.
 * What WGSL still allows: + and × rounded up or down rather than to nearest (every GPU of note rounds to
 * nearest even, as SwiftShader does), and subnormals flushed, which reaches a result only for rows whose
 * max|x| is below ~1e-36 or scales whose products fall below 1.2e-38. Off by those, each of the float
 * steps (nb + 3 of them, nb the blocks of a q4 row, 1 for int8) is within 1 ULP of the twin's.
 * Oracle: js/quantized.ts.
 */
import type { Backend, F16, F32 } from '../backend.ts';
import type { Storage } from '../../tensor/storage.ts';
import { Q4_BLOCK } from '../js/quantized.ts';
import { FDIV, INF, perElement, runPerElement } from './wgsl.ts';
import { type GpuBuf, grid, u } from './context.ts';
import { buf } from './device.ts';
import { scaleCode, withScales } from './half-scales.ts';
import { gpu, webgpuKernels } from './registry.ts';

/** Rows of x up to which the GEMV-shaped kernels run. */
export const GEMV_MAX_ROWS = 8;

/**
 * WGSL: a / b rounded to nearest even, for a, b the bits of positive normal float32 values; returns the bits
 * of the quotient (subnormal results too; +∞'s bits on overflow): {@link FDIV}, the elementwise division.
 */
export const DIV_RN = /* wgsl */ `${INF}${FDIV}
fn div_rn(a: u32, b: u32) -> u32 { return bitcast<u32>(fdiv(bitcast<f32>(a), bitcast<f32>(b))); }`;

/** WGSL: v as float32 rounded once (the halves are exact: hi a multiple of 256 below 2^31, lo 0..255). */
export const I2F = /* wgsl */ `
fn i2f(v: i32) -> f32 {
  let hi = (v >> 8u) << 8u;
  return f32(hi) + f32(v - hi);
}`;

/** WGSL: x itself, hidden from the compiler (p.zero is 0), so a product is rounded before it is added. */
const OPAQUE = /* wgsl */ `
fn opaque(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | p.zero); }`;

/** WGSL: the four int8 values of a word (element 4w + j in bits 8j). */
const UNPACK8 = /* wgsl */ `
fn unpack8(w: u32) -> vec4i {
  return vec4i(bitcast<i32>(w << 24u), bitcast<i32>(w << 16u), bitcast<i32>(w << 8u), bitcast<i32>(w)) >> vec4u(24u);
}`;

/** WGSL: the eight q4 values of a word (element 8w + j in bits 4j), the low four and the high four. */
const UNPACK4 = /* wgsl */ `
fn unpack4lo(w: u32) -> vec4i {
  return vec4i(bitcast<i32>(w << 28u), bitcast<i32>(w << 24u), bitcast<i32>(w << 20u), bitcast<i32>(w << 16u))
    >> vec4u(28u);
}
fn unpack4hi(w: u32) -> vec4i {
  return vec4i(bitcast<i32>(w << 12u), bitcast<i32>(w << 8u), bitcast<i32>(w << 4u), bitcast<i32>(w)) >> vec4u(28u);
}`;

/**
 * Quantize each row of x (R, I) as js/quantizeRow does: sx = max|x|/127, q = round(x · (127/max|x|)), into
 * qx (R, words) packed 4 a word (zeros past I) and sx (R). A row whose 127/max|x| overflows float32 (max|x|
 * below ~3.7e-37, subnormal or zero included) has q = 0, as the twin's (its x·∞ stores 0 in an Int8Array);
 * its scale is stored as 0, which changes no output (every sum is 0).
 */
const QUANTIZE = /* wgsl */ `
struct P { rows: u32, inF: u32, words: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> qx: array<u32>;
@group(0) @binding(3) var<storage, read_write> sx: array<u32>;
var<workgroup> part: array<u32, 64>;
var<workgroup> invBits: u32;
${DIV_RN}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32,
        @builtin(num_workgroups) nwg: vec3u) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.inF;
  // max|x| on the bits: for finite floats the order of |x|'s bits as integers is the order of the values.
  var m = 0u;
  for (var i = li; i < p.inF; i += 64u) { m = max(m, x[base + i] & 0x7fffffffu); }
  part[li] = m;
  workgroupBarrier();
  for (var w = 32u; w > 0u; w = w >> 1u) {
    if (li < w) { part[li] = max(part[li], part[li + w]); }
    workgroupBarrier();
  }
  if (li == 0u) {
    let amax = part[0];
    var inv = 0x7f800000u;
    if (amax >= 0x00800000u) { inv = div_rn(0x42fe0000u, amax); } // 127.0
    invBits = inv;
    sx[row] = select(div_rn(amax, 0x42fe0000u), 0u, inv == 0x7f800000u);
  }
  workgroupBarrier();
  let zero = invBits == 0x7f800000u;
  let inv = bitcast<f32>(select(invBits, 0u, zero));
  for (var t = li; t < p.words; t += 64u) {
    var word = 0u;
    for (var j = 0u; j < 4u; j++) {
      let e = 4u * t + j;
      if (e < p.inF && !zero) {
        let q = i32(round(bitcast<f32>(x[base + e]) * inv));
        word |= (bitcast<u32>(q) & 0xffu) << (8u * j);
      }
    }
    qx[row * p.words + t] = word;
  }
}`;

/** Parameters of the product kernels. */
const PARAMS = /* wgsl */ `
struct P { rows: u32, inF: u32, outF: u32, words: u32, groups: u32, tilesO: u32, hasBias: u32, zero: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> qx: array<QX>;
@group(0) @binding(2) var<storage, read> sx: array<f32>;
@group(0) @binding(3) var<storage, read> wq: array<WQ>;
@group(0) @binding(4) var<storage, read> ws: array<f32>;
@group(0) @binding(5) var<storage, read> bias: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;`;

/** WGSL: word t of weight row o (int8), read across two words when rows do not start on a word. */
function int8Word(aligned: boolean): string {
  if (aligned) return 'fn wword(o: u32, t: u32) -> u32 { return wq[o * p.words + t]; }';
  // Bytes past the row's end (the next row's, or past the array) meet qx's zero padding.
  return /* wgsl */ `
fn wword(o: u32, t: u32) -> u32 {
  let e = o * p.inF + 4u * t;
  let s = (e & 3u) * 8u;
  let lo = wq[e >> 2u];
  return select((lo >> s) | (wq[(e >> 2u) + 1u] << (32u - s)), lo, s == 0u);
}`;
}

/** WGSL: the output for row r, column o of an int8 sum (the twin's y = acc · (sx · ws) + bias). */
const INT8_OUT = /* wgsl */ `
fn store(r: u32, o: u32, acc: i32) {
  var y = opaque(i2f(acc) * (sx[r] * ws[o]));
  if (p.hasBias != 0u) { y = y + bias[o]; }
  out[r * p.outF + o] = y;
}`;

/** int8, rows <= 8: 8 outputs a workgroup, 32 lanes along I's words, an i32 tree over the lanes. */
function int8GemvCode(aligned: boolean): string {
  return /* wgsl */ `
alias QX = u32;
alias WQ = u32;
${PARAMS}
${I2F}
${OPAQUE}
${UNPACK8}
${int8Word(aligned)}
${INT8_OUT}
var<workgroup> part: array<i32, ${GEMV_MAX_ROWS * 256}>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32,
        @builtin(num_workgroups) nwg: vec3u) {
  let g = wid.x + wid.y * nwg.x;
  if (g >= p.groups) { return; }
  let o = g * 8u + li / 32u;
  let lane = li % 32u;
  var acc = array<i32, ${GEMV_MAX_ROWS}>();
  if (o < p.outF) {
    for (var t = lane; t < p.words; t += 32u) {
      let w = unpack8(wword(o, t));
      for (var r = 0u; r < ${GEMV_MAX_ROWS}u; r++) {
        if (r < p.rows) { acc[r] += dot(unpack8(qx[r * p.words + t]), w); }
      }
    }
  }
  for (var r = 0u; r < ${GEMV_MAX_ROWS}u; r++) { part[r * 256u + li] = acc[r]; }
  workgroupBarrier();
  for (var w = 16u; w > 0u; w = w >> 1u) {
    if (lane < w) {
      for (var r = 0u; r < ${GEMV_MAX_ROWS}u; r++) { part[r * 256u + li] += part[r * 256u + li + w]; }
    }
    workgroupBarrier();
  }
  if (lane < p.rows && o < p.outF) { store(lane, o, part[lane * 256u + li - lane]); }
}`;
}

/**
 * WGSL of the tiled kernels' frame: a 32×32 tile of outputs per workgroup of 64 threads, 4×4 a thread
 * (rows 4ty + i, outputs 4tx + j), I in tiles of 32 elements (8 words of qx) staged in workgroup memory
 * (rows padded to 9 words against bank conflicts); `tile` loads one, `step` adds it to the thread's sums,
 * `finish` writes them.
 */
function tiledFrame(decls: string, init: string, tile: string, step: string, finish: string): string {
  return /* wgsl */ `
${decls}
var<workgroup> Qs: array<u32, ${32 * 9}>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32,
        @builtin(num_workgroups) nwg: vec3u) {
  let g = wid.x + wid.y * nwg.x;
  if (g >= p.groups) { return; }
  let row0 = (g / p.tilesO) * 32u;
  let o0 = (g % p.tilesO) * 32u;
  let tx = li % 8u;
  let ty = li / 8u;
  ${init}
  for (var t0 = 0u; t0 < p.words; t0 += 8u) {
    for (var s = 0u; s < 4u; s++) {
      let e = li + 64u * s;
      let r = e / 8u;
      let t = e % 8u;
      var v = 0u;
      if (row0 + r < p.rows && t0 + t < p.words) { v = qx[(row0 + r) * p.words + t0 + t]; }
      Qs[r * 9u + t] = v;
    }
    ${tile}
    workgroupBarrier();
    ${step}
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let r = row0 + ty * 4u + i;
    for (var j = 0u; j < 4u; j++) {
      let o = o0 + tx * 4u + j;
      if (r < p.rows && o < p.outF) { ${finish} }
    }
  }
}`;
}

/** int8, rows > 8: the tiled frame with the weight's tile (32 outputs × 8 words) beside x's. */
function int8TiledCode(aligned: boolean): string {
  const decls = /* wgsl */ `
alias QX = u32;
alias WQ = u32;
${PARAMS}
${I2F}
${OPAQUE}
${UNPACK8}
${int8Word(aligned)}
${INT8_OUT}
var<workgroup> Ws: array<u32, ${32 * 9}>;`;
  const tile = /* wgsl */ `
    for (var s = 0u; s < 4u; s++) {
      let e = li + 64u * s;
      let o = e / 8u;
      let t = e % 8u;
      var v = 0u;
      if (o0 + o < p.outF && t0 + t < p.words) { v = wword(o0 + o, t0 + t); }
      Ws[o * 9u + t] = v;
    }`;
  const step = /* wgsl */ `
    for (var t = 0u; t < 8u; t++) {
      var xv: array<vec4i, 4>;
      for (var i = 0u; i < 4u; i++) { xv[i] = unpack8(Qs[(ty * 4u + i) * 9u + t]); }
      for (var j = 0u; j < 4u; j++) {
        let wv = unpack8(Ws[(tx * 4u + j) * 9u + t]);
        for (var i = 0u; i < 4u; i++) { acc[i][j] += dot(xv[i], wv); }
      }
    }`;
  return tiledFrame(decls, 'var acc = array<vec4i, 4>();', tile, step, 'store(r, o, acc[i][j]);');
}

/** WGSL: the integer sum of block b of qx's row r (as vec4s: 2 a block) against q4 weight block `w`. */
const Q4_BLOCK_SUM = /* wgsl */ `
fn blockSum(x0: vec4u, x1: vec4u, w: vec4u) -> i32 {
  return dot(unpack8(x0.x), unpack4lo(w.x)) + dot(unpack8(x0.y), unpack4hi(w.x)) +
         dot(unpack8(x0.z), unpack4lo(w.y)) + dot(unpack8(x0.w), unpack4hi(w.y)) +
         dot(unpack8(x1.x), unpack4lo(w.z)) + dot(unpack8(x1.y), unpack4hi(w.z)) +
         dot(unpack8(x1.z), unpack4lo(w.w)) + dot(unpack8(x1.w), unpack4hi(w.w));
}`;

/** WGSL: the output for row r, column o of a q4 sum of block products (y = sum · sx + bias). */
const Q4_OUT = /* wgsl */ `
fn store(r: u32, o: u32, sum: f32) {
  var y = opaque(sum * sx[r]);
  if (p.hasBias != 0u) { y = y + bias[o]; }
  out[r * p.outF + o] = y;
}`;

/**
 * q4, rows <= 8: 16 outputs a workgroup, 16 lanes along the blocks (one 16-byte block a lane, consecutive
 * lanes consecutive blocks). For each chunk of 16 blocks the lanes leave the block products in workgroup
 * memory and thread (output, row) adds them in block order to its running sum, as the twin does.
 */
const Q4_GEMV = /* wgsl */ `
alias QX = vec4u;
alias WQ = vec4u;
${PARAMS}
${OPAQUE}
${UNPACK8}
${UNPACK4}
${Q4_BLOCK_SUM}
${Q4_OUT}
// prod[(out · 8 + row) · 16 + lane]
var<workgroup> prod: array<f32, ${16 * GEMV_MAX_ROWS * 16}>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32,
        @builtin(num_workgroups) nwg: vec3u) {
  let g = wid.x + wid.y * nwg.x;
  if (g >= p.groups) { return; }
  let nb = p.inF / 32u;
  let o = g * 16u + li / 16u;
  let lane = li % 16u;
  // The summing thread: output so = g · 16 + li / 8, row sr = li % 8 (threads 0..127).
  let so = g * 16u + li / 8u;
  let sr = li % 8u;
  let sums = li < 128u && sr < p.rows && so < p.outF;
  var sum = 0.0;
  for (var b0 = 0u; b0 < nb; b0 += 16u) {
    let b = b0 + lane;
    if (o < p.outF && b < nb) {
      let w = wq[o * nb + b];
      let s = scale(o * nb + b);
      for (var r = 0u; r < ${GEMV_MAX_ROWS}u; r++) {
        if (r < p.rows) {
          let at = r * (p.words / 4u) + 2u * b;
          prod[((li / 16u) * 8u + r) * 16u + lane] = opaque(f32(blockSum(qx[at], qx[at + 1u], w)) * s);
        }
      }
    }
    workgroupBarrier();
    if (sums) {
      for (var l = 0u; l < min(16u, nb - b0); l++) { sum = sum + prod[(li % 128u) * 16u + l]; }
    }
    workgroupBarrier();
  }
  if (sums) { store(sr, so, sum); }
}`;

/** q4, rows > 8: the tiled frame with a tile of one block: 32 outputs × 4 words and their 32 scales. */
const Q4_TILED = tiledFrame(
  /* wgsl */ `
alias QX = u32;
alias WQ = u32;
${PARAMS}
${OPAQUE}
${UNPACK8}
${UNPACK4}
${Q4_OUT}
var<workgroup> Ws: array<u32, ${32 * 5}>;
var<workgroup> Ss: array<f32, 32>;`,
  'var sum = array<vec4f, 4>();',
  /* wgsl */ `
    let nb = p.inF / 32u;
    let b = t0 / 8u;
    for (var s = 0u; s < 2u; s++) {
      let e = li + 64u * s;
      let o = e / 4u;
      let t = e % 4u;
      var v = 0u;
      if (o0 + o < p.outF) { v = wq[((o0 + o) * nb + b) * 4u + t]; }
      Ws[o * 5u + t] = v;
    }
    if (li < 32u) { Ss[li] = select(0.0, scale((o0 + li) * nb + b), o0 + li < p.outF); }`,
  /* wgsl */ `
    var acc = array<vec4i, 4>();
    for (var t = 0u; t < 8u; t++) {
      var xv: array<vec4i, 4>;
      for (var i = 0u; i < 4u; i++) { xv[i] = unpack8(Qs[(ty * 4u + i) * 9u + t]); }
      for (var j = 0u; j < 4u; j++) {
        let w = Ws[(tx * 4u + j) * 5u + t / 2u];
        let wv = select(unpack4lo(w), unpack4hi(w), (t & 1u) == 1u);
        for (var i = 0u; i < 4u; i++) { acc[i][j] += dot(xv[i], wv); }
      }
    }
    for (var i = 0u; i < 4u; i++) {
      for (var j = 0u; j < 4u; j++) {
        sum[i][j] = sum[i][j] + opaque(f32(acc[i][j]) * Ss[tx * 4u + j]);
      }
    }`,
  'store(r, o, sum[i][j]);',
);

/** Throws naming the argument when storage holds fewer than `n` elements of `bytesEach` bytes. */
function need(kernel: string, what: string, s: Storage, n: number, bytesEach: number): void {
  const have = Math.floor(buf(s).bytes / bytesEach);
  if (have < Math.ceil(n)) throw new RangeError(`${kernel}: ${what} has ${have} elements, expected at least ${n}`);
}

function linear(
  kind: 'int8' | 'q4',
  x: F32,
  wq: Storage,
  wScale: F32 | F16,
  bias: F32 | null,
  out: F32,
  rows: number,
  inF: number,
  outF: number,
): void {
  const name = kind === 'int8' ? 'linearInt8' : 'linearQ4';
  const half = kind === 'q4' && buf(wScale).half === true; // int8 scales are float32
  if (kind === 'q4' && inF % Q4_BLOCK !== 0)
    throw new RangeError(`linearQ4: inF ${inF} is not a multiple of ${Q4_BLOCK}`);
  need(name, 'x', x, rows * inF, 4);
  need(name, 'wq', wq, outF * inF, kind === 'int8' ? 1 : 0.5);
  need(name, 'wScale', wScale, kind === 'int8' ? outF : (outF * inF) / Q4_BLOCK, half ? 2 : 4);
  if (bias) need(name, 'bias', bias, outF, 4);
  need(name, 'out', out, rows * outF, 4);
  if (rows === 0 || outF === 0) return;
  const ctx = gpu();
  const words = Math.ceil(inF / 4);
  const qx = ctx.alloc(4 * rows * words, false);
  const sx = ctx.alloc(4 * rows, false);
  ctx.run(ctx.program('quantizeRows', QUANTIZE), [buf(x), qx, sx], [u(rows), u(inF), u(words)], grid(rows, 1));
  const gemv = rows <= GEMV_MAX_ROWS;
  const aligned = inF % 4 === 0;
  let key: string;
  let code: string;
  let groups: number;
  let tilesO = Math.ceil(outF / 32);
  if (kind === 'int8') {
    key = `linearInt8-${gemv ? 'gemv' : 'tiled'}${aligned ? '' : '-unaligned'}`;
    code = gemv ? int8GemvCode(aligned) : int8TiledCode(aligned);
    groups = gemv ? Math.ceil(outF / 8) : tilesO * Math.ceil(rows / 32);
  } else {
    key = `linearQ4-${gemv ? 'gemv' : 'tiled'}${half ? '-f16' : ''}`;
    code = withScales(gemv ? Q4_GEMV : Q4_TILED, half);
    groups = gemv ? Math.ceil(outF / 16) : tilesO * Math.ceil(rows / 32);
  }
  if (gemv) tilesO = groups;
  const bufs: GpuBuf[] = [qx, sx, buf(wq), buf(wScale), buf(bias ?? wScale), buf(out)];
  const params = [u(rows), u(inF), u(outF), u(words), u(groups), u(tilesO), u(bias ? 1 : 0), u(0)];
  ctx.run(ctx.program(key, code), bufs, params, grid(groups, 1));
  ctx.release(qx);
  ctx.release(sx);
}

export const linearInt8: Backend['linearInt8'] = (x, wq, wScale, bias, out, rows, inF, outF) =>
  linear('int8', x, wq, wScale, bias, out, rows, inF, outF);

export const linearQ4: Backend['linearQ4'] = (x, wq, wScale, bias, out, rows, inF, outF) =>
  linear('q4', x, wq, wScale, bias, out, rows, inF, outF);

/**
 * Rows of a quantized table picked by ids, a thread per output value: q (unpacked from its word) times its
 * scale, one float32 multiplication, which WGSL rounds correctly (the twin's Math.fround of the product).
 */
function embeddingQuantized(
  kind: 'int8' | 'q4',
  wq: Storage,
  wScale: F32 | F16,
  ids: Storage,
  out: F32,
  dim: number,
): void {
  const name = kind === 'int8' ? 'embeddingInt8' : 'embeddingQ4';
  const half = kind === 'q4' && buf(wScale).half === true; // int8 scales are float32
  if (kind === 'q4' && dim % Q4_BLOCK !== 0)
    throw new RangeError(`embeddingQ4: dim ${dim} is not a multiple of ${Q4_BLOCK}`);
  const n = buf(ids).bytes / 4;
  need(name, 'out', out, n * dim, 4);
  const value =
    kind === 'int8'
      ? 'f32(bitcast<i32>(v[e / 4u] << (24u - 8u * (e % 4u))) >> 24u) * s[r]'
      : 'f32(i32(((v[e / 8u] >> (4u * (e % 8u))) & 15u) ^ 8u) - 8) * scale(r * (p.dim / 32u) + c / 32u)';
  const code = perElement(
    'dim: u32',
    /* wgsl */ `
@group(0) @binding(1) var<storage, read> v: array<u32>;
@group(0) @binding(2) var<storage, read> ${kind === 'int8' ? 's' : 'ws'}: array<${half ? 'u32' : 'f32'}>;
${kind === 'q4' ? scaleCode(half) : ''}
@group(0) @binding(3) var<storage, read> ids: array<i32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;`,
    /* wgsl */ `
  let r = u32(ids[i / p.dim]);
  let c = i % p.dim;
  let e = r * p.dim + c;
  o[i] = ${value};`,
  );
  runPerElement(half ? `${name}-f16` : name, code, n * dim, [buf(wq), buf(wScale), buf(ids), buf(out)], [u(dim)]);
}

export const embeddingInt8: Backend['embeddingInt8'] = (wq, wScale, ids, out, dim) =>
  embeddingQuantized('int8', wq, wScale, ids, out, dim);

export const embeddingQ4: Backend['embeddingQ4'] = (wq, wScale, ids, out, dim) =>
  embeddingQuantized('q4', wq, wScale, ids, out, dim);

webgpuKernels.register('quantized', { linearInt8, linearQ4, embeddingInt8, embeddingQ4 });
