import { record } from '../autograd/engine.ts';
import { shapeToString } from '../tensor/shape.ts';
import { capturing } from '../tensor/storage.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { empty, f32, i32, K, st, zerosF } from './util.ts';

/** Rows of `weight` (num, dim) picked by integer ids of any shape -> (...ids.shape, dim). */
export function embedding(ids: Tensor, weight: Tensor, paddingIdx: number | null = null): Tensor {
  const wd = f32(weight, 'embedding', 'weight');
  if (ids.dtype !== 'int32') throw new Error(`embedding: input ids must be int32, got ${ids.dtype}`);
  if (weight.ndim !== 2)
    throw new Error(`embedding: weight must be 2-D (numEmbeddings, embeddingDim), got ${shapeToString(weight.shape)}`);
  const [num, dim] = weight.shape;
  const idd = i32(ids, 'embedding', 'input');
  // Ids come from the host (a tokenizer); where they can be read at once they are checked here, on other
  // devices they are trusted as a GPU kernel would trust them. Under capture (src/compile) the replay checks them.
  const host = ids.device.readSync && !capturing() ? ids.dataSync<Int32Array>() : null;
  if (host) {
    for (let i = 0; i < host.length; i++) {
      if (host[i] < 0 || host[i] >= num) {
        throw new Error(`embedding: index ${host[i]} at position ${i} is out of range for ${num} embeddings`);
      }
    }
  }
  const pad = paddingIdx === null || paddingIdx === undefined ? -1 : paddingIdx < 0 ? paddingIdx + num : paddingIdx;
  const out = empty([...ids.shape, dim]);
  K().embedding(wd, idd, st(out), dim);
  return record(out, 'embedding', [weight], (g) => {
    const dw = zerosF(weight.shape);
    K().embeddingBackward(st(g), idd, st(dw), dim, pad);
    return [dw];
  });
}
