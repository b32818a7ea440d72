/**
 * A pool of worker threads for the GEMM, fused attention, Adam and large elementwise ops, over
 * the shared wasm memory: Node's worker_threads, or in a browser Web Workers (pool-worker.ts),
 * started from the thread that runs qkv when that thread is itself a Web Worker (a page's main
 * thread may not block in Atomics.wait: there, and wherever workers are unavailable, everything
 * runs on the calling thread and no Atomics.wait is ever reached). The launch and the join below
 * are the same on both; only the start and the watching of deaths differ (startNodePool,
 * startWebPool). The cells' layout is pool-protocol.ts.
 *
 * Each worker instantiates the same compiled module on the same memory and sleeps in
 * `Atomics.wait` on a generation counter. A launch writes each worker's row range into a shared
 * argument block, bumps the generation and `Atomics.notify`s: a wake-up costs microseconds, not a
 * postMessage round trip. The caller computes its own share, then waits on the count of workers
 * still running.
 *
 * The workers are started by a small supervisor thread, not by the caller, so that a worker's
 * death is seen while the caller is blocked: a worker's 'exit' event (a process.exit, an uncaught
 * error, an out-of-memory, a terminate()) is delivered to the thread that created it, through that
 * thread's event loop, and the caller's loop is not running during a join. The supervisor marks the
 * worker gone in the shared counters and notifies; the join then fails with one line naming the
 * kernel and every worker's state, never waits forever. The supervisor is unref'd, and its workers
 * live only as long as it does, so they never keep a process alive.
 *
 * The stall beside ONNX Runtime (issue 41): two runs of the 1,000-sentence two-engine test hung
 * with the main thread in a futex and every pool idle. Which side lost which wake-up? Not this
 * pool's, as far as can be shown, because its protocol leaves no window for one:
 * - the caller writes the arguments, stores the running count, then bumps the generation, all
 *   before its notify (Atomics are sequentially consistent), so a worker that sees the new
 *   generation, woken or not, sees its arguments and a count that includes it;
 * - a worker sleeps with `Atomics.wait(s, GENERATION, seen)`, which checks the value under the
 *   futex's own lock and returns at once when it is no longer `seen`: a bump between its last run
 *   and its sleep is never slept through, and a late notify for a launch it already ran is not run
 *   twice (the first lost count, 9895f88);
 * - the caller sleeps with the running count it just read: a decrement between its read and its
 *   sleep returns at once, and the worker that brings the count to zero notifies after it.
 * scripts/soak-threads.ts hammers exactly these windows (random spins and sleeps between every
 * step on both sides, `setPoolTestHooks`), alone, beside ONNX Runtime decoding with two intra-op
 * threads, and beside a second qkv pool in another thread (V8 keeps one futex wait list for all of
 * a process's threads): about 5.4 million launches in the runs recorded in
 * records/thread-pool-soak/, on this code and on the code before it, without a stall, and with
 * pauses injected no join ever waited a second. The stall's cause stays unknown (ONNX Runtime's
 * own join, where the main thread also blocks inside `session.run`, was not instrumented). What
 * the pool does now so that a process cannot hang on it anyway, whoever loses a wake-up: the
 * join's wait is bounded (RECHECK_MS), re-reads the counters and re-sends the launch's notify to a
 * worker that has not started it; a worker that dies fails the launch with one line naming the
 * kernel and every worker's state (in a browser, a death is seen between launches only: see
 * startWebPool).
 *
 * Threads: QKV_THREADS in the environment, else the available parallelism (a browser's
 * `navigator.hardwareConcurrency`; at most 8); `setNumThreads(n)` changes it (1 = no workers).
 *
 * Over 500 lines: the launch protocol, its failure handling (bounded join, dead workers), its two
 * starts (Node's supervisor, a browser's Web Workers) and the test-only hooks that prove it (pauses,
 * dropped notifies, deaths) are one argument and are read together.
 */
import { reportEnvError } from '../backend.ts';
import { alloc, memory } from './memory.ts';
import {
  CELLS,
  DONE,
  EXITED,
  GENERATION,
  GONE,
  MAX_THREADS,
  PARALLEL_KERNELS,
  PER_WORKER,
  READY,
  RUNNING,
  SLOT,
  STARTED,
  SYNC_INTS,
  type ParallelKernel,
  type WorkerInit,
} from './pool-protocol.ts';

/** Test hook source: a worker that waits forever (the 'terminate' and 'hang' deaths). */
const HANG_FOREVER = 'for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);';

interface WorkerLike {
  unref(): void;
  terminate(): Promise<number>;
  on(ev: 'error' | 'exit', f: (e: unknown) => void): void;
}
interface PortLike {
  close(): void;
}
interface WorkerThreads {
  Worker: new (
    code: string,
    opts: { eval: true; workerData: unknown; execArgv: string[]; transferList?: unknown[] },
  ) => WorkerLike;
  MessageChannel: new () => { port1: PortLike; port2: PortLike };
  receiveMessageOnPort(port: PortLike): { message: unknown } | undefined;
}

function nodeBuiltin<T>(id: string): T | null {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  try {
    return (proc?.getBuiltinModule?.(id) as T | undefined) ?? null;
  } catch {
    return null;
  }
}

export { MAX_THREADS, PARALLEL_KERNELS, SYNC_INTS, type ParallelKernel } from './pool-protocol.ts';

/**
 * The join's wait is bounded: after this long it re-reads the counters. With the protocol above a
 * notify is never needed for correctness of the re-check, only for speed, so even a lost notify
 * would cost this long, not forever. Idle workers still sleep unbounded (they cost nothing).
 */
const RECHECK_MS = 100;

/** Test-only hooks (`setPoolTestHooks`): off (null) in normal use, and then no code of theirs runs. */
export interface PoolTestHooks {
  /**
   * At every step of a launch (caller: before the generation bump, between bump and notify, after
   * the notify, before the join; worker: after waking, before and after its kernel, between its
   * decrement and its notify) half of the time pause for up to this many microseconds: spinning
   * (3 times in 5) or asleep (as a descheduled thread), drawn from a seeded generator per thread.
   */
  jitterUs?: number;
  /** Seed of those generators (worker w uses seed + w + 1). */
  seed?: number;
  /** A join that waits longer than this throws with every counter's state (the soak's watchdog). */
  watchdogMs?: number;
  /** Every notify of a launch is left out (the caller's and the last worker's): lost wake-ups on both sides. */
  dropNotifies?: boolean;
  /**
   * Worker `worker` dies inside the `launch`-th launch it runs (after marking it started, before
   * its kernel): 'exit' calls process.exit, 'terminate' has the supervisor terminate() it while it
   * sleeps, 'oom' fills its JS heap (capped at 32 MiB for this worker) until V8 gives up; 'hang'
   * sleeps for good without dying (what only the watchdog can report); 'exit-after' calls
   * process.exit once that launch is done and counted (a death between launches).
   */
  die?: { worker: number; launch: number; how: 'exit' | 'terminate' | 'oom' | 'hang' | 'exit-after' };
}

/** A pause of up to `us` µs half of the time (see PoolTestHooks.jitterUs); the same text runs in the workers. */
const JITTER_SOURCE = (us: number, seed: string) => `
let rng = ((${seed}) >>> 0) || 1;
const rand = () => { rng ^= rng << 13; rng ^= rng >>> 17; rng ^= rng << 5; return (rng >>> 0) / 4294967296; };
const nap = new Int32Array(new SharedArrayBuffer(4));
const jitter = () => {
  const r = rand();
  if (r < 0.5) return;
  const ms = (rand() * ${us}) / 1000;
  if (r < 0.8) { for (const t = performance.now() + ms; performance.now() < t;); }
  else Atomics.wait(nap, 0, 0, ms);
};
`;

/**
 * The worker's loop. A wake-up is not a launch: only a generation it has not run yet is. The
 * caller bumps the generation and then notifies, and a worker that was not yet asleep sees the new
 * generation without the notify, runs it and goes back to sleep; the notify, if the caller was
 * slow to send it, then wakes it for a generation it has already run. Running it again would
 * decrement the count of running workers below zero (the caller then waits forever: a training
 * run hung this way after 30 steps) or race the caller on the outputs. With hooks, the same loop
 * with pauses (`J`) and the chosen death inserted; without, none of their text is in it.
 */
function workerSource(h: PoolTestHooks | null): string {
  const J = h?.jitterUs ? 'jitter();' : '';
  const die = h?.die
    ? `const dying = id === ${h.die.worker} && ++launches === ${h.die.launch};
  if (dying) {
    ${h.die.how === 'exit' ? 'process.exit(3);' : ''}
    ${h.die.how === 'terminate' ? "require('node:worker_threads').parentPort.postMessage('terminate me');" : ''}
    ${h.die.how === 'terminate' || h.die.how === 'hang' ? HANG_FOREVER : ''}
    ${h.die.how === 'oom' ? 'const hog = []; for (;;) hog.push(new Array(1 << 16).fill(generation + 0.5));' : ''}
  }`
    : '';
  return `
const { workerData } = require('node:worker_threads');
const { module, memory, sync, args, id, names } = workerData;
const k = new WebAssembly.Instance(module, { env: { memory } }).exports;
const fns = names.map((n) => k[n]);
const s = new Int32Array(sync);
const a = new Float64Array(args);
const o = id * ${SLOT};
const c = ${PER_WORKER} + id * ${CELLS};
${J ? JITTER_SOURCE(h!.jitterUs!, `${h!.seed ?? 1} + 1 + id`) : ''}
let launches = 0;
Atomics.add(s, ${READY}, 1); // ready
Atomics.notify(s, ${READY});
let seen = 0;
for (;;) {
  Atomics.wait(s, ${GENERATION}, seen);
  ${J}
  const generation = Atomics.load(s, ${GENERATION});
  if (generation === seen) continue; // a late notify for a launch already run
  seen = generation;
  Atomics.store(s, c + ${STARTED}, generation);
  ${die}
  ${J}
  const f = a[o];
  try {
    if (f >= 0) fns[f](...a.subarray(o + 2, o + 2 + a[o + 1]));
  } catch {
    a[o] = -2; // a trap: reported by the caller after the join
  }
  ${J}
  Atomics.store(s, c + ${DONE}, generation);
  if (Atomics.sub(s, ${RUNNING}, 1) === 1) {
    ${J}
    ${h?.dropNotifies ? '' : `Atomics.notify(s, ${RUNNING});`}
  }
  ${h?.die?.how === 'exit-after' ? 'if (dying) process.exit(3);' : ''}
}
`;
}

/** The worker's source without hooks. Exported for the test. */
export const WORKER_SOURCE = workerSource(null);

/**
 * The supervisor: starts the workers (ref'd, so it lives as long as they do) and, when one exits
 * for any reason, posts why on its port, then marks it gone and wakes a caller blocked in a join
 * or in the start-up wait. It runs no kernels; its event loop is otherwise idle.
 */
const SUPERVISOR_SOURCE = `
const { Worker, workerData } = require('node:worker_threads');
const { n, source, port, oomWorker, shared } = workerData;
const s = new Int32Array(shared.sync);
for (let id = 0; id < n; id++) {
  let error = '';
  const limits = id === oomWorker ? { resourceLimits: { maxOldGenerationSizeMb: 32 } } : {};
  const w = new Worker(source, { eval: true, execArgv: [], workerData: { ...shared, id }, ...limits });
  w.on('message', () => void w.terminate()); // only the test hook's 'terminate me'
  w.on('error', (e) => { error = String((e && e.message) || e); });
  w.on('exit', (code) => {
    port.postMessage({ id, code, error });
    Atomics.store(s, ${PER_WORKER} + id * ${CELLS} + ${EXITED}, 1);
    Atomics.add(s, ${GONE}, 1);
    Atomics.notify(s, ${RUNNING});
    Atomics.notify(s, ${READY});
  });
}
`;

/** The browser's side of a global scope, as far as the pool looks at it (each may be absent). */
interface WebScope {
  Worker?: unknown;
  WorkerGlobalScope?: abstract new () => unknown;
  navigator?: { hardwareConcurrency?: number };
}
const web = globalThis as WebScope;

/**
 * Where a pool can run: 'node' (worker_threads), 'worker' (a browser's Web Worker, which may block
 * in Atomics.wait and start Web Workers of its own), 'page' (a browser page's main thread, which may
 * not block: no pool), or 'none' (no workers of either kind here).
 */
export type PoolPlace = 'node' | 'worker' | 'page' | 'none';

function place(): PoolPlace {
  if (nodeBuiltin('node:worker_threads')) return 'node';
  const inWorker = typeof web.WorkerGlobalScope === 'function' && globalThis instanceof web.WorkerGlobalScope;
  if (inWorker) return typeof web.Worker === 'function' ? 'worker' : 'none';
  return typeof (globalThis as { document?: unknown }).document === 'object' ? 'page' : 'none';
}
/** Where this thread's pool runs (it does not change). */
export const poolPlace: PoolPlace = place();

function defaultThreads(): number {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.QKV_THREADS;
  if (env !== undefined && env !== '') {
    if (/^\d+$/.test(env.trim()) && Number(env) >= 1) return Math.min(Number(env), MAX_THREADS);
    // One line, thrown by the first op (not a stack trace at import), and never silently ignored.
    reportEnvError(`QKV_THREADS=${env}: expected a whole number of threads >= 1 (at most ${MAX_THREADS} are used)`);
  }
  const os = nodeBuiltin<{ availableParallelism?: () => number; cpus(): unknown[] }>('node:os');
  const cores = os ? (os.availableParallelism?.() ?? os.cpus().length) : (web.navigator?.hardwareConcurrency ?? 1);
  return Math.max(1, Math.min(cores, MAX_THREADS));
}

/** A running pool: n workers on `module`, and how its kind of workers are watched and ended. */
interface Pool {
  n: number;
  sync: Int32Array;
  args: Float64Array;
  scratch: number[];
  module: WebAssembly.Module;
  /** Why each gone worker exited (Node: as the supervisor posted it; a browser: its error event). */
  exits: Map<number, { code: number; error: string }>;
  /** Why the pool as a whole is gone (Node: its supervisor exited), null while it stands. */
  gone(): string | null;
  /** Take in the exits its watcher reported since (Node: the supervisor's port, read synchronously). */
  collectExits(): void;
  /** End its workers. */
  close(): void;
}

let wanted = defaultThreads();
let pool: Pool | null = null;
let broken = false;
/** Why the pool could not start (its workers failed or timed out), for backendInfo; null when it did. */
let startError: string | null = null;
/** A browser pool being started (its workers come up asynchronously), and for how many threads. */
let starting: { n: number; done: Promise<void> } | null = null;
let hooks: PoolTestHooks | null = null;
let jitter: (() => void) | null = null;
let dropNotifies = false;
/**
 * Joins whose bounded wait timed out and then found every worker done (a notify lost, or only late:
 * the last worker descheduled between its decrement and its notify), and re-sent notifies.
 */
let recovered = 0,
  renotified = 0;
let launchCount = 0;

/** Threads used by the GEMM (the caller included). */
export function numThreads(): number {
  return wanted;
}

function closePool(): void {
  if (!pool) return;
  pool.close();
  pool = null;
}

/** Use n threads (the caller plus n − 1 workers); 1 turns the pool off. */
export function setNumThreads(n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new Error(`setNumThreads: expected an integer >= 1, got ${n}`);
  wanted = Math.min(n, MAX_THREADS);
  if (pool && pool.n !== wanted - 1) closePool();
  if (startError !== null && pool === null) {
    broken = false; // a browser pool that failed may be asked for again with another count
    startError = null;
  }
}

/**
 * TEST ONLY (the soak and the worker-death tests): pauses, a watchdog, a death (PoolTestHooks);
 * null turns them off. Ends the current pool, so the next launch starts workers built with them.
 */
export function setPoolTestHooks(h: PoolTestHooks | null): void {
  hooks = h;
  dropNotifies = h?.dropNotifies ?? false;
  jitter = h?.jitterUs
    ? (new Function(`${JITTER_SOURCE(h.jitterUs, String(h.seed ?? 1))} return jitter;`)() as () => void)
    : null;
  closePool();
  broken = false;
}

/** Launches since load, joins the re-check completed, re-sent notifies, and the pool's counters (null: no pool). */
export function poolStats(): {
  launches: number;
  recovered: number;
  renotified: number;
  sync: SharedArrayBuffer | null;
  workers: number;
} {
  return {
    launches: launchCount,
    recovered,
    renotified,
    sync: pool ? (pool.sync.buffer as SharedArrayBuffer) : null,
    workers: pool?.n ?? 0,
  };
}

/** Every counter, on one line: what a failed launch and the watchdog report. */
export function describeCounters(s: Int32Array, n: number): string {
  const workers = Array.from({ length: n }, (_, w) => {
    const c = PER_WORKER + w * CELLS;
    return (
      `${w} started ${Atomics.load(s, c + STARTED)} done ` +
      `${Atomics.load(s, c + DONE)}${Atomics.load(s, c + EXITED) ? ' exited' : ''}`
    );
  });
  return (
    `generation ${Atomics.load(s, GENERATION)}, running ` +
    `${Atomics.load(s, RUNNING)}, ready ${Atomics.load(s, READY)}, gone ` +
    `${Atomics.load(s, GONE)}; workers: ${workers.join(', ')}`
  );
}

/**
 * Workers for `module`, or null when there is no pool: one thread wanted, no workers here, workers
 * that failed to start, or (in a browser) workers still starting. Node's start on first use, before
 * this returns; a browser's come up asynchronously (`startPool` awaits them), and until they have
 * the caller computes alone, which gives the same results.
 */
function getPool(module: WebAssembly.Module, scratchFloats: number): Pool | null {
  if (wanted <= 1 || broken) return null;
  if (pool && pool.module === module) return pool;
  closePool();
  if (poolPlace === 'node') return startNodePool(module, scratchFloats);
  if (poolPlace === 'worker' && !starting) startWebPool(module, scratchFloats);
  return null;
}

/**
 * Start the pool where it starts asynchronously (a browser's Web Workers) and resolve once its
 * workers listen, or once they failed (then the backend runs on one thread and backendInfo says
 * why); resolves with the threads large kernels are split among. On Node the pool starts on first
 * use, synchronously, and this resolves at once with the threads wanted.
 */
export async function startPool(module: WebAssembly.Module, scratchFloats: number): Promise<number> {
  if (poolPlace !== 'worker') return poolPlace === 'node' ? wanted : 1;
  for (;;) {
    const p = getPool(module, scratchFloats);
    if (p || wanted <= 1 || broken || !starting) return p ? p.n + 1 : 1;
    await starting.done;
  }
}

/** For backendInfo: where the pool runs, the threads it splits among now, whether it is starting, why it failed. */
export function poolStatus(): { place: PoolPlace; running: number; starting: boolean; error: string | null } {
  return { place: poolPlace, running: pool ? pool.n + 1 : 1, starting: starting !== null, error: startError };
}

/** Node: the supervisor, its workers, and a bounded wait until every worker listens. */
function startNodePool(module: WebAssembly.Module, scratchFloats: number): Pool | null {
  const wt = nodeBuiltin<WorkerThreads>('node:worker_threads');
  if (!wt) {
    broken = true;
    return null;
  }
  try {
    const n = wanted - 1;
    const sync = new SharedArrayBuffer(4 * SYNC_INTS);
    const args = new SharedArrayBuffer(8 * SLOT * n);
    const scratch = Array.from({ length: n }, () => alloc(scratchFloats, false).byteOffset);
    const { port1, port2 } = new wt.MessageChannel();
    const shared = { module, memory, sync, args, names: [...PARALLEL_KERNELS] };
    const oomWorker = hooks?.die?.how === 'oom' ? hooks.die.worker : -1;
    // execArgv: [] — the threads run plain JS; inheriting loader flags (e.g. tsx's --import) can
    // make their start-up wait on the main thread, which is blocked in Atomics.wait below.
    const supervisor = new wt.Worker(SUPERVISOR_SOURCE, {
      eval: true,
      execArgv: [],
      workerData: { n, source: workerSource(hooks), port: port2, oomWorker, shared },
      transferList: [port2],
    });
    supervisor.unref();
    /** Set (asynchronously) if the supervisor itself exits: its workers went with it. */
    let supervisorGone: string | null = null;
    const exits = new Map<number, { code: number; error: string }>();
    const p: Pool = {
      n,
      sync: new Int32Array(sync),
      args: new Float64Array(args),
      scratch,
      module,
      exits,
      gone: () => supervisorGone,
      collectExits: () => {
        for (let m = wt.receiveMessageOnPort(port1); m; m = wt.receiveMessageOnPort(port1)) {
          const { id, code, error } = m.message as { id: number; code: number; error: string };
          exits.set(id, { code, error });
        }
      },
      close: () => {
        void supervisor.terminate(); // its workers end with it
        port1.close();
      },
    };
    supervisor.on('error', (e) => {
      supervisorGone = `the pool's supervisor thread failed (${String((e as Error)?.message ?? e)})`;
    });
    supervisor.on('exit', () => {
      supervisorGone ??= "the pool's supervisor thread exited";
    });
    // Wait (bounded) until every worker is listening, so a launch can never block on a worker
    // that failed to start; if they do not come up, run single-threaded.
    const s = p.sync;
    const deadline = Date.now() + 10_000;
    for (let ready = Atomics.load(s, READY); ready < n; ready = Atomics.load(s, READY)) {
      const left = deadline - Date.now();
      if (left <= 0 || Atomics.load(s, GONE) > 0) {
        p.close();
        broken = true;
        return null;
      }
      Atomics.wait(s, READY, ready, Math.min(left, RECHECK_MS));
    }
    pool = p;
    return pool;
  } catch {
    broken = true;
    return null;
  }
}

/**
 * A browser (from a Web Worker): n Web Workers of pool-worker.ts, each sent its WorkerInit; the pool
 * is used once every one has said it is ready (a message: the caller's event loop runs meanwhile,
 * so nothing blocks while they start), and not at all if one fails or they take over 10 s. A worker
 * that dies later is seen by its error event, which runs between launches (the caller's event loop
 * is not running during a join); the next launch then fails naming it, as on Node.
 */
function startWebPool(module: WebAssembly.Module, scratchFloats: number): void {
  const n = wanted - 1;
  const sync = new SharedArrayBuffer(4 * SYNC_INTS);
  const args = new SharedArrayBuffer(8 * SLOT * n);
  const scratch = Array.from({ length: n }, () => alloc(scratchFloats, false).byteOffset);
  const workers: Worker[] = [];
  const exits = new Map<number, { code: number; error: string }>();
  const s = new Int32Array(sync);
  const p: Pool = {
    n,
    sync: s,
    args: new Float64Array(args),
    scratch,
    module,
    exits,
    gone: () => null,
    collectExits: () => {},
    close: () => {
      for (const w of workers) w.terminate();
    },
  };
  const token = { n, done: Promise.resolve() };
  starting = token; // before the executor, which may finish at once
  token.done = new Promise<void>((resolve) => {
    let ready = 0;
    let settled = false;
    const finish = (error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (starting === token) starting = null;
      if (error === null && wanted - 1 === n && pool === null) pool = p;
      else {
        p.close();
        if (error !== null) {
          broken = true;
          startError = error;
        }
      }
      resolve();
    };
    const timer = setTimeout(() => finish(`its ${n} Web Workers did not start within 10 s`), 10_000);
    for (let id = 0; id < n && !settled; id++) {
      let w: Worker;
      try {
        // Written out literally: the pattern Vite and webpack follow to bundle the worker's script.
        w = new Worker(new URL('./pool-worker.js', import.meta.url), { type: 'module', name: 'qkv-threads' });
      } catch (e) {
        finish(`Web Workers could not be started (${(e as Error).message})`);
        break;
      }
      workers.push(w);
      w.onmessage = (e: MessageEvent<{ id: number; ready?: true; error?: string }>) => {
        if (e.data.error !== undefined) finish(`a Web Worker of the pool failed to start (${e.data.error})`);
        else if (++ready === n) finish(null);
      };
      w.onerror = (e: ErrorEvent) => {
        const error = e.message || 'an error in its script';
        if (!settled) return finish(`a Web Worker of the pool failed to start (${error})`);
        exits.set(id, { code: -1, error });
        Atomics.store(s, PER_WORKER + id * CELLS + EXITED, 1);
        Atomics.add(s, GONE, 1);
        Atomics.notify(s, RUNNING);
      };
      const init: WorkerInit = { module, memory, sync, args, id, names: [...PARALLEL_KERNELS] };
      w.postMessage(init);
    }
  });
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
  return p ? p.n + 1 : 1;
}

/** The GEMM scratch address of worker w (after partsFor returned > 1). */
export function workerGemmScratch(w: number): number {
  return pool!.scratch[w]!;
}

/**
 * A launch that cannot complete because a worker is gone: wait (bounded re-checks) until every
 * live worker has finished this generation, so none still writes the outputs, close the pool (the
 * next launch starts a fresh one) and throw one line naming the kernel and every worker's state.
 */
function failGone(p: Pool, kernel: ParallelKernel, generation: number, during: boolean): never {
  const s = p.sync;
  const alive = (w: number) => Atomics.load(s, PER_WORKER + w * CELLS + EXITED) === 0;
  if (during) Atomics.notify(s, GENERATION);
  for (let w = 0; w < p.n; w++) {
    while (during && alive(w) && Atomics.load(s, PER_WORKER + w * CELLS + DONE) < generation)
      Atomics.wait(s, RUNNING, Atomics.load(s, RUNNING), RECHECK_MS);
  }
  p.collectExits();
  const gone = p.gone();
  const why =
    gone && Atomics.load(s, GONE) === 0
      ? gone
      : [...p.exits]
          .map(
            ([w, e]) => `wasm worker ${w} exited (code ${e.code}${e.error ? `, ${e.error.replace(/\s+/g, ' ')}` : ''})`,
          )
          .join('; ') || 'a wasm worker exited';
  const state = describeCounters(s, p.n);
  if (pool === p) closePool();
  throw new Error(`runParallel: ${kernel} ${during ? 'failed' : 'not launched'}: ${why} [${state}]`);
}

/**
 * Run `kernel` with `args[w]` on worker w (null: that worker sits this one out) while the caller
 * runs `own()`, and return when all are done. Only after partsFor(...) > 1.
 */
export function runParallel(kernel: ParallelKernel, args: (number[] | null)[], own: () => void): void {
  const p = pool!;
  const s = p.sync;
  if (Atomics.load(s, GONE) > 0 || p.gone()) failGone(p, kernel, Atomics.load(s, GENERATION), false);
  const f = PARALLEL_KERNELS.indexOf(kernel);
  for (let w = 0; w < p.n; w++) {
    const o = w * SLOT;
    const a = args[w] ?? null;
    if (a && a.length > SLOT - 2) throw new Error(`runParallel: ${a.length} arguments do not fit`);
    p.args[o] = a ? f : -1;
    p.args[o + 1] = a ? a.length : 0;
    if (a) p.args.set(a, o + 2);
  }
  launchCount++;
  Atomics.store(s, RUNNING, p.n);
  jitter?.();
  const generation = Atomics.add(s, GENERATION, 1) + 1;
  jitter?.();
  if (!dropNotifies) Atomics.notify(s, GENERATION);
  jitter?.();
  try {
    own();
  } finally {
    jitter?.();
    join(p, kernel, generation);
  }
  for (let w = 0; w < p.n; w++) {
    if (p.args[w * SLOT] === -2) throw new Error(`wasm worker ${w}: ${kernel} trapped`);
  }
}

/**
 * Wait until no worker runs generation `generation`: bounded waits that re-read the count (and a
 * worker marked gone, which the supervisor also wakes us for), never one unbounded sleep. A wait
 * that times out also re-sends the launch's notify if a live worker has not started it, so a
 * wake-up lost on either side would cost RECHECK_MS, not the process. With the soak's watchdog
 * (a test hook) one wait of `watchdogMs` instead, and a timeout is a failure that prints every
 * counter: the soak is there to see whether any wake-up is ever lost, not to recover from it.
 */
function join(p: Pool, kernel: ParallelKernel, generation: number): void {
  const s = p.sync;
  const watchdog = hooks?.watchdogMs;
  for (;;) {
    const left = Atomics.load(s, RUNNING);
    if (left === 0) return;
    if (Atomics.load(s, GONE) > 0) failGone(p, kernel, generation, true);
    if (Atomics.wait(s, RUNNING, left, watchdog ?? RECHECK_MS) !== 'timed-out') continue;
    if (watchdog) {
      throw new Error(
        `runParallel: watchdog: the join of ${kernel} (generation ` +
          `${generation}) waited over ${watchdog} ms ` +
          `[${describeCounters(s, p.n)}]`,
      );
    }
    if (Atomics.load(s, RUNNING) === 0) recovered++;
    for (let w = 0; w < p.n; w++) {
      if (Atomics.load(s, PER_WORKER + w * CELLS + STARTED) < generation) {
        renotified++;
        Atomics.notify(s, GENERATION);
        break;
      }
    }
  }
}
