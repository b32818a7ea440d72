import { record } from '../autograd/engine.ts';
import { normAxis } from '../tensor/shape.ts';
import { Tensor } from '../tensor/tensor.ts';
import { transpose } from './shape.ts';
import { empty, f32, K } from './util.ts';

function lastDim(x: Tensor, dim: number, op: string, fn: (x: Tensor) => Tensor): Tensor {
  const d = normAxis(dim, x.ndim, op);
  if (d === x.ndim - 1) return fn(x);
  // Move the dim last, apply, move it back (kernels work on contiguous rows).
  return transpose(fn(transpose(x, d, -1)), d, -1);
}

/** softmax along `dim` (default last), max-subtracted for stability. */
export function softmax(x: Tensor, dim = -1): Tensor {
  f32(x, 'softmax', 'input');
  if (x.ndim === 0) throw new Error('softmax: input must have at least 1 dimension');
  return lastDim(x, dim, 'softmax', (t) => {
    const c = t.shape[t.ndim - 1];
    const rows = t.size / c;
    const out = empty(t.shape);
    K().softmax(t.data as Float32Array, out.data as Float32Array, rows, c);
    return record(out, 'softmax', [t], (g) => {
      const dx = empty(t.shape);
      K().softmaxBackward(out.data as Float32Array, g.data as Float32Array, dx.data as Float32Array, rows, c);
      return [dx];
    });
  });
}

export function logSoftmax(x: Tensor, dim = -1): Tensor {
  f32(x, 'logSoftmax', 'input');
  if (x.ndim === 0) throw new Error('logSoftmax: input must have at least 1 dimension');
  return lastDim(x, dim, 'logSoftmax', (t) => {
    const c = t.shape[t.ndim - 1];
    const rows = t.size / c;
    const out = empty(t.shape);
    K().logSoftmax(t.data as Float32Array, out.data as Float32Array, rows, c);
    return record(out, 'logSoftmax', [t], (g) => {
      const dx = empty(t.shape);
      K().logSoftmaxBackward(out.data as Float32Array, g.data as Float32Array, dx.data as Float32Array, rows, c);
      return [dx];
    });
  });
}
