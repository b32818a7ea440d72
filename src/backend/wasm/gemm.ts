import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import type { GemmParams } from '../backend.ts';
import { alloc, free, isWasmView, memory, RESERVED_BYTES } from './memory.ts';

/** Exports of assembly/gemm.ts (addresses in bytes, booleans as 0/1). */
interface GemmExports {
  gemm(a: number, b: number, c: number, batch: number, m: number, n: number, k: number, transA: number, transB: number, strideA: number, strideB: number, strideC: number, accumulate: number, scratch: number): void;
  scratchBytes(): number;
  heapBase(): number;
  relaxed(): number;
}

export type GemmVariant = 'relaxed-simd' | 'simd';

// (module (func (result v128) v128.const 0 ×3 f32x4.relaxed_madd))
const RELAXED_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 61, 1, 59, 0,
  ...[0, 1, 2].flatMap(() => [0xfd, 0x0c, ...new Array<number>(16).fill(0)]),
  0xfd, 0x85, 0x02, 0x0b,
]);

/** Relaxed SIMD is on by default from V8 11.4 (Node 22); Node 20 has it behind a flag. */
function relaxedSimdSupported(): boolean {
  if (WebAssembly.validate(RELAXED_PROBE)) return true;
  try {
    setFlagsFromString('--experimental-wasm-relaxed-simd');
  } catch {
    return false;
  }
  return WebAssembly.validate(RELAXED_PROBE);
}

/**
 * Node loader: picks the relaxed-SIMD build when the engine accepts it, reads the bytes next to
 * this file and compiles synchronously. A browser loader would fetch/instantiateStreaming here.
 */
function loadBytes(want?: GemmVariant): { bytes: Uint8Array<ArrayBuffer>; variant: GemmVariant } {
  const relaxed = relaxedSimdSupported();
  if (want === 'relaxed-simd' && !relaxed) throw new Error('wasm backend: this engine does not support relaxed SIMD');
  const variant: GemmVariant = want ?? (relaxed ? 'relaxed-simd' : 'simd');
  const file = variant === 'relaxed-simd' ? './gemm-relaxed.wasm' : './gemm-simd.wasm';
  const url = new URL(file, import.meta.url);
  try {
    return { bytes: new Uint8Array(readFileSync(url)), variant };
  } catch (e) {
    throw new Error(`wasm backend: cannot read ${url.pathname}; build it with \`npm run build:wasm\` (${(e as Error).message})`);
  }
}

function instantiate(want?: GemmVariant): { exports: GemmExports; variant: GemmVariant } {
  const { bytes, variant } = loadBytes(want);
  const module = new WebAssembly.Module(bytes);
  const instance = new WebAssembly.Instance(module, { env: { memory } });
  const exports = instance.exports as unknown as GemmExports;
  if (exports.heapBase() > RESERVED_BYTES) throw new Error(`wasm backend: module static data (${exports.heapBase()} bytes) exceeds the reserved ${RESERVED_BYTES}`);
  return { exports, variant };
}

let loaded: { exports: GemmExports; variant: GemmVariant } | null = null;
let scratch: Float32Array | null = null;

function module(): GemmExports {
  loaded ??= instantiate();
  return loaded.exports;
}

/** Which build is in use (loads the module). */
export function gemmVariant(): GemmVariant {
  module();
  return loaded!.variant;
}

/** Switch builds, e.g. to test or time the plain-SIMD one where relaxed SIMD is available. */
export function setGemmVariant(variant: GemmVariant): void {
  if (loaded?.variant !== variant) loaded = instantiate(variant);
}

/** Elements of an operand touched by a batched GEMM: (batch − 1)·stride + rows·cols. */
function extent(batch: number, stride: number, size: number): number {
  return batch === 0 || size === 0 ? 0 : (batch - 1) * stride + size;
}

/**
 * Same contract as the js `gemm` (src/backend/backend.ts). Arrays that are views into the wasm
 * memory (see memory.ts) are used in place; others are copied into wasm memory and back.
 */
export function wasmGemm(a: Float32Array, b: Float32Array, c: Float32Array, p: GemmParams): void {
  const wasm = module();
  let { batch, m, strideA, strideC } = p;
  const { n, k, transA, transB, strideB, accumulate } = p;
  if (batch <= 0 || m <= 0 || n <= 0) return;
  const sizeA = extent(batch, strideA, m * k);
  const sizeB = extent(batch, strideB, k * n);
  const sizeC = extent(batch, strideC, m * n);
  if (sizeA > a.length || sizeB > b.length || sizeC > c.length) {
    throw new RangeError(`wasmGemm: arrays too short (A ${a.length} < ${sizeA}, B ${b.length} < ${sizeB} or C ${c.length} < ${sizeC})`);
  }
  // Batches of A and C stacked contiguously against a shared B are one tall GEMM.
  if (batch > 1 && !transA && strideB === 0 && strideA === m * k && strideC === m * n) {
    m *= batch;
    batch = 1;
    strideA = 0;
    strideC = 0;
  }
  if (scratch === null) scratch = alloc(wasm.scratchBytes() / 4);

  const temps: Float32Array[] = [];
  const place = (x: Float32Array, size: number, copyIn: boolean): Float32Array => {
    if (isWasmView(x)) return x;
    const t = alloc(size);
    temps.push(t);
    if (copyIn) t.set(x.subarray(0, size));
    return t;
  };
  try {
    const wa = place(a, sizeA, true);
    const wb = place(b, sizeB, true);
    // C must be read when accumulating, and when batches leave gaps that must survive the copy back.
    const wc = place(c, sizeC, accumulate || (batch > 1 && strideC !== m * n));
    wasm.gemm(wa.byteOffset, wb.byteOffset, wc.byteOffset, batch, m, n, k, transA ? 1 : 0, transB ? 1 : 0, strideA, strideB, strideC, accumulate ? 1 : 0, scratch.byteOffset);
    if (wc !== c) c.set(wc.subarray(0, sizeC));
  } finally {
    for (const t of temps) free(t);
  }
}
