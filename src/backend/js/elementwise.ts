import type { BinaryOp, HostKernels } from '../backend.ts';
import { jsKernels } from './registry.ts';

function apply(op: BinaryOp, x: number, y: number): number {
  switch (op) {
    case 'add':
      return x + y;
    case 'sub':
      return x - y;
    case 'mul':
      return x * y;
    case 'div':
      return x / y;
  }
}

/** Broadcasting binary op over an N-d output, with fast paths for the shapes training hits most. */
export const binary: HostKernels['binary'] = (op, a, aStrides, b, bStrides, out, outShape) => {
  const n = out.length;
  const nd = outShape.length;
  if (n === 0) return;
  const aFull = a.length === n;
  const bFull = b.length === n;
  if (aFull && bFull) {
    switch (op) {
      case 'add':
        for (let i = 0; i < n; i++) out[i] = a[i] + b[i];
        return;
      case 'sub':
        for (let i = 0; i < n; i++) out[i] = a[i] - b[i];
        return;
      case 'mul':
        for (let i = 0; i < n; i++) out[i] = a[i] * b[i];
        return;
      case 'div':
        for (let i = 0; i < n; i++) out[i] = a[i] / b[i];
        return;
    }
  }
  // b broadcast along leading dims only (bias add): b repeats every b.length elements.
  if (aFull && isTrailingBlock(bStrides, outShape, b.length)) {
    const w = b.length;
    for (let i = 0; i < n; i += w) for (let j = 0; j < w; j++) out[i + j] = apply(op, a[i + j], b[j]);
    return;
  }
  if (bFull && isTrailingBlock(aStrides, outShape, a.length)) {
    const w = a.length;
    for (let i = 0; i < n; i += w) for (let j = 0; j < w; j++) out[i + j] = apply(op, a[j], b[i + j]);
    return;
  }
  // General case: walk the output with an index counter, carrying both input offsets.
  const idx = new Array<number>(nd).fill(0);
  let ao = 0;
  let bo = 0;
  const inner = outShape[nd - 1];
  const as = aStrides[nd - 1];
  const bs = bStrides[nd - 1];
  for (let o = 0; o < n; o += inner) {
    for (let j = 0; j < inner; j++) out[o + j] = apply(op, a[ao + j * as], b[bo + j * bs]);
    for (let d = nd - 2; d >= 0; d--) {
      idx[d]++;
      ao += aStrides[d];
      bo += bStrides[d];
      if (idx[d] < outShape[d]) break;
      ao -= aStrides[d] * outShape[d];
      bo -= bStrides[d] * outShape[d];
      idx[d] = 0;
    }
  }
};

/** True if `strides` describe a contiguous block of size `len` at the end, repeated over leading dims. */
export function isTrailingBlock(strides: readonly number[], shape: readonly number[], len: number): boolean {
  let size = 1;
  let d = shape.length - 1;
  for (; d >= 0 && size < len; d--) {
    if (strides[d] !== size) return false;
    size *= shape[d];
  }
  if (size !== len) return false;
  for (; d >= 0; d--) if (strides[d] !== 0 && shape[d] !== 1) return false;
  return true;
}

export const binaryScalar: HostKernels['binaryScalar'] = (op, a, s, out, scalarFirst) => {
  const n = a.length;
  if (scalarFirst) for (let i = 0; i < n; i++) out[i] = apply(op, s, a[i]);
  else for (let i = 0; i < n; i++) out[i] = apply(op, a[i], s);
};

export const unary: HostKernels['unary'] = (op, x, out) => {
  const n = x.length;
  switch (op) {
    case 'exp':
      for (let i = 0; i < n; i++) out[i] = Math.exp(x[i]);
      return;
    case 'log':
      for (let i = 0; i < n; i++) out[i] = Math.log(x[i]);
      return;
    case 'neg':
      for (let i = 0; i < n; i++) out[i] = -x[i];
      return;
    case 'sqrt':
      for (let i = 0; i < n; i++) out[i] = Math.sqrt(x[i]);
      return;
    case 'tanh':
      for (let i = 0; i < n; i++) out[i] = Math.tanh(x[i]);
      return;
    case 'sigmoid':
      for (let i = 0; i < n; i++) out[i] = 1 / (1 + Math.exp(-x[i]));
      return;
    case 'abs':
      for (let i = 0; i < n; i++) out[i] = Math.abs(x[i]);
      return;
  }
};

export const pow: HostKernels['pow'] = (x, p, out) => {
  if (p === 2) for (let i = 0; i < x.length; i++) out[i] = x[i] * x[i];
  else for (let i = 0; i < x.length; i++) out[i] = x[i] ** p;
};

export const relu: HostKernels['relu'] = (x, out) => {
  // biome-ignore lint/complexity/useMathMinMax: not Math.max, which differs from this select on NaN and -0.
  for (let i = 0; i < x.length; i++) out[i] = x[i] > 0 ? x[i] : 0;
};

/** PyTorch defines relu'(0) = 0. */
export const reluBackward: HostKernels['reluBackward'] = (x, dy, dx) => {
  for (let i = 0; i < x.length; i++) dx[i] = x[i] > 0 ? dy[i] : 0;
};

/**
 * erf with relative error below 1.2e-7 everywhere (Numerical Recipes' Chebyshev fit of erfc),
 * comfortably inside float32 precision.
 */
export function erf(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t *
                      (-0.18628806 +
                        t *
                          (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? 1 - r : r - 1;
}

const SQRT1_2 = Math.SQRT1_2;
const INV_SQRT_2PI = 1 / Math.sqrt(2 * Math.PI);

/** gelu(x) = x·Φ(x) = x/2·(1 + erf(x/√2)), the exact form torch uses by default. */
export const gelu: HostKernels['gelu'] = (x, out) => {
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    out[i] = 0.5 * v * (1 + erf(v * SQRT1_2));
  }
};

/** gelu'(x) = Φ(x) + x·φ(x). */
export const geluBackward: HostKernels['geluBackward'] = (x, dy, dx) => {
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    const cdf = 0.5 * (1 + erf(v * SQRT1_2));
    const pdf = INV_SQRT_2PI * Math.exp(-0.5 * v * v);
    dx[i] = dy[i] * (cdf + v * pdf);
  }
};

const SQRT_2_PI = Math.sqrt(2 / Math.PI);

/** gelu with the tanh approximation, in float64 (the oracle the float32 kernels are held to). */
export const geluTanh: HostKernels['geluTanh'] = (x, out) => {
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    out[i] = 0.5 * v * (1 + Math.tanh(SQRT_2_PI * (v + 0.044715 * v * v * v)));
  }
};

/** Its derivative: ½(1 + t) + ½·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²). */
export const geluTanhBackward: HostKernels['geluTanhBackward'] = (x, dy, dx) => {
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    const t = Math.tanh(SQRT_2_PI * (v + 0.044715 * v * v * v));
    dx[i] = dy[i] * (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * SQRT_2_PI * (1 + 3 * 0.044715 * v * v));
  }
};

/** silu(gate)·up = gate·σ(gate)·up, in float64 (the oracle). */
export const swiglu: HostKernels['swiglu'] = (gate, up, out) => {
  for (let i = 0; i < gate.length; i++) {
    const g = gate[i];
    // silu rounded to float32 before the product, as transformers' act_fn(gate_proj(x)) * up_proj(x).
    out[i] = Math.fround(g / (1 + Math.exp(-g))) * up[i];
  }
};

/** d(silu(g)·u): dgate = dy·u·σ(g)·(1 + g·(1 − σ(g))), dup = dy·silu(g). */
export const swigluBackward: HostKernels['swigluBackward'] = (gate, up, dy, dgate, dup) => {
  for (let i = 0; i < gate.length; i++) {
    const g = gate[i];
    const sg = 1 / (1 + Math.exp(-g));
    dgate[i] = dy[i] * up[i] * sg * (1 + g * (1 - sg));
    dup[i] = dy[i] * g * sg;
  }
};

/** Dropout's mask and output from the random words in `bits` (see Backend.dropoutMask). */
export const dropoutMask: HostKernels['dropoutMask'] = (bits, threshold, scale, x, keep, out) => {
  const n = keep.length;
  for (let i = 0, j = 0; i < n; i += 2, j++) {
    const u = bits[j]!;
    const k0 = (u & 0xffff) >= threshold ? scale : 0;
    keep[i] = k0;
    out[i] = x[i]! * k0;
    if (i + 1 < n) {
      const k1 = u >>> 16 >= threshold ? scale : 0;
      keep[i + 1] = k1;
      out[i + 1] = x[i + 1]! * k1;
    }
  }
};

jsKernels.register('elementwise', {
  binary,
  binaryScalar,
  unary,
  pow,
  dropoutMask,
  relu,
  reluBackward,
  gelu,
  geluBackward,
  geluTanh,
  geluTanhBackward,
  swiglu,
  swigluBackward,
});
