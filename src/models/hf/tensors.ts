/**
 * Host-side helpers the Hugging Face key maps share: fusing q/k/v projections into torch's in_proj layout, and
 * checking that a tied copy holds the same values. They read tensors on the host: weights are mapped where a
 * folder is read (on a CPU backend), before a model moves to a GPU.
 */
import { shapeToString } from '../../tensor/shape.ts';
import { Tensor } from '../../tensor/tensor.ts';

/** Whether two tensors hold the same shape and the same values (a tied copy). */
export function sameValues(a: Tensor, b: Tensor): boolean {
  if (shapeToString(a.shape) !== shapeToString(b.shape)) return false;
  const x = a.dataSync<Float32Array>();
  const y = b.dataSync<Float32Array>();
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

/** Tensors stacked along their first dim, [q; k; v] rows as torch.nn.MultiheadAttention's in_proj_weight/bias. */
export function fused(parts: Tensor[]): Tensor {
  const size = parts.reduce((n, p) => n + p.size, 0);
  const out = new Float32Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p.dataSync<Float32Array>(), at);
    at += p.size;
  }
  const rows = parts.reduce((n, p) => n + p.shape[0], 0);
  return new Tensor(out, parts[0].ndim === 2 ? [rows, parts[0].shape[1]] : [rows], 'float32');
}
