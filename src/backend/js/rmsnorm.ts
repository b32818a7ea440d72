import type { HostKernels } from '../backend.ts';
import { jsKernels } from './registry.ts';

const kernels = {
  /**
   * RMS norm over rows of C, as transformers' LlamaRMSNorm: r = 1/√(mean(x²) + ε), y = (x·r)·w. No mean is
   * subtracted and there is no bias (Zhang & Sennrich 2019). The sum of squares is float64 here (the oracle).
   */
  rmsNorm(x, weight, out, rstd, rows, cols, eps) {
    for (let r = 0; r < rows; r++) {
      const o = r * cols;
      let s = 0;
      for (let j = 0; j < cols; j++) s += x[o + j] * x[o + j];
      const rs = 1 / Math.sqrt(s / cols + eps);
      rstd[r] = rs;
      for (let j = 0; j < cols; j++) {
        const y = Math.fround(x[o + j] * rs);
        out[o + j] = weight ? y * weight[j] : y;
      }
    }
  },

  /**
   * With x̂ = x·r and g = dy·w: ∂y/∂x = r·(g − x̂·mean(g·x̂)) (r depends on every x of the row through
   * mean(x²)); dweight += Σ_rows dy·x̂.
   */
  rmsNormBackward(x, weight, rstd, dy, dx, dweight, rows, cols) {
    for (let r = 0; r < rows; r++) {
      const o = r * cols;
      const rs = rstd[r];
      let sgx = 0;
      for (let j = 0; j < cols; j++) {
        const g = weight ? dy[o + j] * weight[j] : dy[o + j];
        sgx += g * x[o + j] * rs;
      }
      const m = sgx / cols;
      for (let j = 0; j < cols; j++) {
        const g = weight ? dy[o + j] * weight[j] : dy[o + j];
        const xh = x[o + j] * rs;
        dx[o + j] = rs * (g - xh * m);
        if (dweight) dweight[j] += dy[o + j] * xh;
      }
    }
  },
} satisfies Pick<HostKernels, 'rmsNorm' | 'rmsNormBackward'>;

export const { rmsNorm, rmsNormBackward } = kernels;

jsKernels.register('rmsnorm', { rmsNorm, rmsNormBackward });
