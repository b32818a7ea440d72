/**
 * A pool worker that dies in the middle of a launch (process.exit, terminate(), out of memory)
 * makes that launch fail with one line naming the kernel and every worker's state, instead of
 * waiting forever; the launch after it starts a fresh pool and computes the right result. A trap
 * is reported likewise, and a worker that hangs without dying is reported by the soak's watchdog.
 * Each death is injected by the pool's test-only hook at a chosen launch of a chosen worker.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GemmParams } from '../../src/backend/backend.ts';
import { wasmGemm } from '../../src/backend/wasm/gemm.ts';
import { requireKernels, wasmModule } from '../../src/backend/wasm/loader.ts';
import {
  numThreads,
  partsFor,
  poolStats,
  runParallel,
  setNumThreads,
  setPoolTestHooks,
  type PoolTestHooks,
} from '../../src/backend/wasm/threads.ts';

const TIMEOUT = { timeout: 60_000 };

function rand(n: number, seed: number): Float32Array {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 31 - 1;
  });
}

// 256×128×128: 8.4 million flops, over the pool's threshold, split by rows among the threads.
const [M, N, K] = [256, 128, 128];
const P: GemmParams = {
  batch: 1,
  m: M,
  n: N,
  k: K,
  transA: false,
  transB: false,
  strideA: M * K,
  strideB: K * N,
  strideC: M * N,
  accumulate: false,
};
const A = rand(M * K, 1),
  B = rand(K * N, 2);

function gemm(): Float32Array {
  const c = new Float32Array(M * N);
  wasmGemm(A, B, c, P);
  return c;
}

function withHooks(threads: number, h: PoolTestHooks | null, f: () => void): void {
  const before = numThreads();
  setNumThreads(threads);
  setPoolTestHooks(h);
  try {
    f();
  } finally {
    setPoolTestHooks(null);
    setNumThreads(before);
  }
}

for (const how of ['exit', 'terminate', 'oom'] as const) {
  test(
    `a worker that dies mid-launch (${how}) fails that launch with one line naming the kernel, and the next launch works`,
    TIMEOUT,
    () => {
      let ref!: Float32Array;
      withHooks(1, null, () => {
        ref = gemm();
      });
      withHooks(3, { die: { worker: 1, launch: 3, how } }, () => {
        assert.deepEqual(gemm(), ref); // launches 1 and 2 of worker 1
        assert.deepEqual(gemm(), ref);
        const t0 = Date.now();
        let message = '';
        assert.throws(gemm, (e: Error) => {
          message = e.message;
          return true;
        });
        assert.ok(Date.now() - t0 < 30_000, `the failed launch took ${Date.now() - t0} ms`);
        const code = {
          exit: 'code 3',
          terminate: 'code 1',
          oom: 'code 1, Worker terminated due to reaching memory limit',
        }[how];
        assert.match(
          message,
          new RegExp(
            `^runParallel: gemmRows failed: wasm worker 1 exited \\(${code}.*\\) \\[generation 3, running 1, ready 2, gone 1; workers: 0 started 3 done 3, 1 started 3 done 2 exited\\]$`,
          ),
        );
        assert.equal(message.split('\n').length, 1);
        assert.deepEqual(gemm(), ref, 'the launch after the failure (a fresh pool)');
      });
    },
  );
}

test(
  'a worker that dies between launches: the next launch fails with one line naming the kernel, the one after works',
  TIMEOUT,
  () => {
    let ref!: Float32Array;
    withHooks(1, null, () => {
      ref = gemm();
    });
    withHooks(2, { die: { worker: 0, launch: 1, how: 'exit-after' } }, () => {
      assert.deepEqual(gemm(), ref); // worker 0 runs its part, then exits
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200); // (its exit is usually seen before the next launch)
      // Seen before the launch: not launched; seen during it (the supervisor's notify wakes the join): failed.
      const before =
        'runParallel: gemmRows not launched: wasm worker 0 exited (code 3) [generation 1, running 0, ready 1, gone 1; workers: 0 started 1 done 1 exited]';
      const during =
        'runParallel: gemmRows failed: wasm worker 0 exited (code 3) [generation 2, running 1, ready 1, gone 1; workers: 0 started 1 done 1 exited]';
      assert.throws(gemm, (e: Error) => {
        assert.equal(e.message, e.message.includes('not launched') ? before : during);
        return true;
      });
      assert.deepEqual(gemm(), ref, 'the launch after the failure (a fresh pool)');
    });
  },
);

test('a trap in a worker is reported after the join, naming the worker and the kernel', TIMEOUT, () => {
  withHooks(2, null, () => {
    // The two exports this file calls directly (the binding files type the rest; see loader.ts declareExports).
    const k = requireKernels() as unknown as { binaryFull(...args: number[]): void; scratchBytes(): number };
    assert.equal(partsFor(wasmModule(), k.scratchBytes() / 4, 1 << 30), 2);
    // An output address past the end of the memory: the worker's store traps.
    assert.throws(
      () => runParallel('binaryFull', [[0, 0, 0, 2 ** 32 - 16, 64]], () => {}),
      /wasm worker 0: binaryFull trapped$/,
    );
  });
});

test('a worker that hangs without dying: the join watchdog (a test hook) fails with every counter', TIMEOUT, () => {
  withHooks(2, { die: { worker: 0, launch: 1, how: 'hang' }, watchdogMs: 1000 }, () => {
    assert.throws(
      gemm,
      /runParallel: watchdog: the join of gemmRows \(generation 1\) waited over 1000 ms \[generation 1, running 1, ready 1, gone 0; workers: 0 started 1 done 0\]$/,
    );
  });
});

test("lost wake-ups on both sides (every notify left out) cost the join's re-check, not the process", TIMEOUT, () => {
  let ref!: Float32Array;
  withHooks(1, null, () => {
    ref = gemm();
  });
  withHooks(2, { dropNotifies: true }, () => {
    const before = poolStats();
    for (let i = 0; i < 3; i++) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50); // the worker is asleep again
      assert.deepEqual(gemm(), ref, `launch ${i + 1}`);
    }
    const after = poolStats();
    // A worker asleep when the generation moved is woken by the join's re-sent notify; a join
    // whose worker never notified completes at its re-check.
    assert.ok(after.renotified > before.renotified, `re-sent notifies: ${before.renotified} -> ${after.renotified}`);
    assert.ok(
      after.recovered > before.recovered,
      `joins completed by the re-check: ${before.recovered} -> ${after.recovered}`,
    );
  });
});
