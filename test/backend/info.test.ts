/**
 * backendInfo() (src/backend/info.ts): which backend, which wasm build, how many threads and why
 * not more. The reason without cross-origin isolation is tested in wasm-unshared.once.test.ts.
 */
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { test } from 'node:test';
import { backendInfo, getBackend, numThreads, setBackend, setNumThreads } from '../../src/index.ts';
import { kernels, wasmVariant } from '../../src/backend/wasm/loader.ts';
import { requireWasm, wasmSkip } from '../helpers/wasm.ts';

test('backendInfo says which backend runs, on how many threads, and why not more', { skip: wasmSkip() }, () => {
  // Without the module (skipped on a developer's machine; under CI a failure), it says why.
  if (!kernels()) assert.match(backendInfo().reason, /^the wasm backend did not load: /);
  requireWasm();
  const before = { backend: getBackend().name, threads: numThreads() };
  try {
    setBackend('js');
    assert.deepEqual(backendInfo(), {
      backend: 'js',
      wasmVariant: wasmVariant(),
      threads: 1,
      reason: 'the js backend was chosen (QKV_BACKEND=js or setBackend); js runs on one thread',
    });
    setBackend('wasm');
    const cores = Math.min(availableParallelism(), 8);
    // On one core, one thread is all there is whatever was asked, and the core is the reason.
    const coresReason = availableParallelism() > 8 ? 'at most 8 threads' : `${cores} core${cores === 1 ? '' : 's'}`;
    setNumThreads(1);
    const one = cores === 1 ? coresReason : process.env.QKV_THREADS === '1' ? 'QKV_THREADS=1' : 'setNumThreads(1)';
    assert.deepEqual(backendInfo(), { backend: 'wasm', wasmVariant: wasmVariant(), threads: 1, reason: one });
    setNumThreads(cores);
    const all = coresReason;
    assert.deepEqual(backendInfo(), { backend: 'wasm', wasmVariant: wasmVariant(), threads: cores, reason: all });
  } finally {
    setBackend(before.backend);
    setNumThreads(before.threads);
  }
});
