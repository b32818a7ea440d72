/**
 * The webgpu layer norm (src/backend/webgpu/layernorm.ts) against its js twin: rows of 1, 7, 65, 300 and
 * 1000 columns, 1 to 300 rows (so dweight/dbias cross the backward's 64-row chunks: 300 rows are 5 chunks
 * and a second pass), with and without weight and bias, dweight/dbias accumulated into non-zero values, a
 * row with |mean| ≫ σ (x = 1000 + 0.01·noise, where E[x²] − μ² would lose every digit of σ²), and empty
 * inputs.
 *
 * Bounds (u = 2⁻²⁴). A row sum of C terms here passes each term through at most d = ⌈C/WG⌉ + log2(WG)
 * float32 roundings (12 for C = 1000), so it is off by at most d·u·Σ|terms| (Higham §4.2, first order); the
 * js twin sums in float64.
 * - Forward (mean, rstd, out): all sums are of the row's own values or squares, relative errors ≤ d·u ≈ 7e-7:
 *   closeToJs's default 1e-5 + 1e-5·|js| alone.
 * - dx = rs·(g − Σg/C − x̂·Σ(g·x̂)/C): the default plus rs·d·u·(Σ|g| + |x̂|·Σ|g·x̂|)/C.
 * - dweight, dbias: sums over R rows. The js twin adds each row into the float32 dweight (R roundings); the
 *   kernel sums chunks of ≤ 64 rows then adds the ⌈R/64⌉ chunk sums (≤ 64 + ⌈R/64⌉ roundings, R when R ≤ 64),
 *   and each term dy·x̂ is rounded ≤ 3 times more here (x − μ, ·rstd, ·dy): the default plus
 *   (R + d_gpu + 3)·u·(|initial| + Σ_r|term_r|).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rng, uniformArray } from '../helpers/random.ts';
import { closeToJs, down, js, out, up } from './webgpu-twins.ts';
import type { F32 } from '../../src/backend/backend.ts';
import { layerNorm, layerNormBackward } from '../../src/backend/webgpu/layernorm.ts';

const rand = rng(23);
const randn = (n: number, scale = 1) => uniformArray(rand, n, scale);

const gpuF = (x: Float32Array) => up(x) as F32;
const outF = (x: Float32Array) => out(x) as F32;
const U = 2 ** -24;
const EPS = 1e-5;

function depth(cols: number): number {
  const wg = cols <= 128 ? 64 : 256;
  return Math.ceil(cols / wg) + Math.log2(wg);
}

/** |a − e| ≤ 1e-5 + 1e-5·|e| + extra[i] (NaN matches NaN, ±∞ exactly). */
function withinBound(a: Float32Array, e: Float32Array, extra: Float64Array, what: string): void {
  assert.equal(a.length, e.length, `${what}: length`);
  for (let i = 0; i < e.length; i++) {
    const y = e[i];
    const tol = 1e-5 + 1e-5 * Math.abs(y) + extra[i];
    const ok = Number.isNaN(y) ? Number.isNaN(a[i]) : !Number.isFinite(y) ? a[i] === y : Math.abs(a[i] - y) <= tol;
    if (!ok) assert.fail(`${what}: element ${i} is ${a[i]}, expected ${y} (bound ${tol})`);
  }
}

interface Case {
  rows: number;
  cols: number;
  affine: 'both' | 'none' | 'weight' | 'bias';
  offset?: boolean;
}

const CASES: Case[] = [];
for (const cols of [1, 7, 65, 300, 1000]) for (const rows of [1, 3, 37]) CASES.push({ rows, cols, affine: 'both' });
CASES.push(
  { rows: 300, cols: 7, affine: 'both' },
  { rows: 130, cols: 65, affine: 'weight' },
  { rows: 5, cols: 65, affine: 'none' },
  { rows: 70, cols: 300, affine: 'bias' },
  { rows: 4, cols: 300, affine: 'both', offset: true },
);

test('webgpu layerNorm and layerNormBackward match js (odd rows, chunked dweight/dbias, |mean| ≫ σ)', async () => {
  for (const { rows, cols, affine, offset } of CASES) {
    const what = `${rows}x${cols} ${affine}${offset ? ' offset' : ''}`;
    const n = rows * cols;
    const x = offset ? randn(n, 0.01).map((v) => v + 1000) : randn(n, 3).map((v, i) => v + (i % 5));
    const hasW = affine === 'both' || affine === 'weight';
    const hasB = affine === 'both' || affine === 'bias';
    const w = hasW ? randn(cols, 2) : null;
    const b = hasB ? randn(cols) : null;

    const eOut = new Float32Array(n);
    const eMean = new Float32Array(rows);
    const eRstd = new Float32Array(rows);
    js.layerNorm(x, w, b, eOut, eMean, eRstd, rows, cols, EPS);
    const [o, mean, rstd] = [outF(randn(n)), outF(randn(rows)), outF(randn(rows))];
    const gx = gpuF(x);
    layerNorm(gx, w && gpuF(w), b && gpuF(b), o, mean, rstd, rows, cols, EPS);
    closeToJs(await down(mean, rows), eMean, `layerNorm mean ${what}`);
    closeToJs(await down(rstd, rows), eRstd, `layerNorm rstd ${what}`);
    closeToJs(await down(o, n), eOut, `layerNorm out ${what}`);

    // Backward from the js twin's saved statistics, so that both sides see the same inputs.
    const dy = randn(n);
    const dw0 = hasW ? randn(cols) : null;
    const db0 = hasB ? randn(cols) : null;
    const eDx = new Float32Array(n);
    const eDw = dw0?.slice() ?? null;
    const eDb = db0?.slice() ?? null;
    js.layerNormBackward(x, w, eMean, eRstd, dy, eDx, eDw, eDb, rows, cols);
    const dx = outF(randn(n));
    const dw = dw0 && gpuF(dw0);
    const db = db0 && gpuF(db0);
    layerNormBackward(gx, w && gpuF(w), gpuF(eMean), gpuF(eRstd), gpuF(dy), dx, dw, db, rows, cols);

    const d = depth(cols);
    const dxExtra = new Float64Array(n);
    const colAbs = { w: new Float64Array(cols), b: new Float64Array(cols) };
    for (let r = 0; r < rows; r++) {
      let sg = 0;
      let sgx = 0;
      for (let j = 0; j < cols; j++) {
        const k = r * cols + j;
        const xh = (x[k] - eMean[r]) * eRstd[r];
        const g = w ? dy[k] * w[j] : dy[k];
        sg += Math.abs(g);
        sgx += Math.abs(g * xh);
        colAbs.w[j] += Math.abs(dy[k] * xh);
        colAbs.b[j] += Math.abs(dy[k]);
      }
      for (let j = 0; j < cols; j++) {
        const xh = (x[r * cols + j] - eMean[r]) * eRstd[r];
        dxExtra[r * cols + j] = (eRstd[r] * d * U * (sg + Math.abs(xh) * sgx)) / cols;
      }
    }
    withinBound(await down(dx, n), eDx, dxExtra, `layerNormBackward dx ${what}`);
    const dGpu = rows <= 64 ? rows : 64 + Math.ceil(rows / 64);
    const colExtra = (init: Float32Array, abs: Float64Array) =>
      Float64Array.from(abs, (s, j) => (rows + dGpu + 3) * U * (Math.abs(init[j]) + s));
    if (dw && dw0 && eDw) withinBound(await down(dw, cols), eDw, colExtra(dw0, colAbs.w), `dweight ${what}`);
    if (db && db0 && eDb) withinBound(await down(db, cols), eDb, colExtra(db0, colAbs.b), `dbias ${what}`);
  }
});

test('webgpu layer norm: empty inputs write nothing', async () => {
  const o = outF(Float32Array.of(7));
  const one = () => gpuF(new Float32Array(1));
  layerNorm(one(), null, null, o, o, o, 0, 5, EPS);
  layerNormBackward(one(), one(), one(), one(), one(), o, o, o, 0, 5);
  assert.deepEqual([...(await down(o, 1))], [7]);
});
