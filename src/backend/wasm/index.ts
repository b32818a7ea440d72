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
