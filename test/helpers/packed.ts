/**
 * The package as a user gets it: the release tarball of scripts/pack.mjs (`npm run pack:release`; dist/ must be
 * built: `npm test` builds it first), installed into an empty ESM project in a temporary folder, as `npm install qkv-<v>.tgz`
 * would. Dependencies come from npm's cache when they are there (`--prefer-offline`: `npm ci` filled it),
 * else from the registry. One install per test process.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

export function packedInstall(): PackedInstall {
  if (installed) return installed;
  const dir = mkdtempSync(join(tmpdir(), 'qkv-packed-'));
  const tarball = packRelease(dir);
  const project = join(dir, 'app');
  spawnSync('mkdir', [project]);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', type: 'module', private: true }));
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
