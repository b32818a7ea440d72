import { jsKernels } from './registry.ts';

export function embedding(weight: Float32Array, ids: Int32Array, out: Float32Array, dim: number): void {
  for (let i = 0; i < ids.length; i++) {
    const src = ids[i] * dim;
    out.set(weight.subarray(src, src + dim), i * dim);
  }
}

/** Scatter-add of the output gradient into the rows that were gathered; the padding row gets none. */
export function embeddingBackward(
  dy: Float32Array,
  ids: Int32Array,
  dweight: Float32Array,
  dim: number,
  paddingIdx: number,
): void {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (id === paddingIdx) continue;
    const dst = id * dim;
    const src = i * dim;
    for (let j = 0; j < dim; j++) dweight[dst + j] += dy[src + j];
  }
}

jsKernels.register('embedding', { embedding, embeddingBackward });
