/**
 * The wasm kernels that run only on arrays already in wasm memory (src/backend/wasm/kernels.ts:
 * binary, binaryScalar, dropoutMask, reduceSum, permute, copyRows, embedding and its backward,
 * Adam) against their js twins, on odd sizes (not multiples of the SIMD width 4), empty arrays, padding ids and broadcast
 * shapes. Inputs and outputs are placed in wasm memory so the wasm path runs (checked with the
 * wrappers' route counts); ordinary arrays must take the js path and give the same answer.
 *
 * These kernels are built to round exactly as the twins (see assembly/elementwise.ts), so most
 * comparisons are bit for bit; only row sums (float64 partial sums in another order) get a
 * float32-rounding tolerance.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BinaryOp } from '../../src/backend/backend.ts';
import { jsBackend } from '../../src/backend/js/index.ts';
import { wasmBackend } from '../../src/backend/wasm/index.ts';
import { routeCounts } from '../../src/backend/wasm/route.ts';
import { kernels, setWasmVariant, wasmVariant, type WasmVariant } from '../../src/backend/wasm/loader.ts';
import { alloc, isWasmView } from '../../src/backend/wasm/memory.ts';
import { numThreads, setNumThreads } from '../../src/backend/wasm/threads.ts';
import { stridesOf } from '../../src/tensor/shape.ts';
import { assertClose } from '../helpers/assert.ts';
import { rng, uniformArray } from '../helpers/random.ts';

assert.ok(kernels(), 'the wasm module loads (npm run build:wasm)');
const variants: WasmVariant[] = wasmVariant() === 'simd' ? ['simd'] : ['relaxed-simd', 'simd'];

const rand = rng(11);
const randn = (n: number, scale = 1) => uniformArray(rand, n, scale);
/** A copy of x in wasm memory (never freed: a few MB for the whole file). */
function w(x: Float32Array): Float32Array {
  const v = alloc(x.length);
  v.set(x);
  return v;
}
const prod = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);

function sameBits(actual: Float32Array, expected: Float32Array, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    if (!Object.is(actual[i], expected[i])) assert.fail(`${what}: element ${i} is ${actual[i]}, expected ${expected[i]}`);
  }
}

/** Count the route of what `f` runs: asserts it took wasm (`expect` 'wasm') or the js twin. */
function routed<T>(expect: 'wasm' | 'js', what: string, f: () => T): T {
  const before = { ...routeCounts };
  const r = f();
  const dw = routeCounts.wasm - before.wasm, dj = routeCounts.js - before.js;
  if (expect === 'wasm') assert.ok(dw > 0 && dj === 0, `${what}: expected the wasm kernel (wasm ${dw}, js ${dj})`);
  else assert.ok(dj > 0 && dw === 0, `${what}: expected the js twin (wasm ${dw}, js ${dj})`);
  return r;
}

const OPS: BinaryOp[] = ['add', 'sub', 'mul', 'div'];

/** Values with specials sprinkled in: zeros of both signs, ±∞, NaN. */
function spiky(n: number): Float32Array {
  const x = randn(n, 3);
  const specials = [0, -0, Infinity, -Infinity, NaN, 1e-40];
  for (let i = 0; i < n; i += 7) x[i] = specials[(i / 7) % specials.length]!;
  return x;
}

for (const variant of variants) {
  test(`wasm (${variant}) binary: same shapes and leading-dim broadcasts match js bit for bit; other broadcasts go to js`, () => {
    setWasmVariant(variant);
    // [outShape, aShape, bShape, wasm kernel expected]
    const cases: [number[], number[], number[], boolean][] = [
      [[1], [1], [1], true],
      [[7], [7], [7], true],
      [[3, 5, 17], [3, 5, 17], [3, 5, 17], true],
      [[3, 5, 17], [3, 5, 17], [17], true], // bias
      [[3, 5, 17], [3, 5, 17], [5, 17], true],
      [[3, 5, 17], [3, 5, 17], [1, 1, 17], true],
      [[4, 9], [4, 9], [1], true], // scalar tensor
      [[4, 9], [9], [4, 9], true], // first operand broadcast
      [[4, 9], [1], [4, 9], true],
      [[2, 3, 6], [2, 3, 6], [2, 1, 6], false], // middle-dim broadcast: js
      [[5, 3], [5, 3], [5, 1], false], // trailing broadcast: js
      [[0, 5], [0, 5], [5], false], // empty: js
    ];
    for (const [outShape, aShape, bShape, viaWasm] of cases) for (const op of OPS) {
      const n = prod(outShape);
      const a = spiky(prod(aShape)), b = spiky(prod(bShape));
      const pad = (s: number[]) => [...new Array<number>(outShape.length - s.length).fill(1), ...s];
      const bst = (s: number[]) => stridesOf(pad(s)).map((st, d) => (pad(s)[d] === 1 && outShape[d] !== 1 ? 0 : st));
      const ref = new Float32Array(n);
      jsBackend.binary(op, a, bst(aShape), b, bst(bShape), ref, outShape);
      const what = `${op} out ${outShape} a ${aShape} b ${bShape}`;
      const out = w(randn(n, 9));
      routed(viaWasm ? 'wasm' : 'js', what, () => wasmBackend.binary(op, w(a), bst(aShape), w(b), bst(bShape), out, outShape));
      sameBits(out, ref, what);
      // Ordinary arrays: the js twin, same answer.
      const plain = new Float32Array(n);
      routed('js', `${what} (plain arrays)`, () => wasmBackend.binary(op, a, bst(aShape), b, bst(bShape), plain, outShape));
      sameBits(plain, ref, `${what} (plain arrays)`);
      // One operand in wasm memory and one not: still js.
      routed('js', `${what} (mixed)`, () => wasmBackend.binary(op, w(a), bst(aShape), b, bst(bShape), w(new Float32Array(n)), outShape));
    }
  });

  test(`wasm (${variant}) binary in place (out = a, out = b), as autograd accumulation uses it`, () => {
    setWasmVariant(variant);
    for (const n of [1, 5, 4099]) for (const op of OPS) {
      const a = randn(n), b = randn(n);
      const st = [1];
      const ref = new Float32Array(n);
      jsBackend.binary(op, a, st, b, st, ref, [n]);
      const wa = w(a);
      routed('wasm', `${op} in place`, () => wasmBackend.binary(op, wa, st, w(b), st, wa, [n]));
      sameBits(wa, ref, `${op} ${n}: out = a`);
      const wb = w(b);
      wasmBackend.binary(op, w(a), st, wb, st, wb, [n]);
      sameBits(wb, ref, `${op} ${n}: out = b`);
      // Bias broadcast in place.
      const rows = 3, bias = randn(n);
      const x = randn(rows * n);
      const ref2 = new Float32Array(rows * n);
      jsBackend.binary(op, x, [n, 1], bias, [0, 1], ref2, [rows, n]);
      const wx = w(x);
      wasmBackend.binary(op, wx, [n, 1], w(bias), [0, 1], wx, [rows, n]);
      sameBits(wx, ref2, `${op} ${rows}x${n} bias, in place`);
    }
  });

  test(`wasm (${variant}) binaryScalar matches js bit for bit (float32 and float64 scalars, both orders)`, () => {
    setWasmVariant(variant);
    for (const n of [1, 2, 3, 4, 5, 1003]) for (const op of OPS) for (const s of [2, 0.5, -0, 1 / 3, 0.1, 1 / Math.sqrt(24), 1e-45, Infinity, NaN]) for (const first of [false, true]) {
      const a = spiky(n);
      const ref = new Float32Array(n);
      jsBackend.binaryScalar(op, a, s, ref, first);
      const out = w(randn(n, 5));
      const what = `${first ? `${s} ${op} a` : `a ${op} ${s}`} (n ${n})`;
      routed('wasm', what, () => wasmBackend.binaryScalar(op, w(a), s, out, first));
      sameBits(out, ref, what);
      const wa = w(a);
      wasmBackend.binaryScalar(op, wa, s, wa, first);
      sameBits(wa, ref, `${what} in place`);
      const plain = new Float32Array(n);
      routed('js', `${what} plain`, () => wasmBackend.binaryScalar(op, a, s, plain, first));
      sameBits(plain, ref, `${what} plain`);
    }
    routed('js', 'empty', () => wasmBackend.binaryScalar('add', alloc(0), 1, alloc(0), false));
  });

  test(`wasm (${variant}) dropoutMask matches js bit for bit (odd lengths, every threshold edge, specials in x)`, () => {
    setWasmVariant(variant);
    for (const n of [1, 2, 7, 8, 9, 16, 33, 1001]) for (const p of [0, 1 / 65536, 0.1, 0.3, 0.5, 65535 / 65536, 1]) {
      const words = (n + 1) >> 1;
      const bits = Uint32Array.from({ length: words }, (_, i) => (i % 5 === 0 ? [0, 0xffffffff, 0x0000ffff, 0xffff0000, 0x80008000][(i / 5) % 5]! : Math.floor(rand() * 2 ** 32)));
      const threshold = Math.round(p * 65536), scale = p === 1 ? 0 : 1 / (1 - p);
      const x = spiky(n);
      const keepRef = new Float32Array(n), outRef = new Float32Array(n);
      jsBackend.dropoutMask(bits, threshold, scale, x, keepRef, outRef);
      const what = `dropoutMask n ${n} p ${p}`;
      const keep = w(randn(n, 9)), out = w(randn(n, 9));
      routed('wasm', what, () => wasmBackend.dropoutMask(bits, threshold, scale, w(x), keep, out));
      sameBits(keep, keepRef, `${what}: keep`);
      sameBits(out, outRef, `${what}: out`);
      const keepPlain = new Float32Array(n), outPlain = new Float32Array(n);
      routed('js', `${what} (plain arrays)`, () => wasmBackend.dropoutMask(bits, threshold, scale, x, keepPlain, outPlain));
      sameBits(outPlain, outRef, `${what} (plain arrays)`);
    }
    // The rule itself, on the js twin: low 16 bits decide even elements, high 16 odd ones.
    const keep = new Float32Array(3), out = new Float32Array(3);
    jsBackend.dropoutMask(Uint32Array.of(0x4000bfff, 0x0000c000), 0xc000, 4, Float32Array.of(1, 2, 3), keep, out);
    assert.deepEqual([...keep], [0, 0, 4]);
    assert.deepEqual([...out], [0, 0, 12]);
  });

  test(`wasm (${variant}) copyRows matches js (strides, offsets, a repeated run, empty)`, () => {
    setWasmVariant(variant);
    // [rows, width, srcOffset, srcStride, dstOffset, dstStride]
    const cases: [number, number, number, number, number, number][] = [
      [1, 1, 0, 1, 0, 1], [7, 3, 2, 9, 1, 3], [5, 13, 0, 13, 4, 40], [6, 5, 3, 0, 0, 5], [4, 8, 8, 24, 0, 8], [0, 5, 0, 5, 0, 5], [3, 0, 0, 1, 0, 1],
    ];
    for (const [rows, width, so, ss, dof, ds] of cases) {
      const src = spiky(so + Math.max(0, rows - 1) * ss + width + 3);
      const dstLen = dof + Math.max(0, rows - 1) * ds + width + 5;
      const init = randn(dstLen, 7);
      const ref = init.slice();
      jsBackend.copyRows(src, so, ss, ref, dof, ds, rows, width);
      const what = `copyRows ${rows}x${width} src +${so}/${ss} dst +${dof}/${ds}`;
      const dst = w(init);
      routed(rows * width > 0 ? 'wasm' : 'js', what, () => wasmBackend.copyRows(w(src), so, ss, dst, dof, ds, rows, width));
      sameBits(dst, ref, what);
      const plain = init.slice();
      routed('js', `${what} (plain arrays)`, () => wasmBackend.copyRows(src, so, ss, plain, dof, ds, rows, width));
      sameBits(plain, ref, `${what} (plain arrays)`);
    }
    // The rule on the js twin: rows 1 and 2 of a 3-wide source, into every other row of dst.
    const out = new Float32Array(8);
    jsBackend.copyRows(Float32Array.of(0, 1, 2, 3, 4, 5, 6, 7, 8), 3, 3, out, 1, 4, 2, 3);
    assert.deepEqual([...out], [0, 3, 4, 5, 0, 6, 7, 8]);
  });

  test(`wasm (${variant}) reduceSum: column sums bit for bit, row sums to float32 rounding; other layouts go to js`, () => {
    setWasmVariant(variant);
    const cases: [number[], number[], boolean][] = [
      [[7, 13], [1, 13], true],
      [[3, 5, 17], [1, 1, 17], true],
      [[3, 5, 17], [1, 5, 17], true],
      [[1001, 3], [1, 3], true],
      [[3, 5, 17], [3, 5, 1], true],
      [[3, 5, 17], [3, 1, 1], true],
      [[13, 1003], [13, 1], true],
      [[3, 5, 17], [1, 1, 1], true],
      [[9], [1], true],
      [[3, 5, 17], [3, 1, 17], false], // middle dim: js
      [[3, 5, 17], [1, 5, 1], false],
    ];
    for (const [shape, outShape, viaWasm] of cases) {
      const x = randn(prod(shape), 4);
      const ref = new Float32Array(prod(outShape));
      jsBackend.reduceSum(x, shape, ref, outShape);
      const out = w(randn(prod(outShape), 7));
      const what = `reduceSum ${shape} -> ${outShape}`;
      routed(viaWasm ? 'wasm' : 'js', what, () => wasmBackend.reduceSum(w(x), shape, out, outShape));
      const columns = outShape[outShape.length - 1] === shape[shape.length - 1] && prod(outShape) > 1;
      if (columns) sameBits(out, ref, what);
      else assertClose(out, ref, what, 1e-6, 1e-6);
      const plain = new Float32Array(prod(outShape));
      routed('js', `${what} plain`, () => wasmBackend.reduceSum(x, shape, plain, outShape));
      sameBits(plain, ref, `${what} plain`);
    }
    // NaN and ∞ propagate as in js.
    const x = randn(4 * 9);
    x[5] = NaN;
    x[13] = Infinity;
    for (const outShape of [[1, 9], [4, 1]]) {
      const ref = new Float32Array(prod(outShape));
      jsBackend.reduceSum(x, [4, 9], ref, outShape);
      const out = w(new Float32Array(prod(outShape)));
      wasmBackend.reduceSum(w(x), [4, 9], out, outShape);
      sameBits(out, ref, `reduceSum with NaN/∞ -> ${outShape}`);
    }
  });

  test(`wasm (${variant}) permute: head split/merge and last-two-dims transposes match js; others go to js`, () => {
    setWasmVariant(variant);
    const cases: [number[], number[], boolean][] = [
      [[2, 3, 5, 7], [0, 2, 1, 3], true],
      [[1, 4, 9, 16], [0, 2, 1, 3], true],
      [[3, 1, 2, 1], [0, 2, 1, 3], true],
      [[5, 3, 6], [1, 0, 2], true],
      [[13, 7], [1, 0], true],
      [[4, 4], [1, 0], true],
      [[1, 9], [1, 0], true],
      [[67, 131], [1, 0], true],
      [[3, 5, 9], [0, 2, 1], true],
      [[2, 3, 8, 70], [0, 1, 3, 2], true],
      [[2, 3, 4], [2, 0, 1], false],
      [[2, 3, 4, 5], [0, 3, 1, 2], false],
    ];
    for (const [shape, perm, viaWasm] of cases) {
      const x = randn(prod(shape));
      const ref = new Float32Array(x.length);
      jsBackend.permute(x, shape, perm, ref);
      const out = w(randn(x.length, 3));
      const what = `permute ${shape} by [${perm}]`;
      routed(viaWasm ? 'wasm' : 'js', what, () => wasmBackend.permute(w(x), shape, perm, out));
      sameBits(out, ref, what);
      const plain = new Float32Array(x.length);
      routed('js', `${what} plain`, () => wasmBackend.permute(x, shape, perm, plain));
      sameBits(plain, ref, `${what} plain`);
    }
  });

  test(`wasm (${variant}) embedding and its scatter-add gradient match js (repeated ids, padding, empty)`, () => {
    setWasmVariant(variant);
    for (const dim of [1, 3, 4, 5, 17]) for (const nIds of [0, 1, 6, 41]) for (const pad of [-1, 0, 3]) {
      const num = 11;
      const weight = randn(num * dim);
      const ids = Int32Array.from({ length: nIds }, (_, i) => (i % 5 === 0 ? 0 : i % 4 === 1 ? 3 : Math.floor(rand() * num)));
      const ref = new Float32Array(nIds * dim);
      jsBackend.embedding(weight, ids, ref, dim);
      const out = w(randn(nIds * dim, 2));
      const what = `embedding ${nIds} ids, dim ${dim}`;
      routed(nIds > 0 ? 'wasm' : 'js', what, () => wasmBackend.embedding(w(weight), ids, out, dim));
      sameBits(out, ref, what);
      // Backward accumulates into a gradient that already holds something.
      const dy = randn(nIds * dim);
      const dw0 = randn(num * dim);
      const dref = dw0.slice();
      jsBackend.embeddingBackward(dy, ids, dref, dim, pad);
      const dw = w(dw0);
      routed(nIds > 0 ? 'wasm' : 'js', `${what} backward`, () => wasmBackend.embeddingBackward(w(dy), ids, dw, dim, pad));
      sameBits(dw, dref, `${what} backward, paddingIdx ${pad}`);
      if (pad >= 0 && ids.includes(pad)) {
        // The padding row got nothing.
        sameBits(dw.subarray(pad * dim, (pad + 1) * dim), dw0.subarray(pad * dim, (pad + 1) * dim), `${what}: padding row untouched`);
      }
      const plain = dw0.slice();
      if (nIds > 0) routed('js', `${what} backward plain`, () => wasmBackend.embeddingBackward(dy, ids, plain, dim, pad));
      sameBits(plain, dref, `${what} backward plain`);
    }
  });

  test(`wasm (${variant}) Adam and AdamW over several steps equal the js twin (and 1e-6 relative is asked at the least)`, () => {
    setWasmVariant(variant);
    for (const n of [1, 3, 5, 1001]) for (const [wd, decoupled] of [[0, false], [0.1, false], [0.01, true], [0, true]] as const) {
      const p0 = randn(n, 2);
      const jp = p0.slice(), jm = new Float32Array(n), jv = new Float32Array(n);
      const wp = w(p0), wm = alloc(n), wv = alloc(n), wg = alloc(n);
      for (let step = 1; step <= 6; step++) {
        const g = randn(n);
        if (n > 2) g[2] = 0; // a zero gradient: m and v decay only
        wg.set(g);
        jsBackend.adam(jp, g, jm, jv, 1e-2, 0.9, 0.98, 1e-9, wd, decoupled, step);
        routed('wasm', 'adam', () => wasmBackend.adam(wp, wg, wm, wv, 1e-2, 0.9, 0.98, 1e-9, wd, decoupled, step));
      }
      const what = `adam n ${n} wd ${wd} decoupled ${decoupled}`;
      assertClose(wp, jp, `${what}: param`, 0, 1e-6);
      assertClose(wm, jm, `${what}: m`, 1e-12, 1e-6);
      assertClose(wv, jv, `${what}: v`, 1e-12, 1e-6);
      sameBits(wp, jp, `${what}: param (bit for bit)`);
      sameBits(wm, jm, `${what}: m (bit for bit)`);
      sameBits(wv, jv, `${what}: v (bit for bit)`);
      // Plain arrays take the twin.
      const pp = p0.slice();
      routed('js', 'adam plain', () => wasmBackend.adam(pp, randn(n), new Float32Array(n), new Float32Array(n), 1e-2, 0.9, 0.98, 1e-9, wd, decoupled, 1));
    }
  });
}

test('threaded Adam, binary, dropoutMask and cross-entropy equal one thread bit for bit (sizes that split unevenly)', () => {
  const before = numThreads();
  try {
    const n = 600_011, rows = 1_237, width = 501; // each above the threshold for a launch
    const p0 = randn(n), g = randn(n), m0 = randn(n, 0.1), v0 = randn(n, 0.1).map(Math.abs);
    const a = randn(rows * width), bias = randn(width);
    const words = (n + 1) >> 1;
    const bits = Uint32Array.from({ length: words }, () => Math.floor(rand() * 2 ** 32));
    const cols = 1_003, logits = randn(rows * cols, 5);
    const targets = Int32Array.from({ length: rows }, (_, i) => (i % 7 === 3 ? -100 : Math.floor(rand() * cols)));
    const rowScale = randn(rows);
    const results: Float32Array[][] = [];
    for (const t of [1, 2, 3]) {
      setNumThreads(t);
      const keep = w(new Float32Array(n)), dropped = w(new Float32Array(n));
      wasmBackend.dropoutMask(bits, 19_661, 1 / 0.7, w(p0), keep, dropped);
      const losses = w(new Float32Array(rows)), dlogits = w(new Float32Array(rows * cols));
      const count = wasmBackend.crossEntropy(w(logits), targets, losses, rows, cols, -100, 0.1);
      assert.equal(count, targets.filter((x) => x !== -100).length, 'crossEntropy count');
      wasmBackend.crossEntropyBackward(w(logits), targets, w(rowScale), dlogits, rows, cols, -100, 0.1);
      const p = w(p0), m = w(m0), v = w(v0);
      wasmBackend.adam(p, w(g), m, v, 1e-3, 0.9, 0.999, 1e-8, 0.01, true, 3);
      const full = w(new Float32Array(n));
      wasmBackend.binary('mul', w(p0), [1], w(g), [1], full, [n]);
      const rowsOut = w(new Float32Array(rows * width));
      wasmBackend.binary('sub', w(bias), [0, 1], w(a), [width, 1], rowsOut, [rows, width]);
      results.push([p, m, v, full, rowsOut, keep, dropped, losses, dlogits]);
    }
    for (let t = 1; t < results.length; t++) {
      results[t]!.forEach((x, i) => sameBits(x, results[0]![i]!, `${t + 1} threads, output ${i}`));
    }
    const ref = p0.slice(), rm = m0.slice(), rv = v0.slice();
    jsBackend.adam(ref, g, rm, rv, 1e-3, 0.9, 0.999, 1e-8, 0.01, true, 3);
    sameBits(results[0]![0]!, ref, 'threaded Adam vs js');
  } finally {
    setNumThreads(before);
  }
});

test('the test arrays really are wasm views', () => {
  assert.ok(isWasmView(w(new Float32Array(3))));
  assert.ok(!isWasmView(new Float32Array(3)));
});
