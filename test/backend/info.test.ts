/**
 * backendInfo() (src/backend/info.ts): which backend, which wasm build, how many threads and why
 * not more. The reason without cross-origin isolation is tested in wasm-unshared.once.test.ts.
 */
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { test } from 'node:test';
import { backendInfo, getBackend, numThreads, setBackend, setNumThreads } from '../../src/index.ts';
import { kernels, wasmVariant } from '../../src/backend/wasm/loader.ts';

test('backendInfo says which backend runs, on how many threads, and why not more', () => {
  const before = { backend: getBackend().name, threads: numThreads() };
  try {
    if (!kernels()) {
      assert.match(backendInfo().reason, /^the wasm backend did not load: /);
      return;
    }
    setBackend('js');
    assert.deepEqual(backendInfo(), {
      backend: 'js',
      wasmVariant: wasmVariant(),
      threads: 1,
      reason: 'the js backend was chosen (QKV_BACKEND=js or setBackend); js runs on one thread',
    });
    setBackend('wasm');
    const cores = Math.min(availableParallelism(), 8);
    if (cores < 2) return; // one core: one thread is all there is, whatever was asked
    setNumThreads(1);
    const one = process.env.QKV_THREADS === '1' ? 'QKV_THREADS=1' : 'setNumThreads(1)';
    assert.deepEqual(backendInfo(), { backend: 'wasm', wasmVariant: wasmVariant(), threads: 1, reason: one });
    setNumThreads(cores);
    const all = availableParallelism() > 8 ? 'at most 8 threads' : `${cores} cores`;
    assert.deepEqual(backendInfo(), { backend: 'wasm', wasmVariant: wasmVariant(), threads: cores, reason: all });
  } finally {
    setBackend(before.backend);
    setNumThreads(before.threads);
  }
});
