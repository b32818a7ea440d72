/**
 * BLEU, a line-for-line port of sacreBLEU 2.x (`sacrebleu.metrics.bleu.BLEU`, `tokenizer_13a.py`,
 * `tokenizer_re.py`, `helpers.extract_all_word_ngrams`), so scores, statistics and printed strings
 * equal what `sacrebleu.corpus_bleu` / `sacrebleu.sentence_bleu` give with the same options.
 *
 * Pure string and number code: runs in Node and in browsers.
 *
 * Over 500 lines: sacreBLEU's tokenizer, n-gram statistics, corpus and sentence BLEU and its printed
 * strings in one file, in the order of sacreBLEU's own, so each function can be checked against its original.
 */

/** The sacreBLEU version whose code this module ports. */
export const SACREBLEU_VERSION = '2.4.0';
/**
 * The `version` of qkv's signatures: the ported sacreBLEU version marked as qkv's port, because this
 * is not sacreBLEU itself (docs/translation.md#scoring: checked against real sacreBLEU 2.6.0 on every
 * committed output behind a BLEU claim, records/sacrebleu-check/, not in CI).
 */
export const SIGNATURE_VERSION = `${SACREBLEU_VERSION}-qkv`;

/**
 * sacreBLEU's smoothing of zero n-gram precisions (Chen & Cherry 2014): `exp` gives the k-th zero
 * 100 / (2^k · total) (mteval's), `floor` gives it 100 · smoothValue / total, `add-k` adds smoothValue
 * to matches and totals from order 2 on, `none` leaves it zero.
 */
export type SmoothMethod = 'exp' | 'none' | 'floor' | 'add-k';
/**
 * sacreBLEU's tokenizer: `13a` is mteval-v13a (splits punctuation off words), `none` splits on whitespace
 * only.
 */
export type BleuTokenize = '13a' | 'none';

/** Options of {@link corpusBleu} and {@link sentenceBleu}, with sacreBLEU's defaults. */
export interface BleuOptions {
  /**
   * Lowercase hypotheses and references before tokenizing (sacreBLEU `lowercase`, signature `case:lc`). Default false.
   */
  lowercase?: boolean;
  /** '13a' (mteval-v13a, the default) or 'none' (split on whitespace only). */
  tokenize?: BleuTokenize;
  /** Default 'exp' (for both corpus and sentence BLEU, as in sacreBLEU). */
  smoothMethod?: SmoothMethod;
  /** Value for 'floor' (default 0.1) and 'add-k' (default 1); ignored by 'exp' and 'none'. */
  smoothValue?: number;
  /** Default false for corpusBleu, true for sentenceBleu. */
  effectiveOrder?: boolean;
  /** Maximum n-gram order, default 4. */
  maxNgramOrder?: number;
}

/** A BLEU result with sacreBLEU's fields (`sacrebleu.metrics.bleu.BLEUScore`). */
export interface BleuScore {
  /** BLEU in [0, 100], unrounded. */
  score: number;
  /** Clipped n-gram matches per order (n = 1..maxNgramOrder). */
  counts: number[];
  /** Hypothesis n-grams per order. */
  totals: number[];
  /** Precisions in percent, after smoothing. */
  precisions: number[];
  /** Brevity penalty. */
  bp: number;
  /** Hypothesis length in tokens, summed over the segments (sacreBLEU `sys_len`, printed as `hyp_len`). */
  sysLen: number;
  /**
   * Effective reference length in tokens: per segment the reference closest in length (ties to the shorter),
   * summed (sacreBLEU `ref_len`).
   */
  refLen: number;
  /** sys_len / ref_len (0 when ref_len is 0). */
  ratio: number;
  /** sacreBLEU's signature, qkv's version: `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.0-qkv`. */
  signature: string;
  /**
   * sacreBLEU's `str(score)`, e.g. `BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len =
   * 18)`.
   */
  toString(): string;
}

const SMOOTH_DEFAULTS: Record<SmoothMethod, number | null> = {
  none: null,
  floor: 0.1,
  'add-k': 1,
  exp: null,
};

// ---------------------------------------------------------------------------------------------
// Python-compatible helpers

/**
 * Python's `str.isspace()` set (what `str.split()` and `str.rstrip()` use); JS `\s` differs (adds U+FEFF, lacks
 * U+001C-1F and U+0085).
 */
const PY_WS = '\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const PY_WS_RUN = new RegExp(`[${PY_WS}]+`, 'g');
const PY_WS_TRAILING = new RegExp(`[${PY_WS}]+$`);

/** Python `s.split()` (no argument). */
export function pySplit(s: string): string[] {
  return s.split(PY_WS_RUN).filter((t) => t.length > 0);
}

/** Python `s.rstrip()` (no argument). */
function pyRstrip(s: string): string {
  return s.replace(PY_WS_TRAILING, '');
}

/**
 * Python's `f"{x:.{digits}f}"`: exact decimal rounding of the binary double with ties to even.
 * (`Number.prototype.toFixed` rounds exact ties up: `(12.25).toFixed(1)` is "12.3", Python gives "12.2".)
 */
export function formatFixed(x: number, digits: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'nan' : x > 0 ? 'inf' : '-inf';
  const negative = x < 0 || Object.is(x, -0);
  const ax = Math.abs(x);
  // Decompose |x| = mant * 2^exp exactly.
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, ax);
  const hi = view.getUint32(0);
  const lo = view.getUint32(4);
  const biased = (hi >>> 20) & 0x7ff;
  let mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let exp: number;
  if (biased === 0) {
    exp = -1074;
  } else {
    mant |= 1n << 52n;
    exp = biased - 1075;
  }
  const scale = 10n ** BigInt(digits);
  let q: bigint;
  if (exp >= 0) {
    q = (mant << BigInt(exp)) * scale;
  } else {
    const num = mant * scale;
    const den = 1n << BigInt(-exp);
    q = num / den;
    const twiceRem = (num % den) * 2n;
    if (twiceRem > den || (twiceRem === den && (q & 1n) === 1n)) q += 1n;
  }
  let s = q.toString();
  if (digits > 0) {
    s = s.padStart(digits + 1, '0');
    s = `${s.slice(0, s.length - digits)}.${s.slice(s.length - digits)}`;
  }
  return negative ? `-${s}` : s;
}

// ---------------------------------------------------------------------------------------------
// Tokenizers

const RE_PUNCT = /([\x7b-\x7e\x5b-\x60\x20-\x26\x28-\x2b\x3a-\x40\x2f])/g; // [\{-\~\[-\` -\&\(-\+\:-\@\/]
const RE_PERIOD_COMMA_AFTER_NONDIGIT = /([^0-9])([.,])/g;
const RE_PERIOD_COMMA_BEFORE_NONDIGIT = /([.,])([^0-9])/g;
const RE_DASH_AFTER_DIGIT = /([0-9])(-)/g;

/** sacreBLEU's `TokenizerRegexp` (the language-dependent part of 13a). */
function tokenizeRegexp(line: string): string {
  line = line.replace(RE_PUNCT, ' $1 ');
  line = line.replace(RE_PERIOD_COMMA_AFTER_NONDIGIT, '$1 $2 ');
  line = line.replace(RE_PERIOD_COMMA_BEFORE_NONDIGIT, ' $1 $2');
  line = line.replace(RE_DASH_AFTER_DIGIT, '$1 $2 ');
  return pySplit(line).join(' ');
}

/** mteval-v13a tokenization exactly as sacreBLEU's `Tokenizer13a`; returns tokens joined by single spaces. */
export function tokenize13a(line: string): string {
  line = line.replaceAll('<skipped>', '');
  line = line.replaceAll('-\n', '');
  line = line.replaceAll('\n', ' ');
  if (line.includes('&')) {
    line = line.replaceAll('&quot;', '"');
    line = line.replaceAll('&amp;', '&');
    line = line.replaceAll('&lt;', '<');
    line = line.replaceAll('&gt;', '>');
  }
  return tokenizeRegexp(` ${line} `);
}

function tokenizeWith(kind: BleuTokenize, line: string): string {
  if (kind === '13a') return tokenize13a(line);
  if (kind === 'none') return line;
  throw new Error(`BLEU: unknown tokenizer ${JSON.stringify(kind)}`);
}

// ---------------------------------------------------------------------------------------------
// Statistics

interface RefInfo {
  ngrams: Map<string, number>;
  lens: number[];
}

/** n-grams (keys: tokens joined by U+0001, never produced by a split) with counts, and the token count. */
function extractNgrams(line: string, maxOrder: number): { counts: Map<string, number>; len: number } {
  const tokens = pySplit(line);
  const counts = new Map<string, number>();
  for (let n = 1; n <= maxOrder; n++) {
    for (let i = 0; i + n <= tokens.length; i++) {
      const key = n === 1 ? tokens[i] : tokens.slice(i, i + n).join('\u0001');
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  return { counts, len: tokens.length };
}

function ngramOrder(key: string): number {
  let n = 1;
  for (let i = 0; i < key.length; i++) if (key.charCodeAt(i) === 1) n++;
  return n;
}

function closestRefLen(hypLen: number, refLens: number[]): number {
  let closestDiff = -1;
  let closestLen = -1;
  for (const refLen of refLens) {
    const diff = Math.abs(hypLen - refLen);
    if (closestDiff === -1 || diff < closestDiff) {
      closestDiff = diff;
      closestLen = refLen;
    } else if (diff === closestDiff && refLen < closestLen) {
      closestLen = refLen;
    }
  }
  return closestLen;
}

function myLog(x: number): number {
  return x === 0 ? -9999999999 : Math.log(x);
}

interface ResolvedOptions {
  lowercase: boolean;
  tokenize: BleuTokenize;
  smoothMethod: SmoothMethod;
  smoothValue: number | null;
  effectiveOrder: boolean;
  maxNgramOrder: number;
}

function resolve(opts: BleuOptions | undefined, effectiveDefault: boolean): ResolvedOptions {
  const smoothMethod = opts?.smoothMethod ?? 'exp';
  if (!(smoothMethod in SMOOTH_DEFAULTS)) throw new Error(`BLEU: unknown smoothMethod ${JSON.stringify(smoothMethod)}`);
  const tokenize = opts?.tokenize ?? '13a';
  if (tokenize !== '13a' && tokenize !== 'none') throw new Error(`BLEU: unknown tokenizer ${JSON.stringify(tokenize)}`);
  return {
    lowercase: opts?.lowercase ?? false,
    tokenize,
    smoothMethod,
    smoothValue: opts?.smoothValue ?? null,
    effectiveOrder: opts?.effectiveOrder ?? effectiveDefault,
    maxNgramOrder: opts?.maxNgramOrder ?? 4,
  };
}

function signatureOf(o: ResolvedOptions, nrefs: number | 'var'): string {
  let smooth: string = o.smoothMethod;
  const def = SMOOTH_DEFAULTS[o.smoothMethod];
  if (def !== null) smooth += `[${formatFixed(o.smoothValue ?? def, 2)}]`;
  return [
    `nrefs:${nrefs}`,
    `case:${o.lowercase ? 'lc' : 'mixed'}`,
    `eff:${o.effectiveOrder ? 'yes' : 'no'}`,
    `tok:${o.tokenize}`,
    `smooth:${smooth}`,
    `version:${SIGNATURE_VERSION}`,
  ].join('|');
}

/**
 * sacreBLEU's `BLEU.compute_bleu` from sufficient statistics (counts/totals are copied; as in
 * sacreBLEU, 'add-k' adds k to counts and totals of orders n >= 2 and the score reports them so).
 */
export function computeBleu(
  correct: readonly number[],
  total: readonly number[],
  sysLen: number,
  refLen: number,
  opts: {
    smoothMethod?: SmoothMethod;
    smoothValue?: number | null;
    effectiveOrder?: boolean;
    maxNgramOrder?: number;
    signature?: string;
  } = {},
): BleuScore {
  const smoothMethod = opts.smoothMethod ?? 'none';
  const maxOrder = opts.maxNgramOrder ?? 4;
  const effectiveOrder = opts.effectiveOrder ?? false;
  const smoothValue = opts.smoothValue ?? SMOOTH_DEFAULTS[smoothMethod] ?? 0;
  const counts = correct.slice();
  const totals = total.slice();

  let bp = 1.0;
  if (sysLen < refLen) bp = sysLen > 0 ? Math.exp(1 - refLen / sysLen) : 0.0;

  const precisions = new Array<number>(maxOrder).fill(0);
  let score = 0.0;
  if (counts.some((c) => c !== 0)) {
    let smoothMteval = 1.0;
    let effOrder = maxOrder;
    for (let n = 1; n <= maxOrder; n++) {
      if (smoothMethod === 'add-k' && n > 1) {
        counts[n - 1] += smoothValue;
        totals[n - 1] += smoothValue;
      }
      if (totals[n - 1] === 0) break;
      if (effectiveOrder) effOrder = n;
      if (counts[n - 1] === 0) {
        if (smoothMethod === 'exp') {
          smoothMteval *= 2;
          precisions[n - 1] = 100.0 / (smoothMteval * totals[n - 1]);
        } else if (smoothMethod === 'floor') {
          precisions[n - 1] = (100.0 * smoothValue) / totals[n - 1];
        }
      } else {
        precisions[n - 1] = (100.0 * counts[n - 1]) / totals[n - 1];
      }
    }
    let sum = 0;
    for (let i = 0; i < effOrder; i++) sum += myLog(precisions[i]);
    score = bp * Math.exp(sum / effOrder);
  }
  return makeScore(score, counts, totals, precisions, bp, sysLen, refLen, opts.signature ?? '');
}

function makeScore(
  score: number,
  counts: number[],
  totals: number[],
  precisions: number[],
  bp: number,
  sysLen: number,
  refLen: number,
  signature: string,
): BleuScore {
  const ratio = refLen ? sysLen / refLen : 0;
  const text =
    `BLEU = ${formatFixed(score, 2)} ${precisions.map((p) => formatFixed(p, 1)).join('/')} ` +
    `(BP = ${formatFixed(bp, 3)} ratio = ${formatFixed(ratio, 3)} hyp_len = ${sysLen} ref_len = ${refLen})`;
  return { score, counts, totals, precisions, bp, sysLen, refLen, ratio, signature, toString: () => text };
}

function preprocess(o: ResolvedOptions, sent: string): string {
  if (o.lowercase) sent = sent.toLowerCase();
  return tokenizeWith(o.tokenize, pyRstrip(sent));
}

/** One segment's sufficient statistics (sacreBLEU `_compute_segment_statistics`): what corpus BLEU sums. */
export interface SegmentStats {
  /** Clipped n-gram matches per order. */
  correct: number[];
  /** Hypothesis n-grams per order. */
  total: number[];
  /** Hypothesis length in tokens. */
  sysLen: number;
  /** Length of the reference closest in length to the hypothesis (ties to the shorter). */
  refLen: number;
}

/** Per-segment statistics and the set of reference counts seen (for the signature's nrefs). */
function segmentScores(
  hypotheses: readonly string[],
  streams: readonly (readonly (string | null)[])[],
  o: ResolvedOptions,
): { segments: SegmentStats[]; numRefs: Set<number> } {
  if (streams.length === 0) throw new Error('BLEU: no references given');
  const maxOrder = o.maxNgramOrder;
  const segments: SegmentStats[] = [];
  const numRefs = new Set<number>();
  for (let i = 0; i < hypotheses.length; i++) {
    // Reference info (sacreBLEU `_extract_reference_info`): max count of each n-gram over the references.
    const ref: RefInfo = { ngrams: new Map(), lens: [] };
    let nr = 0;
    for (const s of streams) {
      const line = s[i];
      if (line === null || line === undefined) continue;
      nr++;
      const { counts, len } = extractNgrams(preprocess(o, line), maxOrder);
      ref.lens.push(len);
      for (const [g, c] of counts) {
        const prev = ref.ngrams.get(g) ?? 0;
        if (c > prev) ref.ngrams.set(g, c);
      }
    }
    numRefs.add(nr);
    segments.push(matchStats(extractNgrams(preprocess(o, hypotheses[i]), maxOrder), ref, maxOrder));
  }
  return { segments, numRefs };
}

/** A hypothesis's clipped n-gram matches against a reference's (max) counts: one segment's statistics. */
function matchStats(hyp: { counts: Map<string, number>; len: number }, ref: RefInfo, maxOrder: number): SegmentStats {
  const seg: SegmentStats = {
    correct: new Array<number>(maxOrder).fill(0),
    total: new Array<number>(maxOrder).fill(0),
    sysLen: hyp.len,
    refLen: closestRefLen(hyp.len, ref.lens),
  };
  for (const [g, c] of hyp.counts) {
    const n = ngramOrder(g) - 1;
    seg.total[n] += c;
    const r = ref.ngrams.get(g);
    if (r !== undefined) seg.correct[n] += Math.min(c, r);
  }
  return seg;
}

/** Corpus BLEU from summed segment statistics: all segments, or those at `indices` (repeats allowed). */
function scoreSegments(
  segments: readonly SegmentStats[],
  o: ResolvedOptions,
  signature: string,
  indices?: ArrayLike<number>,
): BleuScore {
  const maxOrder = o.maxNgramOrder;
  const correct = new Array<number>(maxOrder).fill(0);
  const total = new Array<number>(maxOrder).fill(0);
  let sysLen = 0;
  let refLen = 0;
  const count = indices ? indices.length : segments.length;
  for (let k = 0; k < count; k++) {
    const seg = segments[indices ? indices[k] : k];
    sysLen += seg.sysLen;
    refLen += seg.refLen;
    for (let n = 0; n < maxOrder; n++) {
      correct[n] += seg.correct[n];
      total[n] += seg.total[n];
    }
  }
  return computeBleu(correct, total, sysLen, refLen, {
    smoothMethod: o.smoothMethod,
    smoothValue: o.smoothValue,
    effectiveOrder: o.effectiveOrder,
    maxNgramOrder: maxOrder,
    signature,
  });
}

/** Reference streams (sacreBLEU `refs`); `null` entries allow a variable number of references per segment. */
function corpusScore(
  hypotheses: readonly string[],
  streams: readonly (readonly (string | null)[])[],
  o: ResolvedOptions,
): BleuScore {
  const { segments, numRefs } = segmentScores(hypotheses, streams, o);
  return scoreSegments(segments, o, signatureOf(o, nrefsOf(numRefs, streams.length)));
}

/** The signature's `nrefs`: the references each segment had, `var` where that differs (sacreBLEU's rule). */
export function nrefsOf(numRefs: ReadonlySet<number>, streams: number): number | 'var' {
  return numRefs.size === 1 ? [...numRefs][0] : numRefs.size === 0 ? streams : 'var';
}

/**
 * sacreBLEU's reference streams from either form a metric accepts: one string per hypothesis, or
 * streams; each stream must have a line per hypothesis (`metric` names the caller in the error).
 */
export function toStreams(
  metric: string,
  hypotheses: readonly string[],
  references: readonly string[] | readonly (readonly (string | null)[])[],
): readonly (readonly (string | null)[])[] {
  const streams =
    references.length > 0 && Array.isArray(references[0])
      ? (references as readonly (readonly (string | null)[])[])
      : references.length === 0 && hypotheses.length > 0
        ? []
        : [references as readonly string[]];
  for (const [k, s] of streams.entries()) {
    if (s.length !== hypotheses.length) {
      throw new Error(
        `${metric}: reference stream ${k} has ${s.length} lines but there are ${hypotheses.length} hypotheses`,
      );
    }
  }
  return streams;
}

/**
 * Each segment's sufficient statistics under corpus-BLEU options: {@link segmentsBleu} over any
 * multiset of them is corpus BLEU of those segments (what a bootstrap resample needs without
 * re-tokenizing).
 */
export function segmentStatistics(
  hypotheses: readonly string[],
  references: readonly string[] | readonly (readonly (string | null)[])[],
  options?: BleuOptions,
): SegmentStats[] {
  return segmentScores(hypotheses, toStreams('BLEU', hypotheses, references), resolve(options, false)).segments;
}

/**
 * Corpus BLEU of the segments at `indices` (every segment if omitted; repeats allowed) from
 * {@link segmentStatistics} made with the same options. The signature is empty: the statistics do
 * not carry the number of references.
 */
export function segmentsBleu(
  segments: readonly SegmentStats[],
  indices?: ArrayLike<number>,
  options?: BleuOptions,
): BleuScore {
  if (segments.length === 0) throw new Error('BLEU: no segment statistics given');
  return scoreSegments(segments, resolve(options, false), '', indices);
}

/**
 * Corpus BLEU, equal to `sacrebleu.corpus_bleu(hypotheses, refs)` (defaults: 13a, cased, 4-grams,
 * smooth 'exp', no effective order, closest reference length with ties to the shorter).
 *
 * `references` is either one reference per hypothesis (`string[]`) or sacreBLEU's reference
 * streams (`string[][]`, each stream as long as `hypotheses`; a `null` entry drops that reference
 * for that segment, making the signature `nrefs:var`).
 */
export function corpusBleu(
  hypotheses: readonly string[],
  references: readonly string[] | readonly (readonly (string | null)[])[],
  options?: BleuOptions,
): BleuScore {
  return corpusScore(hypotheses, toStreams('BLEU', hypotheses, references), resolve(options, false));
}

/**
 * Sentence BLEU of every ordered pair of `sentences`: `m[i][j]` is `sentenceBleu(sentences[i],
 * sentences[j], options).score` (hypothesis i against reference j; the diagonal is left 0), with
 * each sentence tokenized and its n-grams counted once instead of 2(n − 1) times (what MBR over a
 * pool of candidates needs).
 */
export function pairwiseSentenceBleu(sentences: readonly string[], options?: BleuOptions): number[][] {
  const o = resolve(options, true);
  const grams = sentences.map((s) => extractNgrams(preprocess(o, s), o.maxNgramOrder));
  return grams.map((hyp, i) =>
    grams.map((ref, j) =>
      i === j
        ? 0
        : scoreSegments([matchStats(hyp, { ngrams: ref.counts, lens: [ref.len] }, o.maxNgramOrder)], o, '').score,
    ),
  );
}

/**
 * Sentence BLEU, equal to `sacrebleu.sentence_bleu(hypothesis, references)` (smooth 'exp',
 * effective order on). `references` is one string or several references for this sentence.
 */
export function sentenceBleu(
  hypothesis: string,
  references: string | readonly string[],
  options?: BleuOptions,
): BleuScore {
  const o = resolve(options, true);
  const refs = typeof references === 'string' ? [references] : references;
  return corpusScore(
    [hypothesis],
    refs.map((r) => [r]),
    o,
  );
}
