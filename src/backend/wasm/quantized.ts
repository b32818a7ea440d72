/**
 * Quantized linear layers (assembly/quantized.ts) behind the Backend interface: x's rows quantized to
 * int8 once into scratch, then the outputs split among the threads by columns (each output computed as
 * one thread computes it, so the bits do not depend on the thread count); q4 scales float32 or float16 (read
 * as halves in wasm memory, widened exactly). The results are bit-identical
 * to the js twin (src/backend/js/quantized.ts), which defines them.
 */
import type { HostKernels } from '../backend.ts';
import { embeddingInt8, embeddingQ4, Q4_BLOCK } from '../js/quantized.ts';
import { declareExports, sig, type I32, type Ptr } from './loader.ts';
import { readWork, splitUnits } from './parallel.ts';
import { wasmKernels } from './registry.ts';
import { staged } from './stage.ts';

/** The arguments of both range kernels before the range of outputs. */
type Head = [q: Ptr, sx: Ptr, wq: Ptr, wScale: Ptr, bias: Ptr, out: Ptr, rows: I32, inF: I32, outF: I32];

const K = declareExports('quantized.ts', {
  /** x (R, I) to int8 rows at q and their scales at sx; q4 = 1: each block of 32 evens first, then odds. */
  quantizeRowsI8: sig<[x: Ptr, rows: I32, inF: I32, q: Ptr, sx: Ptr, q4: I32]>(6),
  /** Outputs [o0, o1) of every row against an int8 weight. */
  linearInt8Range: sig<[...Head, o0: I32, o1: I32]>(11),
  /** Outputs [o0, o1) of every row against a q4 weight, its scales float32 (half 0) or float16 (half 1). */
  linearQ4Range: sig<[...Head, o0: I32, o1: I32, half: I32]>(12),
});

const align = (n: number) => Math.ceil(n / 16) * 16;

/** Throws naming the argument when an array is too short (the kernels read and write by address). */
function need(name: string, what: string, have: number, n: number): void {
  if (have < n) throw new RangeError(`${name}: ${what} has ${have} elements, expected at least ${n}`);
}

function run(
  kind: 'int8' | 'q4',
  x: Float32Array,
  wq: Int8Array | Uint8Array,
  wScale: Float32Array | Uint16Array,
  bias: Float32Array | null,
  out: Float32Array,
  rows: number,
  inF: number,
  outF: number,
): void {
  const name = kind === 'int8' ? 'linearInt8' : 'linearQ4';
  if (kind === 'q4' && inF % Q4_BLOCK !== 0)
    throw new RangeError(`linearQ4: inF ${inF} is not a multiple of ${Q4_BLOCK}`);
  const wqLength = kind === 'int8' ? outF * inF : (outF * inF) / 2;
  const scales = kind === 'int8' ? outF : (outF * inF) / Q4_BLOCK;
  need(name, 'x', x.length, rows * inF);
  need(name, 'wq', wq.length, wqLength);
  need(name, 'wScale', wScale.length, scales);
  if (bias) need(name, 'bias', bias.length, outF);
  need(name, 'out', out.length, rows * outF);
  if (rows === 0 || outF === 0) return;
  const qBytes = align(rows * inF);
  staged(
    [
      { x: x.subarray(0, rows * inF), mode: 'in' },
      { x: wq.subarray(0, wqLength), mode: 'in' },
      { x: wScale.subarray(0, scales), mode: 'in' },
      { x: bias ? bias.subarray(0, outF) : null, mode: 'in' },
      { x: out.subarray(0, rows * outF), mode: 'out' },
    ],
    // x's int8 rows, their scales, and their corrections (quantizeRowsI8): for q4 an i32 per block of 32
    // values, for int8 one i32 per row (the relaxed build's, for weights that are −128).
    qBytes + rows * 4 + (kind === 'q4' ? rows * (inF / Q4_BLOCK) * 4 : rows * 4),
    ([px, pw, ps, pb, po, scratch]) => {
      const wasm = K();
      wasm.quantizeRowsI8(px!, rows, inF, scratch!, scratch! + qBytes, kind === 'q4' ? 1 : 0);
      const head: Head = [scratch!, scratch! + qBytes, pw!, ps!, pb!, po!, rows, inF, outF];
      const kernel = kind === 'int8' ? 'linearInt8Range' : 'linearQ4Range';
      const half = wScale instanceof Uint16Array ? 1 : 0;
      // Per output 2·rows·inF flops; a q4 output also unpacks its weight row (half a byte a value and a scale per
      // 32), which costs more than the flops say: counted by the bytes (readWork; bench/ab-read.ts measured it
      // paying for q4 and not for int8 or fp32, records/compiled run 4).
      const flops = 2 * rows * inF;
      if (kind === 'int8') splitUnits(kernel, outF, flops, (o0, o1) => [...head, o0, o1]);
      else {
        const cost = readWork(flops, inF / 2 + (inF / Q4_BLOCK) * (half ? 2 : 4));
        splitUnits(kernel, outF, cost, (o0, o1) => [...head, o0, o1, half]);
      }
    },
  );
}

const kernels = {
  linearInt8: (x, wq, wScale, bias, out, rows, inF, outF) => run('int8', x, wq, wScale, bias, out, rows, inF, outF),
  linearQ4: (x, wq, wScale, bias, out, rows, inF, outF) => run('q4', x, wq, wScale, bias, out, rows, inF, outF),
} satisfies Pick<HostKernels, 'linearInt8' | 'linearQ4'>;

export const { linearInt8, linearQ4 } = kernels;

// A quantized table's rows are a gather (no arithmetic worth SIMD): the js twin's, on wasm memory's views.
wasmKernels.register('quantized', { linearInt8, linearQ4, embeddingInt8, embeddingQ4 });
