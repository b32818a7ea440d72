import { record } from '../autograd/engine.ts';
import { broadcastStrides, normAxis, type Shape, sameShape, sizeOf } from '../tensor/shape.ts';
import { type Tensor, full } from '../tensor/tensor.ts';
import type { I32 } from '../backend/backend.ts';
import type { Storage } from '../tensor/storage.ts';
import { empty, f32, i32, K, st, zerosOf } from './util.ts';

/** Sum a broadcast gradient back down to `shape` (the rule every broadcasting op's backward needs). */
export function sumToShape(g: Tensor, shape: Shape): Tensor {
  if (sameShape(g.shape, shape)) return g;
  const lead = g.ndim - shape.length;
  const keep = g.shape.map((d, i) => (i < lead ? 1 : shape[i - lead] === 1 ? 1 : d));
  const out = empty(keep);
  K().reduceSum(st(g), g.shape, st(out), keep);
  return out.detach().reshape(shape);
}

/** Copy g (reduced shape, keepdim layout) back to `shape` by broadcasting. */
function broadcastBack(g: Tensor, keepShape: Shape, shape: Shape, factor: number): Tensor {
  const out = empty(shape);
  const scale = full([1], factor);
  K().binary(
    'mul',
    st(g),
    broadcastStrides(keepShape, shape),
    st(scale),
    shape.map(() => 0),
    st(out),
    shape,
  );
  return out;
}

function reduceShapes(x: Tensor, dim: number | number[] | undefined, keepdim: boolean, op: string) {
  const dims =
    dim === undefined
      ? x.shape.map((_, i) => i)
      : (Array.isArray(dim) ? dim : [dim]).map((d) => normAxis(d, x.ndim, op));
  const keepShape = x.shape.map((d, i) => (dims.includes(i) ? 1 : d));
  const outShape = keepdim ? keepShape : x.shape.filter((_, i) => !dims.includes(i));
  const count = dims.reduce((n, d) => n * x.shape[d], 1);
  return { keepShape, outShape, count };
}

/** Sum over `dim` (all dims if omitted), like torch.sum. */
export function sum(x: Tensor, dim?: number | number[], keepdim = false): Tensor {
  const xd = f32(x, 'sum', 'input');
  const { keepShape, outShape } = reduceShapes(x, dim, keepdim, 'sum');
  const out = empty(keepShape);
  K().reduceSum(xd, x.shape, st(out), keepShape);
  const res = out.reshape(outShape);
  return record(res, 'sum', [x], (g) => [broadcastBack(g, keepShape, x.shape, 1)]);
}

/** The mean over `dim` (one dim or several; all when omitted), keeping reduced dims as 1 with `keepdim`. */
export function mean(x: Tensor, dim?: number | number[], keepdim = false): Tensor {
  const xd = f32(x, 'mean', 'input');
  const { keepShape, outShape, count } = reduceShapes(x, dim, keepdim, 'mean');
  const out = empty(keepShape);
  K().reduceSum(xd, x.shape, st(out), keepShape);
  K().binaryScalar('div', st(out), count, st(out), false); // in place, rounded once to float32
  const res = out.reshape(outShape);
  return record(res, 'mean', [x], (g) => [broadcastBack(g, keepShape, x.shape, 1 / count)]);
}

/**
 * A bool mask of int32 ids equal to `value` (torch.eq with a number, for ids): how padding masks are made on
 * the ids' own device, with no read back to the host.
 */
export function eq(x: Tensor, value: number): Tensor {
  const xd = i32(x, 'eq', 'input');
  if (!Number.isInteger(value)) throw new Error(`eq: value must be an integer id, got ${value}`);
  const out = zerosOf(x.shape, 'bool');
  K().equalScalar(xd, value, out.storage as Storage<'bool'>, x.size);
  return out;
}

/** Index of the largest value along the last dim (int32, no gradient). */
export function argmax(x: Tensor): Tensor {
  const xd = f32(x, 'argmax', 'input');
  const c = x.shape[x.ndim - 1];
  const rows = sizeOf(x.shape) / c;
  const out = zerosOf(x.shape.slice(0, -1), 'int32');
  K().argmax(xd, out.storage as I32, rows, c);
  return out;
}
