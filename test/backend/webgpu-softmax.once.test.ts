/**
 * The webgpu softmax family (src/backend/webgpu/softmax.ts) against its js twin: rows of 1, 7, 65, 300 and
 * 1000 columns (not multiples of the 64- or 256-thread workgroups), many rows, −∞ scores, fully masked rows
 * (NaN, as the js twin), empty inputs, and a grid of more than 65,535 rows (folded into y).
 *
 * Bound. The js twin sums in float64; a row here is summed in float32, each thread over ⌈C/WG⌉ of its
 * elements, then a tree of log2(WG) levels: no term passes through more than d = ⌈C/WG⌉ + log2(WG)
 * roundings (12 for C = 1000, WG = 256), so the sum is off by at most d·u·Σ|terms| (u = 2⁻²⁴; Higham,
 * Accuracy and Stability of Numerical Algorithms, §4.2, first order). Each kernel is asserted within
 * closeToJs's 1e-5 + 1e-5·|js| plus that bound carried through to the element:
 * - softmax: terms in [0, 1] with a sum ≥ 1, so the relative error is ≤ d·u ≤ 7.2e-7: the default alone.
 * - logSoftmax: lse = max + log(sum) is off by ≤ d·u + log's error in absolute terms: the default alone.
 * - softmaxBackward: dx_j = y_j·(dy_j − Σ dy·y): + y_j·d·u·Σ|dy·y|.
 * - logSoftmaxBackward: dx_j = dy_j − p_j·Σ dy: + p_j·d·u·Σ|dy|.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rng, uniformArray } from '../helpers/random.ts';
import { closeToJs, down, js, out, up } from './webgpu-twins.ts';
import type { F32 } from '../../src/backend/backend.ts';
import { logSoftmax, logSoftmaxBackward, softmax, softmaxBackward } from '../../src/backend/webgpu/softmax.ts';

const rand = rng(11);
const randn = (n: number, scale = 1) => uniformArray(rand, n, scale);

const gpuF = (x: Float32Array) => up(x) as F32;
const outF = (x: Float32Array) => out(x) as F32;
const U = 2 ** -24;

/** Roundings a term of a row sum of `cols` goes through on the GPU (see the file comment). */
function depth(cols: number): number {
  const wg = cols <= 128 ? 64 : 256;
  return Math.ceil(cols / wg) + Math.log2(wg);
}

/** |a − e| ≤ 1e-5 + 1e-5·|e| + extra[i] (NaN matches NaN, ±∞ exactly). */
function withinBound(a: Float32Array, e: Float32Array, extra: Float64Array, what: string): void {
  assert.equal(a.length, e.length, `${what}: length`);
  for (let i = 0; i < e.length; i++) {
    const y = e[i];
    const ok = Number.isNaN(y)
      ? Number.isNaN(a[i])
      : !Number.isFinite(y)
        ? a[i] === y
        : Math.abs(a[i] - y) <= 1e-5 + 1e-5 * Math.abs(y) + extra[i];
    if (!ok)
      assert.fail(`${what}: element ${i} is ${a[i]}, expected ${y} (bound ${1e-5 + 1e-5 * Math.abs(y) + extra[i]})`);
  }
}

/** Scores of `rows` × `cols` with −∞ sprinkled in, and (with 3 rows or more) row 1 fully masked. */
function scores(rows: number, cols: number): Float32Array {
  const x = randn(rows * cols, 6);
  for (let i = 0; i < x.length; i += 5) if (i % cols !== 0) x[i] = -Infinity;
  if (rows >= 3) x.fill(-Infinity, cols, 2 * cols);
  return x;
}

const SHAPES: [number, number][] = [];
for (const cols of [1, 7, 65, 300, 1000]) for (const rows of [1, 3, 37]) SHAPES.push([rows, cols]);

test('webgpu softmax and logSoftmax match js (odd rows, −∞ scores, a fully masked row)', async () => {
  for (const [rows, cols] of SHAPES) {
    const n = rows * cols;
    const x = scores(rows, cols);
    for (const [name, gpuK] of [
      ['softmax', softmax],
      ['logSoftmax', logSoftmax],
    ] as const) {
      const expected = new Float32Array(n);
      js[name](x, expected, rows, cols);
      const o = outF(randn(n));
      gpuK(gpuF(x), o, rows, cols);
      closeToJs(await down(o, n), expected, `${name} ${rows}x${cols}`);
      if (rows >= 3) assert.ok(Number.isNaN(expected[cols]), `${name}: the js twin gives NaN for a masked row`);
    }
  }
});

test('webgpu softmaxBackward and logSoftmaxBackward match js within the float32 sum bound', async () => {
  for (const [rows, cols] of SHAPES) {
    const n = rows * cols;
    const x = scores(rows, cols);
    const dy = randn(n, 2);
    const d = depth(cols);
    for (const [fwd, name, gpuK] of [
      ['softmax', 'softmaxBackward', softmaxBackward],
      ['logSoftmax', 'logSoftmaxBackward', logSoftmaxBackward],
    ] as const) {
      const y = new Float32Array(n);
      js[fwd](x, y, rows, cols);
      const expected = new Float32Array(n);
      js[name](y, dy, expected, rows, cols);
      const extra = new Float64Array(n);
      for (let r = 0; r < rows; r++) {
        let abs = 0;
        for (let j = 0; j < cols; j++)
          abs += Math.abs(fwd === 'softmax' ? dy[r * cols + j] * y[r * cols + j] : dy[r * cols + j]);
        for (let j = 0; j < cols; j++) {
          const k = r * cols + j;
          const weight = fwd === 'softmax' ? Math.abs(y[k]) : Math.exp(y[k]);
          extra[k] = weight * d * U * abs;
        }
      }
      const o = outF(randn(n));
      gpuK(gpuF(y), gpuF(dy), o, rows, cols);
      withinBound(await down(o, n), expected, extra, `${name} ${rows}x${cols}`);
    }
  }
});

test('webgpu softmax over more rows than one grid dimension holds (65,535 workgroups)', async () => {
  const rows = 66_000;
  const cols = 2;
  const x = randn(rows * cols, 3);
  const expected = new Float32Array(rows * cols);
  js.softmax(x, expected, rows, cols);
  const o = outF(randn(rows * cols));
  softmax(gpuF(x), o, rows, cols);
  closeToJs(await down(o, rows * cols), expected, 'softmax 66000x2');
});

test('webgpu softmax family: empty inputs write nothing', async () => {
  const o = outF(Float32Array.of(7));
  softmax(gpuF(new Float32Array(1)), o, 0, 5);
  logSoftmax(gpuF(new Float32Array(1)), o, 3, 0);
  softmaxBackward(gpuF(new Float32Array(1)), gpuF(new Float32Array(1)), o, 0, 4);
  logSoftmaxBackward(gpuF(new Float32Array(1)), gpuF(new Float32Array(1)), o, 2, 0);
  assert.deepEqual([...(await down(o, 1))], [7]);
});
