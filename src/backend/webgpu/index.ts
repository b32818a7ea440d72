/**
 * The webgpu backend: WGSL kernels on a GPU through WebGPU (browsers; Node with the npm package `webgpu`),
 * one file per kernel family with the js backend's names, each checked against its js twin. Tensors live in
 * GPU buffers and stay there between ops; values come back only through `await t.data()`. It loads
 * asynchronously: `await setBackend('webgpu')` (or QKV_BACKEND=webgpu, awaited by `backendReady()`).
 * See docs/design-backends.md, "The webgpu backend".
 */
import { type Backend, registerLoader } from '../backend.ts';
import { registerBackendInfo, registerLoadError } from '../info.ts';
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
import { GpuContext } from './context.ts';
import { webgpuDevice } from './device.ts';
import { acquireDevice } from './gpu.ts';
import { setGpu, webgpuKernels } from './registry.ts';

let loadError: string | null = null;
let adapter: string | null = null;
let acquiring: Promise<GpuContext | null> | null = null;
let loading: Promise<Backend | null> | null = null;

/**
 * The GPU the kernels run on, acquired once (null, with the reason as the backend's load error, if none):
 * the kernel families' functions can be called once it resolves (kernel tests).
 */
export function acquireContext(): Promise<GpuContext | null> {
  acquiring ??= acquireDevice().then(
    (got) => {
      if ('why' in got) {
        loadError = got.why;
        return null;
      }
      const ctx = new GpuContext(got.device, got.adapter);
      setGpu(ctx);
      adapter = got.adapter;
      return ctx;
    },
    (e: unknown) => {
      loadError = `acquiring the GPU failed: ${(e as Error).message}`;
      return null;
    },
  );
  return acquiring;
}

/** Acquire a GPU and build the backend on it (once); null, with the reason in backendInfo, if there is none. */
function load(): Promise<Backend | null> {
  loading ??= acquireContext().then((ctx) => (ctx === null ? null : webgpuKernels.build(webgpuDevice(ctx))));
  return loading;
}

registerLoader('webgpu', load);
registerBackendInfo('webgpu', () => ({
  backend: 'webgpu',
  wasmVariant: null,
  threads: 1,
  reason: `kernels run on the GPU (${adapter ?? 'no adapter'}); the host thread only records and submits them`,
}));
registerLoadError('webgpu', () => loadError);

/**
 * The webgpu backend if a GPU can be had here, without making it the current backend (for kernel tests and
 * benchmarks); null, with the reason in `backendInfo()`'s load errors, if not.
 */
export function loadWebgpuBackend(): Promise<Backend | null> {
  return load();
}
