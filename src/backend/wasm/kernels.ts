/**
 * The wasm twins of the js kernels (assembly/kernels.ts), behind the Backend interface: each wraps
 * its arrays with `staged` (in place when they live in wasm memory, copied otherwise).
 */
import type { AttentionParams } from '../backend.ts';
import { requireKernels, wasmModule } from './loader.ts';
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

export function crossEntropy(
  logits: Float32Array, targets: Int32Array, losses: Float32Array, rows: number, cols: number,
  ignoreIndex: number, labelSmoothing: number,
): number {
  if (rows === 0) return 0;
  return staged(
    [{ x: logits, mode: 'in' }, { x: targets, mode: 'in' }, { x: losses, mode: 'out' }],
    0,
    ([l, t, o]) => K().crossEntropy(l!, t!, o!, rows, cols, ignoreIndex, labelSmoothing),
  );
}

export function crossEntropyBackward(
  logits: Float32Array, targets: Int32Array, rowScale: Float32Array, dlogits: Float32Array, rows: number,
  cols: number, ignoreIndex: number, labelSmoothing: number,
): void {
  if (rows === 0) return;
  staged(
    [{ x: logits, mode: 'in' }, { x: targets, mode: 'in' }, { x: rowScale, mode: 'in' }, { x: dlogits, mode: 'out' }],
    0,
    ([l, t, s, o]) => K().crossEntropyBackward(l!, t!, s!, o!, rows, cols, ignoreIndex, labelSmoothing),
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
