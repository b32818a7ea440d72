/**
 * Layout kernels (assembly/layout.ts) behind the Backend interface: reduceSum, permute and
 * copyRows run in wasm only when every float array is already a wasm view (route.ts), and only
 * for the layouts below; everything else calls the js twin.
 */
import type { HostKernels } from '../backend.ts';
import {
  argmax,
  equalScalar,
  copyRows as jsCopyRows,
  gatherRows,
  maskToBias,
  permute as jsPermute,
  reduceSum as jsReduceSum,
} from '../js/layout.ts';
import { declareExports, sig, type I32, type Ptr } from './loader.ts';
import { wasmKernels } from './registry.ts';
import { inWasm, layoutToJs } from './route.ts';
import { staged } from './stage.ts';

const K = declareExports('layout.ts', {
  /** Column sums (reduce leading dims); scratch: 8·w bytes. */
  sumColumns: sig<[x: Ptr, out: Ptr, rows: I32, w: I32, scratch: Ptr]>(5),
  /** Row sums (reduce trailing dims). */
  sumRows: sig<[x: Ptr, out: Ptr, rows: I32, w: I32]>(4),
  /** (A, B, C, D) → (A, C, B, D). */
  swapMiddle: sig<[x: Ptr, out: Ptr, A: I32, B: I32, C: I32, D: I32]>(6),
  /** (batch, R, C) → (batch, C, R). */
  transposeLast: sig<[x: Ptr, out: Ptr, batch: I32, R: I32, C: I32]>(5),
  /** Strides and lengths in bytes. */
  copyRows: sig<[src: Ptr, srcStride: I32, dst: Ptr, dstStride: I32, rows: I32, bytes: I32]>(6),
});

/**
 * Sums over leading dims (column sums: bias gradients) or trailing dims (row sums, and the sum of
 * everything) in wasm, with float64 accumulators as the twin; other layouts go to the twin.
 */
export const reduceSum: HostKernels['reduceSum'] = (x, shape, out, outShape) => {
  const n = x.length;
  if (!inWasm(n > 0 && out.length > 0, x, out)) return jsReduceSum(x, shape, out, outShape);
  const nd = shape.length;
  if (out.length === 1) return K().sumRows(x.byteOffset, out.byteOffset, 1, n);
  let lead = 0;
  while (lead < nd && outShape[lead] === 1 && shape[lead] !== 1) lead++;
  let restSame = true;
  for (let d = lead; d < nd; d++) if (outShape[d] !== shape[d]) restSame = false;
  if (restSame) {
    const w = out.length;
    staged([], 8 * w, ([scratch]) => K().sumColumns(x.byteOffset, out.byteOffset, n / w, w, scratch!));
    return;
  }
  let trail = nd;
  while (trail > 0 && outShape[trail - 1] === 1) trail--;
  let headSame = true;
  for (let d = 0; d < trail; d++) if (outShape[d] !== shape[d]) headSame = false;
  if (headSame) return K().sumRows(x.byteOffset, out.byteOffset, out.length, n / out.length);
  layoutToJs();
  jsReduceSum(x, shape, out, outShape);
};

/**
 * Permutes in wasm: [0, 2, 1, 3] on 4-D and [1, 0, 2] on 3-D (attention's head split and merge),
 * and any swap of the last two dims that keeps the others in place (2-D transpose, batched
 * transposes); others go to the twin.
 */
export const permute: HostKernels['permute'] = (x, shape, perm, out) => {
  const nd = shape.length;
  // Float storage only (ids and masks are permuted by the twin).
  if (!(x instanceof Float32Array && out instanceof Float32Array && inWasm(x.length > 0, x, out)))
    return jsPermute(x, shape, perm, out);
  const is = (...p: number[]) => p.length === nd && p.every((d, i) => perm[i] === d);
  if (is(0, 2, 1, 3)) return K().swapMiddle(x.byteOffset, out.byteOffset, shape[0]!, shape[1]!, shape[2]!, shape[3]!);
  if (is(1, 0, 2)) return K().swapMiddle(x.byteOffset, out.byteOffset, 1, shape[0]!, shape[1]!, shape[2]!);
  let lastTwo = nd >= 2 && perm[nd - 1] === nd - 2 && perm[nd - 2] === nd - 1;
  for (let d = 0; d < nd - 2 && lastTwo; d++) if (perm[d] !== d) lastTwo = false;
  if (lastTwo) {
    let batch = 1;
    for (let d = 0; d < nd - 2; d++) batch *= shape[d]!;
    return K().transposeLast(x.byteOffset, out.byteOffset, batch, shape[nd - 2]!, shape[nd - 1]!);
  }
  layoutToJs();
  jsPermute(x, shape, perm, out);
};

/** Strided runs copied in wasm (memory.copy per run) when both arrays are wasm views. */
export const copyRows: HostKernels['copyRows'] = (
  src,
  srcOffset,
  srcStride,
  dst,
  dstOffset,
  dstStride,
  rows,
  width,
) => {
  if (!(src instanceof Float32Array && dst instanceof Float32Array && inWasm(rows * width > 0, src, dst)))
    return jsCopyRows(src, srcOffset, srcStride, dst, dstOffset, dstStride, rows, width);
  K().copyRows(
    src.byteOffset + 4 * srcOffset,
    4 * srcStride,
    dst.byteOffset + 4 * dstOffset,
    4 * dstStride,
    rows,
    4 * width,
  );
};

// gatherRows (memory copies of whole rows), argmax (a decoding step's last read), maskToBias and equalScalar (made
// once per batch) are the js twins: there is no arithmetic for wasm to speed up.
wasmKernels.register('layout', { reduceSum, permute, copyRows, gatherRows, argmax, maskToBias, equalScalar });
