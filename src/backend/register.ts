import { setAllocator } from '../tensor/storage.ts';
import { registerBackend, setBackend } from './backend.ts';
import { jsBackend } from './js/index.ts';
import { persistentAllocator, tryWasmBackend, wasmLoadError } from './wasm/index.ts';
import { memoryShared } from './wasm/memory.ts';

// The js backend is always present: it is the reference and the fallback. The wasm backend is
// registered, and made the default, where its module loads (Node >= 20.16 with WebAssembly SIMD);
// elsewhere everything runs on js until `loadWasmKernels()` loads it (browsers). QKV_BACKEND=js|wasm
// in the environment overrides the default, and setBackend() switches at any time.
registerBackend(jsBackend);
const wasm = tryWasmBackend();
if (wasm) registerBackend(wasm);

const requested = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.QKV_BACKEND;
if (requested) {
  if (requested === 'wasm' && !wasm)
    throw new Error(`QKV_BACKEND=wasm, but the wasm backend did not load: ${wasmLoadError()}`);
  setBackend(requested);
} else if (wasm) {
  setBackend('wasm');
}
// With wasm in use, parameters live in WebAssembly memory (activations stay ordinary arrays),
// if it is shared: a plain memory (no cross-origin isolation) cannot hold long-lived views.
if (wasm && memoryShared && (requested ?? 'wasm') === 'wasm') setAllocator(persistentAllocator);
