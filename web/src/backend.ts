/**
 * The backend the explorer's models run on, chosen in the model worker: the GPU (webgpu) where the
 * worker's `navigator.gpu` gives a hardware adapter, else qkv's fastest CPU backend here, by the library's
 * own path: `loadWasmKernels()` loads the wasm backend (WebAssembly SIMD; the module is emitted by Vite
 * from the loader's `new URL('./qkv-*.wasm', import.meta.url)`), on a single thread when the page is not
 * cross-origin isolated, and it is used when it agrees with the js reference on a small check; else js.
 * The page asks for one (`auto`, or `webgpu`, `wasm`, `js`: the backend switch, `?backend=`);
 * `backendInfo()` says which runs, on how many threads or on which adapter, and why not another.
 *
 * A software adapter (WebGPU's fallback adapter: SwiftShader, a CPU implementation of Vulkan) is not taken
 * by `auto`: it computes on the CPU, slower than wasm. Asked for by name, it is used.
 *
 * On webgpu the CPU backend stays loaded: folders open on it (their weights checked and converted on the
 * host, as the pipelines do) and the models then move to the GPU ({@link openOnDevice}).
 *
 * This runs in the model worker: where the page is cross-origin isolated the wasm backend's thread
 * pool runs there, on Web Workers of its own. Before the models trust it, a GEMM large enough to be
 * split is computed on one thread and on all of them, and must be the same bit for bit; if it is
 * not, the backend goes on with one thread and the status line says why.
 */
import { memoryShared } from '../../src/backend/wasm/memory.ts';
import { startThreads } from '../../src/backend/wasm/parallel.ts';
import { poolStats } from '../../src/backend/wasm/threads.ts';
import { getBackend } from '../../src/backend/backend.ts';
import { loadErrorOf } from '../../src/backend/info.ts';
import type { Module } from '../../src/nn/module.ts';
import {
  F,
  backendInfo,
  loadWasmKernels,
  manualSeed,
  noGrad,
  numThreads,
  randn,
  setBackend,
  setNumThreads,
  type BackendInfo,
} from '../../src/index.ts';

/** The check of the threads against one thread: a `size`³ GEMM computed both ways. */
export interface ThreadCheck {
  size: number;
  /** The threads the second product was split among. */
  threads: number;
  /** Parts of it the pool ran (0: it was not split). */
  launches: number;
  /** Whether the two products are the same bit for bit. */
  identical: boolean;
}

/** What the page asks for: the backend switch's choice (`auto`: webgpu on a hardware adapter, else wasm). */
export type BackendPref = 'auto' | 'webgpu' | 'wasm' | 'js';

export const BACKEND_PREFS: readonly BackendPref[] = ['auto', 'webgpu', 'wasm', 'js'];

export interface BackendChoice {
  /** The backend the models run on. */
  name: string;
  /** What was asked for. */
  pref: BackendPref;
  /** The GPU's adapter (vendor, architecture, device) on webgpu; null on a CPU backend. */
  adapter: string | null;
  /** The CPU backend folders open on before they move to the GPU (on a CPU backend: `name`). */
  cpu: string;
  /** The status line's tooltip: why the wasm backend is not in use, or why it runs on so few threads. */
  note: string | null;
  info: BackendInfo;
  /** The threads' check (null: one thread, nothing to check). */
  check: ThreadCheck | null;
}

let wasmReady: boolean | null = null;
let wasmNote: string | null = null;
let check: ThreadCheck | null = null;

/** Side of the check's GEMM: 2·192³ ≈ 14 M flops, over the size at which the pool splits work. */
const CHECK_SIZE = 192;

/**
 * A GEMM on one thread (the pool is not started yet), then on `want` once the pool's Web Workers
 * run: the same bits, or the backend stays on one thread.
 */
async function checkThreads(want: number): Promise<ThreadCheck> {
  const n = CHECK_SIZE;
  manualSeed(11);
  const a = randn([n, n]);
  const b = randn([n, n]);
  const one = noGrad(() => (F.matmul(a, b).dataSync() as Float32Array).slice());
  // Another product of that shape, so that memory the kernels reuse holds other values than the
  // reference's: a part of the threaded product left unwritten cannot pass for the right one.
  noGrad(() => F.matmul(b, a).dataSync());
  setNumThreads(want);
  const threads = await startThreads();
  const before = poolStats().launches;
  const many = noGrad(() => F.matmul(a, b).dataSync() as Float32Array);
  const launches = poolStats().launches - before;
  const identical = one.every((x, i) => Object.is(x, many[i]));
  if (!identical) setNumThreads(1);
  return { size: n, threads, launches, identical };
}

async function ensureWasm(): Promise<boolean> {
  if (wasmReady !== null) return wasmReady;
  const want = numThreads();
  try {
    setNumThreads(1); // the check's reference product below runs on one thread
    if (!(await loadWasmKernels())) throw new Error(backendInfo().reason);
    // A small check against the js reference before trusting it with the model.
    const diff = noGrad(() => {
      manualSeed(7);
      const a = randn([33, 40]);
      const b = randn([40, 17]);
      setBackend('js');
      const ref = F.softmax(F.matmul(a, b), -1).dataSync() as Float32Array;
      setBackend('wasm');
      const got = F.softmax(F.matmul(a, b), -1).dataSync() as Float32Array;
      return ref.reduce((m, x, i) => Math.max(m, Math.abs(x - got[i])), 0);
    });
    if (!(diff < 1e-4)) throw new Error(`the wasm backend disagrees with js (max difference ${diff})`);
    wasmReady = true;
  } catch (e) {
    wasmNote = (e as Error).message;
    wasmReady = false;
  }
  setNumThreads(want);
  // Threads need the shared memory (a cross-origin isolated page).
  if (wasmReady && memoryShared && want > 1) check = await checkThreads(want);
  return wasmReady;
}

/** What the check found, in words. */
function checkNote(c: ThreadCheck): string {
  const product = `a ${c.size}×${c.size} GEMM`;
  if (!c.identical)
    return `; ${product} on ${c.threads} threads differed from one thread's, so the backend runs on one thread`;
  if (c.launches === 0) return `; ${product} was not split among threads`;
  return `; ${product} is bit-identical on 1 and ${c.threads} threads`;
}

function choice(pref: BackendPref, note: string | null, cpu: string, gpu: GpuAdapter | null): BackendChoice {
  const info = backendInfo();
  if (info.backend === 'webgpu') {
    return {
      name: info.backend,
      pref,
      adapter: gpu?.name ?? null,
      cpu,
      note:
        `webgpu backend: ${info.reason}` +
        `${gpu?.fallback ? ' (a software adapter: slower than wasm here)' : ''}; ` +
        `folders open on the ${cpu} backend, then move to the GPU`,
      info,
      check: null,
    };
  }
  const threads = `${info.threads} thread${info.threads === 1 ? '' : 's'}`;
  const checked = info.backend === 'wasm' && check ? checkNote(check) : '';
  const build = info.wasmVariant ? ` (${info.wasmVariant})` : '';
  const line = `${info.backend} backend${build}, ${threads}: ${info.reason}${checked}`;
  return {
    name: info.backend,
    pref,
    adapter: null,
    cpu: info.backend,
    note: note === null ? line : `${note}; ${line}`,
    info,
    check: info.backend === 'wasm' ? check : null,
  };
}

/** The worker's WebGPU adapter, as `requestAdapter()` describes it (probeAdapter: or why there is none). */
interface GpuAdapter {
  name: string;
  /** WebGPU's fallback adapter: a software implementation (SwiftShader), not a GPU. */
  fallback: boolean;
}

async function probeAdapter(): Promise<GpuAdapter | { why: string }> {
  const gpu = (globalThis as { navigator?: { gpu?: GPU } }).navigator?.gpu;
  if (!gpu) return { why: 'this browser has no WebGPU here (navigator.gpu is missing in the worker)' };
  try {
    const a = await gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (!a) return { why: 'WebGPU gave no adapter' };
    const i = a.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
    const name = [i.vendor, i.architecture, i.device, i.description].filter((x) => x).join(' ') || 'unknown';
    return { name, fallback: i.isFallbackAdapter === true };
  } catch (e) {
    return { why: `WebGPU's adapter request failed: ${(e as Error).message}` };
  }
}

/**
 * The backend `pref` asks for, made current: `auto` is webgpu on a hardware adapter, else wasm if it works
 * here, else js; `webgpu` falls back the same way (saying why) where no adapter is had.
 */
export async function chooseBackend(pref: BackendPref): Promise<BackendChoice> {
  if (pref === 'js') {
    await setBackend('js');
    return choice(pref, null, 'js', null);
  }
  const ok = await ensureWasm();
  const cpu = ok ? 'wasm' : 'js';
  const cpuNote = ok ? null : `wasm backend not used: ${wasmNote}`;
  let gpuNote: string | null = null;
  if (pref === 'auto' || pref === 'webgpu') {
    const probed = await probeAdapter();
    if ('why' in probed) gpuNote = `webgpu not used: ${probed.why}`;
    else if (probed.fallback && pref === 'auto')
      gpuNote = `webgpu not chosen: its adapter here (${probed.name}) is a software one, slower than the CPU backends`;
    else {
      try {
        await setBackend('webgpu');
        return choice(pref, null, cpu, probed);
      } catch (e) {
        gpuNote = `webgpu not used: ${loadErrorOf('webgpu') ?? (e as Error).message}`;
      }
    }
  }
  await setBackend(cpu);
  const notes = [gpuNote, cpuNote].filter((n) => n !== null);
  return choice(pref, notes.length > 0 ? notes.join('; ') : null, cpu, null);
}

/**
 * A folder opened where its models can run: on a CPU backend as it is; on a GPU (a device that reads back only
 * asynchronously) `open()` runs on the CPU backend `cpu`, whose host reads check and convert the weights, then
 * the models move to the GPU (`module.to`), as src/pipelines/load.ts does.
 */
export async function openOnDevice<T extends { model: Module }>(cpu: string, open: () => Promise<T>): Promise<T> {
  const target = getBackend();
  if (target.device.readSync !== undefined) return open();
  await setBackend(cpu);
  let opened: T;
  try {
    opened = await open();
  } finally {
    await setBackend(target.name);
  }
  opened.model.to(target.name);
  return opened;
}

/** Whether the current backend's tensors read back only asynchronously (a GPU). */
export function onGpu(): boolean {
  return getBackend().device.readSync === undefined;
}
