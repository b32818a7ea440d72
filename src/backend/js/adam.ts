import { jsKernels } from './registry.ts';

/**
 * Adam (Kingma & Ba) as torch.optim.Adam/AdamW compute it, in place. `step` counts from 1.
 * decoupled = AdamW: weight decay shrinks the parameter directly instead of adding to the gradient.
 */
export function adam(
  param: Float32Array, grad: Float32Array, m: Float32Array, v: Float32Array, lr: number, beta1: number,
  beta2: number, eps: number, weightDecay: number, decoupled: boolean, step: number,
): void {
  const bc1 = 1 - Math.pow(beta1, step);
  const bc2 = 1 - Math.pow(beta2, step);
  const stepSize = lr / bc1;
  const bc2Sqrt = Math.sqrt(bc2);
  const shrink = decoupled ? 1 - lr * weightDecay : 1;
  const l2 = decoupled ? 0 : weightDecay;
  for (let i = 0; i < param.length; i++) {
    let g = grad[i];
    if (l2 !== 0) g += l2 * param[i];
    const mi = beta1 * m[i] + (1 - beta1) * g;
    const vi = beta2 * v[i] + (1 - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = param[i] * shrink - stepSize * (mi / (Math.sqrt(vi) / bc2Sqrt + eps));
  }
}

jsKernels.register('adam', { adam });
