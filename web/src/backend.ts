/**
 * qkv's fastest backend in this browser, by the library's own path: `loadWasmKernels()` loads the
 * wasm backend (WebAssembly SIMD; the module is emitted by Vite from the loader's
 * `new URL('./qkv-*.wasm', import.meta.url)`), on a single thread when the page is not
 * cross-origin isolated, and it is used when it agrees with the js reference on a small check;
 * else js. `backendInfo()` says which, on how many threads, and why not more.
 */
import {
  F,
  backendInfo,
  loadWasmKernels,
  manualSeed,
  noGrad,
  randn,
  setBackend,
  type BackendInfo,
} from '../../src/index.ts';

export interface BackendChoice {
  name: string;
  /** The status line's tooltip: why the wasm backend is not in use, or why it runs on so few threads. */
  note: string | null;
  info: BackendInfo;
}

let wasmReady: boolean | null = null;
let wasmNote: string | null = null;

async function ensureWasm(): Promise<boolean> {
  if (wasmReady !== null) return wasmReady;
  try {
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
  return wasmReady;
}

function choice(note: string | null): BackendChoice {
  const info = backendInfo();
  const threads = `${info.threads} thread${info.threads === 1 ? '' : 's'}`;
  return {
    name: info.backend,
    note:
      note ?? `${info.backend} backend${info.wasmVariant ? ` (${info.wasmVariant})` : ''}, ${threads}: ${info.reason}`,
    info,
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
