/**
 * The webgpu cross-entropy (src/backend/webgpu/crossentropy.ts) against its js twin: rows of 1, 7, 65, 300
 * and 1000 classes, 1 to 600 rows (more than the 256 threads of the reduction), ignored targets (−100, and a
 * real class as ignoreIndex), label smoothing 0 and 0.1, mean and sum, the backward with a gradient per
 * row, one for all, and one for all divided by the count read from `reduced` on the GPU (its float32
 * rounding checked bit for bit, 1/count included), −∞ logits and a row of −∞, every row ignored (a mean
 * over none: NaN), empty inputs.
 *
 * Bound (u = 2⁻²⁴): closeToJs's default 1e-5 + 1e-5·|js| everywhere, because every float32 sum here is of
 * non-negative terms (Σexp, Σlosses: relative error ≤ d·u, with d = ⌈n/WG⌉ + log2(WG) ≤ 12 roundings for
 * n ≤ 1000 and WG = 256: 7.2e-7) except Σlogits, which enters the loss as ε·Σlogits/C, off by at most
 * ε·d·u·max|logit| ≤ 0.1·12·u·8 ≈ 6e-8; log and exp add 2⁻²¹ absolute and a few ULP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rng, uniformArray } from '../helpers/random.ts';
import { closeToJs, ctx, down, js, out, sameBits, up } from './webgpu-twins.ts';
import type { F32, I32 } from '../../src/backend/backend.ts';
import { crossEntropy, crossEntropyBackward, RECIPROCAL } from '../../src/backend/webgpu/crossentropy.ts';
import { u } from '../../src/backend/webgpu/context.ts';
import { buf } from '../../src/backend/webgpu/device.ts';
import { INF } from '../../src/backend/webgpu/wgsl.ts';

const rand = rng(31);
const randn = (n: number, scale = 1) => uniformArray(rand, n, scale);

const gpuF = (x: Float32Array) => up(x) as F32;
const outF = (x: Float32Array) => out(x) as F32;
const gpuI = (x: Int32Array) => up(x, 'int32') as I32;

interface Case {
  rows: number;
  cols: number;
  ignore: number;
  eps: number;
  mean: boolean;
}

const CASES: Case[] = [];
for (const cols of [1, 7, 65, 300, 1000])
  for (const rows of [1, 3, 37])
    for (const eps of [0, 0.1]) CASES.push({ rows, cols, ignore: -100, eps, mean: (rows + cols) % 2 === 0 });
CASES.push(
  { rows: 600, cols: 7, ignore: -100, eps: 0.1, mean: true },
  { rows: 600, cols: 7, ignore: -100, eps: 0, mean: false },
  { rows: 40, cols: 65, ignore: 2, eps: 0.1, mean: true },
  { rows: 9, cols: 5, ignore: 2, eps: 0, mean: false },
);

/** Targets in [0, cols), every third row ignored (ignoreIndex −100), or drawn from [0, cols) as they come. */
function targetsFor(rows: number, cols: number, ignore: number): Int32Array {
  return Int32Array.from({ length: rows }, (_, r) =>
    ignore === -100 && r % 3 === 2 ? -100 : Math.floor(rand() * cols),
  );
}

/** The js twin's forward and backward in the three gradient modes, against the GPU's. */
async function check(logits: Float32Array, targets: Int32Array, c: Case, what: string): Promise<void> {
  const { rows, cols, ignore, eps, mean } = c;
  const eLoss = new Float32Array(rows);
  const eRed = new Float32Array(2);
  js.crossEntropy(logits, targets, eLoss, eRed, rows, cols, ignore, eps, mean);
  const [gl, gt] = [gpuF(logits), gpuI(targets)];
  const losses = outF(randn(rows));
  const reduced = outF(randn(2));
  crossEntropy(gl, gt, losses, reduced, rows, cols, ignore, eps, mean);
  closeToJs(await down(losses, rows), eLoss, `losses ${what}`);
  const red = await down(reduced, 2);
  assert.equal(red[1], eRed[1], `count ${what}`);
  closeToJs(red.subarray(0, 1), eRed.subarray(0, 1), `total ${what}`);

  const n = rows * cols;
  const perRowGrad = randn(rows, 2);
  const g = Float32Array.of(randn(1, 3)[0]);
  for (const [mode, gradOut, perRow, red2] of [
    ['per row', perRowGrad, true, null],
    ['one for all', g, false, null],
    ['one for all ÷ count', g, false, eRed],
  ] as const) {
    const expected = new Float32Array(n);
    js.crossEntropyBackward(logits, targets, gradOut, perRow, red2, expected, rows, cols, ignore, eps);
    const dl = outF(randn(n));
    crossEntropyBackward(gl, gt, gpuF(gradOut), perRow, red2 && reduced, dl, rows, cols, ignore, eps);
    closeToJs(await down(dl, n), expected, `crossEntropyBackward ${mode} ${what}`);
  }
}

test('webgpu crossEntropy and its backward match js (smoothing, ignored rows, mean and sum)', async () => {
  for (const c of CASES) {
    const logits = randn(c.rows * c.cols, 8);
    const targets = targetsFor(c.rows, c.cols, c.ignore);
    await check(logits, targets, c, `${c.rows}x${c.cols} ignore ${c.ignore} eps ${c.eps} mean ${c.mean}`);
  }
});

test('webgpu crossEntropy with −∞ logits, a row of −∞, and every row ignored', async () => {
  for (const eps of [0, 0.1])
    for (const cols of [7, 300]) {
      const rows = 6;
      const logits = randn(rows * cols, 5);
      const targets = Int32Array.from({ length: rows }, (_, r) => (r * 5) % cols);
      for (let j = 1; j < cols; j += 3) logits[j] = -Infinity; // row 0: some masked classes
      logits[cols + targets[1]] = -Infinity; // row 1: the target itself
      logits.fill(-Infinity, 2 * cols, 3 * cols); // row 2: all −∞ (NaN, as the js twin)
      logits.fill(-Infinity, 3 * cols, 4 * cols);
      targets[3] = -100; // row 3: all −∞ but ignored
      await check(logits, targets, { rows, cols, ignore: -100, eps, mean: true }, `−∞ ${rows}x${cols} eps ${eps}`);
    }
  const targets = new Int32Array(4).fill(-100);
  await check(randn(4 * 5), targets, { rows: 4, cols: 5, ignore: -100, eps: 0.1, mean: true }, 'all ignored, mean');
  await check(randn(4 * 5), targets, { rows: 4, cols: 5, ignore: -100, eps: 0, mean: false }, 'all ignored, sum');
});

test('webgpu crossEntropy over no rows writes [NaN, 0] (mean) or [0, 0] (sum), as js', async () => {
  for (const mean of [true, false]) {
    const e = new Float32Array(2);
    js.crossEntropy(new Float32Array(0), new Int32Array(0), new Float32Array(0), e, 0, 5, -100, 0, mean);
    const reduced = outF(Float32Array.of(3, 3));
    crossEntropy(
      gpuF(new Float32Array(1)),
      gpuI(new Int32Array(1)),
      outF(new Float32Array(1)),
      reduced,
      0,
      5,
      -100,
      0,
      mean,
    );
    sameBits(await down(reduced, 2), e, `reduced over no rows, mean ${mean}`);
  }
  const dl = outF(Float32Array.of(7));
  crossEntropyBackward(
    gpuF(new Float32Array(1)),
    gpuI(new Int32Array(1)),
    gpuF(Float32Array.of(1)),
    true,
    null,
    dl,
    0,
    5,
    -100,
    0,
  );
  assert.deepEqual([...(await down(dl, 1))], [7]);
});

/** fround(fround(1/count)·g) on the GPU through recip_rn, for each count. */
async function gpuScales(counts: Uint32Array, g: number): Promise<Float32Array> {
  const code = /* wgsl */ `
struct P { n: u32, g: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> c: array<u32>;
@group(0) @binding(2) var<storage, read_write> o: array<f32>;
${INF}
${RECIPROCAL}
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) gid: vec3u) {
  if (gid.x < p.n) { o[gid.x] = recip_rn(c[gid.x]) * p.g; }
}`;
  const o = outF(new Float32Array(counts.length));
  const param = [u(counts.length), { f: g }];
  ctx.run(ctx.program('test-recip', code), [buf(gpuI(Int32Array.from(counts))), buf(o)], param, [
    Math.ceil(counts.length / 64),
  ]);
  return down(o, counts.length);
}

test('webgpu crossEntropyBackward: the mean scale fround(fround(1/count)·g) is bit-exact for any count', async () => {
  const counts: number[] = [];
  for (let c = 1; c <= 20_000; c++) counts.push(c);
  for (let k = 0; k <= 24; k++) counts.push(2 ** k, 2 ** k + 1, 2 ** k - 1 || 1);
  for (let k = 0; k < 2000; k++) counts.push(1 + Math.floor(rand() * 2 ** 24));
  const cs = Uint32Array.from(counts);
  for (const g of [1, -0.37, 3.1e-3, 1e6]) {
    const gf = Math.fround(g);
    const expected = Float32Array.from(counts, (c) => Math.fround(Math.fround(1 / c) * gf));
    sameBits(await gpuScales(cs, gf), expected, `scale for g ${gf}`);
  }
});
