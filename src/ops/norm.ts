import { record } from '../autograd/engine.ts';
import { shapeToString, sizeOf } from '../tensor/shape.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { empty, f32, K, st, zerosF } from './util.ts';

/**
 * Layer normalisation over the trailing `normalizedShape` dims (Ba et al. 2016; the paper's
 * LayerNorm(x + Sublayer(x)), §3.1). Fused forward and backward: mean and 1/σ per row are saved.
 */
export function layerNorm(
  x: Tensor,
  normalizedShape: readonly number[],
  weight?: Tensor | null,
  bias?: Tensor | null,
  eps = 1e-5,
): Tensor {
  const xd = f32(x, 'layerNorm', 'input');
  const n = normalizedShape.length;
  const tail = x.shape.slice(x.ndim - n);
  if (x.ndim < n || tail.some((d, i) => d !== normalizedShape[i])) {
    throw new Error(
      `layerNorm: input shape ${shapeToString(x.shape)} does not end with ` +
        `normalizedShape ${shapeToString(normalizedShape)}`,
    );
  }
  const cols = sizeOf(normalizedShape);
  for (const [name, p] of [
    ['weight', weight],
    ['bias', bias],
  ] as const) {
    if (p && sizeOf(p.shape) !== cols) {
      throw new Error(
        `layerNorm: ${name} must have shape ${shapeToString(normalizedShape)}, got ${shapeToString(p.shape)}`,
      );
    }
  }
  const rows = cols === 0 ? 0 : x.size / cols;
  const out = empty(x.shape);
  const mean = st(empty([rows]));
  const rstd = st(empty([rows]));
  const wd = weight ? f32(weight, 'layerNorm', 'weight') : null;
  const bd = bias ? f32(bias, 'layerNorm', 'bias') : null;
  K().layerNorm(xd, wd, bd, st(out), mean, rstd, rows, cols, eps);
  const inputs = [x, ...(weight ? [weight] : []), ...(bias ? [bias] : [])];
  return record(out, 'layerNorm', inputs, (g) => {
    const dx = empty(x.shape);
    const dw = weight ? zerosF(weight.shape) : null;
    const db = bias ? zerosF(bias.shape) : null;
    K().layerNormBackward(xd, wd, mean, rstd, st(g), st(dx), dw && st(dw), db && st(db), rows, cols);
    const res: (Tensor | null)[] = [dx];
    if (dw) res.push(dw);
    if (db) res.push(db);
    return res;
  });
}
