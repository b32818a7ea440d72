/**
 * The wasm backend's line of `backendInfo()`: which build, on how many threads, and why not more.
 */
import type { BackendInfo } from '../info.ts';
import { kernels, wasmVariant } from './loader.ts';
import { memoryShared } from './memory.ts';
import { MAX_THREADS, numThreads, poolStatus } from './threads.ts';

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
    if (os) return os.availableParallelism?.() ?? os.cpus().length;
    return (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? null;
  } catch {
    return null;
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
  const pool = poolStatus();
  const one = (reason: string): BackendInfo => ({ backend: 'wasm', wasmVariant: variant, threads: 1, reason });
  if (pool.place === 'page')
    return one(
      "on the page's main thread, which may not block (Atomics.wait): the thread pool runs where qkv runs " +
        'in a Web Worker',
    );
  if (pool.place === 'none') return one('no workers here (neither Node worker_threads nor Web Workers)');
  // A browser's pool: Web Workers, started asynchronously (loadWasmKernels awaits them).
  const web = pool.place === 'worker';
  if (web && numThreads() > 1) {
    if (pool.error !== null) return one(`the thread pool did not start: ${pool.error}`);
    if (pool.running === 1)
      return one(`the thread pool's ${numThreads() - 1} Web Workers are ${pool.starting ? 'starting' : 'not started'}`);
  }
  const n = numThreads();
  const env = node()?.env?.QKV_THREADS;
  const fromEnv = env !== undefined && Math.min(Number(env), MAX_THREADS) === n;
  if (fromEnv && Number(env) > MAX_THREADS)
    return {
      backend: 'wasm',
      wasmVariant: variant,
      threads: n,
      reason: `QKV_THREADS=${env}, at most ${MAX_THREADS} threads`,
    };
  const chosen = fromEnv ? `QKV_THREADS=${env}` : `setNumThreads(${n})`;
  const c = cores();
  // In a page, say that the threads are Web Workers (and, at one thread, why not more as elsewhere).
  const on = web && n > 1 ? 'Web Workers over the shared memory; ' : '';
  if (c !== null && n >= Math.min(c, MAX_THREADS))
    return {
      backend: 'wasm',
      wasmVariant: variant,
      threads: n,
      reason: on + (c > MAX_THREADS ? `at most ${MAX_THREADS} threads` : `${c} core${c === 1 ? '' : 's'}`),
    };
  return { backend: 'wasm', wasmVariant: variant, threads: n, reason: on + chosen };
}
