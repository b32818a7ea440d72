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
import {
  PARALLEL_KERNELS,
  SYNC_INTS,
  WORKER_SOURCE,
  numThreads,
  setNumThreads,
} from '../../src/backend/wasm/threads.ts';
import { requireKernels, wasmModule } from '../../src/backend/wasm/loader.ts';
import { memory } from '../../src/backend/wasm/memory.ts';

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
    const shapes: [number, number, number, number][] = [
      [1, 257, 129, 300],
      [1, 33, 1000, 200],
      [3, 100, 70, 90],
      [1, 1000, 8, 700],
    ];
    for (const [batch, m, n, k] of shapes)
      for (const transA of [false, true])
        for (const transB of [false, true])
          for (const accumulate of [false, true]) {
            const p: GemmParams = {
              batch,
              m,
              n,
              k,
              transA,
              transB,
              strideA: m * k,
              strideB: k * n,
              strideC: m * n,
              accumulate,
            };
            const a = rand(batch * m * k, 1),
              b = rand(batch * k * n, 2),
              c0 = rand(batch * m * n, 3);
            setNumThreads(1);
            const ref = c0.slice();
            wasmGemm(a, b, ref, p);
            for (const t of [2, 3, 4]) {
              setNumThreads(t);
              const c = c0.slice();
              wasmGemm(a, b, c, p);
              assert.ok(
                c.every((x, i) => Object.is(x, ref[i])),
                `${t} threads, batch ${batch} ${m}x${n}x${k} transA=${transA} transB=${transB} acc=${accumulate}`,
              );
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
  const { hostBackend } = await import('../../src/backend/backend.ts');
  const wasmBackend = hostBackend((await import('../../src/backend/wasm/index.ts')).wasmBackend);
  const before = numThreads();
  try {
    const [B, H, L, S, D, DV] = [2, 3, 130, 200, 64, 48];
    const q = rand(B * H * L * D, 4),
      k = rand(B * H * S * D, 5),
      v = rand(B * H * S * DV, 6),
      dout = rand(B * H * L * DV, 7);
    const biasData = rand(B * S, 8).map((x) => (x > 0.8 ? -Infinity : x));
    for (const causal of [false, true]) {
      const p = {
        b: B,
        h: H,
        l: L,
        s: S,
        d: D,
        dv: DV,
        scale: 0.125,
        causal,
        bias: { data: biasData, strideB: S, strideH: 0, strideL: 0 },
      };
      const run = () => {
        const out = new Float32Array(B * H * L * DV),
          lse = new Float32Array(B * H * L),
          w = new Float32Array(B * H * L * S);
        wasmBackend.attention(q, k, v, out, lse, w, p);
        const dq = new Float32Array(q.length),
          dk = new Float32Array(k.length),
          dv = new Float32Array(v.length);
        wasmBackend.attentionBackward(q, k, v, out, dout, lse, dq, dk, dv, p);
        return [out, lse, w, dq, dk, dv];
      };
      setNumThreads(1);
      const ref = run();
      for (const t of [2, 3, 4]) {
        setNumThreads(t);
        const got = run();
        got.forEach((x, i) =>
          assert.ok(
            x.every((y, j) => Object.is(y, ref[i]![j])),
            `${t} threads causal=${causal}: ${['out', 'lse', 'weights', 'dq', 'dk', 'dv'][i]}`,
          ),
        );
      }
    }
  } finally {
    setNumThreads(before);
  }
});

test('a worker woken late for a launch it already ran does not run it again (the lost-count hang)', async () => {
  // A worker that is not asleep when the caller bumps the generation runs the launch without the
  // notify; the caller's notify can then arrive after the worker is back asleep. Posting the launch
  // before the worker starts makes that order certain.
  const { Worker } = await import('node:worker_threads');
  requireKernels();
  const sync = new SharedArrayBuffer(4 * SYNC_INTS),
    args = new SharedArrayBuffer(8 * 32);
  const s = new Int32Array(sync),
    a = new Float64Array(args);
  a[0] = -1; // this worker sits the launch out: it only counts itself done
  Atomics.store(s, 1, 1); // workers still running
  Atomics.store(s, 0, 1); // generation 1, not notified
  const w = new Worker(WORKER_SOURCE, {
    eval: true,
    execArgv: [],
    workerData: { module: wasmModule(), memory, sync, args, id: 0, names: [...PARALLEL_KERNELS] },
  });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const until = async (what: string, ok: () => boolean) => {
    for (const t0 = Date.now(); !ok(); await sleep(5))
      if (Date.now() - t0 > 10_000) assert.fail(`${what}: still ${Atomics.load(s, 1)} workers running after 10 s`);
  };
  try {
    await until('launch 1', () => Atomics.load(s, 1) === 0);
    await sleep(100); // the worker is back asleep on generation 1
    Atomics.notify(s, 0); // the caller's notify for generation 1, late
    await sleep(100);
    assert.equal(Atomics.load(s, 1), 0, 'the late notify made the worker run launch 1 again (count below zero)');
    Atomics.store(s, 1, 1);
    Atomics.add(s, 0, 1);
    Atomics.notify(s, 0);
    await until('launch 2', () => Atomics.load(s, 1) === 0);
    await sleep(50);
    assert.equal(Atomics.load(s, 1), 0, 'launch 2 ran more than once');
  } finally {
    await w.terminate();
  }
});
