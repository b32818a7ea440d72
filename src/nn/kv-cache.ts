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
import type { Device, Storage } from '../tensor/storage.ts';
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
 * Storage a cache owns (TransformerDecoderCache.ownStorage): blocks it allocates itself and frees as soon
 * as the tensor over one is replaced (a step grows the self-attention keys, a reorder gathers rows), and
 * all at `release()` (or when the cache is garbage-collected, as a fallback). Where the device has scoped
 * storage (the wasm backend: wasm memory) the blocks come from there, so kernels read the cache in place,
 * with nothing staged in per call; elsewhere `device.alloc` and `device.free`.
 */
class CacheStorage {
  /** The blocks allocated and not yet freed. */
  readonly live = new Set<Storage>();

  constructor(readonly device: Device) {}

  /** A float32 block of n elements, contents undefined. */
  alloc(n: number): Storage {
    const scoped = this.device.scoped;
    const s = scoped
      ? (scoped.alloc(n, false) as unknown as Storage)
      : this.device.alloc('float32', n, { zero: false });
    this.live.add(s);
    return s;
  }

  /** Free t's storage if this cache owns it (a tensor the caller made stays theirs). */
  free(t: Tensor | null): void {
    if (t && this.live.delete(t.storage)) this.release(t.storage);
  }

  freeAll(): void {
    for (const s of this.live) this.release(s);
    this.live.clear();
  }

  private release(s: Storage): void {
    const scoped = this.device.scoped;
    if (!scoped) return this.device.free(s);
    // As memoryScope's blocks in the tests: a use after free shows (host blocks; a GPU's are not filled).
    if (POISON && (s as unknown) instanceof Float32Array) (s as unknown as Float32Array).fill(Number.NaN);
    scoped.release(s);
  }
}

const POISON =
  (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.QKV_POISON_SCOPES === '1';

/** A cache dropped without release(): its blocks are freed once it is collected. */
const collected = new FinalizationRegistry<CacheStorage>((store) => store.freeAll());

/** The owned storage of each layer cache of a cache that owns its storage (a decoder's, or a GPT's `{ k, v }`). */
const stores = new WeakMap<object, CacheStorage>();

/** A key/value pair of one layer that grows along the positions (dim 2): a GPT block's cache. */
export interface KeyValueCache {
  /** Keys of the positions fed so far, (B, h, t, dK); null before the first. */
  k: Tensor | null;
  /** Values of the positions fed so far, (B, h, t, dV); null before the first. */
  v: Tensor | null;
}

/**
 * Make `layers` keep their tensors in storage `owner` owns (as TransformerDecoderCache.ownStorage: wasm memory
 * under wasm, a replaced tensor freed at once, all of it at {@link releaseOwnedLayers}, or when the owner is
 * collected). Tensors already there are copied in.
 */
export function ownLayers(owner: object, layers: readonly KeyValueCache[]): void {
  if (layers.length > 0 && stores.has(layers[0]!)) return;
  const store = new CacheStorage(K().device);
  collected.register(owner, store, owner);
  for (const l of layers) {
    stores.set(l, store);
    if (l.k) l.k = adopt(l.k, store);
    if (l.v) l.v = adopt(l.v, store);
  }
}

/** Free what {@link ownLayers} made `owner`'s; its layers then hold freed tensors and must not be used. */
export function releaseOwnedLayers(owner: object, layers: readonly KeyValueCache[]): void {
  const store = layers.length > 0 ? stores.get(layers[0]!) : undefined;
  if (!store) return;
  collected.unregister(owner);
  store.freeAll();
  for (const l of layers) stores.delete(l);
}

/**
 * Append the keys and values of new positions, (B, h, L, d), to a layer's cache: into the owned storage of
 * {@link ownLayers} (the old block freed), else into fresh storage no memoryScope owns. Equal to
 * `F.cat([old, new], 2)`; that itself (differentiable) while gradients are recorded through it.
 */
export function appendKeysValues(layer: KeyValueCache, k: Tensor, v: Tensor): void {
  const store = stores.get(layer);
  layer.k = appendAlong(layer.k, k, 2, store);
  layer.v = appendAlong(layer.v, v, 2, store);
}

/**
 * Keep only the first `length` positions of a layer's keys and values (dim 2; HF's `DynamicCache.crop`): a
 * conversation whose new rendering departs from what the cache holds keeps the common prefix. Into the owned
 * storage of {@link ownLayers} (the old block freed), else fresh storage no memoryScope owns. Not differentiable.
 */
export function cropKeysValues(layer: KeyValueCache, length: number): void {
  const store = stores.get(layer);
  const crop = (t: Tensor | null): Tensor | null => {
    if (!t || t.shape[2] === length) return t;
    if (!Number.isInteger(length) || length < 0 || length > t.shape[2])
      throw new Error(`cropKeysValues: length must be an integer in [0, ${t.shape[2]}], got ${length}`);
    const k = K(t);
    const shape = t.shape.slice();
    shape[2] = length;
    const outer = sizeOf(shape.slice(0, 2));
    const inner = sizeOf(shape.slice(3));
    const storage = store ? store.alloc(sizeOf(shape)) : k.device.alloc(t.dtype, sizeOf(shape), { zero: false });
    k.copyRows(t.storage, 0, t.shape[2] * inner, storage, 0, length * inner, outer, length * inner);
    store?.free(t);
    return Tensor.fromStorage(k.device, storage, shape, t.dtype);
  };
  layer.k = crop(layer.k);
  layer.v = crop(layer.v);
}

/**
 * `cat([old, add], dim)` (`add` alone when old is null) in storage that no memoryScope owns: a cache is
 * grown inside a decoding step, which may run in a memoryScope (CachedStepper.step), and must outlive it.
 * With `store`, the cache's own storage, and old's block freed. Where gradients are being recorded through
 * the cache, F.cat itself (differentiable; its storage is then the caller's scope's, as any op's).
 */
function appendAlong(old: Tensor | null, add: Tensor, dim: number, store: CacheStorage | undefined): Tensor {
  if (isGradEnabled() && (add.requiresGrad || old?.requiresGrad)) return old ? cat([old, add], dim) : add;
  const k = K(add);
  const shape = add.shape.slice();
  const before = old ? old.shape[dim] : 0;
  shape[dim] += before;
  const n = sizeOf(shape);
  const outer = sizeOf(shape.slice(0, dim));
  const inner = sizeOf(shape.slice(dim + 1));
  const storage = store ? store.alloc(n) : k.device.alloc(add.dtype, n, { zero: false });
  const w = shape[dim] * inner;
  if (old) k.copyRows(old.storage, 0, before * inner, storage, 0, w, outer, before * inner);
  k.copyRows(add.storage, 0, add.shape[dim] * inner, storage, before * inner, w, outer, add.shape[dim] * inner);
  store?.free(old);
  return Tensor.fromStorage(k.device, storage, shape, add.dtype);
}

/** Append the self-attention keys and values of new positions, (N, h, L, dK), to a layer's cache. */
export function appendSelf(layer: DecoderLayerCache, k: Tensor, v: Tensor): void {
  const store = stores.get(layer);
  layer.selfK = appendAlong(layer.selfK, k, 2, store);
  layer.selfV = appendAlong(layer.selfV, v, 2, store);
}

/** gatherRows into `store`'s storage, t's own block freed (reorder of a cache that owns its storage). */
function gatherOwned(t: Tensor, rows: Int32Array, store: CacheStorage | undefined): Tensor {
  if (!store || t.dtype !== 'float32' || (isGradEnabled() && t.requiresGrad)) return gatherRows(t, rows);
  const k = K(t);
  const inner = sizeOf(t.shape.slice(1));
  const shape = [rows.length, ...t.shape.slice(1)];
  const storage = store.alloc(rows.length * inner);
  k.gatherRows(t.storage, rows, storage, inner);
  store.free(t);
  return Tensor.fromStorage(k.device, storage, shape, 'float32');
}

/** A copy of t in `store`'s storage (t itself when the store owns it already, or gradients flow through it). */
function adopt(t: Tensor, store: CacheStorage): Tensor {
  if (store.live.has(t.storage) || t.dtype !== 'float32' || (isGradEnabled() && t.requiresGrad)) return t;
  const storage = store.alloc(t.size);
  store.device.copy(t.storage, storage, 'float32', t.size);
  return Tensor.fromStorage(store.device, storage, t.shape, 'float32');
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
  /** The storage the cache owns, after ownStorage(); undefined before. */
  private store: CacheStorage | undefined;
  /** Set by release(): the cache's tensors are freed. */
  private released = false;

  constructor(layers: DecoderLayerCache[], memoryKeyPaddingMask: Tensor | null, batchSize: number) {
    this.layers = layers;
    this.memoryKeyPaddingMask = memoryKeyPaddingMask;
    this.rowSource = Int32Array.from({ length: batchSize }, (_, i) => i);
  }

  /**
   * From now on keep every tensor of the cache in storage the cache owns (the memory's keys and values
   * copied in once): under the wasm backend, wasm memory, where the attention kernels read the cache in place
   * and a step's memoryScope never holds it; a tensor replaced by a step or a reorder is freed at once. The
   * owner calls {@link release} when decoding ends (else the storage is freed once the cache is collected,
   * which a synchronous loop never lets happen). A cache's tensors are then valid only until the next step,
   * reorder or release: keep numbers, not its tensors. Returns this.
   */
  ownStorage(): this {
    this.checkLive('ownStorage');
    if (this.store) return this;
    const store = new CacheStorage(K().device);
    this.store = store;
    collected.register(this, store, this);
    for (const l of this.layers) {
      stores.set(l, store);
      l.memoryK = adopt(l.memoryK, store);
      l.memoryV = adopt(l.memoryV, store);
      if (l.selfK) l.selfK = adopt(l.selfK, store);
      if (l.selfV) l.selfV = adopt(l.selfV, store);
    }
    if (this.memoryKeyPaddingMask) this.memoryKeyPaddingMask = adopt(this.memoryKeyPaddingMask, store);
    if (this.tgtKeyPaddingMask) this.tgtKeyPaddingMask = adopt(this.tgtKeyPaddingMask, store);
    return this;
  }

  /**
   * Free the storage the cache owns (see ownStorage; nothing to do otherwise). The cache cannot be used
   * afterwards.
   */
  release(): void {
    this.released = true;
    if (!this.store) return;
    collected.unregister(this);
    this.store.freeAll();
    this.store = undefined;
  }

  /** Throws `TransformerDecoderCache.OP: the cache was released` after release(). */
  checkLive(op: string): void {
    if (this.released) throw new Error(`TransformerDecoderCache.${op}: the cache was released (release() ends it)`);
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
    this.checkLive('reorder');
    const source = idx.map((r) => this.rowSource[r]);
    const sameSource = source.length === N && source.every((s, i) => s === this.rowSource[i]);
    const store = this.store;
    for (const l of this.layers) {
      if (l.selfK) l.selfK = gatherOwned(l.selfK, idx, store);
      if (l.selfV) l.selfV = gatherOwned(l.selfV, idx, store);
      if (!sameSource) {
        l.memoryK = gatherOwned(l.memoryK, idx, store);
        l.memoryV = gatherOwned(l.memoryV, idx, store);
      }
    }
    if (this.tgtKeyPaddingMask) this.tgtKeyPaddingMask = gatherOwned(this.tgtKeyPaddingMask, idx, store);
    if (this.memoryKeyPaddingMask && !sameSource)
      this.memoryKeyPaddingMask = gatherOwned(this.memoryKeyPaddingMask, idx, store);
    this.rowSource = source;
    return this;
  }

  /** Append the padding flags of L new target positions ((N, L), TRUE = padding) to the key mask. */
  appendTargetPadding(mask: Tensor | null, L: number): void {
    this.checkLive('appendTargetPadding');
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
    this.tgtKeyPaddingMask = appendAlong(this.tgtKeyPaddingMask ?? zerosF([N, t]), add, 1, this.store); // (N, t + L)
  }
}
