import type { HostKernels } from '../backend.ts';
import { jsKernels } from './registry.ts';

export const embedding: HostKernels['embedding'] = (weight, ids, out, dim) => {
  for (let i = 0; i < ids.length; i++) {
    const src = ids[i] * dim;
    out.set(weight.subarray(src, src + dim), i * dim);
  }
};

/** Scatter-add of the output gradient into the rows that were gathered; the padding row gets none. */
export const embeddingBackward: HostKernels['embeddingBackward'] = (dy, ids, dweight, dim, paddingIdx) => {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (id === paddingIdx) continue;
    const dst = id * dim;
    const src = i * dim;
    for (let j = 0; j < dim; j++) dweight[dst + j] += dy[src + j];
  }
};

jsKernels.register('embedding', { embedding, embeddingBackward });
