/**
 * Without cross-origin isolation (a browser page without COOP/COEP: no SharedArrayBuffer, so no
 * shared WebAssembly.Memory) the wasm backend still loads, on a plain memory, and runs
 * single-threaded instead of falling back to js; backendInfo() says why. Simulated in a child
 * process (test/backend/unshared-child.ts sets `crossOriginIsolated = false` before qkv loads),
 * whose results must be the very bytes the threaded backend computes.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const child = fileURLToPath(new URL('./unshared-child.ts', import.meta.url));

interface Run {
  backend: string;
  memoryShared: boolean;
  info: { backend: string; wasmVariant: string | null; threads: number; reason: string };
  bytes: string;
}

function run(args: string[], env: Record<string, string>): Run {
  const out = execFileSync(process.execPath, ['--import', 'tsx', child, ...args], {
    env: { ...process.env, QKV_BACKEND: 'wasm', QKV_POISON_SCOPES: '', ...env },
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  return JSON.parse(out) as Run;
}

test('without cross-origin isolation: wasm on one thread, the same numbers as with threads', () => {
  const threads = Math.min(availableParallelism(), 8);
  const unshared = run(['unshared'], { QKV_THREADS: String(Math.max(2, threads)) });
  const threaded = run([], { QKV_THREADS: String(Math.max(2, threads)) });
  const single = run([], { QKV_THREADS: '1' });

  assert.equal(unshared.backend, 'wasm', 'the wasm backend runs, not js');
  assert.equal(unshared.memoryShared, false);
  assert.equal(unshared.info.threads, 1);
  assert.equal(unshared.info.reason, 'not cross-origin isolated: SharedArrayBuffer unavailable');
  assert.ok(unshared.info.wasmVariant === 'simd' || unshared.info.wasmVariant === 'relaxed-simd');

  assert.equal(threaded.memoryShared, true);
  assert.equal(threaded.info.threads, Math.min(Math.max(2, threads), 8));
  assert.equal(single.info.threads, 1);
  assert.equal(single.info.reason, 'QKV_THREADS=1');

  const a = Buffer.from(unshared.bytes, 'base64');
  assert.equal(a.length, Buffer.from(threaded.bytes, 'base64').length);
  assert.ok(new Float32Array(a.buffer, a.byteOffset, a.length / 4).every(Number.isFinite), 'results are finite');
  assert.equal(
    unshared.bytes,
    threaded.bytes,
    'single-threaded on a plain memory = threaded on the shared one, bit for bit',
  );
  assert.equal(single.bytes, threaded.bytes, 'one thread = several threads, bit for bit');
});
