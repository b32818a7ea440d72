/**
 * How the binding files split work among threads. The pool itself is threads.ts; this adds the
 * rule that workers need a shared memory: on a plain one (a page without cross-origin isolation,
 * see memory.ts) every kernel runs on the calling thread.
 */
import { gemmScratchFloats, kernels, requireKernels, wasmModule } from './loader.ts';
import { memoryShared } from './memory.ts';
import { partsFor, runParallel, startPool, type ParallelKernel } from './threads.ts';

/**
 * Work (in flop-like units) below which a kernel runs on the calling thread alone, on top of the pool's own
 * floor (threads.ts): a launch and its join cost more than the worker's share saves. Measured with
 * bench/ab-threads.ts (records/latency-profile/README.md, "Thread launches").
 */
let minParallelFlops = 0;

/** Parts to split work of `flops` into (the caller included): 1 when small or single-threaded. */
export function threadsFor(flops: number): number {
  return memoryShared && flops >= minParallelFlops ? partsFor(wasmModule(), gemmScratchFloats(), flops) : 1;
}

/**
 * The work below which kernels run single-threaded (see minParallelFlops); for benches that measure where a
 * launch pays (Infinity: never split). Returns the previous value.
 */
export function setParallelThreshold(flops: number): number {
  if (!(flops >= 0)) throw new Error(`setParallelThreshold: expected a number of flops >= 0, got ${flops}`);
  const prev = minParallelFlops;
  minParallelFlops = flops;
  return prev;
}

/**
 * Flop-like units per byte of weights that a q4 product of a few rows (a decoding step's) unpacks: its cost is in
 * the unpacking, not in the flops, so counted in flops alone a SmolLM2-135M-shaped model's q4 products stayed
 * under the pool's floor and ran on one thread. bench/ab-read.ts measured splitting them by bytes paying for q4
 * and not for fp32 or int8 matrix-vector products (one thread already reads their weights as fast as two;
 * records/compiled, run 4), so only the q4 kernel counts bytes. 0: flops alone (the rule before), for benches.
 */
let readCost = 8;

/** Sets readCost (see there); returns the previous value. */
export function setReadCost(unitsPerByte: number): number {
  if (!(unitsPerByte >= 0)) throw new Error(`setReadCost: expected a number >= 0, got ${unitsPerByte}`);
  const prev = readCost;
  readCost = unitsPerByte;
  return prev;
}

/** The work of a product of `flops` that reads `bytes` of weights, in threadsFor's units. */
export const readWork = (flops: number, bytes: number): number => Math.max(flops, readCost * bytes);

/**
 * Start the thread pool where it starts asynchronously (a browser's Web Workers, from a Web Worker
 * on a cross-origin isolated page) and resolve once it runs or failed; resolves with the threads
 * large kernels are then split among (1 without a shared memory or without the module). On Node
 * the pool starts on first use and this resolves at once.
 */
export function startThreads(): Promise<number> {
  if (!memoryShared || kernels() === null) return Promise.resolve(1);
  return startPool(wasmModule(), gemmScratchFloats());
}

/**
 * Run an elementwise kernel over `units` units (elements, or rows) split among the threads when
 * the work (`units · costPerUnit`, in flop-like units) pays for a launch; `args(u0, u1)` gives the
 * kernel's arguments for units [u0, u1). Parts compute disjoint ranges, each element exactly as
 * one thread would, so the result does not depend on the thread count.
 */
export function splitUnits(
  kernel: ParallelKernel,
  units: number,
  costPerUnit: number,
  args: (u0: number, u1: number) => number[],
): void {
  const f = requireKernels()[kernel] as (...a: number[]) => void;
  const parts = Math.min(units, threadsFor(units * costPerUnit));
  if (parts <= 1) {
    f(...args(0, units));
    return;
  }
  const chunk = Math.ceil(units / parts);
  const list = Array.from({ length: parts - 1 }, (_, w) => {
    const u0 = Math.min(units, (w + 1) * chunk),
      u1 = Math.min(units, (w + 2) * chunk);
    return u1 > u0 ? args(u0, u1) : null;
  });
  runParallel(kernel, list, () => f(...args(0, Math.min(units, chunk))));
}

export { runParallel, workerGemmScratch, type ParallelKernel } from './threads.ts';
