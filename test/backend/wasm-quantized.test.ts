/**
 * The quantized linear kernels (src/backend/{js,wasm}/quantized.ts, assembly/quantized.ts), three ways:
 *
 * 1. The js twin against an independent float64 evaluation of its definition (the activations quantized
 *    here by the rule written out again, the integer dot products exact): the twin's only error is its
 *    float32 steps, at most (nb + 4)·u·(S + |b|), u = 2⁻²⁴, nb the float32 additions of block sums (1 for
 *    int8), S = sx·Σᵢ|qxᵢ|·|ŵᵢ|. A wrong or missing weight element moves the result by sx·|qx|·sw, far
 *    more: a test below corrupts one and sees it caught.
 * 2. The wasm kernels bit-identical to the twin, both builds (plain SIMD i32x4.dot_i16x8_s; relaxed SIMD
 *    i16x8.relaxed_dot_i8x16_i7x16_s with the activation's sign moved onto the weight, its one's complement
 *    for int8 so that −128 is exact too, or q4's nibbles offset by 8), with int8 weights over all of
 *    −128..127, from arrays in wasm memory and outside it, on awkward shapes and the one-row
 *    (decoding) case, and their four-row path on every tail of outputs and rows of x.
 * 3. Against fp32 x·Wᵀ + b on the unquantized weight, within the bound quantization allows: with
 *    x̂ = sx·qx and ŵ = sw·qw, |x̂ŵ − xw| <= |x̂ − x|·|ŵ| + |x|·|ŵ − w| and rounding to nearest gives
 *    |x̂ − x| <= sx/2, |ŵ − w| <= sw/2 (sw per row for int8, per block of 32 for q4), so
 *    |y − y_fp32| <= Σᵢ (sx/2·|ŵᵢ| + |xᵢ|·swᵢ/2) + slack, the slack 1e-5·(Σ|x||w| + |b|) covering the
 *    float32 roundings of the scales and the reference (each ~1e-7 relative).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostBackend } from '../../src/backend/backend.ts';
import { jsBackend as jsB } from '../../src/backend/js/index.ts';
import { wasmBackend as wasmB } from '../../src/backend/wasm/index.ts';
import {
  linearInt8 as jsInt8,
  linearQ4 as jsQ4,
  quantizeInt8,
  quantizeQ4,
  roundHalfEven,
} from '../../src/backend/js/quantized.ts';
import { setWasmVariant } from '../../src/backend/wasm/loader.ts';
import { alloc } from '../../src/backend/wasm/memory.ts';
import { randomSource, sameBits, variants, w } from './twins.ts';

const jsBackend = hostBackend(jsB);
const wasmBackend = hostBackend(wasmB);
const U = 2 ** -24;
const { rand, randn } = randomSource(50);

/** Round half to even, written differently from the twin's (floor and parity). */
function rhe(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (d < 0.5) return f;
  if (d > 0.5) return f + 1;
  return f % 2 === 0 ? f : f + 1;
}

/** The activation rule of the contract (backend.ts linearInt8), for one row. */
function quantRow(x: Float32Array): { q: number[]; sx: number } {
  let amax = 0;
  for (const v of x) amax = Math.max(amax, Math.abs(v));
  if (amax === 0) return { q: Array.from(x, () => 0), sx: 0 };
  const inv = Math.fround(127 / amax);
  return { q: Array.from(x, (v) => rhe(Math.fround(v * inv))), sx: Math.fround(amax / 127) };
}

/** Half-precision bits as a number, written out from IEEE 754's definition (not the library's table). */
function half(h: number): number {
  const e = (h >> 10) & 31;
  const m = h & 1023;
  const v = e === 0 ? (m / 1024) * 2 ** -14 : (1 + m / 1024) * 2 ** (e - 15);
  return h & 0x8000 ? -v : v;
}

/**
 * Random float16 scales (their bits) of magnitude about 2^-15..2^-4, subnormal halves (below 2^-14) and zeros
 * among them; never infinite or NaN (the loader refuses those).
 */
const halfScales = (n: number) =>
  Uint16Array.from({ length: n }, (_, i) =>
    i % 17 === 5 ? 0 : i % 7 === 3 ? Math.floor(rand() * 1024) : 0x0400 + Math.floor(rand() * 0x2c00),
  );

/** A Uint16Array in wasm memory, holding a's values. */
function w16(a: Uint16Array): Uint16Array {
  const block = alloc(Math.ceil(a.length / 2));
  const v = new Uint16Array(block.buffer, block.byteOffset, a.length);
  v.set(a);
  return v;
}

/** Element (o, i) of a weight as its integer and its scale. */
type Weight = (o: number, i: number) => { q: number; s: number };
const int8Weight =
  (wq: Int8Array, scale: Float32Array, inF: number): Weight =>
  (o, i) => ({ q: wq[o * inF + i]!, s: scale[o]! });
const q4Weight =
  (wq: Uint8Array, scale: Float32Array | Uint16Array, inF: number): Weight =>
  (o, i) => {
    const e = o * inF + i;
    const nib = e % 2 === 0 ? wq[e >> 1]! & 15 : wq[e >> 1]! >> 4;
    const k = (o * inF + i) >> 5;
    return { q: nib >= 8 ? nib - 16 : nib, s: scale instanceof Uint16Array ? half(scale[k]!) : scale[k]! };
  };

/** The twin's output checked against its definition in float64, within its float32 roundings. */
function checkDefinition(
  x: Float32Array,
  weight: Weight,
  bias: Float32Array | null,
  out: Float32Array,
  rows: number,
  inF: number,
  outF: number,
  nb: number,
  what: string,
): void {
  for (let r = 0; r < rows; r++) {
    const { q, sx } = quantRow(x.subarray(r * inF, (r + 1) * inF));
    for (let o = 0; o < outF; o++) {
      let y = 0,
        s = 0;
      for (let i = 0; i < inF; i++) {
        const e = weight(o, i);
        y += q[i]! * e.q * e.s;
        s += Math.abs(q[i]! * e.q * e.s);
      }
      const b = bias ? bias[o]! : 0;
      const exact = sx * y + b;
      const tol = (nb + 4) * U * (sx * s + Math.abs(b));
      const got = out[r * outF + o]!;
      if (!(Math.abs(got - exact) <= tol))
        assert.fail(`${what}: out[${r}, ${o}] = ${got}, its definition gives ${exact} (allowed ±${tol})`);
    }
  }
}

/** out against fp32 x·Wᵀ + b on the unquantized weight w, within the quantization bound (file comment). */
function checkFp32(
  x: Float32Array,
  wf: Float32Array,
  weight: Weight,
  bias: Float32Array | null,
  out: Float32Array,
  rows: number,
  inF: number,
  outF: number,
  what: string,
): number {
  let worst = 0;
  for (let r = 0; r < rows; r++) {
    const xr = x.subarray(r * inF, (r + 1) * inF);
    const { sx } = quantRow(xr);
    for (let o = 0; o < outF; o++) {
      let y = 0,
        bound = 0,
        mag = 0;
      for (let i = 0; i < inF; i++) {
        const wv = wf[o * inF + i]!;
        const e = weight(o, i);
        y += xr[i]! * wv;
        bound += (sx / 2) * Math.abs(e.q * e.s) + (Math.abs(xr[i]!) * e.s) / 2;
        mag += Math.abs(xr[i]! * wv);
      }
      const b = bias ? bias[o]! : 0;
      const allowed = bound + 1e-5 * (mag + Math.abs(b));
      const err = Math.abs(out[r * outF + o]! - (y + b));
      if (!(err <= allowed))
        assert.fail(`${what}: out[${r}, ${o}] is ${err} from fp32 x·Wᵀ + b, the bound is ${allowed}`);
      worst = Math.max(worst, err / allowed);
    }
  }
  return worst;
}

// (rows, inF, outF): one-row decoding, inF off the 16- and 32-lane loops, outputs enough to split among threads.
const INT8_SHAPES: [number, number, number][] = [
  [1, 1, 1],
  [1, 15, 3],
  [1, 33, 7],
  [3, 47, 5],
  [2, 64, 64],
  [17, 100, 13],
  [1, 512, 300],
  [5, 256, 129],
];
/** Large enough (over 2²² flops) for the wasm kernels to split the outputs among the threads. */
const THREADED: [number, number, number][] = [
  [1, 2048, 1100],
  [3, 1024, 777],
];
const Q4_SHAPES: [number, number, number][] = [
  [1, 32, 1],
  [1, 64, 7],
  [3, 96, 5],
  [2, 32, 64],
  [17, 160, 13],
  [1, 512, 300],
  [5, 256, 129],
];

test('roundHalfEven: ties to even, others to nearest', () => {
  const cases: [number, number][] = [
    [0.5, 0],
    [1.5, 2],
    [2.5, 2],
    [-0.5, -0],
    [-1.5, -2],
    [-2.5, -2],
    [-3.5, -4],
    [126.5, 126],
    [-126.5, -126],
    [2.4999998, 2],
    [-2.5000002, -3],
  ];
  for (const [v, want] of cases) assert.equal(roundHalfEven(v) === want, true, `roundHalfEven(${v})`);
});

test('js linearInt8 and linearQ4 equal their definition; a corrupted weight element is caught', () => {
  for (const [rows, inF, outF] of INT8_SHAPES) {
    const x = randn(rows * inF, 3);
    const wf = randn(outF * inF, 0.5);
    const bias = randn(outF);
    const { q, scale } = quantizeInt8(wf, outF, inF);
    const out = new Float32Array(rows * outF);
    jsInt8(x, q, scale, bias, out, rows, inF, outF);
    checkDefinition(x, int8Weight(q, scale, inF), bias, out, rows, inF, outF, 1, `int8 ${rows}x${inF}x${outF}`);
  }
  for (const [rows, inF, outF] of Q4_SHAPES) {
    const x = randn(rows * inF, 3);
    const wf = randn(outF * inF, 0.5);
    const { q, scale } = quantizeQ4(wf, outF, inF);
    const out = new Float32Array(rows * outF);
    jsQ4(x, q, scale, null, out, rows, inF, outF);
    const what = `q4 ${rows}x${inF}x${outF}`;
    checkDefinition(x, q4Weight(q, scale, inF), null, out, rows, inF, outF, inF / 32, what);
  }
  // The check is tight: one weight element changed by one step fails it.
  const [rows, inF, outF] = [2, 64, 8];
  const x = randn(rows * inF, 3);
  const { q, scale } = quantizeInt8(randn(outF * inF), outF, inF);
  const out = new Float32Array(rows * outF);
  jsInt8(x, q, scale, null, out, rows, inF, outF);
  const bad = q.slice();
  bad[3 * inF + 10] = bad[3 * inF + 10]! > 0 ? bad[3 * inF + 10]! - 1 : bad[3 * inF + 10]! + 1;
  assert.throws(() => checkDefinition(x, int8Weight(bad, scale, inF), null, out, rows, inF, outF, 1, 'corrupted'));
});

test('quantized linear against fp32 x·Wᵀ + b within the quantization bound', () => {
  for (const [rows, inF, outF] of INT8_SHAPES) {
    const x = randn(rows * inF, 2);
    const wf = randn(outF * inF, 0.1);
    const bias = randn(outF);
    const { q, scale } = quantizeInt8(wf, outF, inF);
    const out = new Float32Array(rows * outF);
    jsInt8(x, q, scale, bias, out, rows, inF, outF);
    checkFp32(x, wf, int8Weight(q, scale, inF), bias, out, rows, inF, outF, `int8 ${rows}x${inF}x${outF}`);
  }
  for (const [rows, inF, outF] of Q4_SHAPES) {
    const x = randn(rows * inF, 2);
    const wf = randn(outF * inF, 0.1);
    const bias = randn(outF);
    const { q, scale } = quantizeQ4(wf, outF, inF);
    const out = new Float32Array(rows * outF);
    jsQ4(x, q, scale, bias, out, rows, inF, outF);
    checkFp32(x, wf, q4Weight(q, scale, inF), bias, out, rows, inF, outF, `q4 ${rows}x${inF}x${outF}`);
  }
});

test('a row of zeros gives the bias exactly; linearQ4 refuses inF not a multiple of 32, naming it', () => {
  const x = new Float32Array(2 * 32);
  x.set(randn(32), 32);
  const { q, scale } = quantizeQ4(randn(3 * 32), 3, 32);
  const bias = randn(3);
  for (const be of [jsBackend, wasmBackend]) {
    const out = new Float32Array(6);
    be.linearQ4(x, q, scale, bias, out, 2, 32, 3);
    sameBits(out.subarray(0, 3), bias, `${be.name} zero row`);
    assert.throws(() => be.linearQ4(x, q, scale, bias, out, 1, 48, 1), /linearQ4: inF 48 is not a multiple of 32/);
    assert.throws(
      () => be.linearInt8(x, new Int8Array(5), new Float32Array(3), null, out, 1, 32, 3),
      /linearInt8: wq has 5/,
    );
  }
});

/** Random int8 weights over the whole int8 range −128..127, and q4 bytes with every nibble −8..7. */
const int8Values = (n: number) => Int8Array.from({ length: n }, () => Math.floor(rand() * 256) - 128);
const q4Bytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));

for (const variant of variants) {
  test(`wasm (${variant}) linearInt8 and linearQ4 are bit-identical to js`, () => {
    setWasmVariant(variant);
    for (const inWasm of [false, true]) {
      const place = (a: Float32Array) => (inWasm ? w(a) : a);
      for (const [rows, inF, outF] of [...INT8_SHAPES, ...THREADED]) {
        for (const withBias of [true, false]) {
          const x = place(randn(rows * inF, 3));
          const q = int8Values(outF * inF);
          const scale = place(randn(outF, 0.01));
          const bias = withBias ? place(randn(outF)) : null;
          const oj = new Float32Array(rows * outF).fill(NaN);
          const ow = place(new Float32Array(rows * outF).fill(NaN));
          jsBackend.linearInt8(x, q, scale, bias, oj, rows, inF, outF);
          wasmBackend.linearInt8(x, q, scale, bias, ow, rows, inF, outF);
          sameBits(ow, oj, `int8 ${rows}x${inF}x${outF} bias ${withBias} in wasm memory ${inWasm}`);
        }
      }
      for (const [rows, inF, outF] of [...Q4_SHAPES, ...THREADED]) {
        for (const withBias of [true, false]) {
          // float16 scales (as qkv quantizes) and float32 ones (q4 files of older qkv).
          for (const scales of ['float16', 'float32']) {
            const x = place(randn(rows * inF, 3));
            const q = q4Bytes((outF * inF) / 2);
            const n = (outF * inF) / 32;
            const scale = scales === 'float16' ? (inWasm ? w16(halfScales(n)) : halfScales(n)) : place(randn(n, 0.01));
            const bias = withBias ? place(randn(outF)) : null;
            const oj = new Float32Array(rows * outF).fill(NaN);
            const ow = place(new Float32Array(rows * outF).fill(NaN));
            jsBackend.linearQ4(x, q, scale, bias, oj, rows, inF, outF);
            wasmBackend.linearQ4(x, q, scale, bias, ow, rows, inF, outF);
            const what = `q4 ${rows}x${inF}x${outF} ${scales} scales bias ${withBias} in wasm memory ${inWasm}`;
            sameBits(ow, oj, what);
          }
        }
      }
    }
  });
}

/**
 * The wasm kernels compute weight rows four at a time (their lanes one output each), then the rest one
 * at a time; the threads split the outputs at any index. Every count of outputs 1..13 (tails of 1, 2, 3
 * after the groups of four), rows of x 1, 2, 3, 5, inF on and off the 16-lane loop (int8) and with one
 * or several q4 blocks, and threaded splits that start a range off a multiple of four: each output is
 * the twin's, bit for bit, so an output computed from another weight row, another row of x or another
 * row's scale fails. The weight rows differ (each is checked to give its own output somewhere).
 */
for (const variant of variants) {
  test(`wasm (${variant}) four-row GEMV: every output from its own weight row, row of x and scales`, () => {
    setWasmVariant(variant);
    const int8In = [16, 17, 31, 48, 100];
    const q4In = [32, 64, 96];
    const cases: ['int8' | 'q4', number, number, number][] = [];
    for (const rows of [1, 2, 3, 5])
      for (let outF = 1; outF <= 13; outF++) {
        for (const inF of int8In) cases.push(['int8', rows, inF, outF]);
        for (const inF of q4In) cases.push(['q4', rows, inF, outF]);
      }
    // Threaded (over 2²² flops): two ranges of 551 outputs, the second starting at 551.
    cases.push(['int8', 1, 2048, 1102], ['q4', 1, 2048, 1102], ['int8', 2, 2048, 1103], ['q4', 3, 1024, 1105]);
    for (const [c, [kind, rows, inF, outF]] of cases.entries()) {
      const x = randn(rows * inF, 3);
      const bias = randn(outF);
      const q = kind === 'int8' ? int8Values(outF * inF) : q4Bytes((outF * inF) / 2);
      // q4: float16 scales in every other case (each row's own halves), float32 in the others.
      const scale =
        kind === 'q4' && c % 2 === 0
          ? halfScales((outF * inF) / 32)
          : randn(kind === 'int8' ? outF : (outF * inF) / 32, 0.01);
      const oj = new Float32Array(rows * outF).fill(NaN);
      const ow = new Float32Array(rows * outF).fill(NaN);
      const what = `${kind} ${rows}x${inF}x${outF}`;
      if (kind === 'int8') {
        jsBackend.linearInt8(x, q as Int8Array, scale as Float32Array, bias, oj, rows, inF, outF);
        wasmBackend.linearInt8(x, q as Int8Array, scale as Float32Array, bias, ow, rows, inF, outF);
      } else {
        jsBackend.linearQ4(x, q as Uint8Array, scale, bias, oj, rows, inF, outF);
        wasmBackend.linearQ4(x, q as Uint8Array, scale, bias, ow, rows, inF, outF);
      }
      sameBits(ow, oj, what);
      // Not vacuous: the outputs of one row of x differ from output to output.
      if (outF > 1) assert.ok(new Set(oj.subarray(0, outF)).size > outF / 2, `${what}: outputs differ`);
    }
  });
}

/**
 * Issue 61: the relaxed build used to move x's sign onto the weight by negating it, and −(−128) wraps to
 * −128 in int8, so a weight of −128 against a negative activation gave the product's opposite (an output of
 * −76.7 where the twin gave 0.079, no error). Every weight −128 and every activation negative (each
 * quantizes to −127, sx = 1/127): acc = I·127·128 exactly, so out = fround(I·127·128)·fround(sx·2⁻⁷) =
 * I·127 up to sx's rounding, on both builds, bit for bit the twin's; the mixed rows check the one's
 * complement's correction against rows where only some activations are negative, on and off the 16 lanes.
 */
for (const variant of variants) {
  test(`wasm (${variant}) int8: weights of −128 against negative activations give the twin's bits`, () => {
    setWasmVariant(variant);
    for (const [rows, inF, outF] of [
      [1, 16, 4],
      [1, 37, 5],
      [2, 64, 9],
      [3, 100, 13],
    ] as [number, number, number][]) {
      const x = new Float32Array(rows * inF).fill(-1);
      const q = new Int8Array(outF * inF).fill(-128);
      const scale = new Float32Array(outF).fill(2 ** -7);
      const oj = new Float32Array(rows * outF).fill(NaN);
      const ow = new Float32Array(rows * outF).fill(NaN);
      jsBackend.linearInt8(x, q, scale, null, oj, rows, inF, outF);
      wasmBackend.linearInt8(x, q, scale, null, ow, rows, inF, outF);
      const want = Math.fround(Math.fround(inF * 127 * 128) * Math.fround(Math.fround(1 / 127) * 2 ** -7));
      for (let i = 0; i < oj.length; i++) assert.equal(oj[i], want, `js ${rows}x${inF}x${outF} out[${i}]`);
      assert.ok(Math.abs(want - inF) < 1e-4 * inF, `${want} is I = ${inF}`);
      sameBits(ow, oj, `all −128 ${rows}x${inF}x${outF}`);
      // Rows of mixed signs, every weight −128 or near it.
      const xm = randn(rows * inF, 3);
      const qm = Int8Array.from({ length: outF * inF }, (_, i) => (i % 3 === 0 ? -128 : i % 3 === 1 ? 127 : -127));
      jsBackend.linearInt8(xm, qm, scale, null, oj, rows, inF, outF);
      wasmBackend.linearInt8(xm, qm, scale, null, ow, rows, inF, outF);
      sameBits(ow, oj, `mixed −128 ${rows}x${inF}x${outF}`);
    }
  });
}
