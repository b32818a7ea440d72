import { record } from '../autograd/engine.ts';
import { shapeToString } from '../tensor/shape.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { empty, f32, K, st } from './util.ts';

/**
 * Rotary position embedding (RoPE, Su et al. 2021), one kernel: x (..., T, D) turned by the angles of its T
 * positions, whose cos and sin are the tables (T, D/2) (nn/rotary.ts makes them), in transformers'
 * rotate_half layout, as its apply_rotary_pos_emb: x·cos + rotate_half(x)·sin with the half-width tables
 * repeated. Feature pairs are (i, i + D/2). Differentiable in x; the tables are constants (they depend on
 * positions only). The gradient turns the output's gradient back by −θ.
 */
export function rotaryEmbedding(x: Tensor, cos: Tensor, sin: Tensor): Tensor {
  const op = 'rotaryEmbedding';
  const k = K();
  const xd = f32(x, op, 'input', k);
  const cd = f32(cos, op, 'cos', k);
  const sd = f32(sin, op, 'sin', k);
  if (x.ndim < 2 || x.shape[x.ndim - 1] % 2 !== 0)
    throw new Error(`${op}: input must be (..., T, D) with D even, got ${shapeToString(x.shape)}`);
  const T = x.shape[x.ndim - 2];
  const D = x.shape[x.ndim - 1];
  for (const [name, t] of [
    ['cos', cos],
    ['sin', sin],
  ] as const) {
    if (t.ndim !== 2 || t.shape[0] !== T || t.shape[1] !== D / 2)
      throw new Error(
        `${op}: ${name} must be (${T}, ${D / 2}) for input ${shapeToString(x.shape)}, got ${shapeToString(t.shape)}`,
      );
  }
  const outer = T * D === 0 ? 0 : x.size / (T * D);
  const out = empty(x.shape, k);
  k.rotary(xd, cd, sd, st(out), outer, T, 1, D, false);
  return record(out, op, [x], (g) => {
    const dx = empty(x.shape);
    K().rotary(st(g), cd, sd, st(dx), outer, T, 1, D, true);
    return [dx];
  });
}
