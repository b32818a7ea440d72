import type { HostKernels } from '../backend.ts';
import { jsKernels } from './registry.ts';

const kernels = {
  /** LayerNorm over rows of C: y = (x − μ)/√(σ² + ε)·w + b, biased variance as in PyTorch. */
  layerNorm(x, weight, bias, out, mean, rstd, rows, cols, eps) {
    for (let r = 0; r < rows; r++) {
      const o = r * cols;
      let s = 0;
      for (let j = 0; j < cols; j++) s += x[o + j];
      const mu = s / cols;
      let v = 0;
      for (let j = 0; j < cols; j++) {
        const d = x[o + j] - mu;
        v += d * d;
      }
      const rs = 1 / Math.sqrt(v / cols + eps);
      mean[r] = mu;
      rstd[r] = rs;
      for (let j = 0; j < cols; j++) {
        let y = (x[o + j] - mu) * rs;
        if (weight) y *= weight[j];
        if (bias) y += bias[j];
        out[o + j] = y;
      }
    }
  },

  /**
   * With x̂ = (x − μ)·rstd and g = dy·w: dx = rstd·(g − mean(g) − x̂·mean(g·x̂)).
   * dweight += Σ_rows dy·x̂, dbias += Σ_rows dy.
   */
  layerNormBackward(x, weight, mean, rstd, dy, dx, dweight, dbias, rows, cols) {
    for (let r = 0; r < rows; r++) {
      const o = r * cols;
      const mu = mean[r];
      const rs = rstd[r];
      let sg = 0;
      let sgx = 0;
      for (let j = 0; j < cols; j++) {
        const xh = (x[o + j] - mu) * rs;
        const g = weight ? dy[o + j] * weight[j] : dy[o + j];
        sg += g;
        sgx += g * xh;
        if (dweight) dweight[j] += dy[o + j] * xh;
        if (dbias) dbias[j] += dy[o + j];
      }
      sg /= cols;
      sgx /= cols;
      for (let j = 0; j < cols; j++) {
        const xh = (x[o + j] - mu) * rs;
        const g = weight ? dy[o + j] * weight[j] : dy[o + j];
        dx[o + j] = rs * (g - sg - xh * sgx);
      }
    }
  },
} satisfies Pick<HostKernels, 'layerNorm' | 'layerNormBackward'>;

export const { layerNorm, layerNormBackward } = kernels;

jsKernels.register('layernorm', { layerNorm, layerNormBackward });
