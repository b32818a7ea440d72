/**
 * Where the time of a small model goes (issue 51, point 1): a greedy decoding step, a beam-4 step on a
 * batch of 32 sentences and a training step of the shipped recipe, with every kernel call, allocation,
 * host read and thread-pool launch counted and timed.
 *
 *   npx tsx bench/profile.ts [--reps N] [--no-cpu-profile]   one JSON document on stdout
 *
 * How (nothing in src/ changes; the bench patches objects it is handed and restores them after):
 * - kernels: each member of the current backend named in KERNEL_NAMES is replaced by a wrapper that
 *   counts the call and times it with performance.now(). A kernel called from inside another (none is
 *   today) is charged to the outer one only, so kernel times never overlap;
 * - allocations: the device's `alloc` and the scoped allocator a memoryScope draws from; tensor objects:
 *   `Tensor.fromStorage` and the device's `fromHost`. An op allocates its output, then calls its kernel, so
 *   the allocations since the last kernel returned are charged to the next kernel called (a heuristic;
 *   "(after the last kernel)" for what follows a workload's last kernel);
 * - host reads: the device's `readSync` and `read` (what dataSync(), item() and data() go through);
 * - thread launches: threads.ts's launch counter (poolStats().launches), read before and after each kernel;
 * - steps: a decoding step runs from one stepper.step() call to the next (the model's step, then the
 *   search's host work and the cache reorder); the training step is one memoryScope(step);
 * - time outside kernels = wall time of a step − time inside kernels: op dispatch, shape checks,
 *   autograd records, tensor objects, the search's own host work, and the profiler's own cost (measured:
 *   `wrapperUsPerKernelCall`, and `runMs` times each workload unwrapped too);
 * - one more, untimed run records who calls readSync and which op allocated each byte (from stacks);
 * - a V8 sampling profile (node:inspector, 100 µs) of the same workloads, unwrapped, says which functions
 *   the time outside kernels goes to (self time by function, file and layer), and how much is garbage
 *   collection.
 * Workloads: (a) greedy decoding of the first val sentence by the shipped EN→DE model's first member
 * (per step); (b) beam 4, α 0.6, on the first 32 val sentences as one batch (per step); (c) one training
 * step of the shipped recipe on 128×32 tokens in a memoryScope, as bench/ab-step.ts times it. The
 * decodings make their steppers as greedy() and beamSearch() do (caches that own their storage, freed after
 * the search) where the checkout has that, so the same file profiles a checkout from before it too.
 */
import type { BpeTokenizer } from '../src/text/bpe.ts';
import { readFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { availableParallelism, cpus } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { noGrad } from '../src/autograd/grad-mode.ts';
import { type Backend, getBackend, KERNEL_NAMES } from '../src/backend/backend.ts';
import { numThreads, poolStats } from '../src/backend/wasm/threads.ts';
import { encodeLines, sourceBatches } from '../src/decode/batch.ts';
import * as search from '../src/decode/search.ts';

const { beamSearchSteps, greedySearch, prepareSearch } = search;
/**
 * The steppers as greedy() and beamSearch() make them (caches that own their storage, freed after the search),
 * where this checkout has that (its encodeSources takes `own` and it exports releaseStepper); else as before.
 */
const encodeSources = search.encodeSources as (...a: unknown[]) => ReturnType<typeof search.encodeSources>;
const releaseStepper = (s: unknown) => (search as { releaseStepper?: (s: unknown) => void }).releaseStepper?.(s);
import type { Stepper } from '../src/decode/stepper.ts';
import { Seq2Seq as Seq2SeqClass, type Seq2Seq } from '../src/models/seq2seq.ts';
import { withEvalMode } from '../src/nn/module.ts';
import { openTranslation } from '../src/pipelines/load.ts';
import type { DType, ScopedAllocator } from '../src/tensor/storage.ts';
import { Tensor } from '../src/tensor/tensor.ts';
import { memoryScope, optim, setBackend } from '../src/index.ts';
import { RECIPE, trainer } from './train-step.ts';

const args = process.argv.slice(2);
const REPS = Number(args[args.indexOf('--reps') + 1] ?? 0) || 3;
const CPU_PROFILE = !args.includes('--no-cpu-profile');

const BYTES: Record<DType, number> = { float32: 4, int32: 4, bool: 1, uint8: 1, int8: 1, q4: 0.5, float16: 2 };
const median = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[xs.length >> 1]! : 0);
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

/** One kernel's record within a phase. */
interface KernelStat {
  calls: number;
  /** Microseconds of each call (self time). */
  us: number[];
  launches: number;
  allocs: number;
  bytes: number;
}

/** What one phase (a step) cost: wall time, kernel time and the counts. */
interface PhaseRecord {
  wallUs: number;
  kernelUs: number;
  kernelCalls: number;
  allocs: number;
  bytes: number;
  hostReads: number;
  launches: number;
  tensors: number;
  /** Rows decoded in the step (decoding only). */
  rows: number;
  /** Named parts of the phase timed by the workload (model step, reorder, backward, ...). */
  parts: Record<string, number>;
}

/** The instrumentation: kernels, allocations, reads, launches; `phase` records one step of a workload. */
class Profiler {
  kernels = new Map<string, KernelStat>();
  private restore: (() => void)[] = [];
  private depth = 0;
  /** Counting only inside a step (StepTimer sets it), so the encoder and the set-up are in no record. */
  recording = false;
  /** When set, who calls readSync (the caller of dataSync): a separate, untimed pass (a stack costs µs). */
  readers: Map<string, number> | null = null;
  /** The same for allocations: bytes by the op that allocated them. */
  allocators: Map<string, number> | null = null;
  kernelUs = 0;
  calls = 0;
  pendingAllocs = 0;
  pendingBytes = 0;
  allocs = 0;
  bytes = 0;
  reads = 0;
  tensors = 0;
  parts: Record<string, number> = {};

  install(b: Backend): void {
    const target = b as unknown as Record<string, (...a: unknown[]) => unknown>;
    for (const name of KERNEL_NAMES) {
      const fn = target[name]!;
      target[name] = (...a: unknown[]) => this.kernel(name, fn, a);
      this.restore.push(() => (target[name] = fn));
    }
    const dev = b.device as unknown as Record<string, unknown>;
    const patch = (obj: Record<string, unknown>, key: string, wrap: (f: (...a: never[]) => unknown) => unknown) => {
      const f = obj[key] as ((...a: never[]) => unknown) | undefined;
      if (typeof f !== 'function') return;
      obj[key] = wrap(f.bind(obj));
      this.restore.push(() => (obj[key] = f));
    };
    patch(dev, 'alloc', (f) => (dtype: DType, n: number, o?: unknown) => {
      this.alloc(n * BYTES[dtype]);
      return (f as (...a: unknown[]) => unknown)(dtype, n, o);
    });
    patch(dev, 'fromHost', (f) => (values: unknown, dtype: DType) => {
      if (this.recording) this.tensors++; // a tensor made from host values (its storage is the array on the cpu device)
      return (f as (...a: unknown[]) => unknown)(values, dtype);
    });
    patch(dev, 'readSync', (f) => (...a: unknown[]) => {
      if (this.recording) this.reads++;
      if (this.recording && this.readers) {
        const frames = (new Error().stack ?? '').split('\n').map((l) => l.trim());
        const i = frames.findIndex((l) => l.includes('dataSync'));
        const at = (frames[i + 1] ?? frames[2] ?? '?').replace(/^at /, '').replace(/\(.*?\/src\//, '(src/');
        this.readers.set(at, (this.readers.get(at) ?? 0) + 1);
      }
      return (f as (...a: unknown[]) => unknown)(...a);
    });
    patch(dev, 'read', (f) => (...a: unknown[]) => {
      if (this.recording) this.reads++;
      return (f as (...a: unknown[]) => unknown)(...a);
    });
    const scoped = b.device.scoped as (ScopedAllocator & Record<string, unknown>) | undefined;
    if (scoped)
      patch(scoped, 'alloc', (f) => (n: number, zero: boolean) => {
        this.alloc(n * 4);
        return (f as (...a: unknown[]) => unknown)(n, zero);
      });
    const T = Tensor as unknown as Record<string, unknown>;
    patch(T, 'fromStorage', (f) => (...a: unknown[]) => {
      if (this.recording) this.tensors++;
      return (f as (...a: unknown[]) => unknown)(...a);
    });
  }

  uninstall(): void {
    for (const r of this.restore.reverse()) r();
    this.restore = [];
  }

  private alloc(bytes: number): void {
    if (!this.recording) return;
    if (this.allocators) {
      // The op that allocated: the first frame outside storage.ts, ops/util.ts and this file.
      const frames = (new Error().stack ?? '').split('\n').slice(1);
      const op = frames.find((l) => !/storage\.ts|ops\/util\.ts|profile\.ts|^\s*at (new )?Promise/.test(l)) ?? '?';
      const at = op
        .trim()
        .replace(/^at /, '')
        .replace(/\(.*?\/src\//, '(src/');
      this.allocators.set(at, (this.allocators.get(at) ?? 0) + bytes);
    }
    this.pendingAllocs++;
    this.pendingBytes += bytes;
  }

  private stat(name: string): KernelStat {
    let s = this.kernels.get(name);
    if (!s) this.kernels.set(name, (s = { calls: 0, us: [], launches: 0, allocs: 0, bytes: 0 }));
    return s;
  }

  /** Allocations after the last kernel of a workload, charged to no kernel. */
  flush(): void {
    if (this.pendingAllocs > 0) this.chargeAllocs(this.stat('(after the last kernel)'));
  }

  private chargeAllocs(s: KernelStat): void {
    s.allocs += this.pendingAllocs;
    s.bytes += this.pendingBytes;
    this.allocs += this.pendingAllocs;
    this.bytes += this.pendingBytes;
    this.pendingAllocs = this.pendingBytes = 0;
  }

  private kernel(name: string, fn: (...a: unknown[]) => unknown, a: unknown[]): unknown {
    if (this.depth > 0 || !this.recording) return fn(...a);
    const s = this.stat(name);
    this.chargeAllocs(s);
    const l0 = poolStats().launches;
    this.depth++;
    const t0 = performance.now();
    try {
      return fn(...a);
    } finally {
      const us = (performance.now() - t0) * 1000;
      this.depth--;
      s.calls++;
      s.us.push(us);
      s.launches += poolStats().launches - l0;
      this.kernelUs += us;
      this.calls++;
    }
  }

  /**
   * µs the wrapper adds to one kernel call (its clock reads, the launch counter, the record), measured on
   * a no-op kernel: what the time outside kernels holds of the profiler's own per call.
   */
  calibrate(n = 200_000): number {
    const noop = () => undefined;
    const saved = { k: this.kernelUs, c: this.calls };
    this.recording = true;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) this.kernel('(calibration)', noop, []);
    const t1 = performance.now();
    for (let i = 0; i < n; i++) noop();
    const t2 = performance.now();
    this.recording = false;
    this.kernels.delete('(calibration)');
    this.kernelUs = saved.k;
    this.calls = saved.c;
    return ((t1 - t0 - (t2 - t1)) * 1000) / n;
  }

  /** Time `fn` as the named part of the current phase. */
  part<T>(name: string, fn: () => T): T {
    const t0 = performance.now();
    try {
      return fn();
    } finally {
      this.parts[name] = (this.parts[name] ?? 0) + (performance.now() - t0) * 1000;
    }
  }

  reset(): void {
    this.kernels.clear();
  }
}

const prof = new Profiler();

/**
 * Step records from the profiler's counters. Decoding runs its search as a coroutine, so a step is
 * measured from one step() call to the next (the model's step, then the search's own host work and the
 * cache reorder that follow it); `end` closes the last one. Allocations not yet charged to a kernel count.
 */
class StepTimer {
  records: PhaseRecord[] = [];
  private t0 = 0;
  private base: ReturnType<StepTimer['counters']> | null = null;
  private rows = 0;
  constructor(private readonly p: Profiler) {}
  private counters() {
    const q = this.p;
    return {
      k: q.kernelUs,
      c: q.calls,
      a: q.allocs + q.pendingAllocs,
      b: q.bytes + q.pendingBytes,
      r: q.reads,
      t: q.tensors,
      l: poolStats().launches,
    };
  }
  /** A step starts (closing the one before, if any). */
  mark(rows = 0): void {
    this.end();
    this.rows = rows;
    this.p.recording = true;
    this.p.parts = {};
    this.base = this.counters();
    this.t0 = performance.now();
  }
  /** The current step ends. */
  end(): void {
    const now = performance.now();
    const b = this.base;
    if (!b) return;
    this.p.recording = false;
    const c = this.counters();
    this.records.push({
      wallUs: (now - this.t0) * 1000,
      kernelUs: c.k - b.k,
      kernelCalls: c.c - b.c,
      allocs: c.a - b.a,
      bytes: c.b - b.b,
      hostReads: c.r - b.r,
      launches: c.l - b.l,
      tensors: c.t - b.t,
      rows: this.rows,
      parts: this.p.parts,
    });
    this.base = null;
  }
}

/** `stepper` with each step (its model step, then the search's work until the next) recorded by `timer`. */
function timedStepper(stepper: Stepper, timer: StepTimer | null): Stepper {
  const part = <T>(name: string, fn: () => T) => (timer ? prof.part(name, fn) : fn());
  return {
    get rows() {
      return stepper.rows;
    },
    get vocabSize() {
      return stepper.vocabSize;
    },
    reorder: (rows) => part('reorder', () => stepper.reorder(rows)),
    step: (last) => {
      timer?.mark(last.length);
      return part('model', () => stepper.step(last));
    },
  };
}

const VAL = gunzipSync(readFileSync(new URL('../../shared/data/multi30k/val.en.gz', import.meta.url)))
  .toString('utf8')
  .split('\n');

setBackend('wasm');
const opened = await openTranslation('models/multi30k-en-de', false);
const model: Seq2Seq = opened.model;
const tok = opened.tokenizer as BpeTokenizer; // a qkv folder (not a Marian one)

/** Source ids of `lines` as one batch (sorted by length, as the CLI's batches). */
function sourceOf(lines: string[]): Tensor {
  const { ids } = encodeLines(model, tok, lines, {});
  const [batch] = [...sourceBatches(ids, tok.padId, { beam: 4, alpha: 0.6, batchSize: lines.length })];
  return batch!.src;
}

/**
 * One decoding of `src` (greedy when beam is 1) as the pipeline decodes it, its steps recorded by `timer`
 * when given. The encoder runs before the first step and is in no step's record.
 */
function decodeOnce(src: Tensor, beam: number, timer: StepTimer | null): void {
  const ids = { bosId: tok.bosId, eosId: tok.eosId };
  const { members, maxLens, padId } = prepareSearch(model, src, ids);
  withEvalMode(members, () =>
    noGrad(() => {
      const inner = encodeSources(members, src, ids, true);
      const stepper = timedStepper(inner, timer);
      if (beam > 1) beamSearchSteps(stepper, maxLens, { ...ids, padId, beamSize: beam, lengthPenalty: 0.6 });
      else greedySearch(stepper, maxLens, { ...ids, padId });
      timer?.end();
      releaseStepper(inner);
    }),
  );
}

/** Time of `fn` in ms, median of `n` runs after one warm-up. */
function time(fn: () => void, n: number): number {
  fn();
  const ts: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    fn();
    ts.push(performance.now() - t0);
  }
  return median(ts);
}

/** Per-kernel table of one workload: totals over its phases divided by the number of phases. */
function kernelTable(phases: number) {
  const rows = [...prof.kernels].map(([name, s]) => ({
    kernel: name,
    callsPerStep: round(s.calls / phases, 2),
    usPerStep: round(s.us.reduce((a, b) => a + b, 0) / phases),
    medianUs: round(median(s.us), 2),
    launchesPerStep: round(s.launches / phases, 2),
    allocsPerStep: round(s.allocs / phases, 2),
    kbPerStep: round(s.bytes / 1024 / phases),
  }));
  return rows.sort((a, b) => b.usPerStep - a.usPerStep);
}

/** Medians and shares of a workload's step records. */
function summary(recs: PhaseRecord[], runs: number) {
  const wall = recs.reduce((a, r) => a + r.wallUs, 0);
  const kern = recs.reduce((a, r) => a + r.kernelUs, 0);
  const parts: Record<string, number> = {};
  for (const r of recs) for (const [k, v] of Object.entries(r.parts)) parts[k] = (parts[k] ?? 0) + v;
  const m = (f: (r: PhaseRecord) => number) => round(median(recs.map(f)), 1);
  return {
    steps: recs.length,
    stepsPerRun: round(recs.length / runs, 2),
    medianStep: {
      rows: m((r) => r.rows),
      wallUs: m((r) => r.wallUs),
      kernelUs: m((r) => r.kernelUs),
      outsideKernelsUs: m((r) => r.wallUs - r.kernelUs),
      kernelCalls: m((r) => r.kernelCalls),
      allocs: m((r) => r.allocs),
      kbAllocated: m((r) => r.bytes / 1024),
      tensorsMade: m((r) => r.tensors),
      hostReads: m((r) => r.hostReads),
      launches: m((r) => r.launches),
    },
    meanStepWallUs: round(wall / recs.length, 1),
    shareOutsideKernels: round((wall - kern) / wall, 3),
    partsShareOfWall: Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, round(v / wall, 3)])),
  };
}

/** The parts of a V8 CPU profile read here. */
interface V8Profile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a file's self time goes in the layer table: the first prefix that matches. */
const LAYERS: [string, string][] = [
  ['(wasm kernels)', 'wasm kernels (AssemblyScript)'],
  ['src/backend/js/', 'js kernels (cheap kernels on plain arrays, unary, pow)'],
  ['src/backend/wasm/threads.ts', 'thread pool (launch, join: the caller waiting on the worker)'],
  ['src/backend/wasm/stage.ts', 'wasm bindings: staging plain arrays in and out of wasm memory'],
  ['src/backend/wasm/memory.ts', 'wasm memory (allocator, isWasmView routing checks)'],
  ['src/backend/', 'wasm bindings and backend (other)'],
  ['src/tensor/storage.ts', 'storage allocation (hostArray, allocFloat32)'],
  ['(garbage collector)', 'garbage collector'],
  ['src/autograd/', 'autograd'],
  ['src/ops/', 'ops (checks, shapes, dispatch, autograd records)'],
  ['src/tensor/', 'tensor objects and shapes'],
  ['src/nn/', 'nn modules (attention, KV cache, transformer)'],
  ['src/models/', 'models'],
  ['src/decode/', 'decoding search on the host (argmax, topIds, logProbs checks)'],
  ['src/optim/', 'optimizer (host side)'],
  ['', 'other (node, bench)'],
];

/**
 * A V8 sampling profile of `fn` run `n` times: self time by function, by file and by layer, with GC and
 * the wasm code apart. The inspector's own `dispatch` (starting and stopping the profiler) is left out.
 */
function cpuProfile(fn: () => void, n: number) {
  const s = new Session();
  s.connect();
  s.post('Profiler.enable');
  s.post('Profiler.setSamplingInterval', { interval: 100 });
  s.post('Profiler.start');
  for (let i = 0; i < n; i++) fn();
  let profile = null as V8Profile | null;
  s.post('Profiler.stop', (err, r) => {
    if (!err) profile = r.profile as V8Profile;
  });
  s.disconnect();
  if (!profile) return null;
  const p: V8Profile = profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const selfUs = new Map<string, number>();
  const byFile = new Map<string, number>();
  const byLayer = new Map<string, number>();
  let total = 0;
  const root = new URL('..', import.meta.url).href;
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    const f = byId.get(id)!;
    if (f.functionName === 'dispatch' && f.url === '') return;
    const file = f.url.startsWith('wasm://')
      ? '(wasm kernels)'
      : f.url
        ? f.url.replace(root, '').replace(/^.*node_modules\//, 'node_modules/')
        : f.functionName; // (garbage collector), (program), (idle)
    const key = `${f.functionName || '(anonymous)'} ${file}`; // tsx's line numbers are of its output, not the source;
    selfUs.set(key, (selfUs.get(key) ?? 0) + dt);
    byFile.set(file, (byFile.get(file) ?? 0) + dt);
    const layer = LAYERS.find(([prefix]) => file.startsWith(prefix))![1];
    byLayer.set(layer, (byLayer.get(layer) ?? 0) + dt);
    total += dt;
  });
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => ({ where: k, share: round(v / total, 3) }));
  return {
    sampledMs: round(total / 1000),
    byLayer: top(byLayer, LAYERS.length),
    byFile: top(byFile, 20),
    byFunction: top(selfUs, 30),
  };
}

/** One workload: the unwrapped time, the wrapped per-step records and kernel table, then a CPU profile. */
function workload(name: string, run: (timer: StepTimer | null) => void, reps: number, warm: number) {
  for (let i = 0; i < warm; i++) run(null); // the JIT settles before anything is timed
  const plainMs = time(() => void run(null), reps);
  prof.install(getBackend());
  prof.reset();
  run(new StepTimer(prof)); // warm the wrappers
  prof.reset();
  const timer = new StepTimer(prof);
  let wrappedMs = 0;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    run(timer);
    wrappedMs += (performance.now() - t0) / reps;
  }
  prof.flush();
  const kernels = kernelTable(timer.records.length);
  prof.uninstall();
  const plainAfterMs = time(() => void run(null), reps);
  // Who reads on the host and who allocates, per step: one more run with the callers recorded.
  prof.install(getBackend());
  prof.readers = new Map();
  prof.allocators = new Map();
  const readTimer = new StepTimer(prof);
  run(readTimer);
  const perStep = (m: Map<string, number>, scale: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .map(([at, n]) => ({ at, perStep: round(n / scale / readTimer.records.length, 2) }));
  const readers = perStep(prof.readers, 1);
  const allocators = perStep(prof.allocators, 1024).slice(0, 12); // KiB per step
  prof.readers = prof.allocators = null;
  prof.uninstall();
  const cpu = CPU_PROFILE ? cpuProfile(() => void run(null), reps) : null;
  process.stderr.write(`${name}: done\n`);
  return {
    name,
    // Median ms of one run unwrapped (before and after the wrapped runs) and the mean wrapped: the
    // difference is the profiler's own cost, which the time outside kernels includes.
    runMs: { unwrapped: round(plainMs, 2), wrapped: round(wrappedMs, 2), unwrappedAfter: round(plainAfterMs, 2) },
    ...summary(timer.records, reps),
    // Of the wrapped runs' time, the share in the recorded steps (decoding: the rest is the encoder and set-up).
    stepsShareOfRun: round(timer.records.reduce((a, r) => a + r.wallUs, 0) / 1000 / (wrappedMs * reps), 3),
    kernels,
    readers,
    allocatorsKiB: allocators,
    cpuProfile: cpu,
  };
}

prof.calibrate(); // warm
const wrapperUsPerKernelCall = round(prof.calibrate(), 3);
const greedySrc = sourceOf([VAL[0]!]);
const beamSrc = sourceOf(VAL.slice(0, 32));

const greedy = workload('greedy, 1 sentence', (timer) => decodeOnce(greedySrc, 1, timer), REPS * 10, 20);
const beam = workload('beam 4, 32 sentences', (timer) => decodeOnce(beamSrc, 4, timer), REPS, 2);

// The training step: bench/train-step.ts's trainer (the shipped recipe, 128×32 tokens), one phase per step.
// Its parts (the model's forward, backward, the optimizer's step) are timed by patching those methods
// while the step is recorded; the rest of the step is the loss, zeroGrad and the loss read back.
const { step } = trainer('wasm', RECIPE, 128, 32);
function withTrainingParts(fn: () => void): void {
  const patches: [Record<string, unknown>, string, string][] = [
    [Seq2SeqClass.prototype as never, 'forward', 'forward'],
    [Tensor.prototype as never, 'backward', 'backward'],
    [optim.Adam.prototype as never, 'step', 'optimizer'],
  ];
  const saved = patches.map(([o, k]) => o[k] as (...a: unknown[]) => unknown);
  patches.forEach(([o, k, part], i) => {
    const f = saved[i]!;
    o[k] = function (this: unknown, ...a: unknown[]) {
      return prof.part(part, () => f.apply(this, a));
    };
  });
  try {
    fn();
  } finally {
    patches.forEach(([o, k], i) => (o[k] = saved[i]));
  }
}
const train = workload(
  'training step, shipped recipe, 128x32',
  (timer) => {
    if (!timer) return void memoryScope(step);
    withTrainingParts(() => {
      timer.mark();
      memoryScope(step);
      timer.end();
    });
  },
  REPS,
  1,
);

console.log(
  JSON.stringify(
    {
      cpu: cpus()[0]?.model ?? 'unknown',
      availableParallelism: availableParallelism(),
      threads: numThreads(),
      node: process.version,
      backend: getBackend().name,
      reps: REPS,
      wrapperUsPerKernelCall,
      sentence: VAL[0],
      beamSourceShape: beamSrc.shape,
      workloads: [greedy, beam, train],
    },
    null,
    1,
  ),
);
process.exit(0);
