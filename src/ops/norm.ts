import { record } from '../autograd/engine.ts';
import { shapeToString, sizeOf } from '../tensor/shape.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { empty, f32, K, scratch, st, zerosF } from './util.ts';

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
  const k = K();
  const xd = f32(x, 'layerNorm', 'input', k);
  const n = normalizedShape.length;
  if (x.ndim < n || normalizedShape.some((d, i) => d !== x.shape[x.ndim - n + i])) {
    throw new Error(
      `layerNorm: input shape ${shapeToString(x.shape)} does not end with ` +
        `normalizedShape ${shapeToString(normalizedShape)}`,
    );
  }
  const cols = sizeOf(normalizedShape);
  if (weight && sizeOf(weight.shape) !== cols) throw badAffine('weight', normalizedShape, weight);
  if (bias && sizeOf(bias.shape) !== cols) throw badAffine('bias', normalizedShape, bias);
  const rows = cols === 0 ? 0 : x.size / cols;
  const out = empty(x.shape, k);
  const mean = scratch(rows, k);
  const rstd = scratch(rows, k);
  const wd = weight ? f32(weight, 'layerNorm', 'weight', k) : null;
  const bd = bias ? f32(bias, 'layerNorm', 'bias', k) : null;
  k.layerNorm(xd, wd, bd, st(out), mean, rstd, rows, cols, eps);
  const inputs = weight && bias ? [x, weight, bias] : weight ? [x, weight] : bias ? [x, bias] : [x];
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

function badAffine(name: string, normalizedShape: readonly number[], p: Tensor): Error {
  return new Error(
    `layerNorm: ${name} must have shape ${shapeToString(normalizedShape)}, got ${shapeToString(p.shape)}`,
  );
}

/** float32's machine epsilon, torch's default ε of rms_norm (torch.finfo(torch.float32).eps). */
const FLOAT32_EPS = 2 ** -23;

/**
 * RMS normalisation over the trailing `normalizedShape` dims (Zhang & Sennrich 2019), as
 * torch.nn.functional.rms_norm and transformers' LlamaRMSNorm: x / √(mean(x²) + ε) · weight, no mean removed, no
 * bias. eps defaults to float32's machine epsilon, torch's default (Llama's configs set rms_norm_eps). Fused
 * forward and backward: 1/√(mean(x²) + ε) per row is saved.
 */
export function rmsNorm(
  x: Tensor,
  normalizedShape: readonly number[],
  weight?: Tensor | null,
  eps: number = FLOAT32_EPS,
): Tensor {
  const k = K();
  const xd = f32(x, 'rmsNorm', 'input', k);
  const n = normalizedShape.length;
  if (x.ndim < n || normalizedShape.some((d, i) => d !== x.shape[x.ndim - n + i])) {
    throw new Error(
      `rmsNorm: input shape ${shapeToString(x.shape)} does not end with ` +
        `normalizedShape ${shapeToString(normalizedShape)}`,
    );
  }
  if (!(eps >= 0)) throw new Error(`rmsNorm: eps must be >= 0, got ${eps}`);
  const cols = sizeOf(normalizedShape);
  if (weight && sizeOf(weight.shape) !== cols)
    throw new Error(
      `rmsNorm: weight must have shape ${shapeToString(normalizedShape)}, got ${shapeToString(weight.shape)}`,
    );
  const rows = cols === 0 ? 0 : x.size / cols;
  const out = empty(x.shape, k);
  const rstd = scratch(rows, k);
  const wd = weight ? f32(weight, 'rmsNorm', 'weight', k) : null;
  k.rmsNorm(xd, wd, st(out), rstd, rows, cols, eps);
  return record(out, 'rmsNorm', weight ? [x, weight] : [x], (g) => {
    const dx = empty(x.shape);
    const dw = weight ? zerosF(weight.shape) : null;
    K().rmsNormBackward(xd, wd, rstd, st(g), st(dx), dw && st(dw), rows, cols);
    return dw ? [dx, dw] : [dx];
  });
}
