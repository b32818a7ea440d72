/**
 * Embedding gather and scatter-add (assembly/embedding.ts) behind the Backend interface, in wasm
 * when the float arrays are wasm views (route.ts), else the js twin. Int32 ids are ordinary
 * arrays and are copied in (they are small).
 */
import type { HostKernels } from '../backend.ts';
import { embedding as jsEmbedding, embeddingBackward as jsEmbeddingBackward } from '../js/embedding.ts';
import { declareExports, sig, type I32, type Ptr } from './loader.ts';
import { wasmKernels } from './registry.ts';
import { inWasm } from './route.ts';
import { staged } from './stage.ts';

const K = declareExports('embedding.ts', {
  embedding: sig<[weight: Ptr, ids: Ptr, out: Ptr, n: I32, dim: I32]>(5),
  embeddingBackward: sig<[dy: Ptr, ids: Ptr, dweight: Ptr, n: I32, dim: I32, paddingIdx: I32]>(6),
});

export const embedding: HostKernels['embedding'] = (weight, ids, out, dim) => {
  if (!inWasm(ids.length * dim > 0, weight, out)) return jsEmbedding(weight, ids, out, dim);
  staged([{ x: ids, mode: 'in' }], 0, ([pid]) =>
    K().embedding(weight.byteOffset, pid!, out.byteOffset, ids.length, dim),
  );
};

export const embeddingBackward: HostKernels['embeddingBackward'] = (dy, ids, dweight, dim, paddingIdx) => {
  if (!inWasm(ids.length * dim > 0, dy, dweight)) return jsEmbeddingBackward(dy, ids, dweight, dim, paddingIdx);
  staged([{ x: ids, mode: 'in' }], 0, ([pid]) =>
    K().embeddingBackward(dy.byteOffset, pid!, dweight.byteOffset, ids.length, dim, paddingIdx),
  );
};

wasmKernels.register('embedding', { embedding, embeddingBackward });
