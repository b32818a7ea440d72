/**
 * What the benchmark page's workloads share (browser side): seeded inputs, the checks every output passes
 * before it is timed, and the timer.
 *
 * Timing on a GPU: the host only records and submits work, so a call returns before the GPU has run it. A
 * sample therefore runs the call R times and then reads the last output back (`sync`), and counts the
 * whole as R calls; R is chosen so that a sample lasts at least `minMs`, which makes the one read a small
 * part of it. Every engine is timed this way, with its own read (`await t.data()`, `await t.getData()`).
 */

/** A seeded uniform stream in [-1, 1) (mulberry32): the same inputs for every engine in the page. */
export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 31 - 1;
  };
}

export function randomArray(n: number, seed: number, scale = 1): Float32Array {
  const r = seeded(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = r() * scale;
  return out;
}

/** One check's outcome, as the results file lists it. */
export interface Check {
  what: string;
  /** The largest |got − ref| seen. */
  maxDiff: number;
  /** The bound it had to stay under (per element; the largest one, where it varies). */
  bound: string;
}

/**
 * `got` against `ref` element by element: |got − ref| ≤ bound(i) for every i, else an Error naming the
 * first element that is not (NaN fails). Returns the check's line for the results file.
 */
export function checkClose(
  what: string,
  got: ArrayLike<number>,
  ref: ArrayLike<number>,
  bound: (i: number) => number,
  boundText: string,
): Check {
  if (got.length !== ref.length) throw new Error(`check failed: ${what}: ${got.length} values, expected ${ref.length}`);
  let worst = 0;
  for (let i = 0; i < ref.length; i++) {
    const d = Math.abs(got[i]! - ref[i]!);
    if (!(d <= bound(i)))
      throw new Error(
        `check failed: ${what}: element ${i} is ${got[i]}, the reference ${ref[i]} (|diff| ${d} > ${bound(i)})`,
      );
    worst = Math.max(worst, d);
  }
  return { what, maxDiff: worst, bound: boundText };
}

/** |got − ref| ≤ atol + rtol·|ref|. */
export function checkAtolRtol(
  what: string,
  got: ArrayLike<number>,
  ref: ArrayLike<number>,
  atol: number,
  rtol: number,
): Check {
  return checkClose(what, got, ref, (i) => atol + rtol * Math.abs(ref[i]!), `${atol} + ${rtol}·|ref|`);
}

/** The same ids in the same order, else an Error naming the first difference. */
export function checkSameIds(what: string, got: readonly number[], ref: readonly number[]): Check {
  const n = Math.max(got.length, ref.length);
  for (let i = 0; i < n; i++)
    if (got[i] !== ref[i])
      throw new Error(`check failed: ${what}: token ${i} is ${got[i]}, the reference's ${ref[i]} (${got} vs ${ref})`);
  return { what, maxDiff: 0, bound: 'identical ids' };
}

export interface TimeOptions {
  /** Samples (the median is reported). */
  samples: number;
  /** A sample repeats the call until it lasts at least this long. */
  minMs: number;
  /** A call slower than this is timed once, after the warm-up. */
  capMs: number;
}

/**
 * What the GPU was asked to do, counted at the WebGPU API in the page (every engine calls the same
 * prototypes): compute dispatches, queue submits, buffer maps (reads back) and compute pipelines made. Counts
 * mean the same on any adapter, where SwiftShader's times mean nothing.
 */
export interface GpuCounts {
  dispatches: number;
  submits: number;
  reads: number;
  pipelines: number;
}

const counts: GpuCounts = { dispatches: 0, submits: 0, reads: 0, pipelines: 0 };
let counting = false;

/** Count the page's WebGPU calls from now on (once). */
export function countGpuCalls(): void {
  if (counting) return;
  counting = true;
  const wrap = (proto: object | undefined, name: string, key: keyof GpuCounts) => {
    const o = proto as Record<string, unknown> | undefined;
    const f = o?.[name];
    if (typeof f !== 'function') return;
    o![name] = function (this: unknown, ...a: unknown[]) {
      counts[key]++;
      return f.apply(this, a);
    };
  };
  wrap(globalThis.GPUComputePassEncoder?.prototype, 'dispatchWorkgroups', 'dispatches');
  wrap(globalThis.GPUComputePassEncoder?.prototype, 'dispatchWorkgroupsIndirect', 'dispatches');
  wrap(globalThis.GPUQueue?.prototype, 'submit', 'submits');
  wrap(globalThis.GPUBuffer?.prototype, 'mapAsync', 'reads');
  wrap(globalThis.GPUDevice?.prototype, 'createComputePipeline', 'pipelines');
  wrap(globalThis.GPUDevice?.prototype, 'createComputePipelineAsync', 'pipelines');
}

/** The counts so far (a copy). */
export function gpuCounts(): GpuCounts {
  return { ...counts };
}

/** Counts between two snapshots, per call (pipelines: in total, as a warm engine should make none). */
export function perCall(before: GpuCounts, after: GpuCounts, calls: number): GpuCounts {
  return {
    dispatches: (after.dispatches - before.dispatches) / calls,
    submits: (after.submits - before.submits) / calls,
    reads: (after.reads - before.reads) / calls,
    pipelines: after.pipelines - before.pipelines,
  };
}

/**
 * Median milliseconds per call of `call`, each sample ending with `sync` (the engine's read of the last
 * output). One warm-up call (and sync) first: compiling shaders and first allocations are not timed.
 */
export async function timeCall(
  call: () => unknown,
  sync: () => Promise<unknown>,
  o: TimeOptions,
): Promise<{ ms: number; reps: number; counts: GpuCounts }> {
  let t0 = performance.now();
  await call();
  await sync();
  const first = performance.now() - t0;
  const c0 = gpuCounts();
  if (first > o.capMs) {
    t0 = performance.now();
    await call();
    await sync();
    return { ms: performance.now() - t0, reps: 1, counts: perCall(c0, gpuCounts(), 1) };
  }
  const reps = Math.max(1, Math.ceil(o.minMs / Math.max(first, 0.05)));
  const ts: number[] = [];
  for (let s = 0; s < o.samples; s++) {
    t0 = performance.now();
    for (let r = 0; r < reps; r++) await call();
    await sync();
    ts.push((performance.now() - t0) / reps);
  }
  ts.sort((a, b) => a - b);
  return { ms: ts[ts.length >> 1]!, reps, counts: perCall(c0, gpuCounts(), reps * o.samples) };
}

/** The page's progress lines, in the page's console (run.ts prints them). */
export function log(line: string): void {
  console.log(`[bench] ${line}`);
}

/** One row of the results table: a rate (GFLOP/s, tokens/s: higher is better) or a time (ms: lower is better). */
export interface Row {
  workload: string;
  unit: 'GFLOP/s' | 'ms' | 'tokens/s';
  /** qkv on webgpu, tfjs-backend-webgpu, ONNX Runtime Web's WebGPU provider, qkv on wasm in the same page. */
  qkv: number | null;
  tfjs: number | null;
  ort: number | null;
  wasm: number | null;
  /** Why a cell is empty, or what a peer ran instead. */
  note?: string;
  /** The GPU work of one timed call (a token for the GPT row), by engine. */
  counts: Partial<Record<'qkv' | 'tfjs' | 'ort', GpuCounts>>;
}

/** What one workload hands back: its rows and the checks its outputs passed before they were timed. */
export interface Part {
  rows: Row[];
  checks: Check[];
}
