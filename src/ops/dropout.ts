import { record } from '../autograd/engine.ts';
import { getBackend } from '../backend/backend.ts';
import { stridesOf } from '../tensor/shape.ts';
import { defaultGenerator, type Generator } from '../tensor/random.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { empty, f32, st } from './util.ts';

let draws = new Uint32Array(0);
/** A reused buffer for the random words of one mask (grows to the largest call's need). */
function drawBuffer(n: number): Uint32Array {
  if (draws.length < n) draws = new Uint32Array(Math.max(n, 2 * draws.length));
  return draws.subarray(0, n);
}

/**
 * Inverted dropout: zero each element with probability p and scale the survivors by 1/(1 − p), so
 * nothing changes at evaluation time (`training` false returns `x`). Seeded through `generator` (the
 * default one if omitted). Each 32-bit draw decides two elements (16 bits each, so p is resolved to
 * 1/65536): the mask is the hot path of a training step's random numbers, tens of millions per step.
 */
export function dropout(x: Tensor, p = 0.5, training = true, generator: Generator = defaultGenerator): Tensor {
  if (!(p >= 0 && p <= 1)) throw new Error(`dropout: p must be in [0, 1], got ${p}`);
  if (!training || p === 0) return x;
  const xd = f32(x, 'dropout', 'input');
  const keep = empty(x.shape);
  const out = empty(x.shape);
  const kd = st(keep);
  const bits = drawBuffer((x.size + 1) >> 1);
  generator.fillUint32(bits);
  const threshold = Math.round(p * 65536); // keep when the 16 random bits are >= threshold
  getBackend().dropoutMask(bits, threshold, p === 1 ? 0 : 1 / (1 - p), xd, kd, st(out));
  return record(out, 'dropout', [x], (g) => {
    const dx = empty(x.shape);
    const strides = stridesOf(x.shape);
    getBackend().binary('mul', st(g), strides, kd, strides, st(dx), x.shape);
    return [dx];
  });
}
