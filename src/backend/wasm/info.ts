/**
 * The wasm backend's line of `backendInfo()`: which build, on how many threads, and why not more.
 */
import type { BackendInfo } from '../info.ts';
import { kernels, wasmVariant } from './loader.ts';
import { memoryShared } from './memory.ts';
import { MAX_THREADS, numThreads } from './threads.ts';

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

/** The wasm build loaded, or null when the module is not loaded. */
export function loadedVariant(): BackendInfo['wasmVariant'] {
  return kernels() !== null ? wasmVariant() : null;
}

/** Why the thread count is what it is, for the wasm backend. */
export function wasmInfo(): BackendInfo {
  const variant = loadedVariant();
  if (!memoryShared)
    return {
      backend: 'wasm',
      wasmVariant: variant,
      threads: 1,
      reason: 'not cross-origin isolated: SharedArrayBuffer unavailable',
    };
  if (!hasWorkerThreads())
    return {
      backend: 'wasm',
      wasmVariant: variant,
      threads: 1,
      reason: "no worker threads here: the thread pool runs on Node's worker_threads only",
    };
  const n = numThreads();
  const env = node()?.env?.QKV_THREADS;
  const chosen =
    env !== undefined && Math.min(Number(env), MAX_THREADS) === n ? `QKV_THREADS=${env}` : `setNumThreads(${n})`;
  const c = cores();
  if (c !== null && n >= Math.min(c, MAX_THREADS))
    return {
      backend: 'wasm',
      wasmVariant: variant,
      threads: n,
      reason: c > MAX_THREADS ? `at most ${MAX_THREADS} threads` : `${c} core${c === 1 ? '' : 's'}`,
    };
  return { backend: 'wasm', wasmVariant: variant, threads: n, reason: chosen };
}
