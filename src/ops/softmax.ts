import { record } from '../autograd/engine.ts';
import type { Backend, F32 } from '../backend/backend.ts';
import { normAxis } from '../tensor/shape.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { transpose } from './shape.ts';
import { empty, f32, K, st } from './util.ts';

type RowKernel = (x: F32, out: F32, rows: number, cols: number) => void;
type RowBackward = (y: F32, dy: F32, dx: F32, rows: number, cols: number) => void;

/**
 * A row-wise op along `dim`: kernels work on contiguous rows of the last dim, so any other dim is
 * moved last and back. The backward needs only the output y.
 */
function rowwise(
  x: Tensor,
  dim: number,
  op: string,
  fwd: (k: Backend) => RowKernel,
  bwd: (k: Backend) => RowBackward,
): Tensor {
  f32(x, op, 'input');
  if (x.ndim === 0) throw new Error(`${op}: input must have at least 1 dimension`);
  const d = normAxis(dim, x.ndim, op);
  if (d !== x.ndim - 1) return transpose(rowwise(transpose(x, d, -1), -1, op, fwd, bwd), d, -1);
  const c = x.shape[x.ndim - 1];
  const rows = x.size / c;
  const out = empty(x.shape);
  fwd(K())(st(x), st(out), rows, c);
  return record(out, op, [x], (g) => {
    const dx = empty(x.shape);
    bwd(K())(st(out), st(g), st(dx), rows, c);
    return [dx];
  });
}

/** softmax along `dim` (default last), max-subtracted for stability. */
export function softmax(x: Tensor, dim = -1): Tensor {
  return rowwise(
    x,
    dim,
    'softmax',
    (k) => k.softmax,
    (k) => k.softmaxBackward,
  );
}

/** log(softmax(x)) along `dim`, computed as x − logsumexp(x) (no log of a tiny probability). */
export function logSoftmax(x: Tensor, dim = -1): Tensor {
  return rowwise(
    x,
    dim,
    'logSoftmax',
    (k) => k.logSoftmax,
    (k) => k.logSoftmaxBackward,
  );
}
