import { record } from '../autograd/engine.ts';
import type { BinaryOp, UnaryOp } from '../backend/backend.ts';
import { broadcastShapes, broadcastStrides, type Shape, sameShape } from '../tensor/shape.ts';
import { type Tensor, full } from '../tensor/tensor.ts';
import { sumToShape } from './reduce.ts';
import { empty, f32, K, st, upload } from './util.ts';

/** An operand of the arithmetic ops: a tensor, or a number that acts as a scalar tensor. */
export type TensorLike = Tensor | number;

function rawBinary(op: BinaryOp, a: Tensor, b: Tensor, name: string): Tensor {
  const k = K();
  const ad = f32(a, name, 'input', k);
  const bd = f32(b, name, 'other', k);
  const shape = sameShape(a.shape, b.shape) ? a.shape.slice() : broadcastShapes(a.shape, b.shape, name);
  const out = empty(shape, k);
  k.binary(op, ad, broadcastStrides(a.shape, shape), bd, broadcastStrides(b.shape, shape), st(out), shape);
  return out;
}

function rawScalar(op: BinaryOp, a: Tensor, s: number, scalarFirst: boolean, name: string): Tensor {
  const k = K();
  const ad = f32(a, name, 'input', k);
  const out = empty(a.shape, k);
  k.binaryScalar(op, ad, s, st(out), scalarFirst);
  return out;
}

function scale(g: Tensor, s: number): Tensor {
  return s === 1 ? g : rawScalar('mul', g, s, false, 'scale');
}

/** a + b with broadcasting; either may be a number. */
export function add(a: TensorLike, b: TensorLike): Tensor {
  if (typeof a === 'number') return add(b, a);
  if (typeof b === 'number') {
    const out = rawScalar('add', a, b, false, 'add');
    return record(out, 'add', [a], (g) => [g]);
  }
  const out = rawBinary('add', a, b, 'add');
  return record(out, 'add', [a, b], (g) => [sumToShape(g, a.shape), sumToShape(g, b.shape)]);
}

/** a − b with broadcasting; either may be a number. */
export function sub(a: TensorLike, b: TensorLike): Tensor {
  if (typeof a === 'number') {
    const bt = b as Tensor;
    const out = rawScalar('sub', bt, a, true, 'sub');
    return record(out, 'rsub', [bt], (g) => [scale(g, -1)]);
  }
  if (typeof b === 'number') {
    const out = rawScalar('sub', a, b, false, 'sub');
    return record(out, 'sub', [a], (g) => [g]);
  }
  const out = rawBinary('sub', a, b, 'sub');
  return record(out, 'sub', [a, b], (g) => [sumToShape(g, a.shape), sumToShape(scale(g, -1), b.shape)]);
}

/** a · b elementwise, with broadcasting; either may be a number. */
export function mul(a: TensorLike, b: TensorLike): Tensor {
  if (typeof a === 'number') return mul(b, a);
  if (typeof b === 'number') {
    const out = rawScalar('mul', a, b, false, 'mul');
    return record(out, 'mul', [a], (g) => [scale(g, b)]);
  }
  const out = rawBinary('mul', a, b, 'mul');
  return record(out, 'mul', [a, b], (g) => [
    a.requiresGrad ? sumToShape(rawBinary('mul', g, b, 'mul'), a.shape) : null,
    b.requiresGrad ? sumToShape(rawBinary('mul', g, a, 'mul'), b.shape) : null,
  ]);
}

/** a / b elementwise, with broadcasting; either may be a number. */
export function div(a: TensorLike, b: TensorLike): Tensor {
  if (typeof a === 'number') {
    const bt = b as Tensor;
    const out = rawScalar('div', bt, a, true, 'div');
    return record(out, 'rdiv', [bt], (g) => [rawBinary('mul', g, divisorGrad(out, bt), 'div')]);
  }
  if (typeof b === 'number') {
    const out = rawScalar('div', a, b, false, 'div');
    return record(out, 'div', [a], (g) => [scale(g, 1 / b)]);
  }
  const out = rawBinary('div', a, b, 'div');
  return record(out, 'div', [a, b], (g) => [
    a.requiresGrad ? sumToShape(rawBinary('div', g, b, 'div'), a.shape) : null,
    b.requiresGrad ? sumToShape(rawBinary('mul', g, divisorGrad(out, b), 'div'), b.shape) : null,
  ]);
}

/** d(a/b)/db = −a/b² = −out/b. */
function divisorGrad(out: Tensor, b: Tensor): Tensor {
  return rawBinary('div', rawScalar('mul', out, -1, false, 'div'), b, 'div');
}

function unaryOp(op: UnaryOp, x: Tensor, grad: (x: Tensor, y: Tensor, g: Tensor) => Tensor): Tensor {
  const out = empty(x.shape);
  K().unary(op, f32(x, op, 'input'), st(out));
  return record(out, op, [x], (g) => [grad(x, out, g)]);
}

/** −x elementwise. */
export function neg(x: Tensor): Tensor {
  return unaryOp('neg', x, (_x, _y, g) => scale(g, -1));
}

/** eˣ elementwise. */
export function exp(x: Tensor): Tensor {
  return unaryOp('exp', x, (_x, y, g) => rawBinary('mul', g, y, 'exp'));
}

/** The natural logarithm, elementwise. */
export function log(x: Tensor): Tensor {
  return unaryOp('log', x, (x0, _y, g) => rawBinary('div', g, x0, 'log'));
}

/** √x elementwise. */
export function sqrt(x: Tensor): Tensor {
  return unaryOp('sqrt', x, (_x, y, g) => rawBinary('div', g, rawScalar('mul', y, 2, false, 'sqrt'), 'sqrt'));
}

/** The hyperbolic tangent, elementwise. */
export function tanh(x: Tensor): Tensor {
  // 1 − tanh²
  return unaryOp('tanh', x, (_x, y, g) =>
    rawBinary('mul', g, rawScalar('sub', rawBinary('mul', y, y, 'tanh'), 1, true, 'tanh'), 'tanh'),
  );
}

/** The logistic function 1 / (1 + e⁻ˣ), elementwise. */
export function sigmoid(x: Tensor): Tensor {
  // σ(1 − σ)
  return unaryOp('sigmoid', x, (_x, y, g) =>
    rawBinary('mul', g, rawBinary('mul', y, rawScalar('sub', y, 1, true, 'sigmoid'), 'sigmoid'), 'sigmoid'),
  );
}

/** xᵖ elementwise, for a number p. */
export function pow(x: Tensor, p: number): Tensor {
  const out = empty(x.shape);
  K().pow(f32(x, 'pow', 'input'), p, st(out));
  return record(out, 'pow', [x], (g) => {
    const d = empty(x.shape);
    K().pow(st(x), p - 1, st(d));
    return [rawBinary('mul', g, rawScalar('mul', d, p, false, 'pow'), 'pow')];
  });
}

/** An activation with a kernel each way: `op` forward, `${op}Backward` (which reads x) for the gradient. */
function activation(op: 'relu' | 'gelu' | 'geluTanh', x: Tensor): Tensor {
  const out = empty(x.shape);
  K()[op](f32(x, op, 'input'), st(out));
  return record(out, op, [x], (g) => {
    const dx = empty(x.shape);
    K()[`${op}Backward` as const](st(x), st(g), st(dx));
    return [dx];
  });
}

/** max(0, x) elementwise (§3.3's FFN activation); its gradient at 0 is 0, as torch's. */
export function relu(x: Tensor): Tensor {
  return activation('relu', x);
}

/**
 * GELU. approximate 'none' (torch's default): the exact erf form, one fused kernel. 'tanh': GPT-2's
 * `gelu_new`, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), as torch.nn.functional.gelu(x, approximate='tanh'):
 * one fused kernel too, with its own backward (it was eight elementwise ops, 13-22% of a GPT-2 decoding step).
 */
export function gelu(x: Tensor, approximate: 'none' | 'tanh' = 'none'): Tensor {
  if (approximate === 'tanh') return activation('geluTanh', x);
  if (approximate !== 'none')
    throw new Error(`gelu: approximate must be 'none' or 'tanh', got '${String(approximate)}'`);
  return activation('gelu', x);
}

/**
 * SwiGLU's gate (Shazeer 2020, "GLU Variants Improve Transformer"): silu(gate)·up, one kernel each way, as the
 * feed-forward of Llama, Qwen2 and Mistral computes act_fn(gate_proj(x)) * up_proj(x). gate and up have one shape.
 */
export function swiglu(gate: Tensor, up: Tensor): Tensor {
  const gd = f32(gate, 'swiglu', 'gate');
  const ud = f32(up, 'swiglu', 'up');
  if (!sameShape(gate.shape, up.shape))
    throw new Error(
      `swiglu: gate and up must have the same shape, got [${gate.shape.join(', ')}] and [${up.shape.join(', ')}]`,
    );
  const out = empty(gate.shape);
  K().swiglu(gd, ud, st(out));
  return record(out, 'swiglu', [gate, up], (g) => {
    const dg = empty(gate.shape);
    const du = empty(up.shape);
    K().swigluBackward(gd, ud, st(g), st(dg), st(du));
    return [dg, du];
  });
}

/**
 * Where `mask` is true (nonzero), put `value`; elsewhere keep x. The mask broadcasts to x's shape.
 * Gradient flows to x where the mask is false.
 */
export function maskedFill(x: Tensor, mask: Tensor, value: number): Tensor {
  const xd = f32(x, 'maskedFill', 'input');
  if (mask.dtype === 'float32') throw new Error(`maskedFill: mask must be bool or int32, got float32`);
  const shape = broadcastShapes(x.shape, mask.shape, 'maskedFill');
  if (!sameShape(shape, x.shape)) {
    throw new Error(
      `maskedFill: mask of shape [${mask.shape.join(', ')}] must broadcast to input shape [${x.shape.join(', ')}]`,
    );
  }
  // keep = 1 where the mask is false, broadcast to x's shape.
  // Computed on the host (no kernel yet): an explicit synchronous read, refused on devices without one.
  const md = mask.dataSync();
  const ks = new Float32Array(mask.size);
  for (let i = 0; i < ks.length; i++) ks[i] = md[i] !== 0 ? 0 : 1;
  const keep = broadcastRaw(upload(ks, mask.shape), shape);
  const kd = keep.dataSync<Float32Array>();
  const xv = x.dataSync<Float32Array>();
  void xd;
  const o = new Float32Array(x.size);
  for (let i = 0; i < o.length; i++) o[i] = kd[i] !== 0 ? xv[i] : value; // not x·keep: inf·0 is NaN
  const out = upload(o, shape);
  return record(out, 'maskedFill', [x], (g) => [rawBinary('mul', g, keep, 'maskedFill')]);
}

/** A contiguous copy of x broadcast to `shape` (no gradient). */
function broadcastRaw(x: Tensor, shape: Shape): Tensor {
  if (sameShape(x.shape, shape)) return x;
  const zero = full([1], 0);
  const out = empty(shape);
  K().binary(
    'add',
    st(x),
    broadcastStrides(x.shape, shape),
    st(zero),
    shape.map(() => 0),
    st(out),
    shape,
  );
  return out;
}

/** Broadcast to a larger shape (a copy; gradient sums back). */
export function expand(x: Tensor, shape: Shape): Tensor {
  const target = broadcastShapes(x.shape, shape, 'expand');
  if (!sameShape(target, shape)) {
    throw new Error(`expand: shape [${x.shape.join(', ')}] cannot be expanded to [${shape.join(', ')}]`);
  }
  f32(x, 'expand', 'input');
  const out = sameShape(x.shape, target) ? x.clone() : broadcastRaw(x, target);
  return record(out, 'expand', [x], (g) => [sumToShape(g, x.shape)]);
}
