/**
 * The wasm backend: WebAssembly SIMD kernels (assembly/), one file per kernel family with the js
 * backend's names (gemm, softmax, layernorm, elementwise, attention, crossentropy, embedding,
 * layout, adam), each keeping its js twin as the reference. Each family file declares the exports
 * of its assembly/ twin (loader.ts `declareExports`) and ends by registering its kernels; this
 * file imports them and builds the backend.
 *
 * - GEMM, attention, softmax, layer norm, gelu/relu and cross-entropy run in wasm always: arrays
 *   in wasm memory are used in place, others are copied in and out (the work repays the copy).
 * - Elementwise arithmetic (binary, binaryScalar), dropout's mask, reduceSum, permute, strided
 *   copies, embedding and its backward, and Adam run in wasm only when every float array is
 *   already a view into wasm memory (route.ts), which is the case in training: parameters, their
 *   gradients and Adam's state are long-lived wasm blocks (`persistentFloat32`), and a step's
 *   activations live in wasm memory for the `memoryScope` the step runs in. With ordinary arrays
 *   they call their js twin, since copying would cost about as much as the work. Layouts these
 *   kernels do not cover (general broadcasts and reductions, other permutes) and unary/pow stay
 *   on js.
 * - Large kernels are split among worker threads (threads.ts) where the memory is shared; without
 *   cross-origin isolation it is not, and everything runs on the calling thread (parallel.ts).
 */
import { type Backend, registerBackend, registerLoader, requestedBackend, setBackend } from '../backend.ts';
import { registerBackendInfo, registerLoadError } from '../info.ts';
import { wasmInfo } from './info.ts';
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
import { type Device, hostDevice, hostView } from '../../tensor/storage.ts';
import { kernels, loadKernelsAsync } from './loader.ts';
import { alloc, free, memory, memoryShared } from './memory.ts';
import { startThreads } from './parallel.ts';
import { wasmKernels } from './registry.ts';

import { wasmLoadError } from './loader.ts';

export { wasmLoadError };

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

function retainUntilCollected(block: Float32Array, views: ArrayBufferView[]): void {
  const held: Held = { offset: block.byteOffset, length: block.length, views: views.length };
  for (const v of views) released.register(v, held);
}

const persistent = new WeakSet<object>();

/**
 * The wasm backend's device: host memory (device `cpu`, shared with js) where parameters, gradients and
 * optimizer state live in wasm memory (freed on GC), and so do the activations of a `memoryScope` (freed
 * when the scope ends); other tensors stay plain arrays. With a plain (unshared) memory, which cannot
 * hold long-lived views, every tensor is a plain array.
 */
const wasmDevice: Device = memoryShared
  ? hostDevice({
      persistentFloat32: (n) => {
        const view = alloc(n);
        retainUntilCollected(view, [view]);
        persistent.add(view);
        return view;
      },
      // Quantized weights, so the quantized kernels read them in place (not copied in at every call).
      persistentBytes: (dtype, bytes) => {
        const block = alloc(Math.ceil(bytes / 4));
        const view =
          dtype === 'int8'
            ? new Int8Array(block.buffer, block.byteOffset, bytes)
            : dtype === 'float16'
              ? new Uint16Array(block.buffer, block.byteOffset, bytes / 2)
              : new Uint8Array(block.buffer, block.byteOffset, bytes);
        retainUntilCollected(block, [view]);
        persistent.add(view);
        return view;
      },
      isPersistent: (s) => persistent.has(s),
      // Scoped blocks are the Float32Arrays this device makes (host storage is the array itself).
      scoped: {
        alloc: (n, zero) => alloc(n, zero) as never,
        release: (block) => free(hostView<Float32Array>(block)),
        retain: (block, views) =>
          retainUntilCollected(
            hostView<Float32Array>(block),
            views.map((v) => hostView(v)),
          ),
      },
    })
  : hostDevice();

export const wasmBackend: Backend = wasmKernels.build(wasmDevice);

/** The backend if its module loads here (synchronously, under Node), else null. */
export function tryWasmBackend(): Backend | null {
  return kernels() ? wasmBackend : null;
}

/**
 * Load the wasm kernels asynchronously (browsers; under Node they load on import) and, when they
 * load, register the wasm backend and make it the current one, as it is on Node (unless QKV_BACKEND names
 * another). The module comes from next to the loader, where bundlers emit it (see loader.ts), or from
 * `base`, a folder URL holding qkv-simd.wasm and qkv-relaxed.wasm. Returns whether it loaded; if not,
 * `backendInfo().reason` says why. Without cross-origin isolation it loads and runs single-threaded;
 * with it, in a Web Worker, it resolves once the thread pool's Web Workers have started.
 */
export async function loadWasmKernels(base?: string | URL): Promise<boolean> {
  if (!(await loadKernelsAsync(base))) return false;
  await startThreads();
  registerBackend(wasmBackend);
  const requested = requestedBackend();
  if (requested === undefined || requested === 'wasm') setBackend('wasm');
  return true;
}

// Registers itself where the module loads synchronously (Node); in browsers setBackend('wasm') (or
// loadWasmKernels()) loads it.
if (kernels()) registerBackend(wasmBackend);
registerLoader('wasm', async () => {
  if (!(await loadKernelsAsync())) return null;
  await startThreads();
  return wasmBackend;
});
registerBackendInfo('wasm', wasmInfo);
registerLoadError('wasm', () => (kernels() ? null : (wasmLoadError() ?? 'not loaded (call loadWasmKernels())')));
