import { record } from '../autograd/engine.ts';
import { shapeToString } from '../tensor/shape.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { empty, f32, K } from './util.ts';

/** Rows of `weight` (num, dim) picked by integer ids of any shape -> (...ids.shape, dim). */
export function embedding(ids: Tensor, weight: Tensor, paddingIdx: number | null = null): Tensor {
  const wd = f32(weight, 'embedding', 'weight');
  if (ids.dtype !== 'int32') throw new Error(`embedding: input ids must be int32, got ${ids.dtype}`);
  if (weight.ndim !== 2)
    throw new Error(`embedding: weight must be 2-D (numEmbeddings, embeddingDim), got ${shapeToString(weight.shape)}`);
  const [num, dim] = weight.shape;
  const idd = ids.data as Int32Array;
  for (let i = 0; i < idd.length; i++) {
    if (idd[i] < 0 || idd[i] >= num) {
      throw new Error(`embedding: index ${idd[i]} at position ${i} is out of range for ${num} embeddings`);
    }
  }
  const pad = paddingIdx === null || paddingIdx === undefined ? -1 : paddingIdx < 0 ? paddingIdx + num : paddingIdx;
  const out = empty([...ids.shape, dim]);
  K().embedding(wd, idd, out.data as Float32Array, dim);
  return record(out, 'embedding', [weight], (g) => {
    const dw = empty(weight.shape);
    (dw.data as Float32Array).fill(0);
    K().embeddingBackward(g.data as Float32Array, idd, dw.data as Float32Array, dim, pad);
    return [dw];
  });
}
