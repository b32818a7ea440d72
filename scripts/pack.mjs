#!/usr/bin/env node
// The release tarball: what `npm install qkv` gets, and what `npm publish qkv-<version>.tgz` publishes.
//   npm run pack:release [-- DEST]     (after the build: `npm install` or `npm run build && npm run build:wasm && npm run build:web`)
// It is `npm pack` of the built checkout with a user's package.json: without the scripts that build
// qkv from a checkout (`prepare`, tests, benchmarks) and without devDependencies and allowScripts.
// npm 11 lists a package's own `prepare` among the install scripts a user must approve, though it never
// runs for a tarball; a published package that builds nothing at install should not ask.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
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

/** Every .js file under dir. */
function jsFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return jsFiles(p);
    return name.endsWith('.js') ? [p] : [];
  });
}

/**
 * The package ships no source maps (they would double its size, and point into src/, which it does
 * not ship): drop the `//# sourceMappingURL=` line tsc ends each file with, or bundlers and dev
 * servers report a map they cannot load.
 */
function dropSourceMapComments(dir) {
  for (const file of jsFiles(dir)) {
    const text = readFileSync(file, 'utf8');
    const stripped = text.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');
    if (stripped !== text) writeFileSync(file, stripped);
  }
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
    dropSourceMapComments(join(pkgDir, 'dist'));
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
