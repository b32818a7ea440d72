import type { HostKernels } from '../backend.ts';
import { stridesOf } from '../../tensor/shape.ts';
import { jsKernels } from './registry.ts';

/**
 * Sum over the axes where outShape has 1 and shape does not (outShape has shape's rank).
 * Accumulates in float64 per output element for accuracy on long reductions.
 */
export const reduceSum: HostKernels['reduceSum'] = (x, shape, out, outShape) => {
  const nd = shape.length;
  const n = x.length;
  if (out.length === 1) {
    let s = 0;
    for (let i = 0; i < n; i++) s += x[i];
    out[0] = s;
    return;
  }
  // Split into (outer reduced?, ..., inner): handle the two common layouts fast.
  let lead = 0; // number of leading reduced dims
  while (lead < nd && outShape[lead] === 1 && shape[lead] !== 1) lead++;
  let restSame = true;
  for (let d = lead; d < nd; d++) if (outShape[d] !== shape[d]) restSame = false;
  if (restSame) {
    // Reduce leading dims only: out[j] = Σ_i x[i*w + j] (bias gradients).
    const w = out.length;
    const acc = new Float64Array(w);
    for (let i = 0; i < n; i += w) for (let j = 0; j < w; j++) acc[j] += x[i + j];
    for (let j = 0; j < w; j++) out[j] = acc[j];
    return;
  }
  let trail = nd;
  while (trail > 0 && outShape[trail - 1] === 1) trail--;
  let headSame = true;
  for (let d = 0; d < trail; d++) if (outShape[d] !== shape[d]) headSame = false;
  if (headSame) {
    // Reduce trailing dims only: each output sums a contiguous run.
    const w = n / out.length;
    for (let o = 0; o < out.length; o++) {
      let s = 0;
      const base = o * w;
      for (let j = 0; j < w; j++) s += x[base + j];
      out[o] = s;
    }
    return;
  }
  // General: map every input index to its output offset.
  const ost = stridesOf(outShape).map((s, d) => (outShape[d] === 1 ? 0 : s));
  const acc = new Float64Array(out.length);
  const idx = new Array<number>(nd).fill(0);
  let oo = 0;
  for (let i = 0; i < n; i++) {
    acc[oo] += x[i];
    for (let d = nd - 1; d >= 0; d--) {
      idx[d]++;
      oo += ost[d];
      if (idx[d] < shape[d]) break;
      oo -= ost[d] * shape[d];
      idx[d] = 0;
    }
  }
  for (let j = 0; j < out.length; j++) out[j] = acc[j];
};

/** out = x with dims permuted (out dim i = x dim perm[i]); contiguous copy. */
export const permute: HostKernels['permute'] = (x, shape, perm, o) => {
  const out = o as Float32Array; // any dtype but q4: indexed as one array type

  const nd = shape.length;
  const xst = stridesOf(shape);
  const oshape = perm.map((p) => shape[p]);
  const st = perm.map((p) => xst[p]); // input stride for each output dim
  const n = x.length;
  if (n === 0) return;
  const inner = oshape[nd - 1];
  const is = st[nd - 1];
  const idx = new Array<number>(nd).fill(0);
  let xo = 0;
  for (let o = 0; o < n; o += inner) {
    for (let j = 0; j < inner; j++) out[o + j] = x[xo + j * is];
    for (let d = nd - 2; d >= 0; d--) {
      idx[d]++;
      xo += st[d];
      if (idx[d] < oshape[d]) break;
      xo -= st[d] * oshape[d];
      idx[d] = 0;
    }
  }
};

/** Runs of `width` elements from src to dst with their own strides (see Backend.copyRows). */
export const copyRows: HostKernels['copyRows'] = (s, srcOffset, srcStride, d, dstOffset, dstStride, rows, width) => {
  // One dtype on both sides (the op checks it): index them as one array type.
  const src = s as Float32Array;
  const dst = d as Float32Array;
  if (srcStride === 0) {
    const run = src.subarray(srcOffset, srcOffset + width);
    for (let r = 0; r < rows; r++) dst.set(run, dstOffset + r * dstStride);
    return;
  }
  for (let r = 0; r < rows; r++) {
    const at = srcOffset + r * srcStride;
    dst.set(src.subarray(at, at + width), dstOffset + r * dstStride);
  }
};

/** Rows of src picked by `rows` into dst (see Backend.gatherRows). */
export const gatherRows: HostKernels['gatherRows'] = (s, rows, d, width) => {
  const src = s as Float32Array; // one dtype on both sides: indexed as one array type
  const dst = d as Float32Array;
  for (let i = 0; i < rows.length; i++) dst.set(src.subarray(rows[i] * width, (rows[i] + 1) * width), i * width);
};

/** out[r] = argmax of row r (the first of equal maxima, as torch.argmax on CPU). */
export const argmax: HostKernels['argmax'] = (x, out, rows, cols) => {
  for (let r = 0; r < rows; r++) {
    let best = 0;
    for (let j = 1; j < cols; j++) if (x[r * cols + j] > x[r * cols + best]) best = j;
    out[r] = best;
  }
};

/** The additive bias of a mask (see Backend.maskToBias). */
export const maskToBias: HostKernels['maskToBias'] = (mask, out, n, blockWhen) => {
  for (let i = 0; i < n; i++) out[i] = (mask[i] !== 0 ? 1 : 0) === blockWhen ? -Infinity : 0;
};

/** The bool mask of ids equal to `value` (see Backend.equalScalar). */
export const equalScalar: HostKernels['equalScalar'] = (x, value, out, n) => {
  for (let i = 0; i < n; i++) out[i] = x[i] === value ? 1 : 0;
};

jsKernels.register('layout', { reduceSum, permute, copyRows, gatherRows, argmax, maskToBias, equalScalar });
