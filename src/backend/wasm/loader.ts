/**
 * Finds, compiles and instantiates the kernel module (assembly/index.ts, built by
 * scripts/build-wasm.mjs into qkv-simd.wasm and qkv-relaxed.wasm next to this file).
 *
 * No static import of any Node module: this file is reachable from the package entry, which must
 * load in browsers. Under Node (>= 20.16) the bytes are read synchronously through
 * `process.getBuiltinModule('node:fs')`; elsewhere `loadWasmKernels(fetchable)` compiles them
 * asynchronously. When the module cannot be loaded (file missing, no WebAssembly SIMD, no shared
 * memory) `kernels()` returns null and says why in `wasmLoadError()`; the backend then falls back
 * to js.
 */
import { memory, memoryAvailable, RESERVED_BYTES } from './memory.ts';

/** Exports of assembly/index.ts: byte addresses, sizes as i32, booleans as 0/1. */
export interface WasmKernels {
  gemm(a: number, b: number, c: number, batch: number, m: number, n: number, k: number, transA: number, transB: number, strideA: number, strideB: number, strideC: number, accumulate: number, scratch: number): void;
  gemmRows(a: number, b: number, c: number, batch: number, m: number, n: number, k: number, transA: number, transB: number, strideA: number, strideB: number, strideC: number, accumulate: number, scratch: number, i0: number, i1: number): void;
  gemvNTRange(a: number, b: number, c: number, m: number, n: number, k: number, accumulate: number, j0: number, j1: number): void;
  scratchBytes(): number;
  heapBase(): number;
  relaxed(): number;
  softmax(x: number, out: number, rows: number, cols: number): void;
  softmaxBackward(y: number, dy: number, dx: number, rows: number, cols: number): void;
  logSoftmax(x: number, out: number, rows: number, cols: number): void;
  logSoftmaxBackward(y: number, dy: number, dx: number, rows: number, cols: number): void;
  layerNorm(x: number, w: number, b: number, out: number, mean: number, rstd: number, rows: number, cols: number, eps: number): void;
  layerNormBackward(x: number, w: number, mean: number, rstd: number, dy: number, dx: number, dw: number, db: number, rows: number, cols: number): void;
  relu(x: number, out: number, n: number): void;
  reluBackward(x: number, dy: number, dx: number, n: number): void;
  gelu(x: number, out: number, n: number): void;
  geluBackward(x: number, dy: number, dx: number, n: number): void;
  crossEntropy(logits: number, targets: number, losses: number, rows: number, cols: number, ignoreIndex: number, eps: number): number;
  crossEntropyBackward(logits: number, targets: number, rowScale: number, dlogits: number, rows: number, cols: number, ignoreIndex: number, eps: number): void;
  attentionScratchFloats(l: number, d: number, dv: number): number;
  attention(q: number, k: number, v: number, out: number, lse: number, weights: number, B: number, H: number, L: number, S: number, D: number, DV: number, scale: number, causal: number, bias: number, bsB: number, bsH: number, bsL: number, scratch: number): void;
  attentionBackward(q: number, k: number, v: number, out: number, dout: number, lse: number, dq: number, dk: number, dv: number, B: number, H: number, L: number, S: number, D: number, DV: number, scale: number, causal: number, bias: number, bsB: number, bsH: number, bsL: number, scratch: number): void;
  attentionRange(q: number, k: number, v: number, out: number, lse: number, weights: number, B: number, H: number, L: number, S: number, D: number, DV: number, scale: number, causal: number, bias: number, bsB: number, bsH: number, bsL: number, scratch: number, bh0: number, bh1: number): void;
  attentionBackwardRange(q: number, k: number, v: number, out: number, dout: number, lse: number, dq: number, dk: number, dv: number, B: number, H: number, L: number, S: number, D: number, DV: number, scale: number, causal: number, bias: number, bsB: number, bsH: number, bsL: number, scratch: number, bh0: number, bh1: number): void;
  /** op: 0 add, 1 sub, 2 mul, 3 div. */
  binaryFull(op: number, a: number, b: number, out: number, n: number): void;
  binaryRows(op: number, swap: number, a: number, b: number, out: number, rows: number, w: number): void;
  binaryScalar(op: number, a: number, out: number, n: number, s: number, scalarFirst: number, exact: number): void;
  sumColumns(x: number, out: number, rows: number, w: number, scratch: number): void;
  sumRows(x: number, out: number, rows: number, w: number): void;
  swapMiddle(x: number, out: number, A: number, B: number, C: number, D: number): void;
  transposeLast(x: number, out: number, batch: number, R: number, C: number): void;
  dropoutMask(bits: number, x: number, keep: number, out: number, n: number, threshold: number, s: number): void;
  copyRows(src: number, srcStride: number, dst: number, dstStride: number, rows: number, bytes: number): void;
  embedding(weight: number, ids: number, out: number, n: number, dim: number): void;
  embeddingBackward(dy: number, ids: number, dweight: number, n: number, dim: number, paddingIdx: number): void;
  adam(p: number, g: number, m: number, v: number, n: number, b1: number, c1: number, b2: number, c2: number, stepSize: number, bc2Sqrt: number, eps: number, shrink: number, l2: number): void;
}

export type WasmVariant = 'relaxed-simd' | 'simd';

const FILES: Record<WasmVariant, string> = { 'relaxed-simd': './qkv-relaxed.wasm', simd: './qkv-simd.wasm' };

// (module (func (result v128) v128.const 0 ×3 f32x4.relaxed_madd))
const RELAXED_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 61, 1, 59, 0,
  ...[0, 1, 2].flatMap(() => [0xfd, 0x0c, ...new Array<number>(16).fill(0)]),
  0xfd, 0x85, 0x02, 0x0b,
]);
// (module (func (result v128) v128.const 0))
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 22, 1, 20, 0, 0xfd, 0x0c, ...new Array<number>(16).fill(0), 0x0b]);

interface NodeProcess {
  getBuiltinModule?: (id: string) => unknown;
}

function nodeBuiltin<T>(id: string): T | null {
  const proc = (globalThis as { process?: NodeProcess }).process;
  try {
    return (proc?.getBuiltinModule?.(id) as T | undefined) ?? null;
  } catch {
    return null;
  }
}

function validate(bytes: Uint8Array): boolean {
  try {
    return typeof WebAssembly !== 'undefined' && WebAssembly.validate(bytes as Uint8Array<ArrayBuffer>);
  } catch {
    return false;
  }
}

/** Relaxed SIMD is on by default from V8 11.4 (Node 22); Node 20 has it behind a flag. */
function relaxedSimdSupported(): boolean {
  if (validate(RELAXED_PROBE)) return true;
  const v8 = nodeBuiltin<{ setFlagsFromString(flags: string): void }>('node:v8');
  if (!v8) return false;
  try {
    v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
  } catch {
    return false;
  }
  return validate(RELAXED_PROBE);
}

let loaded: { exports: WasmKernels; variant: WasmVariant; module: WebAssembly.Module } | null = null;
let loadError: string | null = null;
let tried = false;

function instantiate(bytes: Uint8Array, variant: WasmVariant): { exports: WasmKernels; variant: WasmVariant; module: WebAssembly.Module } {
  const module = new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
  const instance = new WebAssembly.Instance(module, { env: { memory } });
  const exports = instance.exports as unknown as WasmKernels;
  if (exports.heapBase() > RESERVED_BYTES) throw new Error(`wasm backend: module static data (${exports.heapBase()} bytes) exceeds the reserved ${RESERVED_BYTES}`);
  return { exports, variant, module };
}

function readNode(variant: WasmVariant): Uint8Array {
  const fs = nodeBuiltin<{ readFileSync(p: URL): Uint8Array }>('node:fs');
  if (!fs) throw new Error('wasm backend: not running under Node >= 20.16 (no process.getBuiltinModule); use loadWasmKernels()');
  const url = new URL(FILES[variant], import.meta.url);
  try {
    return new Uint8Array(fs.readFileSync(url));
  } catch (e) {
    throw new Error(`wasm backend: cannot read ${url.pathname}; build it with \`npm run build:wasm\` (${(e as Error).message})`);
  }
}

function preconditions(): void {
  if (!memoryAvailable) throw new Error('wasm backend: no shared WebAssembly.Memory here (browsers need cross-origin isolation)');
  if (!validate(SIMD_PROBE)) throw new Error('wasm backend: this engine has no WebAssembly SIMD');
}

/** The kernels, loading them synchronously on first use (Node); null if they cannot be loaded. */
export function kernels(): WasmKernels | null {
  if (loaded) return loaded.exports;
  if (tried) return null;
  tried = true;
  try {
    preconditions();
    const variant: WasmVariant = relaxedSimdSupported() ? 'relaxed-simd' : 'simd';
    loaded = instantiate(readNode(variant), variant);
    return loaded.exports;
  } catch (e) {
    loadError = (e as Error).message;
    return null;
  }
}

/** The kernels, or an error saying why they are unavailable. */
export function requireKernels(): WasmKernels {
  const k = kernels();
  if (!k) throw new Error(loadError ?? 'wasm backend: not loaded');
  return k;
}

/** Why the module could not be loaded (null when it loaded or was not tried). */
export function wasmLoadError(): string | null {
  return loadError;
}

/**
 * Browser (or any engine) loader: fetch and compile the module asynchronously from a base URL
 * (default: next to this file). Returns true when the kernels are ready.
 */
export async function loadWasmKernels(base: string | URL = new URL('./', import.meta.url)): Promise<boolean> {
  if (loaded) return true;
  try {
    preconditions();
    const variant: WasmVariant = validate(RELAXED_PROBE) ? 'relaxed-simd' : 'simd';
    const res = await fetch(new URL(FILES[variant], base));
    if (!res.ok) throw new Error(`wasm backend: fetching ${res.url} gave ${res.status}`);
    loaded = instantiate(new Uint8Array(await res.arrayBuffer()), variant);
    tried = true;
    loadError = null;
    return true;
  } catch (e) {
    loadError = (e as Error).message;
    return false;
  }
}

/** The compiled module in use (worker threads instantiate it on the same memory). */
export function wasmModule(): WebAssembly.Module {
  requireKernels();
  return loaded!.module;
}

/** Which build is in use (loads the module). */
export function wasmVariant(): WasmVariant {
  requireKernels();
  return loaded!.variant;
}

/** Switch builds, e.g. to test or time the plain-SIMD one where relaxed SIMD is available (Node). */
export function setWasmVariant(variant: WasmVariant): void {
  requireKernels();
  if (loaded!.variant === variant) return;
  if (variant === 'relaxed-simd' && !relaxedSimdSupported()) throw new Error('wasm backend: this engine does not support relaxed SIMD');
  loaded = instantiate(readNode(variant), variant);
}
