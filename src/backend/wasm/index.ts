/**
 * The wasm backend: the js backend with its hot kernels replaced by WebAssembly SIMD ones
 * (assembly/). Kernels not listed here (elementwise arithmetic, reductions, permute, embedding,
 * Adam) stay on js: with tensors in ordinary arrays, copying them into wasm memory and back costs
 * about as much as the work itself, which V8 already compiles to tight loops.
 */
import type { Backend } from '../backend.ts';
import { jsBackend } from '../js/index.ts';
import { wasmGemm } from './gemm.ts';
import * as k from './kernels.ts';
import { kernels } from './loader.ts';
import type { Allocator } from '../../tensor/storage.ts';
import { alloc, free, memory } from './memory.ts';

export { wasmLoadError, loadWasmKernels } from './loader.ts';

export const wasmBackend: Backend = {
  ...jsBackend,
  name: 'wasm',
  gemm: wasmGemm,
  softmax: k.softmax,
  softmaxBackward: k.softmaxBackward,
  logSoftmax: k.logSoftmax,
  logSoftmaxBackward: k.logSoftmaxBackward,
  layerNorm: k.layerNorm,
  layerNormBackward: k.layerNormBackward,
  relu: k.relu,
  reluBackward: k.reluBackward,
  gelu: k.gelu,
  geluBackward: k.geluBackward,
  crossEntropy: k.crossEntropy,
  crossEntropyBackward: k.crossEntropyBackward,
  attention: k.attention,
  attentionBackward: k.attentionBackward,
};

/** The backend if its module loads here (synchronously, under Node), else null. */
export function tryWasmBackend(): Backend | null {
  return kernels() ? wasmBackend : null;
}

/**
 * Parameters in wasm memory: ordinary tensors stay plain arrays, long-lived ones get a block that
 * is freed when its array is garbage-collected (the registry holds the block's address and length,
 * never the array, so it cannot keep it alive).
 */
const released = new FinalizationRegistry<{ offset: number; length: number }>(({ offset, length }) => {
  free(new Float32Array(memory.buffer, offset, length));
});

export const persistentAllocator: Allocator = {
  float32: (n) => new Float32Array(n),
  persistentFloat32: (n) => {
    const view = alloc(n);
    released.register(view, { offset: view.byteOffset, length: view.length });
    return view;
  },
};
