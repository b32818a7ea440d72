/**
 * Decoding as Hugging Face's generate() decodes (transformers' generation/utils.py, `_beam_search` as
 * rewritten in 2025), for Hugging Face checkpoints (Marian, M2M100/NLLB): qkv's own folders keep search.ts's
 * rules (the paper's beam, GNMT's α). What differs from search.ts:
 *
 *   - every output starts from the decoder start id, and `maxLength` counts it: at most maxLength − 1
 *     ids are generated (cur_len: the ids so far, the start id included);
 *   - the logits processors (decode/hf-processors.ts), in transformers' order (`_get_logits_processor`), on each
 *     row of log-probabilities (greedy search with a repetition penalty: of raw logits, as generate()'s greedy
 *     search penalizes them): the repetition penalty, no repeated n-gram of the output (`noRepeatNgramSize`) nor of
 *     the source (`encoderNoRepeatNgramSize`), `badWordsIds` never generated, EOS blocked while cur_len <
 *     minLength or fewer than minNewTokens ids are generated, at cur_len 1 every id but `forcedBosTokenId`
 *     ruled out and it set to 0 (ForcedBOSTokenLogitsProcessor), at the last position (cur_len = maxLength − 1)
 *     the same for `forcedEosTokenId` (ForcedEOSTokenLogitsProcessor: its score is 0, not its log-probability),
 *     then with `renormalizeLogits` a log-softmax again (LogitNormalization, last);
 *   - beam search keeps `numBeams` live rows per sentence all the way (the first starts at score 0, the
 *     others at −1e9) and takes the best 2·numBeams of beams × vocabulary; a candidate ending in EOS, or
 *     reaching maxLength, is finished, and joins the pool only when it ranks among the first numBeams;
 *     the best numBeams unfinished candidates run on;
 *   - a pooled hypothesis scores sum log p / len^lengthPenalty, len = the ids generated (EOS included,
 *     the start id not); the pool keeps the numBeams best;
 *   - a sentence is done once its pool is full and, with earlyStopping false, the best running sum /
 *     (ids generated so far)^lengthPenalty does not beat the worst pooled score (HF's heuristic); with 'never'
 *     and lengthPenalty > 0, the best running sum / (maxLength − 1)^lengthPenalty (the longest still possible).
 *
 * Greedy search's ids are generate()'s whether or not the processors renormalise; its `logProbs` are the sums of
 * the processed log-probabilities, which are generate()'s scores with renormalizeLogits (without it generate()
 * scores greedy steps by the processed raw logits, which a stepper does not return).
 */
import { noGrad } from '../autograd/grad-mode.ts';
import { logSoftmaxRow, processRow, type ProcessorOptions } from './hf-processors.ts';
import type { HfGeneration } from '../models/hf/seq2seq-generation.ts';
import { enterEvalMode, withEvalMode } from '../nn/module.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { Tensor as T } from '../tensor/tensor.ts';
import { encodeSources, prepareSearch, type BeamSearchResult, type Hypothesis, type Models } from './search.ts';
import type { TranslateOptions } from './batch.ts';
import { sourceBatches } from './batch.ts';
import { pausingStepper } from './pausing.ts';
import { abortable, driveAsync, driveSync, type AsyncStepper, type Stepper, type StepperRows } from './stepper.ts';

/** Hugging Face's generation settings (models/hf/seq2seq-generation.ts reads them from a folder; hfRules). */
export interface HfSearchOptions extends ProcessorOptions {
  /** The decoder's first input (Marian: the padding id), not part of the output. */
  decoderStartId: number;
  /** Beams (1: greedy). */
  numBeams: number;
  /** Exponent of the length in a hypothesis's score (HF's default 1). */
  lengthPenalty?: number;
  /**
   * Stop a sentence once numBeams hypotheses are pooled (true), by HF's heuristic (false, the default), or by the
   * heuristic at the longest length still possible where lengthPenalty > 0 ('never').
   */
  earlyStopping?: boolean | 'never';
  /** Each sentence's source ids, its padding left out (what encoderNoRepeatNgramSize reads). */
  encoderIds?: readonly (readonly number[])[];
  /** Checked before every step. */
  signal?: AbortSignal;
}

/**
 * The search's rules from a folder's generation defaults (models/hf/seq2seq-generation.ts) and its model's ids,
 * num_beams and length_penalty aside (each call's beam and α, defaulting to them).
 */
export function hfRules(
  ids: { decoderStartId: number; eosId: number },
  g: HfGeneration,
): Omit<HfSearchOptions, 'numBeams' | 'lengthPenalty' | 'signal'> {
  return {
    decoderStartId: ids.decoderStartId,
    eosId: ids.eosId,
    maxLength: g.maxLength,
    earlyStopping: g.earlyStopping,
    repetitionPenalty: g.repetitionPenalty,
    encoderNoRepeatNgramSize: g.encoderNoRepeatNgramSize,
    badWordsIds: g.badWordsIds,
    forcedEosTokenId: g.forcedEosTokenId,
    forcedBosTokenId: g.forcedBosTokenId,
    minLength: g.minLength,
    minNewTokens: g.minNewTokens,
    noRepeatNgramSize: g.noRepeatNgramSize,
    renormalizeLogits: g.renormalizeLogits,
  };
}

/**
 * The search's own needs: the options with the padding id that fills `ids`, and whether the stepper gives raw
 * logits (greedy search with a repetition penalty) rather than log-probabilities.
 */
type Rules = HfSearchOptions & { padId: number; rawLogits?: boolean };

function argmax(x: Float32Array, off: number, V: number): number {
  let best = 0;
  for (let j = 1; j < V; j++) if (x[off + j] > x[off + best]) best = j;
  return best;
}

/** `ids` (B, T) padded with padId after each output. */
function padded(outs: number[][], padId: number): Tensor {
  const B = outs.length;
  const Tn = Math.max(0, ...outs.map((o) => o.length));
  const ids = new Int32Array(B * Tn).fill(padId);
  outs.forEach((o, b) => ids.set(o, b * Tn));
  return new T(ids, [B, Tn], 'int32');
}

/** Greedy search as generate() with num_beams 1: sentence i starts as stepper row i. */
function* greedySteps(
  stepper: StepperRows,
  B: number,
  o: Rules,
): Generator<Int32Array, BeamSearchResult, Float32Array> {
  const V = stepper.vocabSize;
  const out: number[][] = Array.from({ length: B }, () => []);
  const logProbs = new Array<number>(B).fill(0);
  const finished = new Array<boolean>(B).fill(false);
  let active = Array.from({ length: B }, (_, i) => i);
  let last = new Int32Array(B).fill(o.decoderStartId);
  for (let curLen = 1; active.length > 0 && curLen < o.maxLength; curLen++) {
    const lp = yield last;
    const keep: number[] = [];
    const next: number[] = [];
    active.forEach((s, row) => {
      processRow(lp, row * V, V, [o.decoderStartId, ...out[s]], o, o.encoderIds?.[s]);
      // Raw logits (repetition penalty): the score is the processed row's log-softmax.
      if (o.rawLogits && !o.renormalizeLogits) logSoftmaxRow(lp, row * V, V);
      const tok = argmax(lp, row * V, V);
      out[s].push(tok);
      logProbs[s] += lp[row * V + tok];
      if (tok === o.eosId) finished[s] = true;
      else {
        keep.push(row);
        next.push(tok);
      }
    });
    if (keep.length < active.length && keep.length > 0) stepper.reorder(Int32Array.from(keep));
    active = keep.map((row) => active[row]);
    last = Int32Array.from(next);
  }
  const tokens = out.map((x, s) => (finished[s] ? x.slice(0, -1) : x.slice()));
  const hypotheses = tokens.map((t, s) => [
    { tokens: t, logProb: logProbs[s], score: logProbs[s], finished: finished[s] },
  ]);
  return { ids: padded(out, o.padId), tokens, finished, logProbs, scores: logProbs.slice(), hypotheses };
}

/** A candidate extension: the sum of its log-probabilities, the beam it extends, the id it adds. */
interface Candidate {
  sum: number;
  beam: number;
  tok: number;
}

/** The best m of candidates by `score` (ties to the earlier), as torch.topk picks them. */
function best<T>(xs: readonly T[], m: number, score: (x: T) => number): T[] {
  return xs
    .map((x, i) => [x, i] as const)
    .sort((a, b) => score(b[0]) - score(a[0]) || a[1] - b[1])
    .slice(0, m)
    .map(([x]) => x);
}

/**
 * Beam search as generate() with num_beams > 1 (transformers' `_beam_search`): sentence i starts as
 * stepper row i.
 */
function* beamSteps(stepper: StepperRows, B: number, o: Rules): Generator<Int32Array, BeamSearchResult, Float32Array> {
  const k = o.numBeams;
  const V = stepper.vocabSize;
  const lpow = o.lengthPenalty ?? 1;
  const early = o.earlyStopping ?? false;
  // Each sentence's pool of finished hypotheses, best first, at most k.
  const pools: Hypothesis[][] = Array.from({ length: B }, () => []);
  const beams: number[][][] = Array.from({ length: B }, () => Array.from({ length: k }, () => []));
  const sums: number[][] = Array.from({ length: B }, () => Array.from({ length: k }, (_, b) => (b === 0 ? 0 : -1e9)));
  let active = Array.from({ length: B }, (_, i) => i);
  stepper.reorder(Int32Array.from(active.flatMap((s) => new Array<number>(k).fill(s))));
  let last = new Int32Array(B * k).fill(o.decoderStartId);
  // HF's cur_len: the ids so far, the start id included.
  for (let curLen = 1; ; ) {
    const lp = yield last;
    const stillActive: number[] = [];
    const parents: number[] = [];
    const nextLast: number[] = [];
    active.forEach((s, idx) => {
      const r0 = idx * k;
      // The best 2k of beams × vocabulary by sum.
      const top: Candidate[] = [];
      for (let b = 0; b < k; b++) {
        const off = (r0 + b) * V;
        processRow(lp, off, V, [o.decoderStartId, ...beams[s][b]], o, o.encoderIds?.[s]);
        for (let v = 0; v < V; v++) {
          const sum = sums[s][b] + lp[off + v];
          if (top.length === 2 * k && !(sum > top[2 * k - 1].sum)) continue;
          let i = top.length === 2 * k ? 2 * k - 1 : top.length;
          while (i > 0 && sum > top[i - 1].sum) i--;
          top.splice(i, 0, { sum, beam: b, tok: v });
          if (top.length > 2 * k) top.pop();
        }
      }
      // A candidate is finished by EOS, or by reaching maxLength.
      const hits = top.map((c) => c.tok === o.eosId || curLen + 1 >= o.maxLength);
      const penalized = top.map((c, i) => (hits[i] ? c.sum - 1e9 : c.sum));
      // The first k that finish join the pool, scored sum / generated^lp (EOS counted; start id not).
      const pool = pools[s];
      if (!(early === true && pool.length === k)) {
        top.forEach((c, rank) => {
          if (rank >= k || !hits[rank]) return;
          const finished = c.tok === o.eosId;
          const tokens = finished ? beams[s][c.beam].slice() : [...beams[s][c.beam], c.tok];
          pool.push({ tokens, logProb: c.sum, score: c.sum / curLen ** lpow, finished });
        });
        pools[s] = best(pool, k, (h) => h.score);
      }
      // The best k unfinished candidates run on (finished ones only where fewer are left, penalized).
      const running = best(
        top.map((c, i) => ({ c, p: penalized[i] })),
        k,
        (x) => x.p,
      );
      beams[s] = running.map(({ c }) => [...beams[s][c.beam], c.tok]);
      sums[s] = running.map(({ p }) => p);
      // HF's heuristic (early_stopping false): done once the pool is full and the best running sum over
      // the ids generated so far does not beat the worst pooled score; early_stopping true: once full.
      const full = pools[s].length === k;
      const worst = full ? pools[s][k - 1].score : -Infinity;
      // 'never' with a positive length penalty: the best running sum at the longest length still possible.
      const bestLength = early === 'never' && lpow > 0 ? o.maxLength - 1 : curLen;
      const done = full && (early === true || !(sums[s][0] / bestLength ** lpow > worst));
      if (done || hits.every(Boolean)) return;
      stillActive.push(s);
      for (const { c } of running) parents.push(r0 + c.beam);
      nextLast.push(...beams[s].map((b) => b[b.length - 1]));
    });
    curLen++;
    active = stillActive;
    if (active.length === 0) break;
    stepper.reorder(Int32Array.from(parents));
    last = Int32Array.from(nextLast);
  }
  const hypotheses = pools;
  const first = hypotheses.map((h) => h[0]);
  return {
    ids: padded(
      first.map((h) => (h.finished ? [...h.tokens, o.eosId] : h.tokens)),
      o.padId,
    ),
    tokens: first.map((h) => h.tokens),
    finished: first.map((h) => h.finished),
    logProbs: first.map((h) => h.logProb),
    scores: first.map((h) => h.score),
    hypotheses,
  };
}

function checkHfOptions(o: HfSearchOptions): void {
  if (!Number.isInteger(o.numBeams) || o.numBeams < 1)
    throw new Error(`generateHf: numBeams must be a positive integer, got ${o.numBeams}`);
  if (!Number.isInteger(o.maxLength) || o.maxLength < 2)
    throw new Error(`generateHf: maxLength must be an integer >= 2 (the start id and one more), got ${o.maxLength}`);
  if (o.lengthPenalty !== undefined && !Number.isFinite(o.lengthPenalty))
    throw new Error(`generateHf: lengthPenalty must be a finite number, got ${o.lengthPenalty}`);
}

/** The search over any Stepper: greedy for one beam, else HF's beam search. */
function hfSteps(stepper: StepperRows, B: number, o: Rules): Generator<Int32Array, BeamSearchResult, Float32Array> {
  checkHfOptions(o);
  if ((o.encoderNoRepeatNgramSize ?? 0) > 0 && (o.encoderIds?.length ?? 0) < B)
    throw new Error(
      `generateHf: encoderNoRepeatNgramSize ${o.encoderNoRepeatNgramSize} needs each sentence's source ids ` +
        `(encoderIds, ${B} of them), got ${o.encoderIds?.length ?? 'none'}`,
    );
  return o.numBeams === 1 ? greedySteps(stepper, B, o) : beamSteps(stepper, B, o);
}

/** The search over an engine whose steps are asynchronous (ONNX Runtime). */
export function generateHfAsync(
  stepper: AsyncStepper,
  B: number,
  options: HfSearchOptions & { padId: number },
): Promise<BeamSearchResult> {
  if (greedyPenalized(options)) {
    // generate()'s greedy search penalizes the raw logits: the steps return them.
    const logits = stepper.stepLogits?.bind(stepper);
    if (!logits)
      return Promise.reject(
        new Error(
          'repetition_penalty with greedy search (num_beams 1) is applied to raw logits, which this engine ' +
            '(ONNX Runtime) does not return: use beam search, or the qkv engine',
        ),
      );
    const raw: AsyncStepper = stepping(stepper, logits);
    return driveAsync(hfSteps(raw, B, { ...options, rawLogits: true }), raw);
  }
  return driveAsync(hfSteps(stepper, B, options), stepper);
}

/** The search over any synchronous Stepper. */
export function generateHfSteps(
  stepper: Stepper,
  B: number,
  options: HfSearchOptions & { padId: number },
): BeamSearchResult {
  if (!greedyPenalized(options)) return driveSync(hfSteps(stepper, B, options), stepper);
  // generate()'s greedy search penalizes the raw logits: the steps return them.
  const logits = stepper.stepLogits?.bind(stepper);
  if (!logits)
    throw new Error(
      'generateHf: repetitionPenalty with greedy search needs a stepper that gives raw logits (stepLogits)',
    );
  const raw: Stepper = stepping(stepper, logits);
  return driveSync(hfSteps(raw, B, { ...options, rawLogits: true }), raw);
}

/** `stepper` whose steps are `step` (its raw logits): its rows read through, kept in step with it. */
function stepping<R>(stepper: StepperRows, step: (last: Int32Array) => R): StepperRows & { step: typeof step } {
  return {
    get rows() {
      return stepper.rows;
    },
    vocabSize: stepper.vocabSize,
    reorder: (rows) => stepper.reorder(rows),
    step,
  };
}

/** Greedy search with a repetition penalty, which generate() applies to the raw logits. */
function greedyPenalized(o: HfSearchOptions): boolean {
  return o.numBeams === 1 && (o.repetitionPenalty ?? 1) !== 1;
}

/**
 * Each row of the sources (B, S), `ids` their values, without its padding, where encoderNoRepeatNgramSize needs them
 * and none are given.
 */
export function sourceIds(
  o: HfSearchOptions,
  ids: ArrayLike<number>,
  [B, S]: readonly number[],
  padId: number,
): { encoderIds?: readonly (readonly number[])[] } {
  if (!o.encoderNoRepeatNgramSize || o.encoderIds) return {};
  return {
    encoderIds: Array.from({ length: B }, (_, b) =>
      Array.from({ length: S }, (_, j) => ids[b * S + j]).filter((t) => t !== padId),
    ),
  };
}

/**
 * Decode sources (B, S) int32 as Hugging Face's generate(): greedy (numBeams 1) or beam search, with
 * HF's processors and length penalty (see the file comment). maxLength is capped by the position
 * table: at most config.maxLen + 1 ids, start id included.
 */
export function generateHf(model: Models, src: Tensor, options: HfSearchOptions): BeamSearchResult {
  checkHfOptions(options);
  const ids = { bosId: options.decoderStartId, eosId: options.eosId, maskPadding: false };
  const { members, padId } = prepareSearch(model, src, ids);
  const maxLength = Math.min(options.maxLength, Math.min(...members.map((m) => m.config.maxLen)) + 1);
  return withEvalMode(members, () =>
    noGrad(() =>
      generateHfSteps(abortable(encodeSources(members, src, ids), options.signal), src.shape[0], {
        ...options,
        ...sourceIds(options, src.dataSync<Int32Array>(), src.shape, padId),
        maxLength,
        padId,
      }),
    ),
  );
}

/**
 * generateHf, letting the event loop run before every step (so that a timer or an event can abort it
 * through `options.signal`): the same steps, the same result (as pausing.ts does for search.ts).
 */
export async function generateHfPausing(
  model: Models,
  src: Tensor,
  options: HfSearchOptions,
): Promise<BeamSearchResult> {
  checkHfOptions(options);
  const ids = { bosId: options.decoderStartId, eosId: options.eosId, maskPadding: false };
  const { members, padId } = prepareSearch(model, src, ids);
  const maxLength = Math.min(options.maxLength, Math.min(...members.map((m) => m.config.maxLen)) + 1);
  const restore = enterEvalMode(members);
  try {
    const stepper = noGrad(() => encodeSources(members, src, ids));
    const pausing = pausingStepper(stepper, options.signal);
    return await generateHfAsync(pausing, src.shape[0], {
      ...options,
      ...sourceIds(options, src.dataSync<Int32Array>(), src.shape, padId),
      maxLength,
      padId,
    });
  } finally {
    restore();
  }
}

/** What translateIdsHf needs of a tokenizer: its padding id and the text of output ids (MarianTokenizer). */
export interface HfTargetTokenizer {
  /** The padding id (pads source batches). */
  readonly padId: number;
  /** The text of generated ids (EOS excluded), special tokens dropped. */
  decode(ids: readonly number[]): string;
}

/**
 * Translate source ids in length-sorted batches (decode/batch.ts's sourceBatches) with HF's rules:
 * `o.beam` is num_beams, `o.alpha` the length_penalty exponent, `o.maxLen` (if given) the most ids
 * generated, EOS included (max_length = maxLen + 1); the rest comes from `rules` (the folder's
 * generation config). MBR is refused. Results return in input order.
 */
export async function translateIdsHf(
  model: Models,
  tok: HfTargetTokenizer,
  srcIds: number[][],
  o: TranslateOptions,
  rules: Omit<HfSearchOptions, 'numBeams' | 'lengthPenalty' | 'signal'>,
): Promise<string[]> {
  if (o.mbr) throw new Error('MBR is not available with Hugging Face generation rules (a Marian folder)');
  const out = srcIds.map(() => '');
  const options: HfSearchOptions = {
    ...rules,
    numBeams: o.beam,
    lengthPenalty: o.alpha,
    ...(o.maxLen !== undefined && { maxLength: o.maxLen + 1 }),
    ...(o.signal && { signal: o.signal }),
  };
  for (const { rows, src, done } of sourceBatches(srcIds, tok.padId, o)) {
    const res = o.signal ? await generateHfPausing(model, src, options) : generateHf(model, src, options);
    rows.forEach((r, b) => (out[r] = tok.decode(res.tokens[b])));
    o.onProgress?.(done, srcIds.length);
  }
  return out;
}
