/**
 * The wasm layout family (src/backend/wasm/layout.ts, assembly/layout.ts: reduceSum, permute,
 * copyRows) against its js twins, on arrays in wasm memory (the wasm path, checked with the route
 * counts) and on ordinary arrays (the js path), odd sizes and layouts the kernels do not cover.
 * Column sums and permutes are bit for bit; row sums (float64 partial sums in another order) get
 * a float32-rounding tolerance.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostBackend } from '../../src/backend/backend.ts';
import { jsBackend as jsB } from '../../src/backend/js/index.ts';
import { wasmBackend as wasmB } from '../../src/backend/wasm/index.ts';
import { setWasmVariant } from '../../src/backend/wasm/loader.ts';
import { assertClose } from '../helpers/assert.ts';
import { prod, randomSource, routed, sameBits, spikyFrom, variants, w } from './twins.ts';
const jsBackend = hostBackend(jsB);
const wasmBackend = hostBackend(wasmB);

const { randn } = randomSource(11);
const spiky = spikyFrom(randn);

for (const variant of variants) {
  test(`wasm (${variant}) copyRows matches js (strides, offsets, a repeated run, empty)`, () => {
    setWasmVariant(variant);
    // [rows, width, srcOffset, srcStride, dstOffset, dstStride]
    const cases: [number, number, number, number, number, number][] = [
      [1, 1, 0, 1, 0, 1],
      [7, 3, 2, 9, 1, 3],
      [5, 13, 0, 13, 4, 40],
      [6, 5, 3, 0, 0, 5],
      [4, 8, 8, 24, 0, 8],
      [0, 5, 0, 5, 0, 5],
      [3, 0, 0, 1, 0, 1],
    ];
    for (const [rows, width, so, ss, dof, ds] of cases) {
      const src = spiky(so + Math.max(0, rows - 1) * ss + width + 3);
      const dstLen = dof + Math.max(0, rows - 1) * ds + width + 5;
      const init = randn(dstLen, 7);
      const ref = init.slice();
      jsBackend.copyRows(src, so, ss, ref, dof, ds, rows, width);
      const what = `copyRows ${rows}x${width} src +${so}/${ss} dst +${dof}/${ds}`;
      const dst = w(init);
      routed(rows * width > 0 ? 'wasm' : 'js', what, () =>
        wasmBackend.copyRows(w(src), so, ss, dst, dof, ds, rows, width),
      );
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
    for (const outShape of [
      [1, 9],
      [4, 1],
    ]) {
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
}
