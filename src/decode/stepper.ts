/**
 * The one thing greedy and beam search ask of a model: next-token log-probabilities for every row
 * given the row's last id, and a way to reorder rows. Two implementations that must agree: one
 * with the decoder's key/value cache (each step projects only the new position), one that re-runs
 * the teacher-forced decoder over the whole prefix (the reference the cache is tested against).
 */
import type { Seq2Seq } from '../models/seq2seq.ts';
import { gatherRows, type TransformerDecoderCache } from '../nn/kv-cache.ts';
import * as F from '../ops/index.ts';
import { defaultDevice, memoryScope } from '../tensor/storage.ts';
import { Tensor } from '../tensor/tensor.ts';

/** What a search reads and changes on any engine: the rows and their order. */
export interface StepperRows {
  /** Rows being decoded. */
  readonly rows: number;
  /** Width of each row of log-probabilities. */
  readonly vocabSize: number;
  /** Keep rows `rows` (indices into the current rows, in order, repeats allowed). */
  reorder(rows: Int32Array): void;
}

/**
 * A model the searches can drive step by step in this thread: qkv's own decoder (CachedStepper,
 * FullStepper, EnsembleStepper).
 */
export interface Stepper extends StepperRows {
  /** Feed each row's last id; returns log-probabilities (rows × vocab), padding id at −∞. */
  step(last: Int32Array): Float32Array;
  /**
   * The same step, its log-probabilities read back asynchronously: how a model on a device without
   * synchronous reads (a GPU) is decoded. The model's work is recorded before the promise is returned.
   */
  stepAsync?(last: Int32Array): Promise<Float32Array>;
  /**
   * The same step, returning the raw next-token logits (rows × vocab, nothing ruled out) instead of their
   * log-softmax: what generate()'s greedy search applies a repetition penalty to (decode/hf-search.ts).
   */
  stepLogits?(last: Int32Array): Float32Array;
}

/** A Stepper whose steps run elsewhere and answer later (ONNX Runtime's session.run is asynchronous). */
export interface AsyncStepper extends StepperRows {
  /** Feed each row's last id; resolves to log-probabilities (rows × vocab), padding id at −∞. */
  step(last: Int32Array): Promise<Float32Array>;
  /** The same step resolving to the raw logits (Stepper's stepLogits), where the engine gives them. */
  stepLogits?(last: Int32Array): Promise<Float32Array>;
}

/**
 * Run a search coroutine (it yields each step's last ids and takes back their log-probabilities)
 * on a synchronous stepper; so greedy and beam search are written once for every engine.
 */
export function driveSync<R>(search: Generator<Int32Array, R, Float32Array>, stepper: Stepper): R {
  let r = search.next();
  while (!r.done) r = search.next(stepper.step(r.value));
  return r.value;
}

/** The same on an asynchronous stepper. */
export async function driveAsync<R>(search: Generator<Int32Array, R, Float32Array>, stepper: AsyncStepper): Promise<R> {
  let r = search.next();
  while (!r.done) r = search.next(await stepper.step(r.value));
  return r.value;
}

/**
 * `stepper` checking `signal` before every step: an aborted signal stops decoding with its reason
 * (an AbortError unless the caller gave another) between two steps. Without a signal, `stepper` itself.
 */
export function abortable<S extends Stepper>(stepper: S, signal: AbortSignal | undefined): Stepper {
  if (!signal) return stepper;
  return {
    get rows() {
      return stepper.rows;
    },
    get vocabSize() {
      return stepper.vocabSize;
    },
    reorder: (rows) => stepper.reorder(rows),
    step: (last) => {
      signal.throwIfAborted();
      return stepper.step(last);
    },
    ...(stepper.stepLogits && {
      stepLogits: (last: Int32Array) => {
        signal.throwIfAborted();
        return stepper.stepLogits!(last);
      },
    }),
    ...(stepper.stepAsync && {
      stepAsync: (last: Int32Array) => {
        signal.throwIfAborted();
        return stepper.stepAsync!(last);
      },
    }),
  };
}

/**
 * A pause until the event loop has run (a macrotask: timers, I/O, events), so that an AbortSignal
 * aborted by a timer or a click is seen at the next check. The pipelines take it between batches
 * and between generated tokens, only when given a signal.
 */
export function pause(): Promise<void> {
  return new Promise((resolve) =>
    typeof setImmediate === 'function' ? setImmediate(resolve) : setTimeout(resolve, 0),
  );
}

/**
 * Log-softmax of (N, V) logits, the padding id never chosen (as fairseq): what every stepper returns.
 * A NaN or +∞ (from non-finite logits) stops decoding with an error naming the step: searching on
 * it would return garbage with no word of why. −∞ is fine (a masked token).
 */
export function logProbs(logits: Tensor, padId: number, step: number, copy = false): Float32Array {
  const read = F.logSoftmax(logits, -1).dataSync() as Float32Array;
  // In a memoryScope (CachedStepper.step) the values are the scope's storage: the search gets its own copy.
  return checkedLogProbs(copy ? read.slice() : read, lastDim(logits), padId, step);
}

/** (N, V) logits read to the host (a copy), checked finite as {@link logProbs} checks them (−∞ allowed). */
export function rawLogits(logits: Tensor, step: number): Float32Array {
  const x = (logits.dataSync() as Float32Array).slice();
  checkedLogProbs(x, lastDim(logits), -1, step);
  return x;
}

/** {@link logProbs}, read back asynchronously (any device): the log-softmax is recorded at once. */
export async function logProbsAsync(logits: Tensor, padId: number, step: number): Promise<Float32Array> {
  const lp = F.logSoftmax(logits, -1);
  return checkedLogProbs((await lp.data()) as Float32Array, lastDim(logits), padId, step);
}

function lastDim(t: Tensor): number {
  return t.shape[t.shape.length - 1];
}

/**
 * The non-finite check and the padding id ruled out (padId −1: none), on the host values of a step's log-softmax
 * (rows of V), in place.
 */
export function checkedLogProbs(lp: Float32Array, V: number, padId: number, step: number): Float32Array {
  const total = sum(lp);
  // The values are searched only when their sum says one may be NaN or +∞.
  const suspect = Number.isNaN(total) || total === Infinity;
  for (let i = 0; suspect && i < lp.length; i++) {
    const v = lp[i];
    if (Number.isNaN(v) || v === Infinity) {
      throw new Error(
        `decoding step ${step}: the model's output is not finite (${String(v)} ` +
          `for token ${i % V} of row ${Math.floor(i / V)}): its weights or ` +
          `activations hold NaN or Infinity`,
      );
    }
  }
  if (padId >= 0 && padId < V) for (let r = 0; r < lp.length / V; r++) lp[r * V + padId] = -Infinity;
  return lp;
}

/**
 * The sum of `x` in four independent float64 accumulators (several times faster than a test per value): NaN
 * or +∞ exactly when a value is NaN or +∞ (float32 values cannot overflow a float64 sum), finite or −∞
 * otherwise, in any order of the additions.
 */
function sum(x: Float32Array): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  const n4 = x.length - (x.length % 4);
  for (let i = 0; i < n4; i += 4) {
    s0 += x[i];
    s1 += x[i + 1];
    s2 += x[i + 2];
    s3 += x[i + 3];
  }
  for (let i = n4; i < x.length; i++) s0 += x[i];
  return s0 + s1 + s2 + s3;
}

/**
 * What CachedStepper asks of a model: a Seq2Seq (models/seq2seq.ts), or a Hugging Face T5 (models/hf/t5.ts), each
 * with a TransformerDecoderCache (nn/kv-cache.ts).
 */
export interface CachedDecoder {
  readonly config: { readonly padId: number };
  /** The logits' width. */
  readonly targetVocabSize: number;
  /** The cache of a memory (N, S, d) and its padding (N, S), TRUE = padding. */
  initCache(memory: Tensor, srcPadding: Tensor | null): TransformerDecoderCache;
  /** The last ids (N, 1) → next-token logits (N, V); the cache grows by one position. */
  decodeStep(lastTokens: Tensor, cache: TransformerDecoderCache): Tensor;
}

/** Incremental: the decoder's KV cache, one new position per step. */
export class CachedStepper implements Stepper {
  private readonly cache: TransformerDecoderCache;
  private steps = 0;

  /**
   * `own`: the cache owns its storage (TransformerDecoderCache.ownStorage: wasm memory under wasm, read in
   * place by the kernels), freed by {@link release} when the search ends.
   */
  constructor(
    private readonly model: CachedDecoder,
    memory: Tensor,
    srcPadding: Tensor,
    own = false,
    /** Rule the padding id out of every step (fairseq's rule; Hugging Face's generate() does not). */
    private readonly maskPadding = true,
  ) {
    this.cache = model.initCache(memory, srcPadding);
    if (own) this.cache.ownStorage();
  }

  /** Free the storage the cache owns (see the constructor's `own`); no step may follow. */
  release(): void {
    this.cache.release();
  }

  get rows(): number {
    return this.cache.batchSize;
  }

  get vocabSize(): number {
    return this.model.targetVocabSize;
  }

  /**
   * One step in a memoryScope: under the wasm backend its activations live in wasm memory (kernels run on
   * them in place, nothing is staged in and out, nothing zero-filled) and are released when the step ends;
   * the cache it grows is stored outside the scope (nn/kv-cache.ts appendAlong).
   */
  step(last: Int32Array): Float32Array {
    const n = ++this.steps;
    const scoped = defaultDevice().scoped !== undefined; // memoryScope's test: its ops get scoped storage
    return memoryScope(() =>
      logProbs(
        this.model.decodeStep(new Tensor(last, [last.length, 1], 'int32'), this.cache),
        this.maskPadding ? this.model.config.padId : -1,
        n,
        scoped,
      ),
    );
  }

  stepLogits(last: Int32Array): Float32Array {
    const n = ++this.steps;
    return memoryScope(() =>
      rawLogits(this.model.decodeStep(new Tensor(last, [last.length, 1], 'int32'), this.cache), n),
    );
  }

  /**
   * step() read back asynchronously, in a memoryScope too: the read of the log-probabilities is recorded (and,
   * on a GPU, submitted) before the scope releases the step's storage.
   */
  stepAsync(last: Int32Array): Promise<Float32Array> {
    const n = ++this.steps;
    return memoryScope(() =>
      logProbsAsync(
        this.model.decodeStep(new Tensor(last, [last.length, 1], 'int32'), this.cache),
        this.maskPadding ? this.model.config.padId : -1,
        n,
      ),
    );
  }

  reorder(rows: Int32Array): void {
    this.cache.reorder(rows);
  }
}

/** Reference: the whole prefix through the teacher-forced decoder at every step (quadratic). */
export class FullStepper implements Stepper {
  private prefixes: number[][];
  private memory: Tensor;
  private srcPadding: Tensor;
  private rowSource: Int32Array;

  constructor(
    private readonly model: Seq2Seq,
    private readonly fullMemory: Tensor,
    private readonly fullPadding: Tensor,
    /** As CachedStepper's. */
    private readonly maskPadding = true,
  ) {
    const B = fullMemory.shape[0];
    this.prefixes = Array.from({ length: B }, () => []);
    this.memory = fullMemory;
    this.srcPadding = fullPadding;
    this.rowSource = Int32Array.from({ length: B }, (_, i) => i);
  }

  get rows(): number {
    return this.prefixes.length;
  }

  get vocabSize(): number {
    return this.model.targetVocabSize;
  }

  step(last: Int32Array): Float32Array {
    const [logits, T] = this.logits(last);
    return logProbs(logits, this.maskPadding ? this.model.config.padId : -1, T);
  }

  stepLogits(last: Int32Array): Float32Array {
    const [logits, T] = this.logits(last);
    return rawLogits(logits, T);
  }

  stepAsync(last: Int32Array): Promise<Float32Array> {
    const [logits, T] = this.logits(last);
    return logProbsAsync(logits, this.maskPadding ? this.model.config.padId : -1, T);
  }

  /** The next-token logits (N, vocab) after feeding `last`, and the prefix length. */
  private logits(last: Int32Array): [Tensor, number] {
    const N = this.prefixes.length;
    for (let i = 0; i < N; i++) this.prefixes[i].push(last[i]);
    const T = this.prefixes[0].length;
    const ids = new Int32Array(N * T);
    for (let i = 0; i < N; i++) ids.set(this.prefixes[i], i * T);
    const h = this.model.decode(new Tensor(ids, [N, T], 'int32'), this.memory, this.srcPadding); // (N, T, E)
    return [this.model.generator(F.narrow(h, 1, T - 1, 1)).reshape(N, -1), T];
  }

  reorder(rows: Int32Array): void {
    this.prefixes = Array.from(rows, (r) => this.prefixes[r].slice());
    this.rowSource = rows.map((r) => this.rowSource[r]);
    this.memory = gatherRows(this.fullMemory, this.rowSource);
    this.srcPadding = gatherRows(this.fullPadding, this.rowSource);
  }
}

/**
 * Several models decoding the same sentences as one (Sennrich et al. 2016 and fairseq's
 * EnsembleModel): each step's next-token distribution is the mean of the members' probabilities,
 * returned as its log, log((1/n) Σ_i p_i) = logsumexp_i(log p_i) − log n. Every member keeps its own
 * state (its cache) and is reordered with the others, so the rows stay in step.
 */
export class EnsembleStepper implements Stepper {
  constructor(private readonly members: readonly Stepper[]) {
    if (members.length === 0) throw new Error('EnsembleStepper: members must hold at least one stepper, got none');
    const [first] = members;
    members.forEach((m, i) => {
      if (m.vocabSize !== first.vocabSize)
        throw new Error(
          `EnsembleStepper: member ${i + 1} has a vocabulary of ${m.vocabSize}, ` +
            `member 1 of ${first.vocabSize}: members must share the target ` +
            `vocabulary`,
        );
      if (m.rows !== first.rows)
        throw new Error(`EnsembleStepper: member ${i + 1} decodes ${m.rows} rows, member 1 ${first.rows}`);
    });
  }

  get rows(): number {
    return this.members[0].rows;
  }

  get vocabSize(): number {
    return this.members[0].vocabSize;
  }

  step(last: Int32Array): Float32Array {
    return meanOfProbs(this.members.map((m) => m.step(last)));
  }

  async stepAsync(last: Int32Array): Promise<Float32Array> {
    // Every member's step is recorded before the first read is awaited.
    const pending = this.members.map((m) => (m.stepAsync ? m.stepAsync(last) : Promise.resolve(m.step(last))));
    return meanOfProbs(await Promise.all(pending));
  }

  reorder(rows: Int32Array): void {
    for (const m of this.members) m.reorder(rows);
  }

  /** Free what the members hold (CachedStepper.release); no step may follow. */
  release(): void {
    for (const m of this.members) (m as { release?: () => void }).release?.();
  }
}

/** log((1/n) Σ_i p_i) per element, from the members' log-probabilities. */
function meanOfProbs(lps: Float32Array[]): Float32Array {
  if (lps.length === 1) return lps[0];
  const out = new Float32Array(lps[0].length);
  const logN = Math.log(lps.length);
  for (let j = 0; j < out.length; j++) {
    let max = -Infinity;
    for (const lp of lps) if (lp[j] > max) max = lp[j];
    if (max === -Infinity) {
      out[j] = -Infinity; // every member rules the id out (the padding id, a blocked EOS)
      continue;
    }
    let sum = 0;
    for (const lp of lps) sum += Math.exp(lp[j] - max);
    out[j] = max + Math.log(sum) - logN;
  }
  return out;
}
