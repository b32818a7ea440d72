/**
 * The webgpu Adam/AdamW (src/backend/webgpu/adam.ts) against its js twin over 1, 7, 65, 300, 1000 and 4099
 * parameters: Adam, Adam with L2 weight decay, AdamW, over six steps (the bias corrections change each step).
 *
 * Bounds (u = 2⁻²⁴). The js twin computes each update in float64 from float32 state and rounds it once; the
 * kernel computes it in float32 from float32 copies of the same constants. Each step is first run from the
 * same state on both sides and checked against a bound counted from the operations (each + − × a rounding
 * of u, WGSL's / 2.5 ULP, sqrt 4.5 ULP (via 1/inverseSqrt), each constant's float32 rounding u, and the js
 * twin's own final rounding u), with g′ = g + λ·w the gradient after L2 decay:
 * - m = β1·m + (1 − β1)·g′: |Δm| ≤ 8u·(β1|m| + (1 − β1)(|g| + |λw|));
 * - v = β2·v + (1 − β2)·g′²: |Δv| ≤ 12u·(β2·v + (1 − β2)·g′²) (all terms ≥ 0);
 * - w′ = w·shrink − U, U = stepSize·m/(√v/bc2 + ε): the denominator is off by ≤ 17u relative (6u from v,
 *   4.5u sqrt, 3.5u /bc2, 2u +ε, and ~1u), U by ≤ 22u·|U| + stepSize·|Δm|/den, and
 *   |Δw′| ≤ 3u·|w| + 22u·|U| + stepSize·|Δm|/den + u·|w′|.
 * Then six steps are run on each side from its own state (the errors compound over steps), checked against
 * closeToJs's default 1e-5 + 1e-5·|js|, far above six steps of the per-step bounds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rng, uniformArray } from '../helpers/random.ts';
import { closeToJs, down, js, up } from './webgpu-twins.ts';
import type { F32 } from '../../src/backend/backend.ts';
import { adam } from '../../src/backend/webgpu/adam.ts';
import { adamConstants } from '../../src/backend/js/adam.ts';

const rand = rng(53);
const randn = (n: number, scale = 1) => uniformArray(rand, n, scale);

const gpuF = (x: Float32Array) => up(x) as F32;
const U = 2 ** -24;

interface Opt {
  name: string;
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  decoupled: boolean;
}

const OPTS: Opt[] = [
  { name: 'Adam', lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, decoupled: false },
  { name: 'Adam + L2', lr: 3e-3, beta1: 0.8, beta2: 0.99, eps: 1e-6, weightDecay: 0.01, decoupled: false },
  { name: 'AdamW', lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1, decoupled: true },
];
const SIZES = [1, 7, 65, 300, 1000, 4099];
const STEPS = 6;

function within(a: Float32Array, e: Float32Array, bound: Float64Array, what: string): void {
  assert.equal(a.length, e.length, `${what}: length`);
  for (let k = 0; k < e.length; k++)
    if (!(Math.abs(a[k] - e[k]) <= bound[k]))
      assert.fail(`${what}: element ${k} is ${a[k]}, expected ${e[k]} (bound ${bound[k]})`);
}

test('webgpu adam: one step from the same state agrees with js to float32 rounding (bounds per operation)', async () => {
  for (const o of OPTS)
    for (const n of SIZES) {
      let w = randn(n, 2);
      let m = randn(n, 0.1);
      let v = randn(n, 0.01).map(Math.abs);
      for (let step = 1; step <= STEPS; step++) {
        const what = `${o.name} n ${n} step ${step}`;
        const grad = randn(n, step % 2 ? 1 : 1e-3);
        const [ew, em, ev] = [w.slice(), m.slice(), v.slice()];
        js.adam(ew, grad, em, ev, o.lr, o.beta1, o.beta2, o.eps, o.weightDecay, o.decoupled, step);
        const [gw, gm, gv] = [gpuF(w), gpuF(m), gpuF(v)];
        adam(gw, gpuF(grad), gm, gv, o.lr, o.beta1, o.beta2, o.eps, o.weightDecay, o.decoupled, step);
        const [aw, am, av] = [await down(gw, n), await down(gm, n), await down(gv, n)];

        const c = adamConstants(o.lr, o.beta1, o.beta2, o.weightDecay, o.decoupled, step);
        const bm = new Float64Array(n);
        const bv = new Float64Array(n);
        const bw = new Float64Array(n);
        for (let k = 0; k < n; k++) {
          const g2 = grad[k] + c.l2 * w[k];
          bm[k] = 8 * U * (o.beta1 * Math.abs(m[k]) + (1 - o.beta1) * (Math.abs(grad[k]) + Math.abs(c.l2 * w[k])));
          bv[k] = 12 * U * (o.beta2 * v[k] + (1 - o.beta2) * g2 * g2);
          const den = Math.sqrt(ev[k]) / c.bc2Sqrt + o.eps;
          const upd = Math.abs((c.stepSize * em[k]) / den);
          bw[k] = 3 * U * Math.abs(w[k]) + 22 * U * upd + (c.stepSize * bm[k]) / den + U * Math.abs(ew[k]);
        }
        within(am, em, bm, `m ${what}`);
        within(av, ev, bv, `v ${what}`);
        within(aw, ew, bw, `param ${what}`);
        [w, m, v] = [ew, em, ev];
      }
    }
});

test('webgpu adam: six steps from each side own state stay with js (Adam, L2, AdamW)', async () => {
  for (const o of OPTS)
    for (const n of SIZES) {
      const w0 = randn(n, 2);
      const ew = w0.slice();
      const [em, ev] = [new Float32Array(n), new Float32Array(n)];
      const [gw, gm, gv] = [gpuF(w0), gpuF(new Float32Array(n)), gpuF(new Float32Array(n))];
      for (let step = 1; step <= STEPS; step++) {
        const grad = randn(n);
        js.adam(ew, grad, em, ev, o.lr, o.beta1, o.beta2, o.eps, o.weightDecay, o.decoupled, step);
        adam(gw, gpuF(grad), gm, gv, o.lr, o.beta1, o.beta2, o.eps, o.weightDecay, o.decoupled, step);
      }
      const what = `${o.name} n ${n} after ${STEPS} steps`;
      closeToJs(await down(gw, n), ew, `param ${what}`);
      closeToJs(await down(gm, n), em, `m ${what}`);
      closeToJs(await down(gv, n), ev, `v ${what}`);
      // The parameters moved: a kernel that did nothing would fail above, not pass by closeness to w0.
      assert.ok(
        ew.some((x, k) => Math.abs(x - w0[k]) > 1e-4),
        `${what}: the js twin moved the parameters`,
      );
    }
});
