/**
 * The reference backend: plain TypeScript, one file per kernel family, the oracle for every fast
 * kernel. Each family file registers its kernels with `jsKernels`; importing them all builds it.
 */
import { type Backend, registerBackend } from '../backend.ts';
import './gemm.ts';
import './softmax.ts';
import './layernorm.ts';
import './rmsnorm.ts';
import './rotary.ts';
import './elementwise.ts';
import './attention.ts';
import './crossentropy.ts';
import './embedding.ts';
import './layout.ts';
import './adam.ts';
import './quantized.ts';
import { plainHost } from '../../tensor/storage.ts';
import { firstLoadError, infoOf, registerBackendInfo } from '../info.ts';
import { jsKernels } from './registry.ts';

export const jsBackend: Backend = jsKernels.build(plainHost);

registerBackend(jsBackend);
registerBackendInfo('js', () => {
  const failed = firstLoadError();
  const why = failed
    ? `the ${failed.name} backend did not load: ${failed.why}`
    : 'the js backend was chosen (QKV_BACKEND=js or setBackend)';
  return {
    backend: 'js',
    wasmVariant: infoOf('wasm')?.wasmVariant ?? null,
    threads: 1,
    reason: `${why}; js runs on one thread`,
  };
});
