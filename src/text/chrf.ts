/**
 * chrF and chrF++ (Popović 2015, 2017), a line-for-line port of sacreBLEU 2.x
 * (`sacrebleu.metrics.chrf.CHRF`, `helpers.extract_all_char_ngrams`, `extract_word_ngrams`), so
 * scores and signatures equal what `sacrebleu.corpus_chrf` / `sacrebleu.sentence_chrf` give with the
 * same options. The character F-score over 1- to 6-grams (spaces removed), recall weighted β = 2
 * times precision; with word n-grams (chrF++) the words' 1- and 2-grams too.
 *
 * Strings are handled as Python does, by code point (an emoji is one character, not two UTF-16
 * units). Pure string and number code: runs in Node and in browsers.
 */
import { formatFixed, nrefsOf, pySplit, SIGNATURE_VERSION, toStreams } from './bleu.ts';

/**
 * Options of {@link corpusChrf} and {@link sentenceChrf}, with sacreBLEU's defaults (chrF2: 6 character
 * orders, no word orders).
 */
export interface ChrfOptions {
  /** Character n-gram order (default 6). */
  charOrder?: number;
  /** Word n-gram order (default 0; 2 is chrF++). */
  wordOrder?: number;
  /** Weight of recall against precision (default 2: chrF2). */
  beta?: number;
  /** Lowercase hypotheses and references first (signature `case:lc`). Default false. */
  lowercase?: boolean;
  /** Keep whitespace inside character n-grams (signature `space:yes`). Default false. */
  whitespace?: boolean;
  /**
   * chrF++.py's ε smoothing (also Moses', NLTK's): every order counts, an unfilled one as ε.
   * Default false: sacreBLEU's default, the orders both sides have (signature `eff:yes`).
   */
  epsSmoothing?: boolean;
}

/** A chrF result with sacreBLEU's fields (`sacrebleu.metrics.chrf.CHRFScore`). */
export interface ChrfScore {
  /** chrF in [0, 100], unrounded. */
  score: number;
  /** `chrF2`, `chrF2++`: β, then a + per word order. */
  name: string;
  /** Character n-gram order used. */
  charOrder: number;
  /** Word n-gram order used (0 for chrF, 2 for chrF++). */
  wordOrder: number;
  /** β used: recall weighs β times as much as precision. */
  beta: number;
  /** Per order (characters 1..charOrder, then words 1..wordOrder): hypothesis n-grams, reference n-grams, matches. */
  statistics: number[];
  /** sacreBLEU's signature, qkv's version: `nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.4.0-qkv`. */
  signature: string;
  /** sacreBLEU's `str(score)`, e.g. `chrF2 = 52.57`. */
  toString(): string;
}

interface Resolved {
  charOrder: number;
  wordOrder: number;
  beta: number;
  lowercase: boolean;
  whitespace: boolean;
  epsSmoothing: boolean;
}

function resolve(o: ChrfOptions = {}): Resolved {
  const r = {
    charOrder: o.charOrder ?? 6,
    wordOrder: o.wordOrder ?? 0,
    beta: o.beta ?? 2,
    lowercase: o.lowercase ?? false,
    whitespace: o.whitespace ?? false,
    epsSmoothing: o.epsSmoothing ?? false,
  };
  for (const k of ['charOrder', 'wordOrder', 'beta'] as const) {
    const min = k === 'wordOrder' ? 0 : 1;
    if (!Number.isInteger(r[k]) || r[k] < min) throw new Error(`chrF: ${k} must be an integer >= ${min}, got ${r[k]}`);
  }
  return r;
}

const PUNCTS = new Set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~');

/** sacreBLEU's `CHRF._remove_punctuation`: one punctuation mark split off the end, else off the start, of each word. */
function removePunctuation(sent: string): string[] {
  const out: string[] = [];
  for (const w of pySplit(sent)) {
    const cps = Array.from(w);
    if (cps.length === 1) out.push(w);
    else if (PUNCTS.has(cps[cps.length - 1])) out.push(cps.slice(0, -1).join(''), cps[cps.length - 1]);
    else if (PUNCTS.has(cps[0])) out.push(cps[0], cps.slice(1).join(''));
    else out.push(w);
  }
  return out;
}

function count(grams: Iterable<string>): Map<string, number> {
  const m = new Map<string, number>();
  for (const g of grams) m.set(g, (m.get(g) ?? 0) + 1);
  return m;
}

function* windows<T>(xs: readonly T[], n: number, join: (part: readonly T[]) => string): Generator<string> {
  for (let i = 0; i + n <= xs.length; i++) yield join(xs.slice(i, i + n));
}

/** Every order's n-gram counts of one (preprocessed) sentence: characters, then words. */
function ngrams(sent: string, o: Resolved): Map<string, number>[] {
  const chars = Array.from(o.whitespace ? sent : pySplit(sent).join(''));
  const out: Map<string, number>[] = [];
  for (let n = 1; n <= o.charOrder; n++) out.push(count(windows(chars, n, (p) => p.join(''))));
  if (o.wordOrder > 0) {
    const words = removePunctuation(sent);
    for (let n = 1; n <= o.wordOrder; n++) out.push(count(windows(words, n, (p) => p.join(' '))));
  }
  return out;
}

/**
 * sacreBLEU's `_get_match_statistics`: [hypothesis n-grams (0 if the reference has none), reference n-grams, matches].
 */
function matchStatistics(hyp: Map<string, number>, ref: Map<string, number>): [number, number, number] {
  let match = 0;
  let hypCount = 0;
  for (const [g, c] of hyp) {
    hypCount += c;
    const r = ref.get(g);
    if (r !== undefined) match += Math.min(c, r);
  }
  let refCount = 0;
  for (const c of ref.values()) refCount += c;
  return [ref.size > 0 ? hypCount : 0, refCount, match];
}

/** sacreBLEU's `_compute_f_score`, operation for operation. */
function fScore(stats: readonly number[], o: Resolved): number {
  const eps = 1e-16;
  const order = o.charOrder + o.wordOrder;
  const factor = o.beta ** 2;
  let score = 0;
  let effectiveOrder = 0;
  let avgPrec = 0;
  let avgRec = 0;
  for (let i = 0; i < order; i++) {
    const [nHyp, nRef, nMatch] = [stats[3 * i], stats[3 * i + 1], stats[3 * i + 2]];
    const prec = nHyp > 0 ? nMatch / nHyp : eps;
    const rec = nRef > 0 ? nMatch / nRef : eps;
    const denom = factor * prec + rec;
    score += denom > 0 ? ((1 + factor) * prec * rec) / denom : eps;
    if (nHyp > 0 && nRef > 0) {
      avgPrec += prec;
      avgRec += rec;
      effectiveOrder++;
    }
  }
  if (o.epsSmoothing) return (100 * score) / order;
  if (effectiveOrder === 0) {
    avgPrec = 0;
    avgRec = 0;
  } else {
    avgPrec /= effectiveOrder;
    avgRec /= effectiveOrder;
  }
  if (avgPrec + avgRec) {
    let s = (1 + factor) * avgPrec * avgRec;
    s /= factor * avgPrec + avgRec;
    return 100 * s;
  }
  return 0;
}

function signatureOf(o: Resolved, nrefs: number | 'var'): string {
  return [
    `nrefs:${nrefs}`,
    `case:${o.lowercase ? 'lc' : 'mixed'}`,
    `eff:${o.epsSmoothing ? 'no' : 'yes'}`,
    `nc:${o.charOrder}`,
    `nw:${o.wordOrder}`,
    `space:${o.whitespace ? 'yes' : 'no'}`,
    `version:${SIGNATURE_VERSION}`,
  ].join('|');
}

function makeScore(stats: number[], o: Resolved, signature: string): ChrfScore {
  const score = fScore(stats, o);
  const name = `chrF${o.beta}${'+'.repeat(o.wordOrder)}`;
  const text = `${name} = ${formatFixed(score, 2)}`;
  return {
    score,
    name,
    charOrder: o.charOrder,
    wordOrder: o.wordOrder,
    beta: o.beta,
    statistics: stats,
    signature,
    toString: () => text,
  };
}

/**
 * Corpus chrF, equal to `sacrebleu.corpus_chrf(hypotheses, refs, ...)` (defaults: chrF2, character
 * 6-grams, no word n-grams, whitespace removed, effective order). The statistics of all segments
 * are summed, then scored once. `references` is one reference per hypothesis (`string[]`) or
 * sacreBLEU's reference streams (`string[][]`; a `null` entry drops that reference for that
 * segment); with several references a segment counts against the one it scores best on.
 */
export function corpusChrf(
  hypotheses: readonly string[],
  references: readonly string[] | readonly (readonly (string | null)[])[],
  options?: ChrfOptions,
): ChrfScore {
  const o = resolve(options);
  const streams = toStreams('chrF', hypotheses, references);
  const pre = (s: string) => (o.lowercase ? s.toLowerCase() : s);
  const order = o.charOrder + o.wordOrder;
  const total = new Array<number>(3 * order).fill(0);
  const numRefs = new Set<number>();
  for (let i = 0; i < hypotheses.length; i++) {
    const refs = streams.map((s) => s[i]).filter((r): r is string => r !== null && r !== undefined);
    if (refs.length === 0) throw new Error(`chrF: segment ${i} has no reference`);
    numRefs.add(refs.length);
    const hyp = ngrams(pre(hypotheses[i]), o);
    let best: number[] = [];
    let bestF = -1;
    for (const ref of refs) {
      const r = ngrams(pre(ref), o);
      const stats = hyp.flatMap((h, n) => matchStatistics(h, r[n]));
      const f = fScore(stats, o);
      if (f > bestF) {
        bestF = f;
        best = stats;
      }
    }
    for (let k = 0; k < total.length; k++) total[k] += best[k];
  }
  return makeScore(total, o, signatureOf(o, nrefsOf(numRefs, streams.length)));
}

/** Sentence chrF, equal to `sacrebleu.sentence_chrf(hypothesis, references, ...)`. */
export function sentenceChrf(
  hypothesis: string,
  references: string | readonly string[],
  options?: ChrfOptions,
): ChrfScore {
  const refs = typeof references === 'string' ? [references] : references;
  return corpusChrf(
    [hypothesis],
    refs.map((r) => [r]),
    options,
  );
}
