/**
 * The one list of backends: each folder registers itself from its own index.ts (its name, its device, how it
 * loads, its line of backendInfo()); this file imports them in order and picks the one to start on. Adding a
 * backend is a folder under src/backend/ and one line here (and its name in `BACKEND_NAMES`).
 */
import { chooseStartingBackend } from './backend.ts';
import { loadErrorOf } from './info.ts';
import './js/index.ts';
import './wasm/index.ts';
import './webgpu/index.ts';

/** Every backend qkv knows, whether or not it loaded here (what QKV_BACKEND may name). */
export const BACKEND_NAMES = ['js', 'wasm', 'webgpu'] as const;

// js is always present (the reference and the fallback); wasm is preferred where its module loads (Node
// >= 20.16 with WebAssembly SIMD; browsers load it with loadWasmKernels()). QKV_BACKEND overrides.
// webgpu loads asynchronously and is never chosen by default (small models are faster on wasm): setBackend
// or QKV_BACKEND=webgpu picks it.
chooseStartingBackend(BACKEND_NAMES, ['wasm', 'js'], loadErrorOf);
