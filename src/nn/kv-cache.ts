/**
 * The key/value caches of incremental decoding, apart from the models that fill them (as HF's
 * cache_utils): TransformerDecoderCache for the translation decoder, with `reorder(rows)` for beam
 * search (HF's `reorder_cache(beam_idx)`), and gatherRows, the one row gather that reorders every
 * cache (qkv's and ONNX Runtime's).
 */
import { isGradEnabled } from '../autograd/grad-mode.ts';
import { maskToBias } from '../ops/attention.ts';
import { cat } from '../ops/shape.ts';
import { empty, K, zerosF, zerosOf } from '../ops/util.ts';
import { shapeToString, sizeOf } from '../tensor/shape.ts';
import { Tensor } from '../tensor/tensor.ts';

/** Copy of rows `rows` (repeats allowed) along dim 0 of a contiguous tensor of any dtype. Not differentiable. */
export function gatherRows(t: Tensor, rows: Int32Array): Tensor {
  const inner = t.shape.slice(1).reduce((a, b) => a * b, 1);
  const k = K(t);
  const shape = [rows.length, ...t.shape.slice(1)];
  // Every row is written: float storage need not be zeroed first.
  const out = t.dtype === 'float32' ? empty(shape, k) : zerosOf(shape, t.dtype, k);
  k.gatherRows(t.storage, rows, out.storage, inner);
  return out;
}

/**
 * `cat([old, add], dim)` (`add` alone when old is null) in storage that no memoryScope owns: a cache is
 * grown inside a decoding step, which may run in a memoryScope (CachedStepper.step), and must outlive it.
 * Where gradients are being recorded through the cache, F.cat itself (differentiable; its storage is then
 * the caller's scope's, as any op's).
 */
export function appendAlong(old: Tensor | null, add: Tensor, dim: number): Tensor {
  if (isGradEnabled() && (add.requiresGrad || old?.requiresGrad)) return old ? cat([old, add], dim) : add;
  const k = K(add);
  const shape = add.shape.slice();
  const before = old ? old.shape[dim] : 0;
  shape[dim] += before;
  const outer = sizeOf(shape.slice(0, dim));
  const inner = sizeOf(shape.slice(dim + 1));
  const storage = k.device.alloc(add.dtype, sizeOf(shape), { zero: false });
  const w = shape[dim] * inner;
  if (old) k.copyRows(old.storage, 0, before * inner, storage, 0, w, outer, before * inner);
  k.copyRows(add.storage, 0, add.shape[dim] * inner, storage, before * inner, w, outer, add.shape[dim] * inner);
  return Tensor.fromStorage(k.device, storage, shape, add.dtype);
}

/**
 * One decoder layer's state during incremental decoding, batch-first with heads split. Rows are
 * sequences being decoded; t is the number of target positions fed so far.
 */
export interface DecoderLayerCache {
  /** Self-attention keys of every position so far: (N, h, t, dK); null before the first step. */
  selfK: Tensor | null;
  /** Self-attention values of every position so far: (N, h, t, dV), dV = dK; null before the first step. */
  selfV: Tensor | null;
  /** Cross-attention keys of the memory: (N, h, S, dK), computed once per source. */
  memoryK: Tensor;
  /** Cross-attention values of the memory: (N, h, S, dV), computed once per source. */
  memoryV: Tensor;
}

/**
 * The key/value cache of a TransformerDecoder for incremental decoding (one per batch of
 * sources): per layer the self-attention keys/values of the target prefix and the cross-attention
 * keys/values of the memory, plus both padding masks as additive biases. Made by
 * `TransformerDecoder.initCache`, advanced by `TransformerDecoder.forwardStep`.
 */
export class TransformerDecoderCache {
  /** One cache per decoder layer, in layer order. */
  readonly layers: DecoderLayerCache[];
  /** Target positions fed so far (t): the next position's index. */
  length = 0;
  /** (N, S) float bias (0 / −∞) of the memory padding, or null when nothing is padding. */
  memoryKeyPaddingMask: Tensor | null;
  /** (N, t) float bias of the target keys that were padding ids, or null while none was. */
  tgtKeyPaddingMask: Tensor | null = null;
  /**
   * For each row, the memory row its cross-attention keys/values came from. Rows with the same
   * source share them, so reordering beams within a sentence copies only the self-attention part.
   */
  rowSource: Int32Array;

  constructor(layers: DecoderLayerCache[], memoryKeyPaddingMask: Tensor | null, batchSize: number) {
    this.layers = layers;
    this.memoryKeyPaddingMask = memoryKeyPaddingMask;
    this.rowSource = Int32Array.from({ length: batchSize }, (_, i) => i);
  }

  /** Rows (sequences) being decoded. */
  get batchSize(): number {
    return this.rowSource.length;
  }

  /**
   * Keep the rows `rows` (indices into the current batch, in this order, repeats allowed): reorders
   * beams, duplicates a source into k beams, or drops finished rows. In place; returns this.
   */
  reorder(rows: ArrayLike<number>): this {
    const N = this.batchSize;
    const idx = Int32Array.from(rows);
    for (const r of idx) {
      if (!Number.isInteger(r) || r < 0 || r >= N)
        throw new Error(`TransformerDecoderCache.reorder: row ${r} is out of range for batch size ${N}`);
    }
    const source = idx.map((r) => this.rowSource[r]);
    const sameSource = source.length === N && source.every((s, i) => s === this.rowSource[i]);
    for (const l of this.layers) {
      if (l.selfK) l.selfK = gatherRows(l.selfK, idx);
      if (l.selfV) l.selfV = gatherRows(l.selfV, idx);
      if (!sameSource) {
        l.memoryK = gatherRows(l.memoryK, idx);
        l.memoryV = gatherRows(l.memoryV, idx);
      }
    }
    if (this.tgtKeyPaddingMask) this.tgtKeyPaddingMask = gatherRows(this.tgtKeyPaddingMask, idx);
    if (this.memoryKeyPaddingMask && !sameSource)
      this.memoryKeyPaddingMask = gatherRows(this.memoryKeyPaddingMask, idx);
    this.rowSource = source;
    return this;
  }

  /** Append the padding flags of L new target positions ((N, L), TRUE = padding) to the key mask. */
  appendTargetPadding(mask: Tensor | null, L: number): void {
    const N = this.batchSize;
    const t = this.length;
    if (mask && (mask.ndim !== 2 || mask.shape[0] !== N || mask.shape[1] !== L)) {
      throw new Error(
        `TransformerDecoder.forwardStep: tgtKeyPaddingMask must have shape ` +
          `[${N}, ${L}] (the new positions), got ${shapeToString(mask.shape)}`,
      );
    }
    if (!mask && !this.tgtKeyPaddingMask) return;
    // On the device, never read back: the new positions' bias (zeros when no mask came) after the old one's
    // (zeros before the first mask). A zero bias adds exactly nothing, so a mask of no padding changes no value.
    const add = mask
      ? maskToBias(mask, 'block', 'TransformerDecoder.forwardStep', 'tgtKeyPaddingMask')
      : zerosF([N, L]);
    this.tgtKeyPaddingMask = appendAlong(this.tgtKeyPaddingMask ?? zerosF([N, t]), add, 1); // (N, t + L)
  }
}
