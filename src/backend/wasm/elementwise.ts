/**
 * Elementwise kernels (assembly/elementwise.ts) behind the Backend interface.
 *
 * - relu, gelu, geluTanh, swiglu and their backwards always run in wasm: arrays in wasm memory are used in place,
 *   others are copied in and out (`staged`; the work per element repays the copy).
 * - binary, binaryScalar and dropout's mask are cheap per element: they run in wasm only when
 *   every float array is already a wasm view, else they call their js twin (route.ts).
 * - unary and pow have no wasm kernel: the js twins are registered as they are.
 */
import type { BinaryOp, HostKernels } from '../backend.ts';
import {
  binary as jsBinary,
  binaryScalar as jsBinaryScalar,
  dropoutMask as jsDropoutMask,
  isTrailingBlock,
  pow,
  unary,
} from '../js/elementwise.ts';
import { declareExports, sig, type F64, type I32, type Ptr } from './loader.ts';
import { splitUnits } from './parallel.ts';
import { wasmKernels } from './registry.ts';
import { inWasm, layoutToJs } from './route.ts';
import { staged } from './stage.ts';

/** Binary ops by code (assembly/elementwise.ts: the order of BinaryOp). */
const OPS: Record<BinaryOp, number> = { add: 0, sub: 1, mul: 2, div: 3 };

const K = declareExports('elementwise.ts', {
  /** out = a ∘ b over n elements. */
  binaryFull: sig<[op: I32, a: Ptr, b: Ptr, out: Ptr, n: I32]>(5),
  /** Rows of w against one block of w (b, or a when `swap`). */
  binaryRows: sig<[op: I32, swap: I32, a: Ptr, b: Ptr, out: Ptr, rows: I32, w: I32]>(7),
  binaryScalar: sig<[op: I32, a: Ptr, out: Ptr, n: I32, s: F64, scalarFirst: I32, exact: I32]>(7),
  dropoutMask: sig<[bits: Ptr, x: Ptr, keep: Ptr, out: Ptr, n: I32, threshold: I32, s: F64]>(7),
  relu: sig<[x: Ptr, out: Ptr, n: I32]>(3),
  reluBackward: sig<[x: Ptr, dy: Ptr, dx: Ptr, n: I32]>(4),
  gelu: sig<[x: Ptr, out: Ptr, n: I32]>(3),
  geluBackward: sig<[x: Ptr, dy: Ptr, dx: Ptr, n: I32]>(4),
  geluTanh: sig<[x: Ptr, out: Ptr, n: I32]>(3),
  geluTanhBackward: sig<[x: Ptr, dy: Ptr, dx: Ptr, n: I32]>(4),
  swiglu: sig<[gate: Ptr, up: Ptr, out: Ptr, n: I32]>(4),
  swigluBackward: sig<[gate: Ptr, up: Ptr, dy: Ptr, dgate: Ptr, dup: Ptr, n: I32]>(6),
});

/**
 * out = a ∘ b. In wasm for the two layouts training hits most, as the js twin's fast paths: same
 * shapes, and one operand a contiguous block broadcast along leading dims (a bias, a scalar);
 * other broadcasts go to the twin. `out` may be the same array as `a` or `b` (a += b in place).
 */
export const binary: HostKernels['binary'] = (op, a, aStrides, b, bStrides, out, outShape) => {
  const n = out.length;
  const code = OPS[op];
  if (!inWasm(n > 0 && code !== undefined, a, b, out)) return jsBinary(op, a, aStrides, b, bStrides, out, outShape);
  const aFull = a.length === n;
  const bFull = b.length === n;
  const [pa, pb, po] = [a.byteOffset, b.byteOffset, out.byteOffset];
  if (aFull && bFull) {
    splitUnits('binaryFull', n, 8, (i0, i1) => [code, pa + 4 * i0, pb + 4 * i0, po + 4 * i0, i1 - i0]);
  } else if (aFull && isTrailingBlock(bStrides, outShape, b.length)) {
    const w = b.length;
    splitUnits('binaryRows', n / w, 8 * w, (r0, r1) => [code, 0, pa + 4 * r0 * w, pb, po + 4 * r0 * w, r1 - r0, w]);
  } else if (bFull && isTrailingBlock(aStrides, outShape, a.length)) {
    const w = a.length;
    splitUnits('binaryRows', n / w, 8 * w, (r0, r1) => [code, 1, pb + 4 * r0 * w, pa, po + 4 * r0 * w, r1 - r0, w]);
  } else {
    layoutToJs();
    jsBinary(op, a, aStrides, b, bStrides, out, outShape);
  }
};

export const binaryScalar: HostKernels['binaryScalar'] = (op, a, scalar, out, scalarFirst) => {
  const code = OPS[op];
  if (!inWasm(a.length > 0 && code !== undefined, a, out)) return jsBinaryScalar(op, a, scalar, out, scalarFirst);
  // A float32 scalar: float32 arithmetic rounds exactly as the twin's float64 one; else float64.
  const exact = Object.is(Math.fround(scalar), scalar) || Number.isNaN(scalar) ? 1 : 0;
  K().binaryScalar(code, a.byteOffset, out.byteOffset, a.length, scalar, scalarFirst ? 1 : 0, exact);
};

/**
 * Dropout's mask in wasm when x, keep and out are wasm views (a training step's activations); the
 * random words are copied in. Split among the threads by words: each element depends only on its
 * own word, so the result does not depend on the thread count.
 */
export const dropoutMask: HostKernels['dropoutMask'] = (bits, threshold, scale, x, keep, out) => {
  const n = keep.length;
  if (!inWasm(n > 0, x, keep, out)) return jsDropoutMask(bits, threshold, scale, x, keep, out);
  const words = (n + 1) >> 1;
  const [px, pk, po] = [x.byteOffset, keep.byteOffset, out.byteOffset];
  staged([{ x: new Int32Array(bits.buffer, bits.byteOffset, words), mode: 'in' }], 0, ([pb]) => {
    splitUnits('dropoutMask', words, 12, (w0, w1) => [
      pb! + 4 * w0,
      px + 8 * w0,
      pk + 8 * w0,
      po + 8 * w0,
      Math.min(n, 2 * w1) - 2 * w0,
      threshold,
      scale,
    ]);
  });
};

export const relu: HostKernels['relu'] = (x, out) => {
  if (x.length === 0) return;
  staged(
    [
      { x, mode: 'in' },
      { x: out, mode: 'out' },
    ],
    0,
    ([a, o]) => K().relu(a!, o!, x.length),
  );
};

export const reluBackward: HostKernels['reluBackward'] = (x, dy, dx) => {
  if (x.length === 0) return;
  staged(
    [
      { x, mode: 'in' },
      { x: dy, mode: 'in' },
      { x: dx, mode: 'out' },
    ],
    0,
    ([a, d, o]) => K().reluBackward(a!, d!, o!, x.length),
  );
};

export const gelu: HostKernels['gelu'] = (x, out) => {
  if (x.length === 0) return;
  staged(
    [
      { x, mode: 'in' },
      { x: out, mode: 'out' },
    ],
    0,
    ([a, o]) => K().gelu(a!, o!, x.length),
  );
};

export const geluBackward: HostKernels['geluBackward'] = (x, dy, dx) => {
  if (x.length === 0) return;
  staged(
    [
      { x, mode: 'in' },
      { x: dy, mode: 'in' },
      { x: dx, mode: 'out' },
    ],
    0,
    ([a, d, o]) => K().geluBackward(a!, d!, o!, x.length),
  );
};

export const geluTanh: HostKernels['geluTanh'] = (x, out) => {
  if (x.length === 0) return;
  staged(
    [
      { x, mode: 'in' },
      { x: out, mode: 'out' },
    ],
    0,
    ([a, o]) => K().geluTanh(a!, o!, x.length),
  );
};

export const geluTanhBackward: HostKernels['geluTanhBackward'] = (x, dy, dx) => {
  if (x.length === 0) return;
  staged(
    [
      { x, mode: 'in' },
      { x: dy, mode: 'in' },
      { x: dx, mode: 'out' },
    ],
    0,
    ([a, d, o]) => K().geluTanhBackward(a!, d!, o!, x.length),
  );
};

export const swiglu: HostKernels['swiglu'] = (gate, up, out) => {
  if (gate.length === 0) return;
  staged(
    [
      { x: gate, mode: 'in' },
      { x: up, mode: 'in' },
      { x: out, mode: 'out' },
    ],
    0,
    ([g, u, o]) => K().swiglu(g!, u!, o!, gate.length),
  );
};

export const swigluBackward: HostKernels['swigluBackward'] = (gate, up, dy, dgate, dup) => {
  if (gate.length === 0) return;
  staged(
    [
      { x: gate, mode: 'in' },
      { x: up, mode: 'in' },
      { x: dy, mode: 'in' },
      { x: dgate, mode: 'out' },
      { x: dup, mode: 'out' },
    ],
    0,
    ([g, u, d, dg, du]) => K().swigluBackward(g!, u!, d!, dg!, du!, gate.length),
  );
};

wasmKernels.register('elementwise', {
  binary,
  binaryScalar,
  dropoutMask,
  relu,
  reluBackward,
  gelu,
  geluBackward,
  geluTanh,
  geluTanhBackward,
  swiglu,
  swigluBackward,
  unary,
  pow,
});
