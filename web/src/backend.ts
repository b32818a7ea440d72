/**
 * qkv's fastest backend in this browser, by the library's own path: `loadWasmKernels()` loads the
 * wasm backend (WebAssembly SIMD; the module is emitted by Vite from the loader's
 * `new URL('./qkv-*.wasm', import.meta.url)`), on a single thread when the page is not
 * cross-origin isolated, and it is used when it agrees with the js reference on a small check;
 * else js. `backendInfo()` says which, on how many threads, and why not more.
 *
 * This runs in the model worker: where the page is cross-origin isolated the wasm backend's thread
 * pool runs there, on Web Workers of its own. Before the models trust it, a GEMM large enough to be
 * split is computed on one thread and on all of them, and must be the same bit for bit; if it is
 * not, the backend goes on with one thread and the status line says why.
 */
import { memoryShared } from '../../src/backend/wasm/memory.ts';
import { startThreads } from '../../src/backend/wasm/parallel.ts';
import { poolStats } from '../../src/backend/wasm/threads.ts';
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

export interface BackendChoice {
  name: string;
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

function choice(note: string | null): BackendChoice {
  const info = backendInfo();
  const threads = `${info.threads} thread${info.threads === 1 ? '' : 's'}`;
  const checked = info.backend === 'wasm' && check ? checkNote(check) : '';
  const build = info.wasmVariant ? ` (${info.wasmVariant})` : '';
  return {
    name: info.backend,
    note: note ?? `${info.backend} backend${build}, ${threads}: ${info.reason}${checked}`,
    info,
    check: info.backend === 'wasm' ? check : null,
  };
}

/** 'auto' = wasm if it works here, else js. */
export async function chooseBackend(pref: 'auto' | 'js' | 'wasm'): Promise<BackendChoice> {
  if (pref === 'js') {
    setBackend('js');
    return choice(null);
  }
  const ok = await ensureWasm();
  setBackend(ok ? 'wasm' : 'js');
  return choice(ok ? null : `wasm backend not used: ${wasmNote}`);
}
