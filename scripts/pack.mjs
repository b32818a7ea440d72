#!/usr/bin/env node
// The release tarball: what `npm install qkv` gets, and what `npm publish qkv-<version>.tgz` publishes.
//   npm run pack:release [-- DEST]     (after the build: `npm install` or `npm run build && npm run build:wasm && npm run build:web`)
// It is `npm pack` of the built checkout with a user's package.json: without the scripts that build
// qkv from a checkout (`prepare`, tests, benchmarks) and without devDependencies and allowScripts.
// npm 11 lists a package's own `prepare` among the install scripts a user must approve, though it never
// runs for a tarball; a published package that builds nothing at install should not ask.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The manifest a user installs: this checkout's, less what only builds and tests the checkout. */
export function userManifest(manifest) {
  const { scripts: _scripts, devDependencies: _dev, allowScripts: _allow, ...rest } = manifest;
  return rest;
}

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (status ${r.status}):\n${r.stderr}`);
  return r.stdout;
}

/** Packs the built checkout into `dest` and returns the tarball's path. */
export function packRelease(dest) {
  const work = mkdtempSync(join(tmpdir(), 'qkv-pack-'));
  try {
    run('npm', ['pack', '--ignore-scripts', '--pack-destination', work], ROOT);
    const raw = readdirSync(work).find((f) => f.endsWith('.tgz'));
    run('tar', ['-xzf', raw, '-C', work], work);
    const pkgDir = join(work, 'package');
    const manifestPath = join(pkgDir, 'package.json');
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
    writeFileSync(manifestPath, `${JSON.stringify(userManifest(manifest), null, 2)}\n`);
    run('npm', ['pack', '--ignore-scripts', '--pack-destination', work, pkgDir], work);
    const out = join(resolve(dest), raw);
    rmSync(out, { force: true });
    renameSync(join(work, raw), out);
    return out;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(packRelease(process.argv[2] ?? ROOT));
}
