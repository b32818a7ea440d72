import type { Tensor } from '../tensor/tensor.ts';

/**
 * Scale all gradients together so their global L2 norm is at most maxNorm
 * (torch.nn.utils.clip_grad_norm_, which uses clip_coef = maxNorm / (norm + 1e-6)).
 * Returns the norm before clipping.
 */
export function clipGradNorm(params: Iterable<Tensor>, maxNorm: number): number {
  const grads = [...params].flatMap((p) => (p.grad ? [p.grad.dataSync<Float32Array>()] : []));
  let sq = 0;
  for (const g of grads) for (let i = 0; i < g.length; i++) sq += g[i] * g[i];
  const norm = Math.sqrt(sq);
  const coef = maxNorm / (norm + 1e-6);
  if (coef < 1) for (const g of grads) for (let i = 0; i < g.length; i++) g[i] *= coef;
  return norm;
}
