/**
 * The webgpu elementwise family (src/backend/webgpu/elementwise.ts) against its js twins: broadcasts of every
 * pattern the ops make, scalars on either side, every unary op, pow's special and general exponents (negative
 * bases with integer exponents), relu/gelu and their backwards, dropout's mask; odd sizes, empty tensors and a
 * grid folded past 65,535 workgroups. Arithmetic (+ − ×, select) is exact in WGSL as in js's float32
 * stores, and ÷ is made so (FDIV: WGSL's `/` was off by an ULP on an H100), so those compare bit for bit;
 * exp/log/tanh/pow/erf differ by a few float32 ULP (closeToJs).
 */
import { test } from 'node:test';
import type { BinaryOp, UnaryOp } from '../../src/backend/backend.ts';
import * as K from '../../src/backend/webgpu/elementwise.ts';
import { stridesOf } from '../../src/tensor/shape.ts';
import { rng, uniformArray } from '../helpers/random.ts';
import { closeToJs, down, js, out, sameBits, up } from './webgpu-twins.ts';

const rand = rng(5);
const randn = (n: number, scale = 3) => uniformArray(rand, n, scale);
const prod = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);
const OPS: BinaryOp[] = ['add', 'sub', 'mul', 'div'];

/** Broadcast strides of `shape` (right-aligned) within `outShape`: 0 where broadcast. */
function bst(shape: number[], outShape: number[]): number[] {
  const pad = [...new Array<number>(outShape.length - shape.length).fill(1), ...shape];
  return stridesOf(pad).map((st, d) => (pad[d] === 1 && outShape[d] !== 1 ? 0 : st));
}

test('webgpu binary: every broadcast pattern and op, bit for bit with js', async () => {
  const cases: [number[], number[], number[]][] = [
    [[1], [1], [1]],
    [[7], [7], [7]],
    [
      [3, 5, 17],
      [3, 5, 17],
      [3, 5, 17],
    ],
    [[3, 5, 17], [3, 5, 17], [17]],
    [
      [3, 5, 17],
      [3, 5, 17],
      [1, 1, 17],
    ],
    [[4, 9], [1], [4, 9]],
    [
      [2, 3, 6],
      [2, 3, 6],
      [2, 1, 6],
    ],
    [
      [5, 3],
      [5, 3],
      [5, 1],
    ],
    [
      [2, 5, 4, 3],
      [2, 1, 4, 1],
      [1, 5, 1, 3],
    ],
    [[0, 5], [0, 5], [5]],
  ];
  for (const [outShape, aShape, bShape] of cases)
    for (const op of OPS) {
      const a = randn(prod(aShape));
      const b = randn(prod(bShape));
      const n = prod(outShape);
      const ref = randn(n);
      const o = out(ref);
      js.binary(op, a, bst(aShape, outShape), b, bst(bShape, outShape), ref, outShape);
      K.binary(op, up(a), bst(aShape, outShape), up(b), bst(bShape, outShape), o, outShape);
      sameBits(await down(o, n), ref, `${op} ${outShape} = ${aShape} ∘ ${bShape}`);
    }
});

test('webgpu binary: in place (out is an input) and a grid folded past 65,535 workgroups', async () => {
  const n = 65_535 * 64 + 77;
  const a = randn(n);
  const b = randn(n);
  const ref = new Float32Array(n);
  js.binary('mul', a, [1], b, [1], ref, [n]);
  const ag = up(a);
  K.binary('mul', ag, [1], up(b), [1], ag, [n]);
  sameBits(await down(ag, n), ref, 'in-place mul over a folded grid');
});

test('webgpu binaryScalar: both sides, bit for bit', async () => {
  for (const op of OPS)
    for (const first of [false, true]) {
      const a = randn(301);
      const ref = new Float32Array(301);
      js.binaryScalar(op, a, 0.37, ref, first);
      const o = out(randn(301));
      K.binaryScalar(op, up(a), 0.37, o, first);
      sameBits(await down(o, 301), Math.fround(0.37) === 0.37 ? ref : f32Scalar(op, a, first), `${op} first ${first}`);
    }
});

test('webgpu div: correctly rounded for every kind of operand (specials, subnormals, ∞ and 0 results, ties)', async () => {
  const tiny = 2 ** -149;
  const edge = [0, -0, 1, -1, 3, 0.1, -7.5, 1.5, 2, 0.5, Infinity, -Infinity, Number.NaN, tiny, -tiny, 3 * tiny];
  edge.push(2 ** -126, 2 ** -126 - tiny, 3.4028234663852886e38, -3.4028234663852886e38, 1e-30, 1e30, 2 ** -100);
  // Random bit patterns: every exponent field from subnormal to the largest (NaN payloads too).
  const bits = new Uint32Array(96);
  for (let i = 0; i < bits.length; i++) bits[i] = (Math.floor(rand() * 2 ** 32) >>> 0) ^ ((i % 3) << 29);
  const values = Float32Array.from([...edge, ...new Float32Array(bits.buffer)]);
  const m = values.length;
  const a = new Float32Array(m * m);
  const b = new Float32Array(m * m);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < m; j++) {
      a[i * m + j] = values[i]!;
      b[i * m + j] = values[j]!;
    }
  // Quotients that are exact ties between two subnormals (round to even), and that round up into the normals.
  const ta = Float32Array.from([3 * tiny, tiny, 5 * tiny, 2 ** -126 - tiny, 2 ** -126 - tiny]);
  const tb = Float32Array.from([2, 2, 2, 1 + 2 ** -23, 1 - 2 ** -24]);
  for (const [x, y] of [
    [a, b],
    [ta, tb],
  ] as const) {
    const n = x.length;
    const ref = new Float32Array(n);
    js.binary('div', x, [1], y, [1], ref, [n]);
    const o = out(new Float32Array(n));
    K.binary('div', up(x), [1], up(y), [1], o, [n]);
    sameBits(await down(o, n), ref, `div of ${n} operand pairs`);
  }
});

/** The op with the scalar rounded to float32 first, as the GPU (and PyTorch's float32 tensors) compute it. */
function f32Scalar(op: BinaryOp, a: Float32Array, first: boolean): Float32Array {
  const ref = new Float32Array(a.length);
  js.binaryScalar(op, a, Math.fround(0.37), ref, first);
  return ref;
}

test('webgpu unary, pow, relu, gelu and backwards: close to js (a few ULP of WGSL exp/log/tanh/pow)', async () => {
  const x = randn(1001);
  x[0] = 0;
  x[1] = -0;
  x[2] = -2;
  for (const op of ['exp', 'log', 'neg', 'sqrt', 'tanh', 'sigmoid', 'abs'] as UnaryOp[]) {
    const ref = new Float32Array(x.length);
    js.unary(op, x, ref);
    const o = out(randn(x.length));
    K.unary(op, up(x), o);
    const got = await down(o, x.length);
    if (op === 'neg' || op === 'abs') sameBits(got, ref, op);
    else closeToJs(got, ref, op, 1e-6, 2e-6);
  }
  for (const p of [2, 3, 1, 0.5, -1, -2, 1.7, 0]) {
    const ref = new Float32Array(x.length);
    js.pow(x, p, ref);
    const o = out(randn(x.length));
    K.pow(up(x), p, o);
    closeToJs(await down(o, x.length), ref, `pow ${p}`, 1e-6, 4e-6);
  }
  const dy = randn(x.length);
  const pairs: [string, Float32Array, Float32Array][] = [];
  for (const [name, fwd] of [
    ['relu', K.relu],
    ['gelu', K.gelu],
    ['geluTanh', K.geluTanh],
  ] as const) {
    const ref = new Float32Array(x.length);
    js[name](x, ref);
    const o = out(randn(x.length));
    fwd(up(x), o);
    pairs.push([name, await down(o, x.length), ref]);
  }
  for (const [name, bwd] of [
    ['reluBackward', K.reluBackward],
    ['geluBackward', K.geluBackward],
    ['geluTanhBackward', K.geluTanhBackward],
  ] as const) {
    const ref = new Float32Array(x.length);
    js[name](x, dy, ref);
    const o = out(randn(x.length));
    bwd(up(x), up(dy), o);
    pairs.push([name, await down(o, x.length), ref]);
  }
  for (const [name, got, ref] of pairs)
    if (name.startsWith('relu')) sameBits(got, ref, name);
    else closeToJs(got, ref, name, 1e-6, 2e-6);
});

/** |a − b| at most one float32 ULP of b, element by element. */
function withinUlp(a: Float32Array, b: Float32Array, what: string): void {
  for (let i = 0; i < b.length; i++) {
    const ulp = Math.abs(Math.fround(b[i] * (1 + 2 ** -23)) - b[i]) || 2 ** -149;
    if (!(Math.abs(a[i] - b[i]) <= ulp)) throw new Error(`${what}: element ${i} is ${a[i]}, expected ${b[i]} ± 1 ULP`);
  }
}

test('webgpu dropoutMask: the same kept elements as js, out within 1 ULP (float32 scale, as PyTorch)', async () => {
  for (const n of [1, 2, 31, 1000]) {
    const bits = Uint32Array.from({ length: Math.ceil(n / 2) }, () => Math.floor(rand() * 2 ** 32));
    const x = randn(n);
    const keep = new Float32Array(n);
    const o = new Float32Array(n);
    js.dropoutMask(bits, 19_661, 1 / 0.7, x, keep, o);
    const kg = out(randn(n));
    const og = out(randn(n));
    K.dropoutMask(bits, 19_661, 1 / 0.7, up(x), kg, og);
    sameBits(await down(kg, n), keep, `keep ${n}`);
    withinUlp(await down(og, n), o, `out ${n}`);
  }
});
