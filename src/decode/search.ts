/**
 * Decoding for the translation model (§6.1 of the paper): greedy, and beam search with beam 4 and
 * the GNMT length penalty α = 0.6, maximum output length = input length + 50, batched over
 * sentences, incremental through the decoder's key/value cache.
 * (over 500 lines: both searches, the driver they share and its checks; the steppers are in stepper.ts.)
 */
import { noGrad } from '../autograd/grad-mode.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import { withEvalMode } from '../nn/module.ts';
import { shapeToString } from '../tensor/shape.ts';
import { memoryScope } from '../tensor/storage.ts';
import { Tensor } from '../tensor/tensor.ts';
import {
  abortable,
  CachedStepper,
  EnsembleStepper,
  FullStepper,
  driveAsync,
  driveSync,
  type AsyncStepper,
  type Stepper,
  type StepperRows,
} from './stepper.ts';
import { encodeStatic, StaticSeq2SeqStepper } from './static-seq2seq.ts';

/**
 * What the searches decode with: one model, or an ensemble of models that read the same source ids
 * and share the target vocabulary (their next-token probabilities are averaged, see EnsembleStepper).
 */
export type Models = Seq2Seq | readonly Seq2Seq[];

export interface DecodeOptions {
  /** The id every output starts from (fed at position 0, not part of the output). */
  bosId: number;
  /** The id that ends a sentence (part of the output ids, not of `tokens`). */
  eosId: number;
  /**
   * Most ids generated per sentence, EOS included. Default: each sentence's source length
   * (non-padding ids) + 50, as the paper. Always capped by the model's position table (config.maxLen).
   */
  maxLen?: number;
  /** Incremental decoding with the key/value cache (default); false re-runs the whole prefix each step. */
  useCache?: boolean;
  /** Rule the padding id out of every step (default true, fairseq's; HF's generate(), hf-search.ts: false). */
  maskPadding?: boolean;
  /**
   * Fewest ids before EOS may end a sentence (default 1: never an empty translation, as fairseq's
   * min_len). Without it, beam search can prefer an EOS at the first step: its score is a single
   * log-probability, while a full sentence's is a long sum only partly offset by the length penalty.
   */
  minLen?: number;
  /** Checked before every step: once aborted, decoding stops with the signal's reason. */
  signal?: AbortSignal;
  /** A static cache (decode/static-seq2seq.ts): steps replayed (true) or op by op ('eager'); default false. */
  staticCache?: boolean | 'eager';
}

export interface BeamSearchOptions extends DecodeOptions {
  /** Hypotheses kept per sentence (default 4, the paper's). */
  beamSize?: number;
  /** α of the GNMT length penalty ((5 + |Y|)/6)^α (default 0.6, the paper's); 0 = raw log-probability. */
  lengthPenalty?: number;
}

/** One finished (or cut at maxLen) hypothesis of beam search. */
export interface Hypothesis {
  /** Generated ids, without BOS and EOS. */
  tokens: number[];
  /** Sum of the log-probabilities of the generated ids, EOS included. */
  logProb: number;
  /** logProb / lp(|Y|), |Y| counting EOS: what beam search maximises. */
  score: number;
  /** Ended with EOS (false: cut at maxLen). */
  finished: boolean;
}

export interface DecodeResult {
  /** (B, T) int32: the generated ids of each sentence, EOS included where emitted, padding after; T = the longest. */
  ids: Tensor;
  /** Per sentence: generated ids without EOS. */
  tokens: number[][];
  /** Per sentence: ended with EOS (false: stopped at maxLen). */
  finished: boolean[];
  /** Per sentence: sum of the generated ids' log-probabilities (EOS included). */
  logProbs: number[];
  /** Per sentence: the searched objective, length-penalised for beam search (greedy: = logProbs). */
  scores: number[];
}

export interface BeamSearchResult extends DecodeResult {
  /** Per sentence: the hypothesis pool, best first (at most beamSize). */
  hypotheses: Hypothesis[][];
}

/** GNMT length penalty (Wu et al. 2016, eq. 14): lp(Y) = ((5 + |Y|) / 6)^α. */
export function lengthPenalty(length: number, alpha: number): number {
  return ((5 + length) / 6) ** alpha;
}

/**
 * Greedy decoding of a batch of sources (B, S) int32: at every step each sentence takes its most
 * probable next id; a sentence stops at EOS (its row in `ids` is padding after) or at maxLen, and
 * the batch when every sentence has stopped. Sentences are independent: finished ones leave the
 * batch. The padding id is never generated.
 */
export function greedy(model: Models, src: Tensor, options: DecodeOptions): DecodeResult {
  return run(model, src, options, (stepper, maxLens, padId) => greedySearch(stepper, maxLens, { ...options, padId }));
}

/** Options of the model-free searches: the ids and the padding id that fills `ids`. */
export interface SearchOptions {
  /** The id every output starts from (fed at position 0, not part of the output). */
  bosId: number;
  /** The id that ends a sentence. */
  eosId: number;
  /** The id that fills `ids` after a sentence ends. */
  padId: number;
  /** Fewest ids before EOS (default 1, see DecodeOptions). */
  minLen?: number;
}

/** Block EOS in every row of a step's log-probabilities while outputs are shorter than minLen. */
function blockEarlyEos(lp: Float32Array, rows: number, V: number, eosId: number): void {
  for (let r = 0; r < rows; r++) lp[r * V + eosId] = -Infinity;
}

/**
 * Greedy search over any Stepper (a model, or a table in tests): `maxLens[i]` bounds sentence i,
 * whose decoding starts as stepper row i.
 */
export function greedySearch(stepper: Stepper, maxLens: number[], options: SearchOptions): DecodeResult {
  return driveSync(greedySteps(stepper, maxLens, options), stepper);
}

/** The same search over an engine whose steps are asynchronous (ONNX Runtime). */
export function greedySearchAsync(
  stepper: AsyncStepper,
  maxLens: number[],
  options: SearchOptions,
): Promise<DecodeResult> {
  return driveAsync(greedySteps(stepper, maxLens, options), stepper);
}

/**
 * The search itself, written once for every engine: it yields each step's last ids and is resumed
 * with that step's log-probabilities (driveSync / driveAsync run the stepper in between).
 */
function* greedySteps(
  stepper: StepperRows,
  maxLens: number[],
  options: SearchOptions,
): Generator<Int32Array, DecodeResult, Float32Array> {
  const B = maxLens.length;
  const V = stepper.vocabSize;
  const out: number[][] = Array.from({ length: B }, () => []);
  const finished = new Array<boolean>(B).fill(false);
  const logProbs = new Array<number>(B).fill(0);
  let active = Array.from({ length: B }, (_, i) => i).filter((i) => maxLens[i] > 0);
  if (active.length < B) stepper.reorder(Int32Array.from(active));
  let last = new Int32Array(active.length).fill(options.bosId);
  const minLen = options.minLen ?? 1;
  for (let n = 1; active.length > 0; n++) {
    const lp = yield last;
    if (n <= minLen) blockEarlyEos(lp, active.length, V, options.eosId);
    const keep: number[] = [];
    const next: number[] = [];
    active.forEach((s, row) => {
      const tok = argmax(lp, row * V, V);
      out[s].push(tok);
      logProbs[s] += lp[row * V + tok];
      if (tok === options.eosId) finished[s] = true;
      else if (out[s].length < maxLens[s]) {
        keep.push(row);
        next.push(tok);
      }
    });
    if (keep.length === 0) break;
    if (keep.length < active.length) stepper.reorder(Int32Array.from(keep));
    active = keep.map((row) => active[row]);
    last = Int32Array.from(next);
  }
  return {
    ...assemble(out, finished, options.padId, options.eosId),
    logProbs,
    scores: logProbs.slice(),
  };
}

interface Live {
  tokens: number[];
  logProb: number;
  /** Row in the stepper. */
  row: number;
}

/**
 * Beam search, batched over sentences. Each sentence keeps `beamSize` slots; at every step its live
 * hypotheses are extended by every id and the best `slots` extensions (by log-probability) kept.
 * One that ends in EOS goes to the sentence's pool with its length-penalised score and takes its
 * slot with it (the beam narrows as hypotheses finish, as in Nematus), so beam 1 is exactly greedy.
 * (A beam that stays `beamSize` wide, as tensor2tensor's, searched better and scored worse: on
 * Multi30K val, with a checkpoint at step 1,500, its outputs were 20% shorter than the references
 * and BLEU fell from 31.8 to 31.3 at α 0.6. The model prefers short outputs; wider search finds them.)
 * A sentence stops when no slot is left, when the best pooled score is at least every live
 * hypothesis's best reachable score (log-probabilities only fall; the penalty is bounded at maxLen),
 * or at maxLen, where live hypotheses join the pool unfinished. Returns the best of each pool.
 */
export function beamSearch(model: Models, src: Tensor, options: BeamSearchOptions): BeamSearchResult {
  checkBeamOptions(options);
  const search = (stepper: Stepper, maxLens: number[], padId: number) =>
    beamSearchSteps(stepper, maxLens, { ...options, padId });
  return run(model, src, options, search, options.beamSize ?? 4);
}

export function checkBeamOptions(options: { beamSize?: number; lengthPenalty?: number }): void {
  const k = options.beamSize ?? 4;
  const alpha = options.lengthPenalty ?? 0.6;
  if (!Number.isInteger(k) || k < 1) throw new Error(`beamSearch: beamSize must be a positive integer, got ${k}`);
  if (!Number.isFinite(alpha)) throw new Error(`beamSearch: lengthPenalty must be a finite number, got ${alpha}`);
}

/** Beam search over any Stepper (see beamSearch); sentence i starts as stepper row i. */
export function beamSearchSteps(
  stepper: Stepper,
  maxLens: number[],
  options: BeamSearchStepsOptions,
): BeamSearchResult {
  return driveSync(beamSteps(stepper, maxLens, options), stepper);
}

/** The same search over an engine whose steps are asynchronous (ONNX Runtime). */
export function beamSearchAsync(
  stepper: AsyncStepper,
  maxLens: number[],
  options: BeamSearchStepsOptions,
): Promise<BeamSearchResult> {
  return driveAsync(beamSteps(stepper, maxLens, options), stepper);
}

export type BeamSearchStepsOptions = SearchOptions & { beamSize?: number; lengthPenalty?: number };

/** Beam search as a coroutine, like greedySteps. */
function* beamSteps(
  stepper: StepperRows,
  maxLens: number[],
  options: BeamSearchStepsOptions,
): Generator<Int32Array, BeamSearchResult, Float32Array> {
  checkBeamOptions(options);
  const k = options.beamSize ?? 4;
  const alpha = options.lengthPenalty ?? 0.6;
  const B = maxLens.length;
  const V = stepper.vocabSize;
  const pools: Hypothesis[][] = Array.from({ length: B }, () => []);
  // live[s]: the sentence's live hypotheses, in stepper row order (sentences in order too).
  let live: Live[][] = Array.from({ length: B }, (_, s) =>
    maxLens[s] > 0 ? [{ tokens: [], logProb: 0, row: -1 }] : [],
  );
  let rows = 0;
  for (const hyps of live) for (const h of hyps) h.row = rows++;
  if (rows < B) stepper.reorder(Int32Array.from(live.flatMap((hyps, s) => hyps.map(() => s))));
  let last = new Int32Array(rows).fill(options.bosId);
  const minLen = options.minLen ?? 1;
  for (let n = 1; rows > 0; n++) {
    const lp = yield last;
    if (n <= minLen) blockEarlyEos(lp, rows, V, options.eosId);
    const nextLive: Live[][] = Array.from({ length: B }, () => []);
    const parents: number[] = [];
    const nextLast: number[] = [];
    for (let s = 0; s < B; s++) {
      const hyps = live[s];
      if (hyps.length === 0) continue;
      const pool = pools[s];
      const slots = k - pool.length;
      // The best `slots` ids of each live row, then the best `slots` of those.
      const cands: { logProb: number; h: Live; tok: number }[] = [];
      for (const h of hyps) {
        for (const tok of topIds(lp, h.row * V, V, slots))
          cands.push({ logProb: h.logProb + lp[h.row * V + tok], h, tok });
      }
      cands.sort((a, b) => b.logProb - a.logProb); // stable: ties keep row, then id order
      const survivors: { tokens: number[]; logProb: number; parent: number }[] = [];
      for (const c of cands.slice(0, slots)) {
        if (c.logProb === -Infinity) continue;
        if (c.tok === options.eosId) {
          pool.push({
            tokens: c.h.tokens,
            logProb: c.logProb,
            score: c.logProb / lengthPenalty(n, alpha),
            finished: true,
          });
        } else {
          survivors.push({ tokens: [...c.h.tokens, c.tok], logProb: c.logProb, parent: c.h.row });
        }
      }
      if (survivors.length === 0) continue;
      if (n >= maxLens[s]) {
        for (const h of survivors)
          pool.push({
            tokens: h.tokens,
            logProb: h.logProb,
            score: h.logProb / lengthPenalty(n, alpha),
            finished: false,
          });
        continue;
      }
      if (pool.length > 0) {
        // Best score a live hypothesis can still reach: its log-probability can only fall, over a
        // final length between n + 1 and maxLen, where the penalty is largest at one end.
        const lpMax = Math.max(lengthPenalty(n + 1, alpha), lengthPenalty(maxLens[s], alpha));
        const best = Math.max(...pool.map((h) => h.score));
        if (survivors.every((h) => best >= h.logProb / lpMax)) continue;
      }
      for (const h of survivors) {
        nextLive[s].push({ tokens: h.tokens, logProb: h.logProb, row: parents.length });
        parents.push(h.parent);
        nextLast.push(h.tokens[h.tokens.length - 1]);
      }
    }
    live = nextLive;
    rows = parents.length;
    if (rows === 0) break;
    stepper.reorder(Int32Array.from(parents));
    last = Int32Array.from(nextLast);
  }
  const hypotheses = pools.map((pool) => pool.slice().sort((a, b) => b.score - a.score));
  const best = hypotheses.map((p): Hypothesis => p[0] ?? { tokens: [], logProb: 0, score: 0, finished: false });
  return {
    ...assemble(
      best.map((h) => (h.finished ? [...h.tokens, options.eosId] : h.tokens)),
      best.map((h) => h.finished),
      options.padId,
      options.eosId,
    ),
    logProbs: best.map((h) => h.logProb),
    scores: best.map((h) => h.score),
    hypotheses,
  };
}

/**
 * The members of an ensemble (one model: itself), checked to read the same source ids and write
 * the same target ids: equal source and target vocabulary sizes and padding id.
 */
/** Whether the models' parameters read back synchronously (CPU devices; a GPU's do not). */
export function readsSync(model: Models): boolean {
  return ensembleMembers(model).every((m) => m.parameters().every((p) => p.device.readSync !== undefined));
}

export function ensembleMembers(model: Models): readonly Seq2Seq[] {
  const members: readonly Seq2Seq[] = Array.isArray(model) ? model : [model as Seq2Seq];
  if (members.length === 0) throw new Error('decode: an ensemble needs at least one model, got an empty list');
  const [first] = members;
  members.forEach((m, i) => {
    const differs = (what: string, a: number, b: number) =>
      new Error(
        `decode: ensemble member ${i + 1} has ${what} ${a}, member 1 ${b}: members must share their tokenizers`,
      );
    if (m.config.vocabSize !== first.config.vocabSize)
      throw differs('a source vocabulary of', m.config.vocabSize, first.config.vocabSize);
    if (m.targetVocabSize !== first.targetVocabSize)
      throw differs('a target vocabulary of', m.targetVocabSize, first.targetVocabSize);
    if (m.config.padId !== first.config.padId) throw differs('padding id', m.config.padId, first.config.padId);
  });
  return members;
}

/** Checks, eval mode and no autograd for the search; encodes once per member; picks the stepper. */
function run<R>(
  model: Models,
  src: Tensor,
  options: DecodeOptions,
  search: (stepper: Stepper, maxLens: number[], padId: number) => R,
  /** Rows per sentence the search may keep (its beam): what a static cache holds. */
  beam = 1,
): R {
  const { members, maxLens, padId } = prepareSearch(model, src, options);
  return withEvalMode(members, () =>
    noGrad(() => {
      // The caches own their storage (wasm memory under wasm) and are freed when the search ends.
      const stepper = options.staticCache
        ? encodeStatic(members, src, options, maxLens, beam)
        : encodeSources(members, src, options, true);
      try {
        return search(abortable(stepper, options.signal), maxLens, padId);
      } finally {
        releaseStepper(stepper);
      }
    }),
  );
}

/** Free what the steppers of encodeSources(..., own = true) and encodeStatic hold (their caches' storage). */
export function releaseStepper(stepper: Stepper): void {
  if (stepper instanceof CachedStepper || stepper instanceof EnsembleStepper || stepper instanceof StaticSeq2SeqStepper)
    stepper.release();
}

/** The members, checked, and each sentence's length limit, after the checks of src and the options (decode's). */
export function prepareSearch(
  model: Models,
  src: Tensor,
  options: DecodeOptions,
  /** src's ids on the host (read here when not given, where the device reads synchronously). */
  srcIds?: ArrayLike<number>,
): { members: readonly Seq2Seq[]; maxLens: number[]; padId: number } {
  const name = 'decode';
  const members = ensembleMembers(model);
  if (src.dtype !== 'int32' || src.ndim !== 2)
    throw new Error(
      `${name}: src must be int32 token ids of shape (B, S), got ${src.dtype} ${shapeToString(src.shape)}`,
    );
  const { padId } = members[0].config;
  const positions = Math.min(...members.map((m) => m.config.maxLen));
  const vocabSize = members[0].targetVocabSize;
  for (const arg of ['bosId', 'eosId'] as const) {
    const id = options[arg];
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize)
      throw new Error(`${name}: ${arg} must be an id in [0, ${vocabSize}), got ${id}`);
  }
  if (options.eosId === padId) throw new Error(`${name}: eosId must differ from the padding id ${padId}`);
  if (options.maxLen !== undefined && (!Number.isInteger(options.maxLen) || options.maxLen < 0)) {
    throw new Error(`${name}: maxLen must be a non-negative integer, got ${options.maxLen}`);
  }
  if (options.minLen !== undefined && (!Number.isInteger(options.minLen) || options.minLen < 0)) {
    throw new Error(`${name}: minLen must be a non-negative integer, got ${options.minLen}`);
  }
  const ids = srcIds ?? src.dataSync();
  return { members, maxLens: maxLengths(ids, src.shape, padId, positions, options.maxLen), padId };
}

/**
 * The source encoded by every member, and the stepper over them (an ensemble's, for several). `own`: the
 * caches own their storage (TransformerDecoderCache.ownStorage), and the caller frees it with
 * {@link releaseStepper} when the search ends.
 */
export function encodeSources(members: readonly Seq2Seq[], src: Tensor, options: DecodeOptions, own = false): Stepper {
  const { useCache = true, maskPadding: mp = true } = options;
  const steppers = members.map((m): Stepper => {
    const encode = () => {
      const srcPadding = m.paddingMask(src);
      const memory = m.encode(src, srcPadding);
      return useCache ? new CachedStepper(m, memory, srcPadding, own, mp) : new FullStepper(m, memory, srcPadding, mp);
    };
    // An owning cache copies in what it keeps of the encoder's output: the encoder's activations can then be
    // a memoryScope's (wasm memory under wasm: kernels in place), released once the cache is made.
    return own && useCache ? memoryScope(encode) : encode();
  });
  return steppers.length === 1 ? steppers[0] : new EnsembleStepper(steppers);
}

/**
 * Most ids each sentence of src (B, S) may generate: `maxLen`, else its non-padding length + 50
 * (the paper's), capped by the position table.
 */
export function maxLengths(
  ids: ArrayLike<number>,
  [B, S]: readonly number[],
  padId: number,
  positions: number,
  maxLen?: number,
): number[] {
  return Array.from({ length: B }, (_, b) => {
    let len = 0;
    for (let j = 0; j < S; j++) if (ids[b * S + j] !== padId) len++;
    return Math.min(maxLen ?? len + 50, positions);
  });
}

/** The first index of the largest value in row [off, off + V). */
function argmax(x: Float32Array, off: number, V: number): number {
  let best = 0;
  for (let j = 1; j < V; j++) if (x[off + j] > x[off + best]) best = j;
  return best;
}

/** The m ids of largest value in row [off, off + V), best first, ties to the lower id (m small). */
function topIds(x: Float32Array, off: number, V: number, m: number): number[] {
  const ids: number[] = [];
  // Once m ids are held, the value of the last one: an id must beat it to enter (most do not). NaN for
  // m = 0: nothing beats it.
  let floor = Number.NaN;
  let full = m === 0;
  for (let j = 0; j < V; j++) {
    const v = x[off + j];
    if (full && !(v > floor)) continue;
    let i = full ? m - 1 : ids.length;
    while (i > 0 && v > x[off + ids[i - 1]]) i--;
    ids.splice(i, 0, j);
    if (ids.length > m) ids.pop();
    full = ids.length === m;
    if (full) floor = x[off + ids[m - 1]];
  }
  return ids;
}

/** `ids` (B, T) padded with padId, `tokens` without the trailing EOS. */
function assemble(
  out: number[][],
  finished: boolean[],
  padId: number,
  eosId: number,
): { ids: Tensor; tokens: number[][]; finished: boolean[] } {
  const B = out.length;
  const T = Math.max(0, ...out.map((o) => o.length));
  const ids = new Int32Array(B * T).fill(padId);
  out.forEach((o, b) => ids.set(o, b * T));
  const tokens = out.map((o, b) => (finished[b] && o[o.length - 1] === eosId ? o.slice(0, -1) : o.slice()));
  return { ids: new Tensor(ids, [B, T], 'int32'), tokens, finished };
}
