/**
 * The webgpu fused attention (src/backend/webgpu/attention.ts) against its js twin, forward (with and
 * without weights) and backward: both forward kernels (`row` for L <= 16, decoding L = 1 included; the flash
 * `tile` kernel past it, across 64-row and key-tile boundaries), causal on and off with L < S, L = S and
 * L > S (rows with no key in reach), additive biases of each broadcast pattern with −∞ (a padding mask
 * (B,1,1,S) with a batch wholly padded, a full (B,H,L,S) bias with a fully masked row, a shared (1,1,L,S)
 * one), d = dv and d ≠ dv, head sizes 8, 16, 64, 80 and odd ones (the scalar path), empty inputs, a grid
 * folded past 65,535 workgroups, and the refusal of a head size the kernels do not hold.
 *
 * Tolerance: closeToJs's default, 1e-5 + 1e-5·|js|, with NaN and ±∞ in the same places as js's. The js twin
 * keeps scores, sums and accumulators in float64, the GPU in float32 with WGSL's exp (3 + 2|x| ULP, |x| the
 * distance of a score below the row max). A score is a float32 dot of d <= 80 terms |q·k| <= 2.25 times
 * 1/√d: its rounding error is about √d·ulp(|s|) (|s| <= 8 here), a few 1e-7, which moves each probability by
 * that fraction; out and lse are convex combinations (and the log of a sum) of those, and the gradients add a
 * float32 dot dO·v of dv terms and sums over at most a few hundred rows or keys of terms each carrying that
 * relative error, so each element stays within a few 1e-7 of (1 + |js|) and exp's bound adds at most ~3e-6
 * for the probabilities that matter. Measured on SwiftShader over this file: 2.0e-7 forward, 3.9e-7 backward
 * (printed by the first test), 25× inside the bound.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AttentionParams, HostAttentionParams } from '../../src/backend/backend.ts';
import * as K from '../../src/backend/webgpu/attention.ts';
import type { Storage } from '../../src/tensor/storage.ts';
import { rng, uniformArray } from '../helpers/random.ts';
import { closeToJs as close, down, js, out, up } from './webgpu-twins.ts';

const rand = rng(11);
const randn = (n: number, scale = 1) => uniformArray(rand, n, scale);

type BiasKind = 'none' | 'padding' | 'full' | 'shared';

/** The bias of `kind` with −∞ in it: a padded key per batch (batch 1 wholly padded), masked cells and rows. */
function makeBias(kind: BiasKind, B: number, H: number, L: number, S: number): HostAttentionParams['bias'] {
  if (kind === 'none') return null;
  if (kind === 'padding') {
    const data = new Float32Array(B * S);
    for (let b = 0; b < B; b++) data[b * S + S - 1] = S > 1 ? -Infinity : 0;
    if (B > 1) data.fill(-Infinity, S, 2 * S);
    return { data, strideB: S, strideH: 0, strideL: 0 };
  }
  if (kind === 'full') {
    const data = randn(B * H * L * S, 2);
    for (let x = 0; x < data.length; x += 5) data[x] = -Infinity;
    data.fill(-Infinity, 0, S); // row 0 of (b 0, h 0): every key masked
    if (L > 1 && S > 20) data.fill(-Infinity, S, S + 20); // row 1: its first key tiles masked
    return { data, strideB: H * L * S, strideH: L * S, strideL: S };
  }
  const data = randn(L * S, 2);
  for (let x = 3; x < data.length; x += 7) data[x] = -Infinity;
  if (L > 2) data.fill(-Infinity, 2 * S, 3 * S);
  return { data, strideB: 0, strideH: 0, strideL: S };
}

/** Runs one configuration forward (with and without weights) and backward on both, comparing. */
async function check(
  [B, H, L, S, D, DV, HK = H]: number[],
  causal: boolean,
  kind: BiasKind,
  withWeights: boolean,
  worst: { fwd: number; bwd: number },
): Promise<void> {
  const what = `B${B} H${H} Hk${HK} L${L} S${S} D${D} Dv${DV} causal=${causal} bias=${kind} weights=${withWeights}`;
  const q = randn(B * H * L * D, 1.5);
  const k = randn(B * HK * S * D, 1.5);
  const v = randn(B * HK * S * DV);
  const bias = makeBias(kind, B, H, L, S);
  const p: HostAttentionParams = {
    b: B,
    h: H,
    hk: HK,
    l: L,
    s: S,
    d: D,
    dv: DV,
    scale: 1 / Math.sqrt(D),
    causal,
    bias,
  };
  const gp = { ...p, bias: bias && { ...bias, data: up(bias.data) } } as unknown as AttentionParams;
  const nO = B * H * L * DV;
  const nL = B * H * L;
  const nW = B * H * L * S;
  const ref = [randn(nO, 9), randn(nL, 9), randn(nW, 9)];
  const [o, lse, w] = ref.map((x) => out(x));
  js.attention(q, k, v, ref[0], ref[1], withWeights ? ref[2] : null, p);
  const [qg, kg, vg] = [up(q), up(k), up(v)] as Storage<'float32'>[];
  K.attention(qg, kg, vg, o as never, lse as never, withWeights ? (w as never) : null, gp);
  const got = [await down(o, nO), await down(lse, nL), await down(w, nW)];
  close(got[0], ref[0], `${what}: out`);
  close(got[1], ref[1], `${what}: lse`);
  close(got[2], ref[2], `${what}: weights${withWeights ? '' : ' (untouched)'}`);
  worst.fwd = Math.max(worst.fwd, relErr(got[0], ref[0]), relErr(got[1], ref[1]), relErr(got[2], ref[2]));

  if (withWeights) return;
  const dout = randn(nO);
  const grads = [randn(nL * D, 9), randn(B * HK * S * D, 9), randn(B * HK * S * DV, 9)];
  const gg = grads.map((x) => out(x));
  js.attentionBackward(q, k, v, ref[0], dout, ref[1], grads[0], grads[1], grads[2], p);
  K.attentionBackward(
    qg,
    kg,
    vg,
    up(ref[0]) as never,
    up(dout) as never,
    up(ref[1]) as never,
    ...(gg as [never, never, never]),
    gp,
  );
  for (let x = 0; x < 3; x++) {
    const g = await down(gg[x], grads[x].length);
    close(g, grads[x], `${what}: ${['dq', 'dk', 'dv'][x]}`);
    worst.bwd = Math.max(worst.bwd, relErr(g, grads[x]));
  }
}

/** The largest |a − b| / (1 + |b|) over finite b (NaN/∞ placement is closeToJs's to check). */
function relErr(a: Float32Array, b: Float32Array): number {
  let e = 0;
  for (let x = 0; x < b.length; x++)
    if (Number.isFinite(b[x])) e = Math.max(e, Math.abs(a[x] - b[x]) / (1 + Math.abs(b[x])));
  return e;
}

const SHAPES = [
  // B, H, L, S, D, Dv
  [1, 1, 1, 1, 8, 8],
  [2, 3, 1, 37, 16, 16], // decoding
  [1, 2, 1, 300, 64, 64], // decoding, a few hundred keys
  [2, 2, 1, 37, 8, 80], // decoding, dv > 64 (two dims a thread)
  [2, 2, 5, 9, 8, 16], // row kernel, L < S
  [1, 2, 13, 7, 5, 3], // row kernel, L > S, odd sizes (scalar path)
  [1, 2, 70, 13, 17, 33], // tile kernel, L > S: rows with no key in reach
  [2, 1, 65, 100, 16, 8], // tile kernel across a 64-row tile, d ≠ dv
  [1, 1, 40, 40, 80, 80],
  [1, 1, 129, 70, 64, 64],
];

test('webgpu attention forward and backward match js: every kernel, causal or not, each bias pattern', async () => {
  const worst = { fwd: 0, bwd: 0 };
  for (const shape of SHAPES)
    for (const causal of [false, true])
      for (const kind of ['none', 'padding', 'full', 'shared'] as const)
        for (const withWeights of [false, true]) await check(shape, causal, kind, withWeights, worst);
  console.log(
    `worst |gpu − js| / (1 + |js|): forward ${worst.fwd.toExponential(2)}, backward ${worst.bwd.toExponential(2)}`,
  );
});

test('webgpu grouped-query attention (H / Hk query heads a KV head) matches js: dK, dV summed over the group', async () => {
  const worst = { fwd: 0, bwd: 0 };
  for (const shape of [
    // B, H, L, S, D, Dv, Hk
    [2, 6, 5, 7, 8, 8, 2], // row kernel
    [1, 4, 1, 37, 16, 16, 1], // decoding, multi-query
    [1, 9, 70, 70, 16, 16, 3], // tile kernel
  ])
    for (const causal of [false, true])
      for (const kind of ['none', 'padding'] as const)
        for (const withWeights of [false, true]) await check(shape, causal, kind, withWeights, worst);
});

test('webgpu attention: empty inputs (S = 0, L = 0, B = 0) as js', async () => {
  const worst = { fwd: 0, bwd: 0 };
  for (const shape of [
    [1, 2, 3, 0, 8, 8],
    [1, 2, 20, 0, 8, 8],
    [1, 1, 0, 5, 8, 4],
    [0, 2, 3, 5, 8, 8],
  ])
    for (const withWeights of [false, true]) await check(shape, true, 'none', withWeights, worst);
});

test('webgpu attention: a decoding grid folded past 65,535 workgroups', async () => {
  await check([4100, 1, 16, 3, 4, 4], false, 'padding', true, { fwd: 0, bwd: 0 });
});

test('webgpu attention refuses head sizes its kernels do not hold, naming them', () => {
  const p = { b: 1, h: 1, l: 1, s: 1, d: 300, dv: 8, scale: 1, causal: false, bias: null };
  const x = up(new Float32Array(1)) as never;
  assert.throws(() => K.attention(x, x, x, x, x, null, p), /head size d must be an integer in 1\.\.256, got 300/);
  assert.throws(
    () => K.attentionBackward(x, x, x, x, x, x, x, x, x, { ...p, d: 8, dv: 0 }),
    /head size dv must be an integer in 1\.\.256, got 0/,
  );
});
