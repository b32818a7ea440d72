/**
 * Paired bootstrap resampling for BLEU (Koehn 2004, "Statistical Significance Tests for Machine
 * Translation Evaluation"): draw the test set's sentences with replacement many times, score both
 * systems on each draw from their per-sentence sufficient statistics, and count how often the
 * system fails to beat the baseline. sacreBLEU's `--paired-bs` resamples the same way (1,000 draws);
 * its p-value is two-sided and centred, this one is Koehn's one-sided count, so the numbers differ.
 *
 * Pure number code: runs in Node and in browsers.
 */
import { segmentStatistics, segmentsBleu } from './bleu.ts';
import type { BleuOptions } from './bleu.ts';

/** Options of {@link pairedBootstrap}. */
export interface PairedBootstrapOptions {
  /** Resamples (default 1,000, as sacreBLEU and Koehn). */
  samples?: number;
  /** Seed of the default resampling stream, mulberry32 (default 12345, sacreBLEU's seed; not numpy's stream). */
  seed?: number;
  /** Uniform numbers in [0, 1) to draw sentences with, instead of the seeded default. */
  random?: () => number;
  /** Corpus-BLEU options for both systems (default sacreBLEU's: 13a, cased, smooth exp). */
  bleu?: BleuOptions;
}

/**
 * The outcome of {@link pairedBootstrap}: both systems' BLEU, the one-sided p-value and the 95% interval of
 * the difference.
 */
export interface PairedBootstrapResult {
  /** Corpus BLEU of the baseline on the full set. */
  baseline: number;
  /** Corpus BLEU of the system on the full set. */
  system: number;
  /** Resamples drawn. */
  samples: number;
  /** Resamples in which the system scores strictly above the baseline. */
  wins: number;
  /**
   * One-sided p-value of "the system is better": (resamples where it is not + 1) / (samples + 1).
   * Small means the system's lead holds across resamples; identical systems give 1.
   */
  p: number;
  /** 95% interval (2.5th and 97.5th percentile) of system − baseline BLEU over the resamples. */
  delta95: [number, number];
}

/** mulberry32: a 32-bit seeded stream, plenty for drawing sentence indices (this layer has no tensor RNG). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Is `system` better than `baseline` on these references, beyond what resampling the sentences explains? */
export function pairedBootstrap(
  baseline: readonly string[],
  system: readonly string[],
  references: readonly string[] | readonly (readonly (string | null)[])[],
  options: PairedBootstrapOptions = {},
): PairedBootstrapResult {
  const samples = options.samples ?? 1000;
  if (!Number.isInteger(samples) || samples < 1)
    throw new Error(`pairedBootstrap: samples must be a positive integer, got ${samples}`);
  if (baseline.length !== system.length) {
    throw new Error(`pairedBootstrap: the baseline has ${baseline.length} lines but the system has ${system.length}`);
  }
  if (baseline.length === 0) throw new Error('pairedBootstrap: no sentences to resample');
  const o = options.bleu ?? {};
  const bl = segmentStatistics(baseline, references, o);
  const sy = segmentStatistics(system, references, o);
  const n = bl.length;
  const random = options.random ?? mulberry32(options.seed ?? 12345);
  const idx = new Int32Array(n);
  const deltas = new Float64Array(samples);
  let wins = 0;
  for (let s = 0; s < samples; s++) {
    for (let k = 0; k < n; k++) idx[k] = Math.floor(random() * n);
    const d = segmentsBleu(sy, idx, o).score - segmentsBleu(bl, idx, o).score;
    deltas[s] = d;
    if (d > 0) wins++;
  }
  deltas.sort();
  const lower = Math.floor(samples / 40);
  return {
    baseline: segmentsBleu(bl, undefined, o).score,
    system: segmentsBleu(sy, undefined, o).score,
    samples,
    wins,
    p: (samples - wins + 1) / (samples + 1),
    delta95: [deltas[lower], deltas[samples - 1 - lower]],
  };
}
