/**
 * `backendInfo()`: which backend runs the ops, which wasm build, on how many threads, and why not
 * more, in words, so that a page or a log can say why it is slower than it could be.
 */
import { getBackend } from './backend.ts';
import { kernels, wasmLoadError, wasmVariant, type WasmVariant } from './wasm/loader.ts';
import { memoryShared } from './wasm/memory.ts';
import { numThreads } from './wasm/threads.ts';

/** What {@link backendInfo} reports. */
export interface BackendInfo {
  /** The backend the ops run on now ('js', 'wasm', ...). */
  backend: string;
  /** The wasm build loaded ('relaxed-simd' or 'simd'), or null when the wasm module is not loaded. */
  wasmVariant: WasmVariant | null;
  /** Threads a large kernel is split among, the calling one included. */
  threads: number;
  /**
   * Why not more threads (on js: why not wasm), e.g. "not cross-origin isolated:
   * SharedArrayBuffer unavailable", "setNumThreads(1)", "2 cores".
   */
  reason: string;
}

/** The cap threads.ts puts on its pool. */
const MAX_THREADS = 8;

interface NodeLike {
  env?: Record<string, string | undefined>;
  getBuiltinModule?: (id: string) => unknown;
}

function node(): NodeLike | undefined {
  return (globalThis as { process?: NodeLike }).process;
}

function cores(): number | null {
  try {
    const os = node()?.getBuiltinModule?.('node:os') as
      | { availableParallelism?: () => number; cpus(): unknown[] }
      | undefined;
    return os ? (os.availableParallelism?.() ?? os.cpus().length) : null;
  } catch {
    return null;
  }
}

function hasWorkerThreads(): boolean {
  try {
    return !!node()?.getBuiltinModule?.('node:worker_threads');
  } catch {
    return false;
  }
}

/** Why the thread count is what it is, for the wasm backend. */
function wasmThreads(): { threads: number; reason: string } {
  if (!memoryShared) return { threads: 1, reason: 'not cross-origin isolated: SharedArrayBuffer unavailable' };
  if (!hasWorkerThreads())
    return { threads: 1, reason: "no worker threads here: the thread pool runs on Node's worker_threads only" };
  const n = numThreads();
  const env = node()?.env?.QKV_THREADS;
  const chosen =
    env !== undefined && Math.min(Number(env), MAX_THREADS) === n ? `QKV_THREADS=${env}` : `setNumThreads(${n})`;
  const c = cores();
  if (c !== null && n >= Math.min(c, MAX_THREADS))
    return {
      threads: n,
      reason: c > MAX_THREADS ? `at most ${MAX_THREADS} threads` : `${c} core${c === 1 ? '' : 's'}`,
    };
  return { threads: n, reason: chosen };
}

/**
 * The backend in use, the wasm build, the thread count and the reason it is not higher, read now (they change
 * with setBackend and setNumThreads).
 */
export function backendInfo(): BackendInfo {
  const backend = getBackend().name;
  const loaded = kernels() !== null;
  const variant = loaded ? wasmVariant() : null;
  if (backend === 'wasm') return { backend, wasmVariant: variant, ...wasmThreads() };
  if (backend === 'js') {
    const why = loaded
      ? 'the js backend was chosen (QKV_BACKEND=js or setBackend)'
      : `the wasm backend did not load: ${wasmLoadError() ?? 'not loaded (call loadWasmKernels())'}`;
    return { backend, wasmVariant: variant, threads: 1, reason: `${why}; js runs on one thread` };
  }
  return { backend, wasmVariant: variant, threads: 1, reason: `the ${backend} backend does not use CPU threads` };
}
