/**
 * Minimum Bayes risk (MBR) selection (Kumar and Byrne 2004): of a sentence's candidate
 * translations, choose the one that agrees best with the others, instead of the one the model
 * scores highest. Each candidate's expected utility is its mean sentence BLEU against every other
 * candidate as a pseudo-reference (uniform weights: the candidates stand in for samples of the
 * model's distribution, as in Eikema and Aziz 2020 and Freitag et al. 2022). With beam search's
 * pool as the candidates this is `qkv translate --mbr`.
 *
 * Pure string code: runs in Node and in browsers.
 */
import { pairwiseSentenceBleu, type BleuOptions } from './bleu.ts';

/** Options of {@link mbrSelect}. */
export interface MbrOptions {
  /**
   * utility(hypothesis, pseudoReference): higher is better. Default: sentence BLEU as sacreBLEU's
   * `sentence_bleu` (13a, cased, exp smoothing, effective order), with `bleu`'s options.
   */
  utility?: (hypothesis: string, reference: string) => number;
  /** Options of the default sentence-BLEU utility (ignored with `utility`). */
  bleu?: BleuOptions;
}

/** What {@link mbrSelect} chose, and why. */
export interface MbrChoice {
  /** Index of the chosen candidate: the highest expected utility, ties to the earliest. */
  index: number;
  /** Each candidate's expected utility: its mean utility against the other candidates (0 for a lone one). */
  expected: number[];
}

/**
 * The MBR choice among `candidates`, best-first as a search ranks them (ties go to the earlier, so
 * the search's own order breaks them). A lone candidate is chosen as it is.
 */
export function mbrSelect(candidates: readonly string[], options: MbrOptions = {}): MbrChoice {
  const n = candidates.length;
  if (n === 0) throw new Error('mbrSelect: candidates is empty; expected at least one candidate');
  for (let i = 0; i < n; i++) {
    if (typeof candidates[i] !== 'string')
      throw new Error(`mbrSelect: candidates[${i}] must be a string, got ${typeof candidates[i]}`);
  }
  const expected = new Array<number>(n).fill(0);
  if (n === 1) return { index: 0, expected };
  const { utility } = options;
  // The default utility's matrix tokenizes each candidate once, not once per pair.
  const u = utility
    ? candidates.map((h, i) => candidates.map((r, j) => (i === j ? 0 : utility(h, r))))
    : pairwiseSentenceBleu(candidates, options.bleu);
  for (let i = 0; i < n; i++) expected[i] = u[i].reduce((sum, x) => sum + x, 0) / (n - 1); // u[i][i] is 0
  let index = 0;
  for (let i = 1; i < n; i++) if (expected[i] > expected[index]) index = i;
  return { index, expected };
}
