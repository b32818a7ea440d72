/**
 * The threaded GEMM (src/backend/wasm/threads.ts): workers over the shared memory compute disjoint
 * row ranges of C, each element exactly as the single-threaded kernel does, so results must be
 * bit-identical to one thread, for every layout, batched and accumulating, with row counts that
 * do not divide evenly among the threads.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GemmParams } from '../../src/backend/backend.ts';
import { wasmGemm } from '../../src/backend/wasm/gemm.ts';
import { numThreads, setNumThreads } from '../../src/backend/wasm/threads.ts';

function rand(n: number, seed: number): Float32Array {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 31 - 1;
  });
}

test('threaded wasm gemm equals single-threaded bit for bit (2, 3 and 4 threads; all layouts; batched; accumulate)', () => {
  const before = numThreads();
  try {
    const shapes: [number, number, number, number][] = [[1, 257, 129, 300], [1, 33, 1000, 200], [3, 100, 70, 90], [1, 1000, 8, 700]];
    for (const [batch, m, n, k] of shapes) for (const transA of [false, true]) for (const transB of [false, true]) for (const accumulate of [false, true]) {
      const p: GemmParams = { batch, m, n, k, transA, transB, strideA: m * k, strideB: k * n, strideC: m * n, accumulate };
      const a = rand(batch * m * k, 1), b = rand(batch * k * n, 2), c0 = rand(batch * m * n, 3);
      setNumThreads(1);
      const ref = c0.slice();
      wasmGemm(a, b, ref, p);
      for (const t of [2, 3, 4]) {
        setNumThreads(t);
        const c = c0.slice();
        wasmGemm(a, b, c, p);
        assert.ok(c.every((x, i) => Object.is(x, ref[i])), `${t} threads, batch ${batch} ${m}x${n}x${k} transA=${transA} transB=${transB} acc=${accumulate}`);
      }
    }
  } finally {
    setNumThreads(before);
  }
});

test('setNumThreads validates its argument', () => {
  assert.throws(() => setNumThreads(0), /expected an integer >= 1, got 0/);
  assert.throws(() => setNumThreads(1.5), /got 1.5/);
});

test('threaded fused attention (split over batch × heads) equals single-threaded bit for bit, forward with weights and backward', async () => {
  const { wasmBackend } = await import('../../src/backend/wasm/index.ts');
  const before = numThreads();
  try {
    const [B, H, L, S, D, DV] = [2, 3, 130, 200, 64, 48];
    const q = rand(B * H * L * D, 4), k = rand(B * H * S * D, 5), v = rand(B * H * S * DV, 6), dout = rand(B * H * L * DV, 7);
    const biasData = rand(B * S, 8).map((x) => (x > 0.8 ? -Infinity : x));
    for (const causal of [false, true]) {
      const p = { b: B, h: H, l: L, s: S, d: D, dv: DV, scale: 0.125, causal, bias: { data: biasData, strideB: S, strideH: 0, strideL: 0 } };
      const run = () => {
        const out = new Float32Array(B * H * L * DV), lse = new Float32Array(B * H * L), w = new Float32Array(B * H * L * S);
        wasmBackend.attention(q, k, v, out, lse, w, p);
        const dq = new Float32Array(q.length), dk = new Float32Array(k.length), dv = new Float32Array(v.length);
        wasmBackend.attentionBackward(q, k, v, out, dout, lse, dq, dk, dv, p);
        return [out, lse, w, dq, dk, dv];
      };
      setNumThreads(1);
      const ref = run();
      for (const t of [2, 3, 4]) {
        setNumThreads(t);
        const got = run();
        got.forEach((x, i) => assert.ok(x.every((y, j) => Object.is(y, ref[i]![j])), `${t} threads causal=${causal}: ${['out', 'lse', 'weights', 'dq', 'dk', 'dv'][i]}`));
      }
    }
  } finally {
    setNumThreads(before);
  }
});
