/**
 * The package as a user gets it: the release tarball of scripts/pack.mjs (`npm run pack:release`; dist/ must be
 * built: `npm test` builds it first), installed into an empty ESM project in a temporary folder, as `npm install qkv-<v>.tgz`
 * would. Dependencies come from npm's cache when they are there (`--prefer-offline`: `npm ci` filled it),
 * else from the registry. One pack and one install per test process, removed when it exits.
 * The wasm kernels are part of the package (dist/backend/wasm/*.wasm, next to their loader): when
 * `npm run build` ran after `npm run build:wasm` left them out, they are copied there before packing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: a plain .mjs script without types
import { packRelease } from '../../scripts/pack.mjs';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

export interface PackedInstall {
  /** The empty project the tarball was installed into. */
  project: string;
  /** The tarball. */
  tarball: string;
  /** What `npm install` printed (stdout and stderr). */
  log: string;
}

let installed: PackedInstall | undefined;
let packed: string | undefined;

/** The release tarball of this checkout (packed once per process), in a temporary folder of its own. */
export function packedTarball(): string {
  if (packed) return packed;
  assert.ok(
    existsSync(join(ROOT, 'dist', 'index.js')),
    'dist/index.js is missing: run `npm run build` (and `npm run build:wasm`) before the package tests',
  );
  const wasm = ['qkv-simd.wasm', 'qkv-relaxed.wasm'];
  if (wasm.some((f) => !existsSync(join(ROOT, 'dist', 'backend', 'wasm', f)))) {
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-wasm.mjs'), '--copy'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    assert.equal(
      r.status,
      0,
      `the wasm kernels are not in dist/backend/wasm/ and could not be copied there (run \`npm run build:wasm\`):\n${r.stdout}${r.stderr}`,
    );
  }
  const dir = mkdtempSync(join(tmpdir(), 'qkv-packed-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  packed = packRelease(dir) as string;
  return packed;
}

export function packedInstall(): PackedInstall {
  if (installed) return installed;
  const tarball = packedTarball();
  const dir = dirname(tarball);
  const project = join(dir, 'app');
  spawnSync('mkdir', [project]);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'app', version: '1.0.0', type: 'module', private: true }),
  );
  const r = spawnSync(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], {
    cwd: project,
    encoding: 'utf8',
    env: { ...process.env, npm_config_loglevel: 'warn' },
  });
  const log = `${r.stdout}\n${r.stderr}`;
  assert.equal(r.status, 0, `npm install ${tarball} failed:\n${log}`);
  installed = { project, tarball, log };
  return installed;
}
