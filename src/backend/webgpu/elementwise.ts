/**
 * Elementwise kernels on the GPU, one thread an element: broadcasting binary ops (shape and strides as
 * parameters), binary ops with a scalar, unary ops, pow, dropout's mask, relu, gelu and their backwards.
 * Oracle: js/elementwise.ts (gelu's erf is the same Chebyshev fit, in float32).
 */
import type { Backend, BinaryOp, UnaryOp } from '../backend.ts';
import { f, u } from './context.ts';
import { buf } from './device.ts';
import { webgpuKernels } from './registry.ts';
import { gpu } from './registry.ts';
import { AT, dimsParam, ERF, FDIV, perElement, runPerElement } from './wgsl.ts';

// Division by FDIV (wgsl.ts): WGSL's `/` is not correctly rounded on every GPU, js's is.
const OPS: Record<BinaryOp, string> = { add: 'x + y', sub: 'x - y', mul: 'x * y', div: 'fdiv(x, y)' };
const helpersOf = (op: BinaryOp) => (op === 'div' ? FDIV : '');

const f32n = (h: { bytes: number }) => h.bytes / 4;

/** True when strides are those of a contiguous tensor of `shape` (no broadcast). */
function contiguous(strides: readonly number[], shape: readonly number[]): boolean {
  let s = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    if (shape[d] !== 1 && strides[d] !== s) return false;
    s *= shape[d];
  }
  return true;
}

export const binary: Backend['binary'] = (op, a, aStrides, b, bStrides, out, outShape) => {
  const n = f32n(buf(out));
  const decls = /* wgsl */ `
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> o: array<f32>;`;
  if (contiguous(aStrides, outShape) && contiguous(bStrides, outShape)) {
    const code = perElement('', decls, `let x = a[i]; let y = b[i]; o[i] = ${OPS[op]};`, helpersOf(op));
    runPerElement(`binary-${op}-flat`, code, n, [buf(a), buf(b), buf(out)]);
    return;
  }
  const code = perElement(
    'nd: u32, pad0: u32, pad1: u32, shape: array<vec4u, 2>, sa: array<vec4u, 2>, sb: array<vec4u, 2>',
    decls,
    /* wgsl */ `
  var rest = i;
  var ao = 0u;
  var bo = 0u;
  for (var d = i32(p.nd) - 1; d >= 0; d--) {
    let k = u32(d);
    let size = at(p.shape, k);
    let idx = rest % size;
    rest = rest / size;
    ao += idx * at(p.sa, k);
    bo += idx * at(p.sb, k);
  }
  let x = a[ao]; let y = b[bo];
  o[i] = ${OPS[op]};`,
    AT + helpersOf(op),
  );
  runPerElement(
    `binary-${op}`,
    code,
    n,
    [buf(a), buf(b), buf(out)],
    [
      u(outShape.length),
      u(0),
      u(0),
      ...dimsParam(outShape, 'binary'),
      ...dimsParam(aStrides, 'binary'),
      ...dimsParam(bStrides, 'binary'),
    ],
  );
};

export const binaryScalar: Backend['binaryScalar'] = (op, a, scalar, out, scalarFirst) => {
  const expr = scalarFirst ? `let x = p.s; let y = a[i];` : `let x = a[i]; let y = p.s;`;
  const code = perElement(
    's: f32',
    /* wgsl */ `
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> o: array<f32>;`,
    `${expr} o[i] = ${OPS[op]};`,
    helpersOf(op),
  );
  runPerElement(`binaryScalar-${op}-${scalarFirst}`, code, f32n(buf(out)), [buf(a), buf(out)], [f(scalar)]);
};

// WGSL leaves log and sqrt of negative numbers undefined: NaN, as js and PyTorch give, is chosen explicitly.
const UNARY: Record<UnaryOp, string> = {
  exp: 'exp(v)',
  log: 'select(select(log(v), nan_(), v < 0.0), neg_inf(), v == 0.0)',
  neg: '-v',
  sqrt: 'select(sqrt(v), nan_(), v < 0.0)',
  tanh: 'tanh(v)',
  sigmoid: '1.0 / (1.0 + exp(-v))',
  abs: 'abs(v)',
};

const MAP_DECLS = /* wgsl */ `
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> o: array<f32>;`;

/** out[i] = expr(v) with v = x[i]. */
function map(key: string, expr: string, x: Parameters<typeof buf>[0], out: Parameters<typeof buf>[0], helpers = '') {
  const code = perElement('', MAP_DECLS, `let v = x[i]; o[i] = ${expr};`, helpers);
  runPerElement(key, code, f32n(buf(out)), [buf(x), buf(out)]);
}

export const unary: Backend['unary'] = (op, x, out) => map(`unary-${op}`, UNARY[op], x, out);

/**
 * x^p: squares and cubes by multiplication, square roots by sqrt, integer powers of negative numbers with
 * their sign (WGSL's pow is undefined for negative bases), others by pow.
 */
export const pow: Backend['pow'] = (x, p, out) => {
  if (p === 2) return map('pow-2', 'v * v', x, out);
  if (p === 1) return map('pow-1', 'v', x, out);
  if (p === 0.5) return map('pow-half', 'select(sqrt(v), nan_(), v < 0.0)', x, out);
  const code = perElement(
    'e: f32, odd: u32, whole: u32',
    MAP_DECLS,
    /* wgsl */ `
  let v = x[i];
  if (p.e == 0.0) { o[i] = 1.0; return; }
  if (v == 0.0) {
    // WGSL's pow leaves 0^e undefined: ±0 or ±∞, the sign kept for odd integer exponents, as js.
    let mag = select(0.0, pos_inf(), p.e < 0.0);
    o[i] = select(mag, -mag, p.odd == 1u && bitcast<u32>(v) == 0x80000000u);
    return;
  }
  if (p.whole == 1u) {
    let m = pow(abs(v), p.e);
    o[i] = select(m, -m, v < 0.0 && p.odd == 1u);
  } else {
    o[i] = select(pow(v, p.e), nan_(), v < 0.0);
  }`,
  );
  const whole = Number.isInteger(p);
  runPerElement(
    'pow',
    code,
    f32n(buf(out)),
    [buf(x), buf(out)],
    [f(p), u(whole && Math.abs(p) % 2 === 1 ? 1 : 0), u(whole ? 1 : 0)],
  );
};

export const relu: Backend['relu'] = (x, out) => map('relu', 'select(0.0, v, v > 0.0)', x, out);

/** dx[i] = `body` (reading x[i], dy[i]): an activation's backward. */
function backward(
  key: string,
  body: string,
  x: Parameters<typeof buf>[0],
  dy: Parameters<typeof buf>[0],
  dx: Parameters<typeof buf>[0],
  helpers = '',
): void {
  const code = perElement(
    '',
    /* wgsl */ `
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;`,
    body,
    helpers,
  );
  runPerElement(key, code, f32n(buf(dx)), [buf(x), buf(dy), buf(dx)]);
}

export const reluBackward: Backend['reluBackward'] = (x, dy, dx) =>
  backward('reluBackward', 'dx[i] = select(0.0, dy[i], x[i] > 0.0);', x, dy, dx);

export const gelu: Backend['gelu'] = (x, out) =>
  map('gelu', '0.5 * v * (1.0 + erf_(v * 0.70710678118654752))', x, out, ERF);

export const geluBackward: Backend['geluBackward'] = (x, dy, dx) =>
  backward(
    'geluBackward',
    /* wgsl */ `
  let v = x[i];
  let cdf = 0.5 * (1.0 + erf_(v * 0.70710678118654752));
  let pdf = 0.39894228040143268 * exp(-0.5 * v * v);
  dx[i] = dy[i] * (cdf + v * pdf);`,
    x,
    dy,
    dx,
    ERF,
  );

// gelu_tanh as x·σ(2u), 2u = x(k0 + k1x²), as the wasm kernel computes it (see assembly/elementwise.ts); e^(−2u)
// clamped to e^±88, so an overflowing x³ saturates instead of making inf/inf; the backward's second term is 0 where
// |2u| > 87 (below 1e-35 there, or 0·∞ once x² overflows), as in wasm.
const SIGMOID_2U = /* wgsl */ `
fn twoU(v: f32) -> f32 { return v * (1.5957691216057308 + 0.07135481627260025 * v * v); }
fn sigmoid(t: f32) -> f32 { return 1.0 / (1.0 + exp(clamp(-t, -88.0, 88.0))); }`;

export const geluTanh: Backend['geluTanh'] = (x, out) => map('geluTanh', 'v * sigmoid(twoU(v))', x, out, SIGMOID_2U);

export const geluTanhBackward: Backend['geluTanhBackward'] = (x, dy, dx) =>
  backward(
    'geluTanhBackward',
    /* wgsl */ `
  let v = x[i];
  let t = twoU(v);
  let s = sigmoid(t);
  let du = 1.5957691216057308 + 0.21406444881780076 * v * v;
  dx[i] = dy[i] * (s + v * select(0.0, s * (1.0 - s) * du, abs(t) <= 87.0));`,
    x,
    dy,
    dx,
    SIGMOID_2U,
  );

/**
 * Dropout's mask from host random words (uploaded for the call): keep = scale rounded to float32, as the js
 * twin, and out = x·keep in float32, as PyTorch computes it (its mask is a float32 tensor); the js twin
 * multiplies by the float64 scale, so outputs may differ from it by one float32 rounding (at most 1 ULP).
 */
export const dropoutMask: Backend['dropoutMask'] = (bits, threshold, scale, x, keep, out) => {
  const n = f32n(buf(keep));
  if (n === 0) return;
  const ctx = gpu();
  const words = ctx.alloc(4 * Math.ceil(n / 2), false);
  ctx.write(words, bits.subarray(0, Math.ceil(n / 2)), 0, true);
  const code = perElement(
    'threshold: u32, scale: f32',
    /* wgsl */ `
@group(0) @binding(1) var<storage, read> bits: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> keep: array<f32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;`,
    /* wgsl */ `
  let w = bits[i / 2u];
  let hw = select(w & 0xffffu, w >> 16u, (i & 1u) == 1u);
  let k = select(0.0, p.scale, hw >= p.threshold);
  keep[i] = k;
  o[i] = x[i] * k;`,
  );
  runPerElement('dropoutMask', code, n, [words, buf(x), buf(keep), buf(out)], [u(threshold), f(scale)]);
  ctx.release(words);
};

const SIGMOID = /* wgsl */ `
fn sigmoid(t: f32) -> f32 { return 1.0 / (1.0 + exp(clamp(-t, -88.0, 88.0))); }`;

/** silu(gate)·up (SwiGLU's activation); e^(−g) clamped to e^±88 as gelu_tanh's, so a large |g| saturates. */
export const swiglu: Backend['swiglu'] = (gate, up, out) => {
  const code = perElement(
    '',
    /* wgsl */ `
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read> up: array<f32>;
@group(0) @binding(3) var<storage, read_write> o: array<f32>;`,
    'let v = g[i]; o[i] = (v * sigmoid(v)) * up[i];',
    SIGMOID,
  );
  runPerElement('swiglu', code, f32n(buf(out)), [buf(gate), buf(up), buf(out)]);
};

export const swigluBackward: Backend['swigluBackward'] = (gate, up, dy, dgate, dup) => {
  const code = perElement(
    '',
    /* wgsl */ `
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read> up: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dg: array<f32>;
@group(0) @binding(5) var<storage, read_write> du: array<f32>;`,
    /* wgsl */ `
  let v = g[i];
  let s = sigmoid(v);
  dg[i] = dy[i] * up[i] * s * (1.0 + v * (1.0 - s));
  du[i] = dy[i] * (v * s);`,
    SIGMOID,
  );
  runPerElement('swigluBackward', code, f32n(buf(dgate)), [buf(gate), buf(up), buf(dy), buf(dgate), buf(dup)]);
};

webgpuKernels.register('elementwise', {
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
