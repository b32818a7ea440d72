/**
 * The webgpu GEMM (src/backend/webgpu/gemm.ts) against its js twin (src/backend/js/gemm.ts): every layout,
 * C = and C +=, broadcast batch strides, element offsets, sizes across tile edges, the GEMV path (m <= 8),
 * k = 0, batches, and a grid folded past 65,535 workgroups.
 *
 * Tolerance (as test/backend/wasm-gemm.test.ts): each C[i][j] is, on both sides, a sum of the k + 1 terms
 * C₀ (when accumulating) and A[i][p]·B[p][j] in some order with some roundings: the js twin rounds to
 * float32 after every term in its NN and TN loops and sums in float64 in NT and TT, the GPU sums in float32
 * (in k order on the tiled path, a tree of lanes on the GEMV path, products maybe fused). Any such
 * evaluation is within γ_{k+1}·S of the exact value, S = |C₀| + Σₚ |A[i][p]|·|B[p][j]| and
 * γₙ = n·u/(1 − n·u), u = 2⁻²⁴ (Higham, Accuracy and Stability, §3.1), so the two differ by at most twice
 * that; we allow 2·γ_{k+2}·S, S computed by the js GEMM on |A|, |B|, |C₀|. Rigorous (never flaky), yet a
 * wrong or missing term (≈ |a·b|, ~S/k) exceeds it by orders of magnitude for k <= 200 (2·(k+2)·u ≪ 1/k).
 * Cells of C outside the matrices written must keep their bits.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { GemmParams } from '../../src/backend/backend.ts';
import { gemm as jsGemm } from '../../src/backend/js/gemm.ts';
import { GEMV_MAX_M, gemm } from '../../src/backend/webgpu/gemm.ts';
import type { F32 } from '../../src/backend/backend.ts';
import { rng } from '../helpers/random.ts';
import { ctx, down, up } from './webgpu-twins.ts';

const U = 2 ** -24;
const rand = rng(4242);
const randomArray = (n: number) => Float32Array.from({ length: n }, () => rand() * 2 - 1);

interface Case extends Partial<GemmParams> {
  m: number;
  n: number;
  k: number;
  /** A and B in one buffer (B after A): the kernel reads one storage through two bindings. */
  shared?: boolean;
}

/** Elements an operand spans: its offset, then batch − 1 strides and one matrix. */
const span = (batch: number, stride: number, size: number, offset: number) => offset + (batch - 1) * stride + size;

async function check(c: Case, what: string): Promise<void> {
  const batch = c.batch ?? 1;
  const { m, n, k } = c;
  const p: GemmParams = {
    batch,
    m,
    n,
    k,
    transA: c.transA ?? false,
    transB: c.transB ?? false,
    strideA: c.strideA ?? m * k,
    strideB: c.strideB ?? k * n,
    strideC: c.strideC ?? m * n,
    accumulate: c.accumulate ?? false,
    offsetA: c.offsetA ?? 0,
    offsetB: c.offsetB ?? 0,
    offsetC: c.offsetC ?? 0,
  };
  const aLen = span(batch, p.strideA, m * k, p.offsetA!);
  let a = randomArray(aLen);
  let b = randomArray(span(batch, p.strideB, k * n, p.offsetB!));
  if (c.shared) {
    // One array: A at its offset, B's offset moved past A.
    const both = randomArray(aLen + b.length);
    a = both;
    b = both;
    p.offsetB = aLen + p.offsetB!;
  }
  const c0 = randomArray(span(batch, p.strideC, m * n, p.offsetC!) + 3);
  const expected = c0.slice();
  jsGemm(a, b, expected, p);
  const abs = (x: Float32Array) => x.map(Math.abs);
  const s = abs(c0);
  jsGemm(abs(a), abs(b), s, p);

  const ga = up(a) as F32;
  const gb = c.shared ? ga : (up(b) as F32);
  const gc = up(c0) as F32;
  gemm(ga, gb, gc, p);
  const actual = await down(gc, c0.length);

  const written = new Set<number>();
  for (let bi = 0; bi < batch; bi++) for (let i = 0; i < m * n; i++) written.add(p.offsetC! + bi * p.strideC + i);
  const g = (k + 2) * U;
  const bound = (2 * g) / (1 - g);
  for (let i = 0; i < c0.length; i++) {
    if (!written.has(i)) {
      if (!Object.is(actual[i], c0[i])) assert.fail(`${what}: C[${i}] (not written) is ${actual[i]}, was ${c0[i]}`);
      continue;
    }
    const tol = bound * s[i];
    if (!(Math.abs(actual[i] - expected[i]) <= tol))
      assert.fail(
        `${what}: C[${i}] is ${actual[i]}, expected ${expected[i]} (|diff| ${Math.abs(actual[i] - expected[i])}, bound ${tol})`,
      );
  }
}

const LAYOUTS: [boolean, boolean][] = [
  [false, false],
  [false, true],
  [true, false],
  [true, true],
];
const name = (transA: boolean, transB: boolean) => (transA ? 'T' : 'N') + (transB ? 'T' : 'N');

test('tiled GEMM: every layout, C = and C +=, sizes off the 32 tile (scalar and vec4 loads)', async () => {
  const sizes: [number, number, number][] = [
    [9, 1, 1],
    [33, 7, 65],
    [65, 130, 33],
    [130, 65, 7],
    [36, 68, 132], // all multiples of 4: vec4 loads of both operands, partial tiles
    [64, 96, 64], // whole tiles
  ];
  for (const [transA, transB] of LAYOUTS)
    for (const accumulate of [false, true])
      for (const [m, n, k] of sizes)
        await check(
          { m, n, k, transA, transB, accumulate },
          `${name(transA, transB)} ${m}x${n}x${k} acc=${accumulate}`,
        );
});

test('GEMV (m <= 8): every m, every layout, C = and C +=, vec4 when x·Wᵀ is aligned', async () => {
  for (const [transA, transB] of LAYOUTS)
    for (let m = 1; m <= GEMV_MAX_M; m++)
      for (const [n, k] of [
        [33, 130],
        [130, 64],
        [7, 1],
      ])
        await check(
          { m, n, k, transA, transB, accumulate: m % 2 === 0 },
          `GEMV ${name(transA, transB)} ${m}x${n}x${k} acc=${m % 2 === 0}`,
        );
});

test('batches: broadcast strides (0), strided C, offsets (aligned and not), one storage for A and B', async () => {
  for (const [transA, transB] of LAYOUTS) {
    const l = name(transA, transB);
    for (const m of [3, 40]) {
      const k = 36;
      const n = 20;
      await check({ m, n, k, transA, transB, batch: 3, strideA: 0 }, `${l} m=${m} A broadcast`);
      await check({ m, n, k, transA, transB, batch: 3, strideB: 0, accumulate: true }, `${l} m=${m} B broadcast +=`);
      await check(
        { m, n, k, transA, transB, batch: 2, offsetA: 5, offsetB: 3, offsetC: 7, strideC: m * n + 2 },
        `${l} m=${m} odd offsets`,
      );
      await check(
        { m, n, k, transA, transB, batch: 2, offsetA: 8, offsetB: 4, offsetC: 4, strideA: m * k + 4 },
        `${l} m=${m} aligned offsets`,
      );
      await check({ m, n, k, transA, transB, batch: 2, offsetA: 2, offsetB: 1, shared: true }, `${l} m=${m} shared`);
    }
  }
});

test('k = 0: C = 0, or C unchanged when accumulating', async () => {
  for (const m of [2, 33])
    for (const accumulate of [false, true]) {
      await check({ m, n: 5, k: 0, batch: 2, accumulate }, `k=0 m=${m} acc=${accumulate}`);
      const c0 = randomArray(m * 5);
      const gc = up(c0) as F32;
      gemm(up(new Float32Array(1)) as F32, up(new Float32Array(1)) as F32, gc, {
        batch: 1,
        m,
        n: 5,
        k: 0,
        transA: false,
        transB: true,
        strideA: 0,
        strideB: 0,
        strideC: 0,
        accumulate,
      });
      const got = await down(gc, c0.length);
      assert.deepEqual([...got], accumulate ? [...c0] : new Array(c0.length).fill(0), `k=0 m=${m} acc=${accumulate}`);
    }
});

test('empty shapes write nothing', async () => {
  await check({ m: 0, n: 4, k: 3 }, 'm=0');
  await check({ m: 4, n: 0, k: 3 }, 'n=0');
  await check({ m: 4, n: 4, k: 3, batch: 0 }, 'batch=0');
  await ctx.sync();
});
