/**
 * Row-wise softmax and log-softmax on the GPU, forward and backward: one workgroup per row (64 threads for
 * rows of up to 128 columns, else 256), each thread striding over the row, coalesced, then a tree reduction
 * in workgroup memory for the row's max and sums. The row kernel template and its tree reductions
 * ({@link rowKernel}) are shared with the layer-norm and cross-entropy families.
 *
 * Masked scores: exp of an −∞ difference is taken as 0 and exp of NaN as NaN explicitly (WGSL implementations
 * may assume no infinities or NaNs: SwiftShader's exp(NaN) is +∞), and a row whose max is −∞ (every score
 * masked) gives NaN everywhere, as the js twin does (its exp(−∞ − (−∞)) is NaN); the backward kernels carry a
 * masked row's NaN through.
 * Oracle: js/softmax.ts (which sums in float64; here float32 trees: see the test for the bound).
 */
import type { Backend } from '../backend.ts';
import type { Storage } from '../../tensor/storage.ts';
import { grid, type Param, u } from './context.ts';
import { buf } from './device.ts';
import { gpu, webgpuKernels } from './registry.ts';
import { INF, NEG_INF } from './wgsl.ts';

/** Threads of a row kernel's workgroup for rows of `cols` columns. */
export function rowWG(cols: number): number {
  return cols <= 128 ? 64 : 256;
}

/**
 * WGSL helpers of the row kernels: tree reductions over the workgroup (`sum_`, `sum2_` for two sums at once,
 * `max_`, whose result every thread gets; each must be reached by every thread), NaN, and an −∞ test by bits.
 */
function rowHelpers(wg: number): string {
  return /* wgsl */ `
const WG = ${wg}u;
var<workgroup> red: array<f32, ${wg}>;
var<workgroup> red2: array<vec2f, ${wg}>;
${INF}
fn is_neg_inf(v: f32) -> bool { return bitcast<u32>(v) == 0xff800000u; }
fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
/** exp(d), 0 for d = −∞ and NaN for NaN (an implementation's exp need not follow IEEE there). */
fn exp0(d: f32) -> f32 { return select(select(exp(d), 0.0, is_neg_inf(d)), nan_(), is_nan(d)); }
fn sum_(v: f32, t: u32) -> f32 {
  red[t] = v;
  workgroupBarrier();
  for (var w = WG / 2u; w > 0u; w = w >> 1u) {
    if (t < w) { red[t] = red[t] + red[t + w]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}
fn sum2_(v: vec2f, t: u32) -> vec2f {
  red2[t] = v;
  workgroupBarrier();
  for (var w = WG / 2u; w > 0u; w = w >> 1u) {
    if (t < w) { red2[t] = red2[t] + red2[t + w]; }
    workgroupBarrier();
  }
  let r = red2[0];
  workgroupBarrier();
  return r;
}
/** The row's max as the js twin finds it (v > max from −∞: NaN never wins). */
fn max_(v: f32, t: u32) -> f32 {
  red[t] = v;
  workgroupBarrier();
  for (var w = WG / 2u; w > 0u; w = w >> 1u) {
    if (t < w && red[t + w] > red[t]) { red[t] = red[t + w]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}`;
}

/**
 * WGSL of a kernel with one workgroup of `wg` threads per row: `fields` are the parameter struct's members
 * after `rows: u32, cols: u32`, `decls` the storage bindings from @binding(1), `body` the code for row `row`
 * (thread `t`, first element `base`); it may use the helpers of {@link rowHelpers} and `helpers`.
 */
export function rowKernel(wg: number, fields: string, decls: string, body: string, helpers = ''): string {
  return /* wgsl */ `
struct P { rows: u32, cols: u32, ${fields} }
@group(0) @binding(0) var<uniform> p: P;
${decls}
${rowHelpers(wg)}
${helpers}
@compute @workgroup_size(${wg}) fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u,
    @builtin(num_workgroups) nwg: vec3u) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let t = lid.x;
  let base = row * p.cols;
  ${body}
}`;
}

/** Run a {@link rowKernel} (built by `code(wg)`) over `rows` rows of `cols`. */
export function runRows(
  key: string,
  code: (wg: number) => string,
  rows: number,
  cols: number,
  bufs: Storage[],
  params: Param[] = [],
): void {
  if (rows === 0 || cols === 0) return;
  const ctx = gpu();
  const wg = rowWG(cols);
  ctx.run(ctx.program(`${key}-${wg}`, code(wg)), bufs.map(buf), [u(rows), u(cols), ...params], grid(rows, 1));
}

const TWO = /* wgsl */ `
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> o: array<f32>;`;

const THREE = /* wgsl */ `
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;`;

/** WGSL of a row's max into `m` (−∞ for a fully masked row). */
const ROW_MAX = /* wgsl */ `
  var m = ${NEG_INF};
  for (var j = t; j < p.cols; j += WG) {
    let v = x[base + j];
    if (v > m) { m = v; }
  }
  m = max_(m, t);
  let dead = is_neg_inf(m);`;

const SOFTMAX = (wg: number) =>
  rowKernel(
    wg,
    '',
    TWO,
    /* wgsl */ `${ROW_MAX}
  var s = 0.0;
  for (var j = t; j < p.cols; j += WG) {
    let e = exp0(x[base + j] - m);
    o[base + j] = e;
    s += e;
  }
  let inv = 1.0 / sum_(s, t);
  for (var j = t; j < p.cols; j += WG) { o[base + j] = select(o[base + j] * inv, nan_(), dead); }`,
  );

export const softmax: Backend['softmax'] = (x, out, rows, cols) => runRows('softmax', SOFTMAX, rows, cols, [x, out]);

const LOG_SOFTMAX = (wg: number) =>
  rowKernel(
    wg,
    '',
    TWO,
    /* wgsl */ `${ROW_MAX}
  var s = 0.0;
  for (var j = t; j < p.cols; j += WG) { s += exp0(x[base + j] - m); }
  let lse = m + log(sum_(s, t));
  for (var j = t; j < p.cols; j += WG) {
    let v = x[base + j];
    o[base + j] = select(select(v - lse, ${NEG_INF}, is_neg_inf(v)), nan_(), dead);
  }`,
  );

export const logSoftmax: Backend['logSoftmax'] = (x, out, rows, cols) =>
  runRows('logSoftmax', LOG_SOFTMAX, rows, cols, [x, out]);

const SOFTMAX_BACKWARD = (wg: number) =>
  rowKernel(
    wg,
    '',
    THREE,
    /* wgsl */ `
  var s = 0.0;
  for (var j = t; j < p.cols; j += WG) { s += dy[base + j] * y[base + j]; }
  let dot = sum_(s, t);
  for (var j = t; j < p.cols; j += WG) { dx[base + j] = y[base + j] * (dy[base + j] - dot); }`,
  );

export const softmaxBackward: Backend['softmaxBackward'] = (y, dy, dx, rows, cols) =>
  runRows('softmaxBackward', SOFTMAX_BACKWARD, rows, cols, [y, dy, dx]);

const LOG_SOFTMAX_BACKWARD = (wg: number) =>
  rowKernel(
    wg,
    '',
    THREE,
    /* wgsl */ `
  var s = 0.0;
  for (var j = t; j < p.cols; j += WG) { s += dy[base + j]; }
  let total = sum_(s, t);
  for (var j = t; j < p.cols; j += WG) { dx[base + j] = dy[base + j] - exp0(y[base + j]) * total; }`,
  );

export const logSoftmaxBackward: Backend['logSoftmaxBackward'] = (y, dy, dx, rows, cols) =>
  runRows('logSoftmaxBackward', LOG_SOFTMAX_BACKWARD, rows, cols, [y, dy, dx]);

webgpuKernels.register('softmax', { softmax, softmaxBackward, logSoftmax, logSoftmaxBackward });
