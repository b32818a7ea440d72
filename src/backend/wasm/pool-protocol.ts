/**
 * The thread pool's shared cells, one layout for both of its worker kinds: Node's worker_threads
 * (threads.ts evaluates their loop from a string) and a browser's Web Workers (pool-worker.ts).
 * A file of its own, importing nothing, so that a Web Worker of the pool loads only this and its
 * loop, not the backend (whose memory module would reserve a second 4 GiB memory in every worker).
 */

/**
 * Kernels a worker can run (exports of assembly/index.ts that take a range of the work; the
 * elementwise ones take a part of their arrays through offset addresses and a smaller count).
 */
export const PARALLEL_KERNELS = [
  'gemmRows',
  'attentionRange',
  'attentionBackwardRange',
  'adam',
  'binaryFull',
  'binaryRows',
  'gemvNTRange',
  'dropoutMask',
  'crossEntropy',
  'crossEntropyBackward',
  'linearInt8Range',
  'linearQ4Range',
] as const;
export type ParallelKernel = (typeof PARALLEL_KERNELS)[number];

/** Float64 cells per worker: kernel index, argument count, arguments (addresses up to 4 GiB are exact). */
export const SLOT = 32;
export const MAX_THREADS = 8;

/**
 * The shared counters (Int32 cells): the generation (launches so far), the workers still running
 * the current one, the workers that came up, the workers gone; then per worker the last generation
 * it started, the last it finished, and 1 once it has exited. The per-worker cells cost two stores
 * per launch; they are what a failure or the soak's watchdog prints.
 */
export const GENERATION = 0,
  RUNNING = 1,
  READY = 2,
  GONE = 3,
  PER_WORKER = 4;
export const STARTED = 0,
  DONE = 1,
  EXITED = 2,
  CELLS = 3;
/** Int32 cells of the counters' SharedArrayBuffer. */
export const SYNC_INTS = PER_WORKER + CELLS * MAX_THREADS;

/** What a worker is given when it starts (Node: its workerData; a Web Worker: its first message). */
export interface WorkerInit {
  /** The compiled kernel module, instantiated again by each worker on the same memory. */
  module: WebAssembly.Module;
  memory: WebAssembly.Memory;
  /** The counters above (Int32 cells). */
  sync: SharedArrayBuffer;
  /** SLOT float64 cells per worker: its kernel's index in `names` (-1: none), argument count, arguments. */
  args: SharedArrayBuffer;
  /** The worker's index, 0-based. */
  id: number;
  /** PARALLEL_KERNELS, as sent. */
  names: string[];
}
