import type { HostKernels } from '../backend.ts';
import { jsKernels } from './registry.ts';

/**
 * reduced = [sum of the rows' losses (accumulated in float64), divided by count when `mean`; count]. torch
 * returns NaN for a mean over zero counted targets; so does this (0/0).
 */
export function reduceLosses(losses: Float32Array, rows: number, count: number, reduced: Float32Array, mean: boolean) {
  let s = 0;
  for (let i = 0; i < rows; i++) s += losses[i];
  reduced[0] = mean ? s / count : s;
  reduced[1] = count;
}

/** The scale of each row's gradient (see Backend.crossEntropyBackward), rounded as float32 at each step. */
export function rowScales(gradOut: Float32Array, perRow: boolean, reduced: Float32Array | null, rows: number) {
  const rowScale = new Float32Array(rows);
  if (perRow) rowScale.set(gradOut.subarray(0, rows));
  else {
    rowScale.fill(reduced ? 1 / reduced[1] : 1);
    for (let i = 0; i < rows; i++) rowScale[i] *= gradOut[0];
  }
  return rowScale;
}

const kernels = {
  /**
   * Per-row cross-entropy with label smoothing ε over C classes, as torch defines it: the target
   * distribution is (1 − ε)·onehot + ε/C, so loss = (1 − ε)·(−log p_t) + ε/C·Σ_c (−log p_c).
   */
  crossEntropy(logits, targets, losses, reduced, rows, cols, ignoreIndex, labelSmoothing, mean) {
    let count = 0;
    for (let r = 0; r < rows; r++) {
      const t = targets[r];
      if (t === ignoreIndex) {
        losses[r] = 0;
        continue;
      }
      count++;
      const o = r * cols;
      let max = -Infinity;
      for (let j = 0; j < cols; j++) if (logits[o + j] > max) max = logits[o + j];
      let sum = 0;
      let sumLogits = 0;
      for (let j = 0; j < cols; j++) {
        sum += Math.exp(logits[o + j] - max);
        sumLogits += logits[o + j];
      }
      const lse = max + Math.log(sum);
      const nll = lse - logits[o + t];
      const smooth = lse - sumLogits / cols; // mean over classes of −log p_c
      losses[r] = (1 - labelSmoothing) * nll + labelSmoothing * smooth;
    }
    reduceLosses(losses, rows, count, reduced, mean);
  },

  /** dlogits = scale_r·(softmax − (1 − ε)·onehot − ε/C); zero for ignored rows. */
  crossEntropyBackward(logits, targets, gradOut, perRow, reduced, dlogits, rows, cols, ignoreIndex, labelSmoothing) {
    const rowScale = rowScales(gradOut, perRow, reduced, rows);
    const uniform = labelSmoothing / cols;
    for (let r = 0; r < rows; r++) {
      const o = r * cols;
      const t = targets[r];
      if (t === ignoreIndex) {
        dlogits.fill(0, o, o + cols);
        continue;
      }
      let max = -Infinity;
      for (let j = 0; j < cols; j++) if (logits[o + j] > max) max = logits[o + j];
      let sum = 0;
      for (let j = 0; j < cols; j++) sum += Math.exp(logits[o + j] - max);
      const s = rowScale[r];
      for (let j = 0; j < cols; j++) dlogits[o + j] = s * (Math.exp(logits[o + j] - max) / sum - uniform);
      dlogits[o + t] -= s * (1 - labelSmoothing);
    }
  },
} satisfies Pick<HostKernels, 'crossEntropy' | 'crossEntropyBackward'>;

export const { crossEntropy, crossEntropyBackward } = kernels;

jsKernels.register('crossentropy', { crossEntropy, crossEntropyBackward });
