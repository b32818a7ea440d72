import type { HostKernels } from '../backend.ts';
import { jsKernels } from './registry.ts';

/** The per-step constants of the update below, computed once for every element (and by the wasm binding). */
export interface AdamConstants {
  /** lr / (1 − β1ᵗ): the first moment's bias correction folded into the step. */
  stepSize: number;
  /** √(1 − β2ᵗ): the second moment's bias correction, applied to √v. */
  bc2Sqrt: number;
  /** What the parameter is multiplied by before the step: 1 − lr·λ for AdamW, else 1. */
  shrink: number;
  /** The L2 coefficient added to the gradient: λ for Adam, 0 for AdamW. */
  l2: number;
}

export function adamConstants(
  lr: number,
  beta1: number,
  beta2: number,
  weightDecay: number,
  decoupled: boolean,
  step: number,
): AdamConstants {
  const bc1 = 1 - beta1 ** step;
  const bc2 = 1 - beta2 ** step;
  return {
    stepSize: lr / bc1,
    bc2Sqrt: Math.sqrt(bc2),
    shrink: decoupled ? 1 - lr * weightDecay : 1,
    l2: decoupled ? 0 : weightDecay,
  };
}

/**
 * Adam (Kingma & Ba) as torch.optim.Adam/AdamW compute it, in place. `step` counts from 1.
 * decoupled = AdamW: weight decay shrinks the parameter directly instead of adding to the gradient.
 */
export const adam: HostKernels['adam'] = (param, grad, m, v, lr, beta1, beta2, eps, weightDecay, decoupled, step) => {
  const { stepSize, bc2Sqrt, shrink, l2 } = adamConstants(lr, beta1, beta2, weightDecay, decoupled, step);
  for (let i = 0; i < param.length; i++) {
    let g = grad[i];
    if (l2 !== 0) g += l2 * param[i];
    const mi = beta1 * m[i] + (1 - beta1) * g;
    const vi = beta2 * v[i] + (1 - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = param[i] * shrink - stepSize * (mi / (Math.sqrt(vi) / bc2Sqrt + eps));
  }
};

jsKernels.register('adam', { adam });
