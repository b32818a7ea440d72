/**
 * Batched GEMM on the GPU, C = op(A)·op(B) (row-major), as the contract's GemmParams describes: every layout
 * (NN, NT, TN, TT) through load functions that read each operand in its stored order (never a materialized
 * transpose), per-operand batch strides (0 broadcasts), element offsets, and C += op(A)·op(B).
 *
 * - Tiled: a 32×32 tile of C per workgroup of 8×8 threads, 4×4 a thread, K in tiles of 32 staged in
 *   workgroup memory (8 KiB), as tfjs's matmul_packed. Each operand's tile is loaded along its contiguous
 *   dimension (coalesced whatever the layout), as vec4 when its leading dimension, offset and batch stride
 *   are multiples of 4. Every C element is one float32 sum over k in order, started from C's old value when
 *   accumulating: the order of the js twin's NN and TN loops.
 * - GEMV (m <= 8, decoding: one row times a weight, typically x·Wᵀ): 256 threads split into lanes along k and
 *   outputs along n, each lane summing its share of k for all m rows, then a tree over the lanes in
 *   workgroup memory. With B stored (n, k) (transB), 32 lanes read consecutive k of one row of B (vec4 when
 *   aligned); with B stored (k, n), 64 consecutive outputs read consecutive n, 4 lanes along k.
 *
 * Deterministic: fixed assignment of work and a fixed reduction order, no atomics, no split K. Workgroups are
 * numbered (n tile, m tile, batch) in one index folded over x and y past 65,535 ({@link grid}).
 * Oracle: js/gemm.ts.
 */
import type { Backend, GemmParams } from '../backend.ts';
import { type GpuBuf, grid, u } from './context.ts';
import { buf } from './device.ts';
import { gpu, webgpuKernels } from './registry.ts';

/** Rows of C up to which the GEMV kernel runs instead of the tiled one. */
export const GEMV_MAX_M = 8;

const PARAMS = /* wgsl */ `
struct P { m: u32, n: u32, k: u32, groups: u32, tilesN: u32, tilesMN: u32, sa: u32, sb: u32, sc: u32,
           oa: u32, ob: u32, oc: u32, accumulate: u32 }
@group(0) @binding(0) var<uniform> p: P;`;

/** Whether an operand can be read as vec4 along its contiguous dimension (all its starts multiples of 4). */
function vec4Able(ld: number, offset: number, stride: number, batch: number): boolean {
  return ld % 4 === 0 && offset % 4 === 0 && (batch === 1 || stride % 4 === 0);
}

/**
 * WGSL loading tile k0 of A into As (k-major: As[kk·8 + r/4][r%4] = op(A)[row0 + r][k0 + kk]) by the 64
 * threads `li`: A stored (m, k) unless transA, stored (k, m) if transA, read along its contiguous dimension.
 */
function loadTile(
  name: 'a' | 'b',
  tile: 'As' | 'Bs',
  trans: boolean,
  vec: boolean,
  outer: 'm' | 'n',
  base: string,
  start: string,
): string {
  // op(X)[i][kk] for A (i = row of C), op(X)[kk][i] for B (i = column of C): `along` is the stored
  // contiguous dimension: k when A is not transposed or B is, else the outer dimension (m or n).
  const alongK = name === 'a' ? !trans : trans;
  const ld = alongK ? 'p.k' : `p.${outer}`;
  if (!vec) {
    const [i, kk] = alongK ? ['e / 32u', 'e % 32u'] : ['e % 32u', 'e / 32u'];
    const at = alongK ? `(${start} + i) * p.k + k0 + kk` : `(k0 + kk) * ${ld} + ${start} + i`;
    return /* wgsl */ `
    for (var s = 0u; s < 16u; s++) {
      let e = li + 64u * s;
      let i = ${i};
      let kk = ${kk};
      var v = 0.0;
      if (${start} + i < p.${outer} && k0 + kk < p.k) { v = ${name}[${base} + ${at}]; }
      ${tile}[kk * 8u + i / 4u][i % 4u] = v;
    }`;
  }
  if (alongK)
    return /* wgsl */ `
    for (var s = 0u; s < 4u; s++) {
      let e = li + 64u * s;
      let i = e / 8u;
      let kk = (e % 8u) * 4u;
      var v = vec4f(0.0);
      let at = ${base} + (${start} + i) * p.k + k0 + kk;
      if (${start} + i < p.${outer} && k0 + kk < p.k) { v = ${name}[at / 4u]; }
      for (var t = 0u; t < 4u; t++) { ${tile}[(kk + t) * 8u + i / 4u][i % 4u] = v[t]; }
    }`;
  return /* wgsl */ `
    for (var s = 0u; s < 4u; s++) {
      let e = li + 64u * s;
      let kk = e / 8u;
      let i = (e % 8u) * 4u;
      var v = vec4f(0.0);
      let at = ${base} + (k0 + kk) * ${ld} + ${start} + i;
      if (${start} + i < p.${outer} && k0 + kk < p.k) { v = ${name}[at / 4u]; }
      ${tile}[kk * 8u + i / 4u] = v;
    }`;
}

/** The tiled kernel for one layout and choice of vec4 loads. */
function tiledCode(transA: boolean, transB: boolean, vecA: boolean, vecB: boolean): string {
  const elem = (v: boolean) => (v ? 'vec4f' : 'f32');
  return /* wgsl */ `
${PARAMS}
@group(0) @binding(1) var<storage, read> a: array<${elem(vecA)}>;
@group(0) @binding(2) var<storage, read> b: array<${elem(vecB)}>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
// Tiles k-major, 4 rows (As) or columns (Bs) a vec4: As[kk * 8 + r / 4][r % 4] = op(A)[row0 + r][k0 + kk].
var<workgroup> As: array<vec4f, 256>;
var<workgroup> Bs: array<vec4f, 256>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32,
        @builtin(num_workgroups) nwg: vec3u) {
  let g = wid.x + wid.y * nwg.x;
  if (g >= p.groups) { return; }
  let batch = g / p.tilesMN;
  let row0 = ((g % p.tilesMN) / p.tilesN) * 32u;
  let col0 = (g % p.tilesN) * 32u;
  let ab = p.oa + batch * p.sa;
  let bb = p.ob + batch * p.sb;
  let cb = p.oc + batch * p.sc;
  let tx = li % 8u;
  let ty = li / 8u;
  // acc[i][j] = C[row0 + 4ty + i][col0 + 4tx + j], started from C's old value when accumulating.
  var acc = array<vec4f, 4>();
  if (p.accumulate != 0u) {
    for (var i = 0u; i < 4u; i++) {
      let r = row0 + ty * 4u + i;
      for (var j = 0u; j < 4u; j++) {
        let col = col0 + tx * 4u + j;
        if (r < p.m && col < p.n) { acc[i][j] = c[cb + r * p.n + col]; }
      }
    }
  }
  for (var k0 = 0u; k0 < p.k; k0 += 32u) {
    ${loadTile('a', 'As', transA, vecA, 'm', 'ab', 'row0')}
    ${loadTile('b', 'Bs', transB, vecB, 'n', 'bb', 'col0')}
    workgroupBarrier();
    for (var kk = 0u; kk < 32u; kk++) {
      let av = As[kk * 8u + ty];
      let bv = Bs[kk * 8u + tx];
      acc[0] += av.x * bv;
      acc[1] += av.y * bv;
      acc[2] += av.z * bv;
      acc[3] += av.w * bv;
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let r = row0 + ty * 4u + i;
    for (var j = 0u; j < 4u; j++) {
      let col = col0 + tx * 4u + j;
      if (r < p.m && col < p.n) { c[cb + r * p.n + col] = acc[i][j]; }
    }
  }
}`;
}

/**
 * The GEMV kernel (m <= 8): lanes along k, outputs along n. `vec` (A not transposed, B transposed, both
 * aligned) reads both along k as vec4.
 */
function gemvCode(transA: boolean, transB: boolean, vec: boolean): string {
  // transB: 32 consecutive lanes along k of one row of B, 8 outputs a workgroup; else 64 consecutive
  // outputs (consecutive n of B's rows), 4 lanes along k.
  const [lanes, outs, laneStride] = transB ? [32, 8, 1] : [4, 64, 64];
  const lane = transB ? 'li % 32u' : 'li / 64u';
  const out = transB ? 'li / 32u' : 'li % 64u';
  const aAt = (i: string, kk: string) => (transA ? `ab + ${kk} * p.m + ${i}` : `ab + ${i} * p.k + ${kk}`);
  const bAt = (kk: string) => (transB ? `bb + col * p.k + ${kk}` : `bb + ${kk} * p.n + col`);
  const elem = vec ? 'vec4f' : 'f32';
  // vec: kk counts vec4s (p.k / 4 of them), each product a dot of four.
  const body = vec
    ? /* wgsl */ `
    for (var kk = lane; kk < p.k / 4u; kk += ${lanes}u) {
      let bv = b[(bb + col * p.k) / 4u + kk];
      for (var i = 0u; i < ${GEMV_MAX_M}u; i++) {
        if (i < p.m) { acc[i] += dot(a[(ab + i * p.k) / 4u + kk], bv); }
      }
    }`
    : /* wgsl */ `
    for (var kk = lane; kk < p.k; kk += ${lanes}u) {
      let bv = b[${bAt('kk')}];
      for (var i = 0u; i < ${GEMV_MAX_M}u; i++) {
        if (i < p.m) { acc[i] += a[${aAt('i', 'kk')}] * bv; }
      }
    }`;
  return /* wgsl */ `
${PARAMS}
@group(0) @binding(1) var<storage, read> a: array<${elem}>;
@group(0) @binding(2) var<storage, read> b: array<${elem}>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
var<workgroup> part: array<f32, ${GEMV_MAX_M * 256}>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32,
        @builtin(num_workgroups) nwg: vec3u) {
  let g = wid.x + wid.y * nwg.x;
  if (g >= p.groups) { return; }
  let batch = g / p.tilesN;
  let col = (g % p.tilesN) * ${outs}u + ${out};
  let lane = ${lane};
  let ab = p.oa + batch * p.sa;
  let bb = p.ob + batch * p.sb;
  let cb = p.oc + batch * p.sc;
  var acc = array<f32, ${GEMV_MAX_M}>();
  if (col < p.n) {${body}
  }
  for (var i = 0u; i < ${GEMV_MAX_M}u; i++) { part[i * 256u + li] = acc[i]; }
  workgroupBarrier();
  for (var w = ${lanes / 2}u; w > 0u; w = w >> 1u) {
    if (lane < w) {
      for (var i = 0u; i < ${GEMV_MAX_M}u; i++) { part[i * 256u + li] += part[i * 256u + li + w * ${laneStride}u]; }
    }
    workgroupBarrier();
  }
  if (lane == 0u && col < p.n) {
    for (var i = 0u; i < ${GEMV_MAX_M}u; i++) {
      if (i < p.m) {
        let at = cb + i * p.n + col;
        if (p.accumulate != 0u) { c[at] = c[at] + part[i * 256u + li]; } else { c[at] = part[i * 256u + li]; }
      }
    }
  }
}`;
}

export const gemm: Backend['gemm'] = (a, b, c, p: GemmParams) => {
  const { batch, m, n, k, transA, transB, strideA, strideB, strideC, accumulate } = p;
  const oa = p.offsetA ?? 0;
  const ob = p.offsetB ?? 0;
  const oc = p.offsetC ?? 0;
  if (batch === 0 || m === 0 || n === 0 || (k === 0 && accumulate)) return;
  const ctx = gpu();
  const bufs: GpuBuf[] = [buf(a), buf(b), buf(c)];
  const t = (x: boolean) => (x ? 'T' : 'N');
  const layout = t(transA) + t(transB);
  const rest = [u(strideA), u(strideB), u(strideC), u(oa), u(ob), u(oc), u(accumulate ? 1 : 0)];
  if (m <= GEMV_MAX_M) {
    const outs = transB ? 8 : 64;
    const tilesN = Math.ceil(n / outs);
    const groups = tilesN * batch;
    const vec = !transA && transB && vec4Able(k, oa, strideA, batch) && vec4Able(k, ob, strideB, batch) && k % 4 === 0;
    const prog = ctx.program(`gemm-gemv-${layout}${vec ? '-vec4' : ''}`, gemvCode(transA, transB, vec));
    ctx.run(prog, bufs, [u(m), u(n), u(k), u(groups), u(tilesN), u(tilesN), ...rest], grid(groups, 1));
    return;
  }
  const tilesN = Math.ceil(n / 32);
  const tilesMN = tilesN * Math.ceil(m / 32);
  const groups = tilesMN * batch;
  const vecA = vec4Able(transA ? m : k, oa, strideA, batch);
  const vecB = vec4Able(transB ? k : n, ob, strideB, batch);
  const key = `gemm-tiled-${layout}${vecA ? '-vecA' : ''}${vecB ? '-vecB' : ''}`;
  const prog = ctx.program(key, tiledCode(transA, transB, vecA, vecB));
  ctx.run(prog, bufs, [u(m), u(n), u(k), u(groups), u(tilesN), u(tilesMN), ...rest], grid(groups, 1));
};

webgpuKernels.register('gemm', { gemm });
