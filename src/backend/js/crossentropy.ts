import type { Backend } from '../backend.ts';
import { jsKernels } from './registry.ts';

const kernels = {
  /**
   * Per-row cross-entropy with label smoothing ε over C classes, as torch defines it: the target
   * distribution is (1 − ε)·onehot + ε/C, so loss = (1 − ε)·(−log p_t) + ε/C·Σ_c (−log p_c).
   */
  crossEntropy(logits, targets, losses, rows, cols, ignoreIndex, labelSmoothing) {
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
    return count;
  },

  /** dlogits = scale_r·(softmax − (1 − ε)·onehot − ε/C); zero for ignored rows. */
  crossEntropyBackward(logits, targets, rowScale, dlogits, rows, cols, ignoreIndex, labelSmoothing) {
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
} satisfies Pick<Backend, 'crossEntropy' | 'crossEntropyBackward'>;

export const { crossEntropy, crossEntropyBackward } = kernels;

jsKernels.register('crossentropy', { crossEntropy, crossEntropyBackward });
