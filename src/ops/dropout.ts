import { record } from '../autograd/engine.ts';
import { defaultGenerator, type Generator } from '../tensor/random.ts';
import { Tensor } from '../tensor/tensor.ts';
import { empty, f32 } from './util.ts';

/**
 * Inverted dropout: zero each element with probability p and scale the survivors by 1/(1 − p), so
 * nothing changes at evaluation time. Seeded through `generator` (the default one if omitted).
 */
export function dropout(x: Tensor, p = 0.5, training = true, generator: Generator = defaultGenerator): Tensor {
  if (!(p >= 0 && p <= 1)) throw new Error(`dropout: p must be in [0, 1], got ${p}`);
  if (!training || p === 0) return x;
  const xd = f32(x, 'dropout', 'input');
  const keep = empty(x.shape);
  const kd = keep.data as Float32Array;
  const s = p === 1 ? 0 : 1 / (1 - p);
  for (let i = 0; i < kd.length; i++) kd[i] = generator.uniform() >= p ? s : 0;
  const out = empty(x.shape);
  const od = out.data as Float32Array;
  for (let i = 0; i < od.length; i++) od[i] = xd[i] * kd[i];
  return record(out, 'dropout', [x], (g) => {
    const dx = empty(x.shape);
    const gd = g.data as Float32Array;
    const dd = dx.data as Float32Array;
    for (let i = 0; i < dd.length; i++) dd[i] = gd[i] * kd[i];
    return [dx];
  });
}
