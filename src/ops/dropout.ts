import { record } from '../autograd/engine.ts';
import { defaultGenerator, type Generator } from '../tensor/random.ts';
import { Tensor } from '../tensor/tensor.ts';
import { empty, f32 } from './util.ts';

/**
 * Inverted dropout: zero each element with probability p and scale the survivors by 1/(1 − p), so
 * nothing changes at evaluation time. Seeded through `generator` (the default one if omitted).
 * Each 32-bit draw decides two elements (16 bits each, so p is resolved to 1/65536): the mask is
 * the hot path of a training step's random numbers, tens of millions per step.
 */
let draws = new Uint32Array(0);
/** A reused buffer for the random words of one mask (grows to the largest call's need). */
function drawBuffer(n: number): Uint32Array {
  if (draws.length < n) draws = new Uint32Array(Math.max(n, 2 * draws.length));
  return draws.subarray(0, n);
}

export function dropout(x: Tensor, p = 0.5, training = true, generator: Generator = defaultGenerator): Tensor {
  if (!(p >= 0 && p <= 1)) throw new Error(`dropout: p must be in [0, 1], got ${p}`);
  if (!training || p === 0) return x;
  const xd = f32(x, 'dropout', 'input');
  const keep = empty(x.shape);
  const kd = keep.data as Float32Array;
  const s = p === 1 ? 0 : 1 / (1 - p);
  const threshold = Math.round(p * 65536); // keep when the 16 random bits are >= threshold
  const out = empty(x.shape);
  const od = out.data as Float32Array;
  const n = kd.length;
  const bits = drawBuffer((n + 1) >> 1);
  generator.fillUint32(bits);
  for (let i = 0, j = 0; i < n; i += 2, j++) {
    const u = bits[j]!;
    const k0 = (u & 0xffff) >= threshold ? s : 0;
    kd[i] = k0;
    od[i] = xd[i]! * k0;
    if (i + 1 < n) {
      const k1 = u >>> 16 >= threshold ? s : 0;
      kd[i + 1] = k1;
      od[i + 1] = xd[i + 1]! * k1;
    }
  }
  return record(out, 'dropout', [x], (g) => {
    const dx = empty(x.shape);
    const gd = g.data as Float32Array;
    const dd = dx.data as Float32Array;
    for (let i = 0; i < dd.length; i++) dd[i] = gd[i] * kd[i];
    return [dx];
  });
}
