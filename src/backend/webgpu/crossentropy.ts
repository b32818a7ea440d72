/**
 * Cross-entropy with label smoothing on the GPU, forward and backward; nothing goes back to the host.
 *
 * Forward: one workgroup per row (softmax.ts's row kernel) writes the row's loss (0 for an ignored target),
 * max, then Σexp and Σlogits in one tree; then one workgroup sums the losses and counts the counted rows
 * (integers: exact) into `reduced` = [total (÷ count when mean; NaN for a mean over no rows, as 0/0 in the
 * js twin), count].
 * Backward: one workgroup per row; the row's scale is gradOut[row] (per row), gradOut[0], or
 * fround(fround(1/count)·gradOut[0]) with count read from `reduced` on the GPU: 1/count correctly rounded by
 * integer long division (WGSL's `/` is within 2.5 ULP, not correctly rounded), times g (× is correctly
 * rounded), as the js twin rounds them.
 * −∞ logits: exp gives 0, a row whose logits are all −∞ gives NaN (its loss and its gradient), and with
 * ε = 0 a row holding −∞ has the js twin's NaN loss (0·∞ from the smoothing term).
 * Oracle: js/crossentropy.ts.
 */
import type { Backend } from '../backend.ts';
import { f, i, u } from './context.ts';
import { buf } from './device.ts';
import { gpu, webgpuKernels } from './registry.ts';
import { rowKernel, runRows } from './softmax.ts';

/** WGSL of the row's max into `m` and dead (all −∞), as softmax.ts. */
const ROW_MAX = /* wgsl */ `
  var m = neg_inf();
  for (var j = t; j < p.cols; j += WG) {
    let v = logits[base + j];
    if (v > m) { m = v; }
  }
  m = max_(m, t);
  let dead = is_neg_inf(m);`;

const LOSS = (wg: number) =>
  rowKernel(
    wg,
    'ignore: i32, eps: f32, keep: f32',
    /* wgsl */ `
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read_write> losses: array<f32>;`,
    /* wgsl */ `
  let tg = targets[row];
  if (tg == p.ignore) {
    if (t == 0u) { losses[row] = 0.0; }
    return;
  }
  ${ROW_MAX}
  var a = vec2f(0.0);
  for (var j = t; j < p.cols; j += WG) {
    let v = logits[base + j];
    a += vec2f(exp0(v - m), v);
  }
  a = sum2_(a, t);
  if (t == 0u) {
    let lse = m + log(a.x);
    let nll = lse - logits[base + u32(tg)];
    let smoothed = lse - a.y / f32(p.cols);
    losses[row] = select(p.keep * nll + p.eps * smoothed, nan_(), dead);
  }`,
  );

const REDUCE_WG = 256;
const REDUCE = /* wgsl */ `
struct P { rows: u32, ignore: i32, mean: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> losses: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read_write> reduced: array<f32>;
const WG = ${REDUCE_WG}u;
var<workgroup> s: array<f32, ${REDUCE_WG}>;
var<workgroup> c: array<u32, ${REDUCE_WG}>;
@compute @workgroup_size(${REDUCE_WG}) fn main(@builtin(local_invocation_id) lid: vec3u) {
  let t = lid.x;
  var total = 0.0;
  var count = 0u;
  for (var r = t; r < p.rows; r += WG) {
    total += losses[r];
    count += select(1u, 0u, targets[r] == p.ignore);
  }
  s[t] = total;
  c[t] = count;
  workgroupBarrier();
  for (var w = WG / 2u; w > 0u; w = w >> 1u) {
    if (t < w) {
      s[t] = s[t] + s[t + w];
      c[t] = c[t] + c[t + w];
    }
    workgroupBarrier();
  }
  if (t == 0u) {
    var nanBits = 0x7fc00000u;
    let n = f32(c[0]);
    reduced[0] = select(s[0], select(s[0] / n, bitcast<f32>(nanBits), c[0] == 0u), p.mean == 1u);
    reduced[1] = n;
  }
}`;

export const crossEntropy: Backend['crossEntropy'] = (
  logits,
  targets,
  losses,
  reduced,
  rows,
  cols,
  ignoreIndex,
  labelSmoothing,
  mean,
) => {
  if (rows > 0 && cols === 0) throw new Error(`crossEntropy: cols must be at least 1 for ${rows} rows, got 0`);
  runRows(
    'crossEntropy',
    LOSS,
    rows,
    cols,
    [logits, targets, losses],
    [i(ignoreIndex), f(labelSmoothing), f(1 - labelSmoothing)],
  );
  const ctx = gpu();
  ctx.run(
    ctx.program('crossEntropyReduce', REDUCE),
    [buf(losses), buf(targets), buf(reduced)],
    [u(rows), i(ignoreIndex), u(mean ? 1 : 0)],
    [1],
  );
};

/**
 * WGSL of the correctly rounded float32 of 1/c for an integer 0 < c ≤ 2²⁴ (+∞ for 0): the 24 significant bits
 * of 2^(k+1)/c (2^k ≤ c < 2^(k+1)) by long division, rounded to nearest even on the remainder.
 */
export const RECIPROCAL = /* wgsl */ `
fn recip_rn(c: u32) -> f32 {
  if (c == 0u) { return pos_inf(); }
  let k = firstLeadingBit(c);
  if ((c & (c - 1u)) == 0u) { return ldexp(1.0, -i32(k)); }
  var rem = 1u << (k + 1u);
  var q = 0u;
  for (var b = 0u; b < 24u; b++) {
    q = q << 1u;
    if (rem >= c) {
      q = q | 1u;
      rem = rem - c;
    }
    rem = rem << 1u;
  }
  if (rem > c || (rem == c && (q & 1u) == 1u)) { q = q + 1u; }
  return ldexp(f32(q), -i32(k + 24u));
}`;

type Mode = 'row' | 'all' | 'mean';

function backwardCode(mode: Mode) {
  const scale = { row: 'gradOut[row]', all: 'gradOut[0]', mean: 'recip_rn(u32(reduced[1])) * gradOut[0]' }[mode];
  return (wg: number) =>
    rowKernel(
      wg,
      'ignore: i32, uniform: f32, keep: f32',
      /* wgsl */ `
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read> gradOut: array<f32>;
${mode === 'mean' ? '@group(0) @binding(4) var<storage, read> reduced: array<f32>;' : ''}
@group(0) @binding(${mode === 'mean' ? 5 : 4}) var<storage, read_write> dlogits: array<f32>;`,
      /* wgsl */ `
  let tg = targets[row];
  if (tg == p.ignore) {
    for (var j = t; j < p.cols; j += WG) { dlogits[base + j] = 0.0; }
    return;
  }
  ${ROW_MAX}
  var s = 0.0;
  for (var j = t; j < p.cols; j += WG) { s += exp0(logits[base + j] - m); }
  let sum = sum_(s, t);
  let scale = ${scale};
  for (var j = t; j < p.cols; j += WG) {
    var d = scale * (exp0(logits[base + j] - m) / sum - p.uniform);
    if (j == u32(tg)) { d = d - scale * p.keep; }
    dlogits[base + j] = select(d, nan_(), dead);
  }`,
      mode === 'mean' ? `${RECIPROCAL}` : '',
    );
}

export const crossEntropyBackward: Backend['crossEntropyBackward'] = (
  logits,
  targets,
  gradOut,
  perRow,
  reduced,
  dlogits,
  rows,
  cols,
  ignoreIndex,
  labelSmoothing,
) => {
  const mode: Mode = perRow ? 'row' : reduced !== null ? 'mean' : 'all';
  const bufs = [logits, targets, gradOut, ...(mode === 'mean' && reduced !== null ? [reduced] : []), dlogits];
  runRows(`crossEntropyBackward-${mode}`, backwardCode(mode), rows, cols, bufs, [
    i(ignoreIndex),
    f(labelSmoothing / cols),
    f(1 - labelSmoothing),
  ]);
};

webgpuKernels.register('crossentropy', { crossEntropy, crossEntropyBackward });
