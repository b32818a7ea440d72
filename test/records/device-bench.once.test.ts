/**
 * Issue 61, point 5: GPU records are reproducible. bench/webgpu/device-bench.sh builds its bundle only from
 * a commit of main with no uncommitted changes (the first H100 records named "commit 9840b3a with uncommitted
 * changes", which no commit reproduces) and records that commit, which the results files then name; its run
 * refuses a bundle without one. The script runs here in a scratch git repository holding only it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { codeVersion } from '../../bench/results.ts';
import { tempDir } from '../e2e/tiny-model.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = 'bench/webgpu/device-bench.sh';

/** A scratch repository: the script and a tracked file, committed on main. */
function repo(): string {
  const dir = tempDir('qkv-gpu-');
  mkdirSync(join(dir, 'bench', 'webgpu'), { recursive: true });
  copyFileSync(join(root, SCRIPT), join(dir, SCRIPT));
  writeFileSync(join(dir, 'kernel.ts'), 'export const x = 1;\n');
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '.');
  git(dir, 'commit', '-qm', 'first');
  return dir;
}

function git(dir: string, ...args: string[]): string {
  const r = spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: dir, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

function bench(dir: string, half: string, env: Record<string, string> = {}) {
  const r = spawnSync('bash', [SCRIPT, half], { cwd: dir, encoding: 'utf8', env: { ...process.env, ...env } });
  return { status: r.status, err: r.stderr };
}

test('device-bench build refuses uncommitted changes and a commit off main, and goes on from a clean commit of main', () => {
  const dir = repo();
  writeFileSync(join(dir, 'kernel.ts'), 'export const x = 2;\n');
  const dirty = bench(dir, 'build');
  assert.equal(dirty.status, 1, dirty.err);
  assert.match(dirty.err, /^device-bench build: the tree has uncommitted changes; .*\n M kernel\.ts$/m);
  // Committed, but on a branch main does not hold.
  git(dir, 'checkout', '-qb', 'side');
  git(dir, 'commit', '-qam', 'second');
  const side = bench(dir, 'build');
  assert.equal(side.status, 1, side.err);
  assert.match(side.err, /^device-bench build: HEAD [0-9a-f]{7} is not a commit of main; build from main$/m);
  // On main and clean, the gates pass: the build goes on (and stops here, where the scratch repository has no
  // scripts/build-wasm.mjs).
  git(dir, 'checkout', '-q', 'main');
  const clean = bench(dir, 'build');
  assert.doesNotMatch(clean.err, /device-bench build:/);
  assert.match(clean.err, /scripts\/build-wasm\.mjs/);
});

test('device-bench run refuses a bundle that names no commit; the results name the bundled commit', () => {
  const dir = repo();
  const out = tempDir('qkv-gpu-out-');
  const r = bench(dir, 'run', { OUT: out });
  assert.equal(r.status, 1, r.err);
  assert.match(
    r.err,
    /device-bench run: no \.gpu\/COMMIT: run `.*device-bench\.sh build` \(from a clean commit of main\) first/,
  );
  assert.doesNotMatch(readFileSync(join(out, 'machine.txt'), 'utf8'), /fdiv test|bench gemm/);
  const before = process.env.QKV_BENCH_COMMIT;
  process.env.QKV_BENCH_COMMIT = '0123456789abcdef0123456789abcdef01234567\n';
  try {
    assert.equal(codeVersion(), 'commit 0123456 (bundled from a clean tree by bench/webgpu/device-bench.sh)');
  } finally {
    if (before === undefined) delete process.env.QKV_BENCH_COMMIT;
    else process.env.QKV_BENCH_COMMIT = before;
  }
  assert.match(codeVersion(), /^commit [0-9a-f]{7}( with uncommitted changes)?$/);
});
