/**
 * The GEMM (assembly/gemm.ts: the blocked kernel, and dot products for a few rows against a
 * transposed B) behind the Backend interface, split among the threads by rows (or by columns for
 * the few-row path) when the work pays.
 */
import type { HostKernels } from '../backend.ts';
import {
  declareExports,
  gemmScratchFloats,
  setWasmVariant,
  sig,
  wasmVariant,
  type I32,
  type Ptr,
  type WasmVariant,
} from './loader.ts';
import { alloc } from './memory.ts';
import { runParallel, threadsFor, workerGemmScratch } from './parallel.ts';
import { wasmKernels } from './registry.ts';
import { staged } from './stage.ts';

/** The arguments before scratch: C = op(A)·op(B) with batch strides in elements (0 broadcasts). */
type Head = [
  a: Ptr,
  b: Ptr,
  c: Ptr,
  batch: I32,
  m: I32,
  n: I32,
  k: I32,
  transA: I32,
  transB: I32,
  strideA: I32,
  strideB: I32,
  strideC: I32,
  accumulate: I32,
];

const K = declareExports('gemm.ts', {
  gemm: sig<[...Head, scratch: Ptr]>(14),
  /** Rows [i0, i1) of C only: what one thread computes. */
  gemmRows: sig<[...Head, scratch: Ptr, i0: I32, i1: I32]>(16),
  /** Columns [j0, j1) of C (m, n) = A (m, k)·Bᵀ, B stored (n, k). */
  gemvNTRange: sig<[a: Ptr, b: Ptr, c: Ptr, m: I32, n: I32, k: I32, accumulate: I32, j0: I32, j1: I32]>(9),
});

export type GemmVariant = WasmVariant;
/** Which build is in use (loads the module). */
export const gemmVariant = wasmVariant;
/** Switch builds, e.g. to test or time the plain-SIMD one where relaxed SIMD is available. */
export const setGemmVariant = setWasmVariant;

/** The caller's scratch block, by address (a plain memory detaches views when it grows: memory.ts). */
let scratch: number | null = null;

/** Rows up to which C = A·Bᵀ takes the dot-product path (assembly/gemm.ts, gemvNTRange) instead of the packed GEMM. */
const GEMV_MAX_ROWS = 4;

/** Elements of an operand touched by a batched GEMM: (batch − 1)·stride + rows·cols. */
function extent(batch: number, stride: number, size: number): number {
  return batch === 0 || size === 0 ? 0 : (batch - 1) * stride + size;
}

/**
 * Same contract as the js `gemm` (src/backend/backend.ts). Arrays that are views into the wasm
 * memory (see memory.ts) are used in place; others are copied into wasm memory and back.
 */
export const wasmGemm: HostKernels['gemm'] = (a0, b0, c0, p) => {
  const a = p.offsetA ? a0.subarray(p.offsetA) : a0;
  const b = p.offsetB ? b0.subarray(p.offsetB) : b0;
  const c = p.offsetC ? c0.subarray(p.offsetC) : c0;
  const wasm = K();
  let { batch, m, strideA, strideC } = p;
  const { n, k, transA, transB, strideB, accumulate } = p;
  if (batch <= 0 || m <= 0 || n <= 0) return;
  const sizeA = extent(batch, strideA, m * k);
  const sizeB = extent(batch, strideB, k * n);
  const sizeC = extent(batch, strideC, m * n);
  if (sizeA > a.length || sizeB > b.length || sizeC > c.length) {
    throw new RangeError(
      `wasmGemm: arrays too short (A ${a.length} < ${sizeA}, B ${b.length} < ${sizeB} or C ${c.length} < ${sizeC})`,
    );
  }
  // Batches of A and C stacked contiguously against a shared B are one tall GEMM.
  if (batch > 1 && !transA && strideB === 0 && strideA === m * k && strideC === m * n) {
    m *= batch;
    batch = 1;
    strideA = 0;
    strideC = 0;
  }
  // A few rows against a transposed B (a decoding step through a Linear): dot products of
  // contiguous rows, no packing (gemvNTRange); the blocked kernel would pack all of B.
  if (batch === 1 && !transA && transB && m <= GEMV_MAX_ROWS) {
    staged(
      [
        { x: a.subarray(0, m * k), mode: 'in' },
        { x: b.subarray(0, n * k), mode: 'in' },
        { x: c.subarray(0, m * n), mode: accumulate ? 'inout' : 'out' },
      ],
      0,
      ([pa, pb, pc]) => {
        const head = [pa!, pb!, pc!, m, n, k, accumulate ? 1 : 0];
        const parts = n >= 64 ? threadsFor(2 * m * n * k) : 1;
        if (parts === 1) {
          wasm.gemvNTRange(pa!, pb!, pc!, m, n, k, accumulate ? 1 : 0, 0, n);
          return;
        }
        const chunk = Math.ceil(n / parts / 4) * 4;
        const args = Array.from({ length: parts - 1 }, (_, w) => {
          const j0 = Math.min(n, (w + 1) * chunk),
            j1 = Math.min(n, (w + 2) * chunk);
          return j1 > j0 ? [...head, j0, j1] : null;
        });
        runParallel('gemvNTRange', args, () =>
          wasm.gemvNTRange(pa!, pb!, pc!, m, n, k, accumulate ? 1 : 0, 0, Math.min(n, chunk)),
        );
      },
    );
    return;
  }
  scratch ??= alloc(gemmScratchFloats(), false).byteOffset;
  // C must be read when accumulating, and when batches leave gaps that must survive the copy back.
  const readC = accumulate || (batch > 1 && strideC !== m * n);
  staged(
    [
      { x: a.subarray(0, sizeA), mode: 'in' },
      { x: b.subarray(0, sizeB), mode: 'in' },
      { x: c.subarray(0, sizeC), mode: readC ? 'inout' : 'out' },
    ],
    0,
    ([pa, pb, pc]) => {
      const head: Head = [
        pa!,
        pb!,
        pc!,
        batch,
        m,
        n,
        k,
        transA ? 1 : 0,
        transB ? 1 : 0,
        strideA,
        strideB,
        strideC,
        accumulate ? 1 : 0,
      ];
      const parts = m >= 32 ? threadsFor(2 * batch * m * n * k) : 1;
      if (parts === 1) {
        wasm.gemmRows(...head, scratch!, 0, m);
        return;
      }
      // Rows split in multiples of 16; worker w takes part w + 1, the caller part 0.
      const chunk = Math.ceil(m / parts / 16) * 16;
      const args = Array.from({ length: parts - 1 }, (_, w) => {
        const i0 = Math.min(m, (w + 1) * chunk),
          i1 = Math.min(m, (w + 2) * chunk);
        return i1 > i0 ? [...head, workerGemmScratch(w), i0, i1] : null;
      });
      runParallel('gemmRows', args, () => wasm.gemmRows(...head, scratch!, 0, Math.min(m, chunk)));
    },
  );
};

wasmKernels.register('gemm', { gemm: wasmGemm });
