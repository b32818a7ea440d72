/**
 * Hugging Face's logits processors on one row of scores, in transformers' order (`_get_logits_processor`), for
 * decode/hf-search.ts: RepetitionPenalty, NoRepeatNGram, EncoderNoRepeatNGram, NoBadWords, MinLength,
 * MinNewTokensLength, ForcedBOSToken, ForcedEOSToken, then LogitNormalization (renormalize_logits).
 */
/** The generation rules the processors apply (HfSearchOptions adds the search's own: beams, length penalty, …). */
export interface ProcessorOptions {
  /** The id that ends a sentence. */
  eosId: number;
  /** Most ids of an output, the start id included. */
  maxLength: number;
  /**
   * repetition_penalty (default 1: none): the score of an id already in the output (the start id included) divided
   * by it where positive, multiplied where negative. Beam search applies it to log-probabilities, greedy search to
   * the raw logits (the stepper's `stepLogits`), as generate() does.
   */
  repetitionPenalty?: number;
  /** encoder_no_repeat_ngram_size (default 0: none): no n-gram of the sentence's source ids is generated. */
  encoderNoRepeatNgramSize?: number;
  /** Ids never generated (bad_words_ids; the padding id is ruled out only through it, as generate() does). */
  badWordsIds?: readonly number[];
  /** The id forced at the last position (null or absent: none). */
  forcedEosTokenId?: number | null;
  /** EOS is blocked while the output, start id included, is shorter (default 0). */
  minLength?: number;
  /** EOS is blocked until this many ids are generated (the start id not counted; default 0). */
  minNewTokens?: number;
  /** The id forced first, after the start id (NLLB's target language code; null or absent: none). */
  forcedBosTokenId?: number | null;
  /** No n-gram of this size is generated twice in an output, the start id included (0 or absent: none). */
  noRepeatNgramSize?: number;
  /** A log-softmax again after the processors (generation_config.json `renormalize_logits`; default false). */
  renormalizeLogits?: boolean;
}

/** Ids that would repeat an n-gram of `prefix` (HF's NoRepeatNGramLogitsProcessor, `_get_generated_ngrams`). */
function bannedByNgrams(prefix: readonly number[], n: number): number[] {
  const len = prefix.length;
  if (n <= 0 || len + 1 < n) return [];
  // The last n − 1 ids; every earlier n-gram starting with them bans its last id.
  const banned: number[] = [];
  for (let i = 0; i + n <= len; i++) {
    let same = true;
    for (let j = 0; j < n - 1 && same; j++) same = prefix[i + j] === prefix[len - n + 1 + j];
    if (same) banned.push(prefix[i + n - 1]);
  }
  return banned;
}

/**
 * Ids that would repeat an n-gram of the source (HF's EncoderNoRepeatNGramLogitsProcessor: the n-grams of `source`
 * whose first n − 1 ids are the prefix's last n − 1 ban their last id).
 */
function bannedBySource(source: readonly number[], prefix: readonly number[], n: number): number[] {
  if (n <= 0 || prefix.length < n - 1) return [];
  const banned: number[] = [];
  const start = prefix.length - n + 1;
  for (let i = 0; i + n <= source.length; i++) {
    let same = true;
    for (let j = 0; j < n - 1 && same; j++) same = source[i + j] === prefix[start + j];
    if (same) banned.push(source[i + n - 1]);
  }
  return banned;
}

/** Row [off, off + V) replaced by its log-softmax (LogitNormalization; −∞ entries stay −∞). */
export function logSoftmaxRow(x: Float32Array, off: number, V: number): void {
  let max = -Infinity;
  for (let j = 0; j < V; j++) if (x[off + j] > max) max = x[off + j];
  if (max === -Infinity) return;
  let sum = 0;
  for (let j = 0; j < V; j++) sum += Math.exp(x[off + j] - max);
  const shift = max + Math.log(sum);
  for (let j = 0; j < V; j++) x[off + j] -= shift;
}

/** Every id of the row −∞ but `id`, which scores 0 (ForcedBOS/ForcedEOSTokenLogitsProcessor). */
function force(lp: Float32Array, off: number, V: number, id: number): void {
  lp.fill(-Infinity, off, off + V);
  lp[off + id] = 0;
}

/**
 * HF's logits processors on one row of log-probabilities, in place, in transformers' order. `prefix`: the row's
 * ids so far, the start id included (its length is cur_len).
 */
export function processRow(
  lp: Float32Array,
  off: number,
  V: number,
  prefix: readonly number[],
  o: ProcessorOptions,
  source: readonly number[] | undefined,
): void {
  const curLen = prefix.length;
  const penalty = o.repetitionPenalty ?? 1;
  if (penalty !== 1)
    for (const id of new Set(prefix)) {
      const x = lp[off + id];
      lp[off + id] = x < 0 ? x * penalty : x / penalty;
    }
  for (const id of bannedByNgrams(prefix, o.noRepeatNgramSize ?? 0)) lp[off + id] = -Infinity;
  const encoderN = o.encoderNoRepeatNgramSize ?? 0;
  if (encoderN > 0 && source) for (const id of bannedBySource(source, prefix, encoderN)) lp[off + id] = -Infinity;
  for (const id of o.badWordsIds ?? []) if (id >= 0 && id < V && id !== o.eosId) lp[off + id] = -Infinity;
  if (curLen < (o.minLength ?? 0) || curLen - 1 < (o.minNewTokens ?? 0)) lp[off + o.eosId] = -Infinity;
  const bos = o.forcedBosTokenId ?? null;
  if (bos !== null && curLen === 1) force(lp, off, V, bos);
  const eos = o.forcedEosTokenId ?? null;
  if (eos !== null && curLen === o.maxLength - 1) force(lp, off, V, eos);
  if (o.renormalizeLogits) logSoftmaxRow(lp, off, V);
}
