/**
 * The wasm backend: the js backend with its kernels replaced by WebAssembly SIMD ones (assembly/),
 * each keeping its js twin as the reference.
 *
 * - GEMM, attention, softmax, layer norm, gelu/relu and cross-entropy run in wasm always: arrays
 *   in wasm memory are used in place, others are copied in and out (the work repays the copy).
 * - Elementwise arithmetic (binary, binaryScalar), dropout's mask, reduceSum, permute, strided
 *   copies, embedding and its backward, and Adam run in wasm only when every float array is already a view into wasm memory, which is
 *   the case in training: parameters, their gradients and Adam's state are long-lived wasm blocks
 *   (`persistentFloat32`), and a step's activations live in wasm memory for the `memoryScope` the
 *   step runs in. With ordinary arrays they call their js twin, since copying would cost about as
 *   much as the work. Layouts these kernels do not cover (general broadcasts and reductions, other
 *   permutes) and unary/pow also stay on js. See src/backend/wasm/kernels.ts.
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
  binary: k.binary,
  binaryScalar: k.binaryScalar,
  dropoutMask: k.dropoutMask,
  reduceSum: k.reduceSum,
  permute: k.permute,
  copyRows: k.copyRows,
  embedding: k.embedding,
  embeddingBackward: k.embeddingBackward,
  adam: k.adam,
};

/** The backend if its module loads here (synchronously, under Node), else null. */
export function tryWasmBackend(): Backend | null {
  return kernels() ? wasmBackend : null;
}

/**
 * Long-lived blocks are freed when the arrays that use them are garbage-collected. The registry
 * holds the block's address and length and a count of its live views, never an array, so it
 * cannot keep one alive.
 */
interface Held {
  offset: number;
  length: number;
  views: number;
}
const released = new FinalizationRegistry<Held>((held) => {
  if (--held.views === 0) free(new Float32Array(memory.buffer, held.offset, held.length));
});

function retainUntilCollected(block: Float32Array, views: Float32Array[]): void {
  const held: Held = { offset: block.byteOffset, length: block.length, views: views.length };
  for (const v of views) released.register(v, held);
}

/**
 * Parameters in wasm memory (freed on GC), and the activations of a `memoryScope` too (freed when
 * the scope ends); other tensors stay plain arrays.
 */
export const persistentAllocator: Allocator = {
  float32: (n) => new Float32Array(n),
  persistentFloat32: (n) => {
    const view = alloc(n);
    retainUntilCollected(view, [view]);
    return view;
  },
  scoped: {
    alloc: (n, zero) => alloc(n, zero),
    release: (block) => free(block),
    retain: retainUntilCollected,
  },
};
