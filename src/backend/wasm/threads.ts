/**
 * A pool of worker threads for the GEMM, fused attention, Adam and large elementwise ops, over
 * the shared wasm memory (Node's worker_threads; in a browser, or wherever workers are
 * unavailable, everything runs on the calling thread).
 *
 * Each worker instantiates the same compiled module on the same memory and sleeps in
 * `Atomics.wait` on a generation counter. A launch writes each worker's row range into a shared
 * argument block, bumps the generation and `Atomics.notify`s: a wake-up costs microseconds, not a
 * postMessage round trip. The caller computes its own share, then waits on the count of workers
 * still running. Workers are unref'd so they never keep a process alive.
 *
 * Threads: QKV_THREADS in the environment, else the available parallelism (at most 8);
 * `setNumThreads(n)` changes it (1 = no workers).
 */
import { alloc, memory } from './memory.ts';

interface WorkerLike {
  unref(): void;
  terminate(): Promise<number>;
  on(ev: 'error', f: (e: Error) => void): void;
}
interface WorkerThreads {
  Worker: new (code: string, opts: { eval: true; workerData: unknown; execArgv: string[] }) => WorkerLike;
}

function nodeBuiltin<T>(id: string): T | null {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  try {
    return (proc?.getBuiltinModule?.(id) as T | undefined) ?? null;
  } catch {
    return null;
  }
}

/**
 * Kernels a worker can run (exports of assembly/index.ts that take a range of the work; the
 * elementwise ones take a part of their arrays through offset addresses and a smaller count).
 */
export const PARALLEL_KERNELS = ['gemmRows', 'attentionRange', 'attentionBackwardRange', 'adam', 'binaryFull', 'binaryRows', 'gemvNTRange', 'dropoutMask', 'crossEntropy', 'crossEntropyBackward'] as const;
export type ParallelKernel = (typeof PARALLEL_KERNELS)[number];

/** Float64 cells per worker: kernel index, argument count, arguments (addresses up to 4 GiB are exact). */
const SLOT = 32;
const MAX_THREADS = 8;

/**
 * The worker's loop. A wake-up is not a launch: only a generation it has not run yet is. The
 * caller bumps the generation and then notifies, and a worker that was not yet asleep sees the new
 * generation without the notify, runs it and goes back to sleep; the notify, if the caller was
 * slow to send it, then wakes it for a generation it has already run. Running it again would
 * decrement the count of running workers below zero (the caller then waits forever: a training
 * run hung this way after 30 steps) or race the caller on the outputs. Exported for the test.
 */
export const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { module, memory, sync, args, id, names } = workerData;
const k = new WebAssembly.Instance(module, { env: { memory } }).exports;
const fns = names.map((n) => k[n]);
const s = new Int32Array(sync);
const a = new Float64Array(args);
const o = id * ${SLOT};
Atomics.add(s, 2, 1); // ready
Atomics.notify(s, 2);
let seen = 0;
for (;;) {
  Atomics.wait(s, 0, seen);
  const generation = Atomics.load(s, 0);
  if (generation === seen) continue; // a late notify for a launch already run
  seen = generation;
  const f = a[o];
  try {
    if (f >= 0) fns[f](...a.subarray(o + 2, o + 2 + a[o + 1]));
  } catch {
    a[o] = -2; // a trap: reported by the caller after the join
  }
  if (Atomics.sub(s, 1, 1) === 1) Atomics.notify(s, 1);
}
`;

function defaultThreads(): number {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.QKV_THREADS;
  if (env !== undefined && Number.isInteger(Number(env)) && Number(env) >= 1) return Math.min(Number(env), MAX_THREADS);
  const os = nodeBuiltin<{ availableParallelism?: () => number; cpus(): unknown[] }>('node:os');
  if (!os) return 1;
  return Math.max(1, Math.min(os.availableParallelism?.() ?? os.cpus().length, MAX_THREADS));
}

let wanted = defaultThreads();
let pool: { workers: WorkerLike[]; sync: Int32Array; args: Float64Array; scratch: number[]; module: WebAssembly.Module } | null = null;
let broken = false;

/** Threads used by the GEMM (the caller included). */
export function numThreads(): number {
  return wanted;
}

/** Use n threads (the caller plus n − 1 workers); 1 turns the pool off. */
export function setNumThreads(n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new Error(`setNumThreads: expected an integer >= 1, got ${n}`);
  wanted = Math.min(n, MAX_THREADS);
  if (pool && pool.workers.length !== wanted - 1) {
    for (const w of pool.workers) void w.terminate();
    pool = null;
  }
}

/**
 * Workers for `module` (started on first use), or null when there is no pool: one thread wanted,
 * no worker_threads here, or workers failed to start.
 */
function getPool(module: WebAssembly.Module, scratchFloats: number): typeof pool {
  if (wanted <= 1 || broken) return null;
  if (pool && pool.module === module) return pool;
  if (pool) for (const w of pool.workers) void w.terminate();
  pool = null;
  const wt = nodeBuiltin<WorkerThreads>('node:worker_threads');
  if (!wt) {
    broken = true;
    return null;
  }
  try {
    const n = wanted - 1;
    const sync = new SharedArrayBuffer(12); // [generation, workers still running, workers ready]
    const args = new SharedArrayBuffer(8 * SLOT * n);
    const scratch = Array.from({ length: n }, () => alloc(scratchFloats, false).byteOffset);
    const workers = Array.from({ length: n }, (_, id) => {
      // execArgv: [] — the worker runs plain JS; inheriting loader flags (e.g. tsx's --import) can
      // make its start-up wait on the main thread, which is blocked in Atomics.wait below.
      const w = new wt.Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: { module, memory, sync, args, id, names: [...PARALLEL_KERNELS] } });
      w.unref();
      w.on('error', () => {
        broken = true;
      });
      return w;
    });
    // Wait (bounded) until every worker is listening, so a launch can never block on a worker
    // that failed to start; if they do not come up, run single-threaded.
    const s = new Int32Array(sync);
    const deadline = Date.now() + 10_000;
    for (let ready = Atomics.load(s, 2); ready < n; ready = Atomics.load(s, 2)) {
      const left = deadline - Date.now();
      if (left <= 0) {
        for (const w of workers) void w.terminate();
        broken = true;
        return null;
      }
      Atomics.wait(s, 2, ready, left);
    }
    pool = { workers, sync: s, args: new Float64Array(args), scratch, module };
    return pool;
  } catch {
    broken = true;
    return null;
  }
}

/** Below this many flops work runs on the calling thread (a launch costs ~10-50 µs). */
const MIN_FLOPS = 1 << 22;

/**
 * How many parts to split work of `flops` into: 1 (the caller alone) when it is small or there is
 * no pool, else the caller plus every worker. `gemmScratchFloats` sizes each worker's GEMM scratch.
 */
export function partsFor(module: WebAssembly.Module, gemmScratchFloats: number, flops: number): number {
  if (flops < MIN_FLOPS) return 1;
  const p = getPool(module, gemmScratchFloats);
  return p ? p.workers.length + 1 : 1;
}

/** The GEMM scratch address of worker w (after partsFor returned > 1). */
export function workerGemmScratch(w: number): number {
  return pool!.scratch[w]!;
}

/**
 * Run `kernel` with `args[w]` on worker w (null: that worker sits this one out) while the caller
 * runs `own()`, and return when all are done. Only after partsFor(...) > 1.
 */
export function runParallel(kernel: ParallelKernel, args: (number[] | null)[], own: () => void): void {
  const p = pool!;
  const f = PARALLEL_KERNELS.indexOf(kernel);
  for (let w = 0; w < p.workers.length; w++) {
    const o = w * SLOT;
    const a = args[w] ?? null;
    if (a && a.length > SLOT - 2) throw new Error(`runParallel: ${a.length} arguments do not fit`);
    p.args[o] = a ? f : -1;
    p.args[o + 1] = a ? a.length : 0;
    if (a) p.args.set(a, o + 2);
  }
  Atomics.store(p.sync, 1, p.workers.length);
  Atomics.add(p.sync, 0, 1);
  Atomics.notify(p.sync, 0);
  try {
    own();
  } finally {
    for (;;) {
      const left = Atomics.load(p.sync, 1);
      if (left === 0) break;
      Atomics.wait(p.sync, 1, left);
    }
  }
  for (let w = 0; w < p.workers.length; w++) {
    if (p.args[w * SLOT] === -2) throw new Error(`wasm worker ${w}: ${kernel} trapped`);
  }
}
