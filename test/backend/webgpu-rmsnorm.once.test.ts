/**
 * The webgpu RMS norm and rotary embedding (src/backend/webgpu/rmsnorm.ts, rotary.ts) and swiglu (elementwise.ts)
 * against their js twins. Bounds: a row sum of C squares off by at most d·u·Σx² (d = ⌈C/WG⌉ + log2(WG) float32
 * roundings, the js twin sums in float64), so out and rstd are within closeToJs's 1e-5 + 1e-5·|js| for C ≤ 1000;
 * dweight adds R rows in order in both (R float32 roundings each): the default plus R·u·Σ|terms|. Rotary: two
 * products and a sum, which WGSL may contract into an fma (1 ULP). swiglu: WGSL's exp (3 + 2|x| ULP).
 */
import { test } from 'node:test';
import { rng, uniformArray } from '../helpers/random.ts';
import { closeToJs, down, js, out, up } from './webgpu-twins.ts';
import type { F32 } from '../../src/backend/backend.ts';
import { rmsNorm, rmsNormBackward } from '../../src/backend/webgpu/rmsnorm.ts';
import { rotary } from '../../src/backend/webgpu/rotary.ts';
import { swiglu, swigluBackward } from '../../src/backend/webgpu/elementwise.ts';

const rand = rng(58);
const randn = (n: number, scale = 1) => uniformArray(rand, n, scale);
const g = (x: Float32Array) => up(x) as F32;
const o = (x: Float32Array) => out(x) as F32;

test('webgpu rmsNorm and rmsNormBackward match js (odd rows and columns, with and without weight)', async () => {
  for (const cols of [1, 7, 65, 300, 1000])
    for (const rows of [1, 3, 37])
      for (const affine of [true, false]) {
        const what = `${rows}x${cols} weight=${affine}`;
        const n = rows * cols;
        const x = randn(n, 3);
        const w = affine ? randn(cols, 2) : null;
        const eOut = new Float32Array(n);
        const eR = new Float32Array(rows);
        js.rmsNorm(x, w, eOut, eR, rows, cols, 1e-6);
        const [gOut, gR] = [o(randn(n, 9)), o(randn(rows, 9))];
        rmsNorm(g(x), w && g(w), gOut, gR, rows, cols, 1e-6);
        closeToJs(await down(gOut, n), eOut, `${what}: out`);
        closeToJs(await down(gR, rows), eR, `${what}: rstd`);
        const dy = randn(n);
        const dw0 = randn(cols);
        const eDx = new Float32Array(n);
        const eDw = dw0.slice();
        js.rmsNormBackward(x, w, eR, dy, eDx, affine ? eDw : null, rows, cols);
        const [gDx, gDw] = [o(randn(n, 9)), o(dw0)];
        rmsNormBackward(g(x), w && g(w), g(eR), g(dy), gDx, affine ? gDw : null, rows, cols);
        closeToJs(await down(gDx, n), eDx, `${what}: dx`, 1e-4, 1e-4);
        if (affine) closeToJs(await down(gDw, cols), eDw, `${what}: dweight`, 1e-4 + rows * 3 * 2 ** -24 * 30, 1e-5);
      }
});

test('webgpu rotary matches js (forward, inverse, in place, heads after positions)', async () => {
  for (const [outer, T, heads, D] of [
    [1, 1, 1, 2],
    [2, 5, 1, 6],
    [3, 7, 2, 10],
    [1, 3, 9, 64],
  ])
    for (const inverse of [false, true]) {
      const n = outer * T * heads * D;
      const x = randn(n, 2);
      const [c, s] = [randn((T * D) / 2), randn((T * D) / 2)];
      const e = new Float32Array(n);
      js.rotary(x, c, s, e, outer, T, heads, D, inverse);
      const what = `rotary ${outer}x${T}x${heads}x${D} inverse=${inverse}`;
      const got = o(randn(n, 9));
      rotary(g(x), g(c), g(s), got, outer, T, heads, D, inverse);
      closeToJs(await down(got, n), e, what, 1e-6, 1e-6);
      const inPlace = g(x);
      rotary(inPlace, g(c), g(s), inPlace, outer, T, heads, D, inverse);
      closeToJs(await down(inPlace, n), e, `${what} in place`, 1e-6, 1e-6);
    }
});

test('webgpu swiglu and swigluBackward match js (saturated gates included)', async () => {
  for (const n of [1, 7, 1001]) {
    const gate = randn(n, 6);
    const extremes = [-30, 30, -90, 0];
    for (let k = 0; k < Math.min(n, extremes.length); k++) gate[k] = extremes[k];
    const u = randn(n, 2);
    const dy = randn(n);
    const e = new Float32Array(n);
    js.swiglu(gate, u, e);
    const got = o(randn(n, 9));
    swiglu(g(gate), g(u), got);
    closeToJs(await down(got, n), e, `swiglu ${n}`);
    const [eg, eu] = [new Float32Array(n), new Float32Array(n)];
    js.swigluBackward(gate, u, dy, eg, eu);
    const [gg, gu] = [o(randn(n, 9)), o(randn(n, 9))];
    swigluBackward(g(gate), g(u), g(dy), gg, gu);
    closeToJs(await down(gg, n), eg, `swigluBackward ${n} dgate`);
    closeToJs(await down(gu, n), eu, `swigluBackward ${n} dup`);
  }
});
