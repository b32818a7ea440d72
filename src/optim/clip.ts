import { type F32, getBackend } from '../backend/backend.ts';
import * as F from '../ops/index.ts';
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

/**
 * clipGradNorm for gradients on any device (a GPU's read back only asynchronously): each gradient's sum of
 * squares is computed where it lives, the P sums are read back in one read and added on the host, and the
 * gradients are scaled in place on their device. The norm agrees with clipGradNorm's to float32 summation error.
 */
export async function clipGradNormAsync(params: Iterable<Tensor>, maxNorm: number): Promise<number> {
  const grads = [...params].flatMap((p) => (p.grad ? [p.grad] : []));
  if (grads.length === 0) return 0;
  const sums = F.stack(grads.map((g) => F.sum(F.mul(g, g))));
  let sq = 0;
  for (const v of await sums.data<Float32Array>()) sq += v;
  const norm = Math.sqrt(sq);
  const coef = maxNorm / (norm + 1e-6);
  if (coef < 1)
    for (const g of grads) getBackend().binaryScalar('mul', g.storage as F32, coef, g.storage as F32, false);
  return norm;
}
