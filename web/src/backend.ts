/**
 * qkv's fastest backend in this browser, with a fallback: the wasm backend (WebAssembly SIMD on a
 * shared memory, which needs the cross-origin isolation `qkv explore` provides) when its module
 * loads from ./wasm/ and agrees with the js reference on a small check, else js.
 */
import { F, getBackend, randn, registerBackend, setBackend, manualSeed, noGrad } from '../../src/index.ts';
import { loadWasmKernels, tryWasmBackend, wasmLoadError } from '../../src/backend/wasm/index.ts';

export interface BackendChoice {
  name: string;
  /** Why the wasm backend is not in use, when it is not. */
  note: string | null;
}

let wasmReady: boolean | null = null;
let wasmNote: string | null = null;

async function ensureWasm(): Promise<boolean> {
  if (wasmReady !== null) return wasmReady;
  try {
    if (!crossOriginIsolated) throw new Error('the page is not cross-origin isolated (no SharedArrayBuffer)');
    const ok = await loadWasmKernels(new URL('wasm/', document.baseURI));
    const backend = ok ? tryWasmBackend() : null;
    if (!backend) throw new Error(wasmLoadError() ?? 'the wasm module did not load');
    registerBackend(backend);
    // A small check against the js reference before trusting it with the model.
    const diff = noGrad(() => {
      manualSeed(7);
      const a = randn([33, 40]);
      const b = randn([40, 17]);
      setBackend('js');
      const ref = F.softmax(F.matmul(a, b), -1).data as Float32Array;
      setBackend('wasm');
      const got = F.softmax(F.matmul(a, b), -1).data as Float32Array;
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

/** 'auto' = wasm if it works here, else js. */
export async function chooseBackend(pref: 'auto' | 'js' | 'wasm'): Promise<BackendChoice> {
  if (pref === 'js') {
    setBackend('js');
    return { name: 'js', note: null };
  }
  const ok = await ensureWasm();
  setBackend(ok ? 'wasm' : 'js');
  return { name: getBackend().name, note: ok ? null : wasmNote };
}
