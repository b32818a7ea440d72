/**
 * One worker of the wasm thread pool in a browser: a Web Worker started by threads.ts from the
 * thread that runs qkv (itself a Web Worker, since a page's main thread may not block in
 * `Atomics.wait`), as `new Worker(new URL('./pool-worker.js', import.meta.url), { type: 'module' })`,
 * the pattern bundlers follow to emit this file (Vite finds this .ts from the .js name; the package's
 * dist/ has the .js).
 *
 * Its first message is its WorkerInit (pool-protocol.ts). It instantiates the kernel module on the
 * shared memory, counts itself ready (in the shared cells, and by a message, which the starter
 * awaits), and then never returns to its event loop: it sleeps in `Atomics.wait` on the generation,
 * exactly as a Node worker of the pool does (threads.ts, `workerSource`), so a launch is the same
 * few atomic stores and one notify on either platform, and the caller's join is the same.
 */
import {
  CELLS,
  DONE,
  GENERATION,
  PER_WORKER,
  READY,
  RUNNING,
  SLOT,
  STARTED,
  type WorkerInit,
} from './pool-protocol.ts';

/** This worker's global scope, as far as it is used (the DOM lib types `self` as a window). */
const scope = globalThis as unknown as {
  onmessage: ((e: MessageEvent<WorkerInit>) => void) | null;
  postMessage(message: unknown): void;
};

/**
 * The loop: a wake-up is not a launch, only a generation not run yet is (a late notify for a launch
 * already run must not run it twice; see threads.ts). A kernel that traps marks its slot -2, which
 * the caller reports after the join.
 */
function serve(fns: ((...a: number[]) => void)[], s: Int32Array, a: Float64Array, id: number): never {
  const o = id * SLOT;
  const c = PER_WORKER + id * CELLS;
  let seen = 0;
  for (;;) {
    Atomics.wait(s, GENERATION, seen);
    const generation = Atomics.load(s, GENERATION);
    if (generation === seen) continue;
    seen = generation;
    Atomics.store(s, c + STARTED, generation);
    const f = a[o]!;
    try {
      if (f >= 0) fns[f]!(...a.subarray(o + 2, o + 2 + a[o + 1]!));
    } catch {
      a[o] = -2;
    }
    Atomics.store(s, c + DONE, generation);
    if (Atomics.sub(s, RUNNING, 1) === 1) Atomics.notify(s, RUNNING);
  }
}

scope.onmessage = (e) => {
  scope.onmessage = null;
  const { module, memory, sync, args, id, names } = e.data;
  let fns: ((...a: number[]) => void)[];
  try {
    const k = new WebAssembly.Instance(module, { env: { memory } }).exports;
    fns = names.map((n) => k[n] as (...a: number[]) => void);
  } catch (x) {
    scope.postMessage({ id, error: String((x as Error)?.message ?? x) });
    return;
  }
  const s = new Int32Array(sync);
  Atomics.add(s, READY, 1);
  Atomics.notify(s, READY);
  scope.postMessage({ id, ready: true });
  serve(fns, s, new Float64Array(args), id);
};
