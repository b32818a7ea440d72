/**
 * The wasm twins of the js kernels (assembly/), behind the Backend interface.
 *
 * The heavy row-wise and fused kernels (softmax, layer norm, gelu/relu, cross-entropy, attention)
 * wrap their arrays with `staged`: in place when they live in wasm memory, copied in and out
 * otherwise (the work per element repays the copy).
 *
 * The cheap ones (binary, binaryScalar, reduceSum, permute, embedding and its backward, Adam) run
 * in wasm only when every float array is already a wasm view (`isWasmView`: activations made in a
 * `memoryScope`, parameters, gradients and Adam state, all in wasm memory under this backend);
 * otherwise they call their js twin, since copying would cost as much as the work. Int32 ids are
 * ordinary arrays and are staged (they are small). Layouts without a wasm kernel go to the twin too.
 */
import type { AttentionParams, BinaryOp } from '../backend.ts';
import { adam as jsAdam } from '../js/adam.ts';
import { binary as jsBinary, binaryScalar as jsBinaryScalar, dropoutMask as jsDropoutMask, isTrailingBlock } from '../js/elementwise.ts';
import { embedding as jsEmbedding, embeddingBackward as jsEmbeddingBackward } from '../js/embedding.ts';
import { copyRows as jsCopyRows, permute as jsPermute, reduceSum as jsReduceSum } from '../js/layout.ts';
import { requireKernels, wasmModule } from './loader.ts';
import { isWasmView } from './memory.ts';
import { staged } from './stage.ts';
import { partsFor, runParallel, type ParallelKernel } from './threads.ts';

const K = requireKernels;

export function softmax(x: Float32Array, out: Float32Array, rows: number, cols: number): void {
  if (rows * cols === 0) return;
  staged([{ x, mode: 'in' }, { x: out, mode: 'out' }], 0, ([px, po]) => K().softmax(px!, po!, rows, cols));
}

export function softmaxBackward(y: Float32Array, dy: Float32Array, dx: Float32Array, rows: number, cols: number): void {
  if (rows * cols === 0) return;
  staged([{ x: y, mode: 'in' }, { x: dy, mode: 'in' }, { x: dx, mode: 'out' }], 0, ([a, b, c]) => K().softmaxBackward(a!, b!, c!, rows, cols));
}

export function logSoftmax(x: Float32Array, out: Float32Array, rows: number, cols: number): void {
  if (rows * cols === 0) return;
  staged([{ x, mode: 'in' }, { x: out, mode: 'out' }], 0, ([px, po]) => K().logSoftmax(px!, po!, rows, cols));
}

export function logSoftmaxBackward(y: Float32Array, dy: Float32Array, dx: Float32Array, rows: number, cols: number): void {
  if (rows * cols === 0) return;
  staged([{ x: y, mode: 'in' }, { x: dy, mode: 'in' }, { x: dx, mode: 'out' }], 0, ([a, b, c]) => K().logSoftmaxBackward(a!, b!, c!, rows, cols));
}

export function layerNorm(
  x: Float32Array, weight: Float32Array | null, bias: Float32Array | null, out: Float32Array,
  mean: Float32Array, rstd: Float32Array, rows: number, cols: number, eps: number,
): void {
  if (rows * cols === 0) return;
  staged(
    [{ x, mode: 'in' }, { x: weight, mode: 'in' }, { x: bias, mode: 'in' }, { x: out, mode: 'out' }, { x: mean, mode: 'out' }, { x: rstd, mode: 'out' }],
    0,
    ([a, w, b, o, m, r]) => K().layerNorm(a!, w!, b!, o!, m!, r!, rows, cols, eps),
  );
}

export function layerNormBackward(
  x: Float32Array, weight: Float32Array | null, mean: Float32Array, rstd: Float32Array, dy: Float32Array,
  dx: Float32Array, dweight: Float32Array | null, dbias: Float32Array | null, rows: number, cols: number,
): void {
  if (rows * cols === 0) return;
  staged(
    [{ x, mode: 'in' }, { x: weight, mode: 'in' }, { x: mean, mode: 'in' }, { x: rstd, mode: 'in' }, { x: dy, mode: 'in' }, { x: dx, mode: 'out' }, { x: dweight, mode: 'inout' }, { x: dbias, mode: 'inout' }],
    0,
    ([a, w, m, r, d, o, dw, db]) => K().layerNormBackward(a!, w!, m!, r!, d!, o!, dw!, db!, rows, cols),
  );
}

export function relu(x: Float32Array, out: Float32Array): void {
  if (x.length === 0) return;
  staged([{ x, mode: 'in' }, { x: out, mode: 'out' }], 0, ([a, o]) => K().relu(a!, o!, x.length));
}

export function reluBackward(x: Float32Array, dy: Float32Array, dx: Float32Array): void {
  if (x.length === 0) return;
  staged([{ x, mode: 'in' }, { x: dy, mode: 'in' }, { x: dx, mode: 'out' }], 0, ([a, d, o]) => K().reluBackward(a!, d!, o!, x.length));
}

export function gelu(x: Float32Array, out: Float32Array): void {
  if (x.length === 0) return;
  staged([{ x, mode: 'in' }, { x: out, mode: 'out' }], 0, ([a, o]) => K().gelu(a!, o!, x.length));
}

export function geluBackward(x: Float32Array, dy: Float32Array, dx: Float32Array): void {
  if (x.length === 0) return;
  staged([{ x, mode: 'in' }, { x: dy, mode: 'in' }, { x: dx, mode: 'out' }], 0, ([a, d, o]) => K().geluBackward(a!, d!, o!, x.length));
}

/**
 * Cross-entropy and its backward split among the threads by rows (each row is computed exactly as
 * one thread would), when the work pays: the logits of a translation batch are thousands of rows
 * of the vocabulary's width.
 */
export function crossEntropy(
  logits: Float32Array, targets: Int32Array, losses: Float32Array, rows: number, cols: number,
  ignoreIndex: number, labelSmoothing: number,
): number {
  if (rows === 0) return 0;
  let count = 0;
  for (let r = 0; r < rows; r++) if (targets[r] !== ignoreIndex) count++;
  staged(
    [{ x: logits, mode: 'in' }, { x: targets, mode: 'in' }, { x: losses, mode: 'out' }],
    0,
    ([l, t, o]) => splitUnits('crossEntropy', rows, 4 * cols, (r0, r1) => [l! + 4 * r0 * cols, t! + 4 * r0, o! + 4 * r0, r1 - r0, cols, ignoreIndex, labelSmoothing]),
  );
  return count;
}

export function crossEntropyBackward(
  logits: Float32Array, targets: Int32Array, rowScale: Float32Array, dlogits: Float32Array, rows: number,
  cols: number, ignoreIndex: number, labelSmoothing: number,
): void {
  if (rows === 0) return;
  staged(
    [{ x: logits, mode: 'in' }, { x: targets, mode: 'in' }, { x: rowScale, mode: 'in' }, { x: dlogits, mode: 'out' }],
    0,
    ([l, t, s, o]) => splitUnits('crossEntropyBackward', rows, 4 * cols, (r0, r1) => [l! + 4 * r0 * cols, t! + 4 * r0, s! + 4 * r0, o! + 4 * r0 * cols, r1 - r0, cols, ignoreIndex, labelSmoothing]),
  );
}

function scratchBytes(p: AttentionParams): number {
  return Math.ceil((K().attentionScratchFloats(p.l, p.d, p.dv) * 4) / 16) * 16;
}

/** Threads for an attention call: one per part of the (batch, head) pairs, when the work pays. */
function attentionParts(p: AttentionParams, backward: boolean): number {
  const flops = 2 * p.b * p.h * p.l * p.s * (p.d + p.dv) * (backward ? 2 : 1);
  return Math.min(p.b * p.h, partsFor(wasmModule(), K().scratchBytes() / 4, flops));
}

/**
 * Run an attention range kernel over (batch, head) pairs split into `parts` (the caller takes
 * the first); `head` is the kernel's arguments before scratch, each part gets its own scratch.
 */
function splitHeads(kernel: ParallelKernel, own: (...a: number[]) => void, head: number[], scratch: number, perPart: number, bh: number, parts: number): void {
  const chunk = Math.ceil(bh / parts);
  if (parts === 1) {
    own(...head, scratch, 0, bh);
    return;
  }
  const args = Array.from({ length: parts - 1 }, (_, w) => {
    const b0 = Math.min(bh, (w + 1) * chunk), b1 = Math.min(bh, (w + 2) * chunk);
    return b1 > b0 ? [...head, scratch + (w + 1) * perPart, b0, b1] : null;
  });
  runParallel(kernel, args, () => own(...head, scratch, 0, Math.min(bh, chunk)));
}

export function attention(
  q: Float32Array, k: Float32Array, v: Float32Array, out: Float32Array, lse: Float32Array,
  weights: Float32Array | null, p: AttentionParams,
): void {
  const { b: B, h: H, l: L, s: S, d: D, dv: DV, bias } = p;
  if (B * H * L === 0) return;
  if (S === 0) {
    // No keys: the js twin's empty softmax (0/0), written out directly.
    out.fill(NaN, 0, B * H * L * DV);
    lse.fill(-Infinity, 0, B * H * L);
    return;
  }
  const parts = attentionParts(p, false);
  staged(
    [
      { x: q.subarray(0, B * H * L * D), mode: 'in' }, { x: k.subarray(0, B * H * S * D), mode: 'in' }, { x: v.subarray(0, B * H * S * DV), mode: 'in' },
      { x: out.subarray(0, B * H * L * DV), mode: 'out' }, { x: lse.subarray(0, B * H * L), mode: 'out' },
      { x: weights ? weights.subarray(0, B * H * L * S) : null, mode: 'out' }, { x: bias ? bias.data : null, mode: 'in' },
    ],
    scratchBytes(p) * parts,
    ([pq, pk, pv, po, pl, pw, pb, scratch]) => {
      const head = [pq!, pk!, pv!, po!, pl!, pw!, B, H, L, S, D, DV, p.scale, p.causal ? 1 : 0, pb!, bias?.strideB ?? 0, bias?.strideH ?? 0, bias?.strideL ?? 0];
      splitHeads('attentionRange', K().attentionRange as (...a: number[]) => void, head, scratch!, scratchBytes(p), B * H, parts);
    },
  );
}

export function attentionBackward(
  q: Float32Array, k: Float32Array, v: Float32Array, out: Float32Array, dout: Float32Array, lse: Float32Array,
  dq: Float32Array, dk: Float32Array, dv: Float32Array, p: AttentionParams,
): void {
  const { b: B, h: H, l: L, s: S, d: D, dv: DV, bias } = p;
  dq.fill(0, 0, B * H * L * D);
  dk.fill(0, 0, B * H * S * D);
  dv.fill(0, 0, B * H * S * DV);
  if (B * H * L * S === 0) return;
  const parts = attentionParts(p, true);
  staged(
    [
      { x: q.subarray(0, B * H * L * D), mode: 'in' }, { x: k.subarray(0, B * H * S * D), mode: 'in' }, { x: v.subarray(0, B * H * S * DV), mode: 'in' },
      { x: out.subarray(0, B * H * L * DV), mode: 'in' }, { x: dout.subarray(0, B * H * L * DV), mode: 'in' }, { x: lse.subarray(0, B * H * L), mode: 'in' },
      { x: dq.subarray(0, B * H * L * D), mode: 'out' }, { x: dk.subarray(0, B * H * S * D), mode: 'out' }, { x: dv.subarray(0, B * H * S * DV), mode: 'out' },
      { x: bias ? bias.data : null, mode: 'in' },
    ],
    scratchBytes(p) * parts,
    ([pq, pk, pv, po, pdo, pl, pdq, pdk, pdv, pb, scratch]) => {
      const head = [pq!, pk!, pv!, po!, pdo!, pl!, pdq!, pdk!, pdv!, B, H, L, S, D, DV, p.scale, p.causal ? 1 : 0, pb!, bias?.strideB ?? 0, bias?.strideH ?? 0, bias?.strideL ?? 0];
      splitHeads('attentionBackwardRange', K().attentionBackwardRange as (...a: number[]) => void, head, scratch!, scratchBytes(p), B * H, parts);
    },
  );
}

// ---------------------------------------------------------------------------------------------
// Cheap kernels: wasm on wasm views only, else the js twin.

const OPS: Record<BinaryOp, number> = { add: 0, sub: 1, mul: 2, div: 3 };

/** How many calls of these kernels ran in wasm and how many went to the js twin (for tests). */
export const routeCounts = { wasm: 0, js: 0 };

/** Whether to run the wasm kernel: there is work (`nonEmpty`) and every array is a wasm view. */
function inWasm(nonEmpty: boolean, ...xs: Float32Array[]): boolean {
  let ok = nonEmpty;
  for (const x of xs) if (ok && !isWasmView(x)) ok = false;
  if (ok) routeCounts.wasm++;
  else routeCounts.js++;
  return ok;
}

/** All arrays were wasm views, but the layout has no wasm kernel: count the call as the twin's. */
function layoutToJs(): void {
  routeCounts.wasm--;
  routeCounts.js++;
}

/**
 * Run an elementwise kernel over `units` units (elements, or rows) split among the threads when
 * the work (`units · costPerUnit`, in flop-like units) pays for a launch; `args(u0, u1)` gives the
 * kernel's arguments for units [u0, u1). Parts compute disjoint ranges, each element exactly as
 * one thread would, so the result does not depend on the thread count.
 */
function splitUnits(kernel: ParallelKernel, units: number, costPerUnit: number, args: (u0: number, u1: number) => number[]): void {
  const f = K()[kernel] as (...a: number[]) => void;
  const parts = Math.min(units, partsFor(wasmModule(), K().scratchBytes() / 4, units * costPerUnit));
  if (parts <= 1) {
    f(...args(0, units));
    return;
  }
  const chunk = Math.ceil(units / parts);
  const list = Array.from({ length: parts - 1 }, (_, w) => {
    const u0 = Math.min(units, (w + 1) * chunk), u1 = Math.min(units, (w + 2) * chunk);
    return u1 > u0 ? args(u0, u1) : null;
  });
  runParallel(kernel, list, () => f(...args(0, Math.min(units, chunk))));
}

/**
 * out = a ∘ b. In wasm for the two layouts training hits most, as the js twin's fast paths: same
 * shapes, and one operand a contiguous block broadcast along leading dims (a bias, a scalar);
 * other broadcasts go to the twin. `out` may be the same array as `a` or `b` (a += b in place).
 */
export function binary(op: BinaryOp, a: Float32Array, aStrides: readonly number[], b: Float32Array, bStrides: readonly number[], out: Float32Array, outShape: readonly number[]): void {
  const n = out.length;
  const code = OPS[op];
  if (!inWasm(n > 0 && code !== undefined, a, b, out)) return jsBinary(op, a, aStrides, b, bStrides, out, outShape);
  const aFull = a.length === n;
  const bFull = b.length === n;
  const [pa, pb, po] = [a.byteOffset, b.byteOffset, out.byteOffset];
  if (aFull && bFull) {
    splitUnits('binaryFull', n, 8, (i0, i1) => [code, pa + 4 * i0, pb + 4 * i0, po + 4 * i0, i1 - i0]);
  } else if (aFull && isTrailingBlock(bStrides, outShape, b.length)) {
    const w = b.length;
    splitUnits('binaryRows', n / w, 8 * w, (r0, r1) => [code, 0, pa + 4 * r0 * w, pb, po + 4 * r0 * w, r1 - r0, w]);
  } else if (bFull && isTrailingBlock(aStrides, outShape, a.length)) {
    const w = a.length;
    splitUnits('binaryRows', n / w, 8 * w, (r0, r1) => [code, 1, pb + 4 * r0 * w, pa, po + 4 * r0 * w, r1 - r0, w]);
  } else {
    layoutToJs();
    jsBinary(op, a, aStrides, b, bStrides, out, outShape);
  }
}

export function binaryScalar(op: BinaryOp, a: Float32Array, scalar: number, out: Float32Array, scalarFirst: boolean): void {
  const code = OPS[op];
  if (!inWasm(a.length > 0 && code !== undefined, a, out)) return jsBinaryScalar(op, a, scalar, out, scalarFirst);
  // A float32 scalar: float32 arithmetic rounds exactly as the twin's float64 one; else float64.
  const exact = Object.is(Math.fround(scalar), scalar) || Number.isNaN(scalar) ? 1 : 0;
  K().binaryScalar(code, a.byteOffset, out.byteOffset, a.length, scalar, scalarFirst ? 1 : 0, exact);
}

/**
 * Dropout's mask in wasm when x, keep and out are wasm views (a training step's activations); the
 * random words are copied in. Split among the threads by words: each element depends only on its
 * own word, so the result does not depend on the thread count.
 */
export function dropoutMask(bits: Uint32Array, threshold: number, scale: number, x: Float32Array, keep: Float32Array, out: Float32Array): void {
  const n = keep.length;
  if (!inWasm(n > 0, x, keep, out)) return jsDropoutMask(bits, threshold, scale, x, keep, out);
  const words = (n + 1) >> 1;
  const [px, pk, po] = [x.byteOffset, keep.byteOffset, out.byteOffset];
  staged([{ x: new Int32Array(bits.buffer, bits.byteOffset, words), mode: 'in' }], 0, ([pb]) => {
    splitUnits('dropoutMask', words, 12, (w0, w1) => [pb! + 4 * w0, px + 8 * w0, pk + 8 * w0, po + 8 * w0, Math.min(n, 2 * w1) - 2 * w0, threshold, scale]);
  });
}

/**
 * Sums over leading dims (column sums: bias gradients) or trailing dims (row sums, and the sum of
 * everything) in wasm, with float64 accumulators as the twin; other layouts go to the twin.
 */
export function reduceSum(x: Float32Array, shape: readonly number[], out: Float32Array, outShape: readonly number[]): void {
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
}

/**
 * Permutes in wasm: [0, 2, 1, 3] on 4-D and [1, 0, 2] on 3-D (attention's head split and merge),
 * and any swap of the last two dims that keeps the others in place (2-D transpose, batched
 * transposes); others go to the twin.
 */
export function permute(x: Float32Array, shape: readonly number[], perm: readonly number[], out: Float32Array): void {
  const nd = shape.length;
  if (!inWasm(x.length > 0, x, out)) return jsPermute(x, shape, perm, out);
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
}

/** Strided runs copied in wasm (memory.copy per run) when both arrays are wasm views. */
export function copyRows(src: Float32Array, srcOffset: number, srcStride: number, dst: Float32Array, dstOffset: number, dstStride: number, rows: number, width: number): void {
  if (!inWasm(rows * width > 0, src, dst)) return jsCopyRows(src, srcOffset, srcStride, dst, dstOffset, dstStride, rows, width);
  K().copyRows(src.byteOffset + 4 * srcOffset, 4 * srcStride, dst.byteOffset + 4 * dstOffset, 4 * dstStride, rows, 4 * width);
}

export function embedding(weight: Float32Array, ids: Int32Array, out: Float32Array, dim: number): void {
  if (!inWasm(ids.length * dim > 0, weight, out)) return jsEmbedding(weight, ids, out, dim);
  staged([{ x: ids, mode: 'in' }], 0, ([pid]) => K().embedding(weight.byteOffset, pid!, out.byteOffset, ids.length, dim));
}

export function embeddingBackward(dy: Float32Array, ids: Int32Array, dweight: Float32Array, dim: number, paddingIdx: number): void {
  if (!inWasm(ids.length * dim > 0, dy, dweight)) return jsEmbeddingBackward(dy, ids, dweight, dim, paddingIdx);
  staged([{ x: ids, mode: 'in' }], 0, ([pid]) => K().embeddingBackward(dy.byteOffset, pid!, dweight.byteOffset, ids.length, dim, paddingIdx));
}

/**
 * Adam/AdamW in place, in float64 as the twin (bit-identical results), split among the threads
 * for large blocks. The step constants are computed here exactly as the twin computes them.
 */
export function adam(
  param: Float32Array, grad: Float32Array, m: Float32Array, v: Float32Array, lr: number, beta1: number,
  beta2: number, eps: number, weightDecay: number, decoupled: boolean, step: number,
): void {
  const n = param.length;
  if (!inWasm(n > 0, param, grad, m, v)) return jsAdam(param, grad, m, v, lr, beta1, beta2, eps, weightDecay, decoupled, step);
  const bc1 = 1 - Math.pow(beta1, step);
  const bc2 = 1 - Math.pow(beta2, step);
  const stepSize = lr / bc1;
  const bc2Sqrt = Math.sqrt(bc2);
  const shrink = decoupled ? 1 - lr * weightDecay : 1;
  const l2 = decoupled ? 0 : weightDecay;
  const [pp, pg, pm, pv] = [param.byteOffset, grad.byteOffset, m.byteOffset, v.byteOffset];
  splitUnits('adam', n, 16, (i0, i1) => [pp + 4 * i0, pg + 4 * i0, pm + 4 * i0, pv + 4 * i0, i1 - i0, beta1, 1 - beta1, beta2, 1 - beta2, stepSize, bc2Sqrt, eps, shrink, l2]);
}
