/**
 * The wasm elementwise family (src/backend/wasm/elementwise.ts, assembly/elementwise.ts) against
 * its js twins. binary, binaryScalar and dropoutMask run in wasm only on arrays already in wasm
 * memory: inputs and outputs are placed there so the wasm path runs (checked with the route
 * counts), and ordinary arrays must take the js path and give the same answer; they round exactly
 * as the twins (see assembly/elementwise.ts), so comparisons are bit for bit. relu and gelu run in
 * wasm on any array. Odd sizes (not multiples of the SIMD width 4), empty arrays, specials,
 * broadcast shapes; then the threaded split of the elementwise kernels (and Adam and
 * cross-entropy), bit for bit against one thread.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stridesOf } from '../../src/tensor/shape.ts';
import { hostBackend } from '../../src/backend/backend.ts';
import { jsBackend as jsB } from '../../src/backend/js/index.ts';
import { wasmBackend as wasmB } from '../../src/backend/wasm/index.ts';
import { setWasmVariant } from '../../src/backend/wasm/loader.ts';
import { alloc, isWasmView } from '../../src/backend/wasm/memory.ts';
import { numThreads, setNumThreads } from '../../src/backend/wasm/threads.ts';
import { close, OPS, prod, randomSource, routed, sameBits, spikyFrom, twinRunner, variants, w } from './twins.ts';
const jsBackend = hostBackend(jsB);
const wasmBackend = hostBackend(wasmB);

const { rand, randn } = randomSource(11);
const both = twinRunner(randn);
const spiky = spikyFrom(randn);

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
    for (const [outShape, aShape, bShape, viaWasm] of cases)
      for (const op of OPS) {
        const n = prod(outShape);
        const a = spiky(prod(aShape)),
          b = spiky(prod(bShape));
        const pad = (s: number[]) => [...new Array<number>(outShape.length - s.length).fill(1), ...s];
        const bst = (s: number[]) => stridesOf(pad(s)).map((st, d) => (pad(s)[d] === 1 && outShape[d] !== 1 ? 0 : st));
        const ref = new Float32Array(n);
        jsBackend.binary(op, a, bst(aShape), b, bst(bShape), ref, outShape);
        const what = `${op} out ${outShape} a ${aShape} b ${bShape}`;
        const out = w(randn(n, 9));
        routed(viaWasm ? 'wasm' : 'js', what, () =>
          wasmBackend.binary(op, w(a), bst(aShape), w(b), bst(bShape), out, outShape),
        );
        sameBits(out, ref, what);
        // Ordinary arrays: the js twin, same answer.
        const plain = new Float32Array(n);
        routed('js', `${what} (plain arrays)`, () =>
          wasmBackend.binary(op, a, bst(aShape), b, bst(bShape), plain, outShape),
        );
        sameBits(plain, ref, `${what} (plain arrays)`);
        // One operand in wasm memory and one not: still js.
        routed('js', `${what} (mixed)`, () =>
          wasmBackend.binary(op, w(a), bst(aShape), b, bst(bShape), w(new Float32Array(n)), outShape),
        );
      }
  });

  test(`wasm (${variant}) binary in place (out = a, out = b), as autograd accumulation uses it`, () => {
    setWasmVariant(variant);
    for (const n of [1, 5, 4099])
      for (const op of OPS) {
        const a = randn(n),
          b = randn(n);
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
        const rows = 3,
          bias = randn(n);
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
    for (const n of [1, 2, 3, 4, 5, 1003])
      for (const op of OPS)
        for (const s of [2, 0.5, -0, 1 / 3, 0.1, 1 / Math.sqrt(24), 1e-45, Infinity, NaN])
          for (const first of [false, true]) {
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
    for (const n of [1, 2, 7, 8, 9, 16, 33, 1001])
      for (const p of [0, 1 / 65536, 0.1, 0.3, 0.5, 65535 / 65536, 1]) {
        const words = (n + 1) >> 1;
        const bits = Uint32Array.from({ length: words }, (_, i) =>
          i % 5 === 0
            ? [0, 0xffffffff, 0x0000ffff, 0xffff0000, 0x80008000][(i / 5) % 5]!
            : Math.floor(rand() * 2 ** 32),
        );
        const threshold = Math.round(p * 65536),
          scale = p === 1 ? 0 : 1 / (1 - p);
        const x = spiky(n);
        const keepRef = new Float32Array(n),
          outRef = new Float32Array(n);
        jsBackend.dropoutMask(bits, threshold, scale, x, keepRef, outRef);
        const what = `dropoutMask n ${n} p ${p}`;
        const keep = w(randn(n, 9)),
          out = w(randn(n, 9));
        routed('wasm', what, () => wasmBackend.dropoutMask(bits, threshold, scale, w(x), keep, out));
        sameBits(keep, keepRef, `${what}: keep`);
        sameBits(out, outRef, `${what}: out`);
        const keepPlain = new Float32Array(n),
          outPlain = new Float32Array(n);
        routed('js', `${what} (plain arrays)`, () =>
          wasmBackend.dropoutMask(bits, threshold, scale, x, keepPlain, outPlain),
        );
        sameBits(outPlain, outRef, `${what} (plain arrays)`);
      }
    // The rule itself, on the js twin: low 16 bits decide even elements, high 16 odd ones.
    const keep = new Float32Array(3),
      out = new Float32Array(3);
    jsBackend.dropoutMask(Uint32Array.of(0x4000bfff, 0x0000c000), 0xc000, 4, Float32Array.of(1, 2, 3), keep, out);
    assert.deepEqual([...keep], [0, 0, 4]);
    assert.deepEqual([...out], [0, 0, 12]);
  });

  test(`wasm (${variant}) gelu forward/backward match js, including tails and extremes`, () => {
    setWasmVariant(variant);
    for (const n of [1, 3, 4, 7, 1001]) {
      const x = randn(n, 6);
      x[0] = n > 1 ? -30 : 0;
      const dy = randn(n);
      const f = both([n], (be, [o]) => be.gelu(x, o!));
      close(f.wasm[0]!, f.js[0]!, `gelu ${n}`);
      const b = both([n], (be, [dx]) => be.geluBackward(x, dy, dx!));
      close(b.wasm[0]!, b.js[0]!, `geluBackward ${n}`);
    }
  });

  test(`wasm (${variant}) geluTanh forward/backward match the float64 twin, including tails and extremes`, () => {
    setWasmVariant(variant);
    for (const n of [1, 3, 4, 7, 1001]) {
      const x = randn(n, 6);
      // -30 and 30 saturate σ(2u); ±1e13 overflows x³ in float32; -3 is where 1 + tanh cancels in float32.
      const extremes = [-30, 30, -1e13, 1e13, -3, 0];
      for (let k = 0; k < Math.min(n, extremes.length); k++) x[k] = extremes[k]!;
      const dy = randn(n);
      const f = both([n], (be, [o]) => be.geluTanh(x, o!));
      close(f.wasm[0]!, f.js[0]!, `geluTanh ${n}`);
      const b = both([n], (be, [dx]) => be.geluTanhBackward(x, dy, dx!));
      close(b.wasm[0]!, b.js[0]!, `geluTanhBackward ${n}`);
    }
  });

  test(`wasm (${variant}) swiglu forward/backward match the float64 twin, including tails and saturated gates`, () => {
    setWasmVariant(variant);
    for (const n of [1, 3, 4, 7, 1001]) {
      const gate = randn(n, 6);
      const extremes = [-30, 30, -90, 0, 1e-3];
      for (let k = 0; k < Math.min(n, extremes.length); k++) gate[k] = extremes[k]!;
      const up = randn(n, 2);
      const dy = randn(n);
      const f = both([n], (be, [o]) => be.swiglu(gate, up, o!));
      close(f.wasm[0]!, f.js[0]!, `swiglu ${n}`);
      const b = both([n, n], (be, [dg, du]) => be.swigluBackward(gate, up, dy, dg!, du!));
      close(b.wasm[0]!, b.js[0]!, `swigluBackward ${n} dgate`);
      close(b.wasm[1]!, b.js[1]!, `swigluBackward ${n} dup`);
    }
  });

  test(`wasm (${variant}) relu forward/backward match js (NaN, ±0, tails)`, () => {
    setWasmVariant(variant);
    for (const n of [1, 3, 4, 9, 1001]) {
      const x = randn(n, 2);
      x[0] = -0;
      if (n > 2) x[2] = NaN;
      const dy = randn(n);
      const f = both([n], (be, [o]) => be.relu(x, o!), 1);
      assert.ok(
        f.wasm[0]!.every((v, i) => Object.is(v, f.js[0]![i])),
        `relu ${n}`,
      );
      const b = both([n], (be, [dx]) => be.reluBackward(x, dy, dx!), 1);
      assert.ok(
        b.wasm[0]!.every((v, i) => Object.is(v, b.js[0]![i])),
        `reluBackward ${n}`,
      );
    }
  });
}

test('threaded Adam, binary, dropoutMask and cross-entropy equal one thread bit for bit (sizes that split unevenly)', () => {
  const before = numThreads();
  try {
    const n = 600_011,
      rows = 1_237,
      width = 501; // each above the threshold for a launch
    const p0 = randn(n),
      g = randn(n),
      m0 = randn(n, 0.1),
      v0 = randn(n, 0.1).map(Math.abs);
    const a = randn(rows * width),
      bias = randn(width);
    const words = (n + 1) >> 1;
    const bits = Uint32Array.from({ length: words }, () => Math.floor(rand() * 2 ** 32));
    const cols = 1_003,
      logits = randn(rows * cols, 5);
    const targets = Int32Array.from({ length: rows }, (_, i) => (i % 7 === 3 ? -100 : Math.floor(rand() * cols)));
    const rowScale = randn(rows);
    const results: Float32Array[][] = [];
    for (const t of [1, 2, 3]) {
      setNumThreads(t);
      const keep = w(new Float32Array(n)),
        dropped = w(new Float32Array(n));
      wasmBackend.dropoutMask(bits, 19_661, 1 / 0.7, w(p0), keep, dropped);
      const losses = w(new Float32Array(rows)),
        dlogits = w(new Float32Array(rows * cols));
      const reduced = w(new Float32Array(2));
      wasmBackend.crossEntropy(w(logits), targets, losses, reduced, rows, cols, -100, 0.1, false);
      assert.equal(reduced[1], targets.filter((x) => x !== -100).length, 'crossEntropy count');
      wasmBackend.crossEntropyBackward(w(logits), targets, w(rowScale), true, null, dlogits, rows, cols, -100, 0.1);
      const p = w(p0),
        m = w(m0),
        v = w(v0);
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
    const ref = p0.slice(),
      rm = m0.slice(),
      rv = v0.slice();
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
