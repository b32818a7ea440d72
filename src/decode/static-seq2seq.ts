/**
 * The translation model's decoder over a static cache (issue 62, point 2), so that one capture (src/compile)
 * serves every step of a greedy or beam search with the same rows. Storage is preallocated for `capacity` rows
 * (the batch, times the beam) and `maxLength` target positions:
 *
 * - per layer, self-attention keys and values (rows, h, maxLength, dK), zero where nothing was written; a step's
 *   key and value are copied into row p of each (row, head), the offset a dynamic scalar (below);
 * - per layer, the cross-attention keys and values of the memory (rows, h, S, dK) and the memory's padding bias
 *   (rows, S), computed once per source by the model's own initCache and copied in;
 * - the self-attention's key bias, built on the host at each step over the p + 1 positions fed: 0, or −∞ where a
 *   padding id was fed (the dynamic cache's target padding mask), packed as (rows, p + 1) at the start of a
 *   (rows, maxLength) input.
 *
 * The position enters as data (a row of the sinusoid table taken by an embedding kernel) and as one dynamic
 * scalar, the filled length p + 1 (compile/capture.ts's withScalars: each replay takes it anew): the write's
 * offset, and the self-attention's keys, [0, p + 1) of each (row, head) copied into a contiguous prefix, its key
 * length and bias stride. So a step attends over the keys fed so far, as the dynamic cache does. A
 * step computes the first `computedRows(live)` rows of the storage (read in place): the live rows alone where
 * there are four or fewer, else the next power of two (at most `capacity`), the rows past the live ones computed
 * and ignored. Why not always `capacity`: the wasm GEMM takes another path (dot products of rows) at four rows
 * or fewer, so the live rows' bits would depend on how many dead rows were computed with them; above four rows
 * every kernel computes a row the same whatever the row count (the packed GEMM's tiles are zero-padded), so the
 * dynamic cache's bits are kept. Why not exactly the live rows: one capture per row count, and a beam search's
 * rows change at almost every step once hypotheses finish. So at most 4 + log2(capacity) captures, each
 * replayed until the rows cross to another bucket, for at most twice the rows. A search's reorder (sentences
 * that finish, beams that swap) is a second captured step, bucketed the same way: every row-indexed storage
 * gathered by an embedding kernel over the row ids (an input), then copied back in place into its first rows.
 *
 * Over the same t + 1 keys as the dynamic cache (nn/kv-cache.ts), the steps give its log-probabilities bit for bit
 * on js and wasm (test/compile/static-seq2seq), and a replayed step equals its eager run bit for bit.
 */
import { type Captured, compile, type CompiledStep, withScalars } from '../compile/capture.ts';
import { OwnedStorage } from '../compile/owned.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import { activate } from '../nn/transformer.ts';
import * as F from '../ops/index.ts';
import { K, st, upload } from '../ops/util.ts';
import { memoryScope } from '../tensor/storage.ts';
import { Tensor } from '../tensor/tensor.ts';
import { checkedLogProbs, EnsembleStepper, type Stepper } from './stepper.ts';

/** A static layer cache: self-attention keys/values over maxLength, the memory's keys/values. */
interface StaticLayer {
  selfK: Tensor;
  selfV: Tensor;
  memoryK: Tensor;
  memoryV: Tensor;
}

/** Options of {@link StaticSeq2SeqStepper}. */
export interface StaticStepperOptions {
  /** Capture the step and the reorder once, replay them afterwards (default true); false runs them eagerly. */
  compiled?: boolean;
  /** Rule the padding id out of every step (default true, as CachedStepper's). */
  maskPadding?: boolean;
  /** Keep a copy of every step's logits (rows × vocab, the live rows) in `trace` (tests compare them). */
  trace?: boolean;
}

/** A Stepper over the static cache (see the file comment), for greedy and beam search. */
export class StaticSeq2SeqStepper implements Stepper {
  /** With options.trace, each step's logits of the live rows; else null. */
  readonly trace: Float32Array[] | null;
  private readonly layers: StaticLayer[];
  /** (rows, S) memory padding bias. */
  private readonly memoryBias: Tensor;
  /** Host copy of which target positions of each physical row were fed a padding id. */
  private padded: Uint8Array;
  private live: number;
  private length = 0;
  private steps = 0;
  private readonly compiledStep: CompiledStep | null;
  private readonly compiledReorder: CompiledStep | null;
  private readonly maskPadding: boolean;
  private readonly storage: OwnedStorage;
  /** Where a layer's filled self-attention keys and values are copied for its attention (rows, h, maxLength, dK). */
  private readonly prefix: { k: Tensor['storage']; v: Tensor['storage'] };

  /**
   * `memory` (B, S, dModel) and `srcPadding` (B, S) of B sources (rows 0..B−1); `capacity` ≥ B rows (the
   * widest the search gets: B × beam); `maxLength` the most ids fed to one row.
   */
  constructor(
    private readonly model: Seq2Seq,
    memory: Tensor,
    srcPadding: Tensor,
    /** Rows the storage holds (the widest the search gets: B × beam). */
    readonly capacity: number,
    /** Target positions the cache holds: the most ids fed to one row. */
    readonly maxLength: number,
    options: StaticStepperOptions = {},
  ) {
    const [B, S] = memory.shape;
    if (!Number.isInteger(capacity) || capacity < B)
      throw new Error(`StaticSeq2SeqStepper: capacity must be an integer >= the batch ${B}, got ${capacity}`);
    const positions = model.config.maxLen;
    if (!Number.isInteger(maxLength) || maxLength < 1 || maxLength > positions)
      throw new Error(`StaticSeq2SeqStepper: maxLength must be an integer in [1, ${positions}], got ${maxLength}`);
    this.maskPadding = options.maskPadding ?? true;
    this.trace = options.trace ? [] : null;
    const device = K().device;
    const storage = new OwnedStorage(device, this);
    this.storage = storage;
    const zeros = (shape: number[]): Tensor => {
      const n = shape.reduce((x, y) => x * y, 1);
      return Tensor.fromStorage(device, storage.alloc('float32', n), shape, 'float32');
    };
    /** A (rows, ...) zero tensor whose first B rows are t's. */
    const rowsOf = (t: Tensor): Tensor => {
      const z = zeros([capacity, ...t.shape.slice(1)]);
      K(t).device.copy(t.storage, z.storage, 'float32', t.size);
      return z;
    };
    const cache = memoryScope(() => {
      const c = model.initCache(memory, srcPadding);
      const layers = c.layers.map((l) => {
        const [, h, , d] = l.memoryK.shape;
        return {
          selfK: zeros([capacity, h, maxLength, d]),
          selfV: zeros([capacity, h, maxLength, d]),
          memoryK: rowsOf(l.memoryK),
          memoryV: rowsOf(l.memoryV),
        };
      });
      return { layers, memoryBias: c.memoryKeyPaddingMask ? rowsOf(c.memoryKeyPaddingMask) : zeros([capacity, S]) };
    });
    this.layers = cache.layers;
    this.memoryBias = cache.memoryBias;
    const selfSize = this.layers[0]?.selfK.size ?? 0;
    this.prefix = { k: storage.alloc('float32', selfSize), v: storage.alloc('float32', selfSize) };
    this.padded = new Uint8Array(capacity * maxLength);
    this.live = B;
    const compiled = options.compiled ?? true;
    const step = (ids: Tensor, pos: Tensor, bias: Tensor): Tensor[] => this.forward(ids, pos, bias);
    const reorder = (rowIds: Tensor): Tensor[] => this.gather(rowIds);
    this.compiledStep = compiled ? compile(step, { scalars: () => [this.length + 1] }) : null;
    this.compiledReorder = compiled ? compile(reorder) : null;
  }

  /** The captures held (the step's, the reorder's), or null when not compiled. */
  get captures(): Captured[] | null {
    if (!this.compiledStep || !this.compiledReorder) return null;
    return [...this.compiledStep.captures.values(), ...this.compiledReorder.captures.values()];
  }

  /** Rows being decoded (the live ones; the storage holds `capacity`). */
  get rows(): number {
    return this.live;
  }

  get vocabSize(): number {
    return this.model.targetVocabSize;
  }

  /** One id per live row at the next position: log-probabilities (live rows × vocab), padding id at −∞. */
  step(last: Int32Array): Float32Array {
    const n = this.live;
    if (last.length !== n) throw new Error(`StaticSeq2SeqStepper.step: last must hold ${n} ids, got ${last.length}`);
    const p = this.length;
    const S = this.maxLength;
    if (p >= S) throw new Error(`StaticSeq2SeqStepper.step: position ${p} exceeds the cache's maxLength ${S}`);
    const { padId } = this.model.config;
    const maskTarget = this.model.config.maskTargetPadding ?? true;
    // Rows past the live ones: the first live row's id, keys up to p seen (finite values, ignored).
    const rows = computedRows(n, this.capacity);
    const ids = new Int32Array(rows).fill(last[0]);
    ids.set(last);
    // (rows, p + 1) packed at the start of (rows, S): the keys fed so far, −∞ where a padding id was fed.
    const bias = new Float32Array(rows * S);
    for (let r = 0; r < rows; r++) {
      if (r < n && maskTarget && last[r] === padId) this.padded[r * S + p] = 1;
      if (r < n)
        for (let s = 0; s <= p; s++) if (this.padded[r * S + s]) bias[r * (p + 1) + s] = Number.NEGATIVE_INFINITY;
    }
    const V = this.vocabSize;
    const first = this.model.config.positionOffset ?? 0;
    const lp = memoryScope(() => {
      const inputs = [
        new Tensor(ids, [rows, 1], 'int32'),
        new Tensor(Int32Array.of(first + p), [1], 'int32'),
        upload(bias, [rows, S]),
      ];
      const [logits, logp] = this.compiledStep
        ? this.compiledStep(...inputs)
        : this.forward(inputs[0], inputs[1], inputs[2]);
      if (this.trace) this.trace.push(logits.dataSync<Float32Array>().slice(0, n * V));
      return logp.dataSync<Float32Array>().slice(0, n * V);
    });
    this.length++;
    return checkedLogProbs(lp, V, this.maskPadding ? padId : -1, ++this.steps);
  }

  /** Keep live rows `rows` (in order, repeats allowed): every row-indexed storage gathered, in place. */
  reorder(rows: Int32Array): void {
    const n = this.live;
    if (rows.length > this.capacity)
      throw new Error(`StaticSeq2SeqStepper.reorder: at most ${this.capacity} rows, got ${rows.length}`);
    for (const r of rows)
      if (!Number.isInteger(r) || r < 0 || r >= n)
        throw new Error(`StaticSeq2SeqStepper.reorder: row ${r} is out of range for ${n} live rows`);
    this.live = rows.length;
    if (rows.every((r, i) => r === i)) return; // a prefix: nothing moves
    const S = this.maxLength;
    const padded = new Uint8Array(this.padded.length);
    rows.forEach((r, i) => padded.set(this.padded.subarray(r * S, (r + 1) * S), i * S));
    this.padded = padded;
    memoryScope(() => {
      // Bucketed as the steps: rows past the new live ones copy row 0 (ignored).
      const ids = new Int32Array(computedRows(rows.length, this.capacity));
      ids.set(rows);
      const rowIds = new Tensor(ids, [ids.length], 'int32');
      if (this.compiledReorder) this.compiledReorder(rowIds);
      else this.gather(rowIds);
    });
  }

  /** Free the cache and the captures now (else once the stepper is collected); no step may follow. */
  release(): void {
    this.compiledStep?.clear();
    this.compiledReorder?.clear();
    this.storage.releaseAll();
  }

  /** The step as a function of its inputs only (what is captured): logits and log-probabilities (rows, 1, V). */
  private forward(ids: Tensor, pos: Tensor, bias: Tensor): Tensor[] {
    const m = this.model;
    const c = m.config;
    const n = ids.shape[0];
    const S = this.maxLength;
    const len = this.length + 1; // the dynamic scalar: keys [0, len) are filled once this step has written
    // The bias's first n·len values: (n, len), the keys fed so far.
    const selfBias = Tensor.fromStorage(bias.device, bias.storage, [n, len], 'float32');
    const e = (m.tgtEmbedding ?? m.embedding).forward(ids);
    let x = (c.scaleEmbedding ?? true) ? F.mul(e, Math.sqrt(c.dModel)) : e;
    x = m.positions.dropout.forward(F.add(x, F.embedding(pos, m.positions.pe)));
    const decoder = m.transformer.decoder;
    [...decoder.layers].forEach((layer, i) => {
      const l = this.layers[i];
      const [selfK, selfV, memoryK, memoryV] = [l.selfK, l.selfV, l.memoryK, l.memoryV].map((t) => firstRows(t, n));
      const sa = (y: Tensor): Tensor => {
        const { q, k, v } = layer.selfAttn.projectSelf(y);
        const [, h, , d] = selfK.shape;
        // Row p = len − 1 of each (row, head) ← the new key and value.
        const at = (what: string, args: unknown[], [t]: readonly number[]): void => {
          if (what === 'copyRows') args[4] = (t - 1) * d;
        };
        withScalars(at, () => {
          for (const [x, cache] of [
            [k, selfK],
            [v, selfV],
          ] as const)
            K(x, cache).copyRows(st(x), 0, d, cache.storage, (len - 1) * d, S * d, n * h, d);
        });
        // Keys [0, len) of each (row, head), contiguous: the dynamic cache's keys.
        const runs = (what: string, args: unknown[], [t]: readonly number[]): void => {
          if (what === 'copyRows') args[5] = args[7] = t * d;
        };
        const filled = (cache: Tensor, into: Tensor['storage']): Tensor =>
          withScalars(runs, () => {
            K(cache).copyRows(cache.storage, 0, S * d, into, 0, len * d, n * h, len * d);
            return Tensor.fromStorage(cache.device, into, [n, h, len, d], 'float32');
          });
        const keys = filled(selfK, this.prefix.k);
        const values = filled(selfV, this.prefix.v);
        // The attention's key length and the bias's row stride (its other calls keep theirs).
        const keyLength = (what: string, args: unknown[], [t]: readonly number[]): void => {
          if (what !== 'attention') return;
          const p = args[6] as { s: number; bias: { strideB: number } };
          p.s = t;
          p.bias.strideB = t;
        };
        const r = withScalars(keyLength, () =>
          layer.selfAttn.attendProjected(q, keys, values, { keyPaddingMask: selfBias }),
        );
        return layer.dropout1.forward(r.output);
      };
      const mha = (y: Tensor): Tensor => {
        const a = layer.multiheadAttn;
        const r = a.attendProjected(a.projectQuery(y), memoryK, memoryV, {
          keyPaddingMask: firstRows(this.memoryBias, n),
        });
        return layer.dropout2.forward(r.output);
      };
      const ff = (y: Tensor): Tensor =>
        layer.dropout3.forward(
          layer.linear2.forward(layer.dropout.forward(activate(layer.linear1.forward(y), layer.options.activation))),
        );
      if (layer.options.normFirst) {
        x = F.add(x, sa(layer.norm1.forward(x)));
        x = F.add(x, mha(layer.norm2.forward(x)));
        x = F.add(x, ff(layer.norm3.forward(x)));
      } else {
        x = layer.norm1.forward(F.add(x, sa(x)));
        x = layer.norm2.forward(F.add(x, mha(x)));
        x = layer.norm3.forward(F.add(x, ff(x)));
      }
    });
    if (decoder.norm) x = decoder.norm.forward(x);
    const logits = m.generator(x);
    return [logits, F.logSoftmax(logits, -1)];
  }

  /**
   * The reorder as a function of the row ids only: the first rowIds.length rows of each row-indexed tensor ←
   * its rows `rowIds`.
   */
  private gather(rowIds: Tensor): Tensor[] {
    const moved: Tensor[] = [];
    for (const l of this.layers) moved.push(l.selfK, l.selfV, l.memoryK, l.memoryV);
    moved.push(this.memoryBias);
    // An embedding kernel is a row gather whose rows are data: (rows, rest) viewed as a table.
    const gathered = moved.map((t) => F.embedding(rowIds, t.reshape(this.capacity, -1)));
    moved.forEach((t, i) => writeInto(firstRows(t, rowIds.shape[0]), gathered[i]));
    return gathered.slice(0, 1);
  }
}

/** Rows a step computes for n live ones (see the file comment): n up to four, else the next power of two. */
export function computedRows(n: number, capacity: number): number {
  return n <= 4 ? n : Math.min(capacity, 2 ** Math.ceil(Math.log2(n)));
}

/** The first n rows of t (dim 0), in place: a tensor over t's own storage (which holds more). */
function firstRows(t: Tensor, n: number): Tensor {
  if (n === t.shape[0]) return t;
  return Tensor.fromStorage(t.device, t.storage, [n, ...t.shape.slice(1)], t.dtype);
}

/** dst's storage ← src's (same size), through the current backend's device (so a capture records it). */
function writeInto(dst: Tensor, src: Tensor): void {
  K(dst, src).device.copy(src.storage, dst.storage, 'float32', dst.size);
}

/**
 * The source encoded by every member, and a stepper over their static caches (decode/static-seq2seq.ts), sized
 * for B × `beam` rows and the longest of `maxLens`.
 */
export function encodeStatic(
  members: readonly Seq2Seq[],
  src: Tensor,
  /** The search's options this stepper reads (search.ts's DecodeOptions, not imported: search.ts imports this file). */
  options: { staticCache?: boolean | 'eager'; maskPadding?: boolean },
  maxLens: readonly number[],
  beam: number,
): Stepper {
  const maxLength = Math.max(1, ...maxLens);
  const steppers = members.map((m): Stepper => {
    const srcPadding = m.paddingMask(src);
    return new StaticSeq2SeqStepper(m, m.encode(src, srcPadding), srcPadding, src.shape[0] * beam, maxLength, {
      compiled: options.staticCache !== 'eager',
      maskPadding: options.maskPadding ?? true,
    });
  });
  return steppers.length === 1 ? steppers[0] : new EnsembleStepper(steppers);
}
