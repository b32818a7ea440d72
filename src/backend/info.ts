/**
 * `backendInfo()`: which backend runs the ops, which wasm build, on how many threads, and why not more, in
 * words, so that a page or a log can say why it is slower than it could be. Each backend folder registers its
 * own line (and, where it can fail to load, why it did); this file knows none of them.
 */
import { getBackend } from './backend.ts';

/** What {@link backendInfo} reports. */
export interface BackendInfo {
  /** The backend the ops run on now ('js', 'wasm', ...). */
  backend: string;
  /** The wasm build loaded ('relaxed-simd' or 'simd'), or null when the wasm module is not loaded. */
  wasmVariant: 'relaxed-simd' | 'simd' | null;
  /** Threads a large kernel is split among, the calling one included. */
  threads: number;
  /**
   * Why not more threads (on js: why not wasm), e.g. "not cross-origin isolated:
   * SharedArrayBuffer unavailable", "setNumThreads(1)", "2 cores".
   */
  reason: string;
}

const lines = new Map<string, () => BackendInfo>();
const loadErrors = new Map<string, () => string | null>();

/** A backend folder's line of backendInfo(), read when that backend is the current one. */
export function registerBackendInfo(name: string, info: () => BackendInfo): void {
  lines.set(name, info);
}

/** Why backend `name` did not load here (null: it loaded, or has not been asked to). */
export function registerLoadError(name: string, why: () => string | null): void {
  loadErrors.set(name, why);
}

/** Why backend `name` did not load (null: it loaded, has not been asked to, or registered no reason). */
export function loadErrorOf(name: string): string | null {
  return loadErrors.get(name)?.() ?? null;
}

/** The first registered backend that failed to load, and why (for the line of a slower fallback). */
export function firstLoadError(): { name: string; why: string } | null {
  for (const [name, why] of loadErrors) {
    const w = why();
    if (w !== null) return { name, why: w };
  }
  return null;
}

/** Backend `name`'s line whether or not it is the current one (null: no such backend registered a line). */
export function infoOf(name: string): BackendInfo | null {
  return lines.get(name)?.() ?? null;
}

/**
 * The backend in use, the wasm build, the thread count and the reason it is not higher, read now (they change
 * with setBackend and setNumThreads).
 */
export function backendInfo(): BackendInfo {
  const backend = getBackend().name;
  const line = lines.get(backend);
  if (line) return line();
  return { backend, wasmVariant: null, threads: 1, reason: `the ${backend} backend does not use CPU threads` };
}
