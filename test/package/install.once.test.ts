/**
 * The package installs small (issue 38): `npm install` of the packed tarball into an empty project
 * gives node_modules of at most 5 MB, no install-script warning, no @types package forced on the user,
 * and the installed library and `qkv` command work from there.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { packedInstall, ROOT } from '../helpers/packed.ts';

function bytesUnder(dir: string): number {
  let n = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    n += st.isDirectory() ? bytesUnder(p) : st.size;
  }
  return n;
}

function jsUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return jsUnder(p);
    return name.endsWith('.js') ? [p] : [];
  });
}

test('the packed package installs into an empty project in at most 5 MB, with no install scripts and no @types', () => {
  const { project, log } = packedInstall();
  const modules = join(project, 'node_modules');
  const size = bytesUnder(modules);
  assert.ok(
    size <= 5 * 2 ** 20,
    `node_modules is ${(size / 2 ** 20).toFixed(2)} MB, over 5 MB: ${readdirSync(modules).join(', ')}`,
  );
  assert.doesNotMatch(log, /install-scripts|install script/i, `npm install warned about install scripts:\n${log}`);
  assert.ok(
    !existsSync(join(modules, '@types')),
    `@types forced on the user: ${existsSync(join(modules, '@types')) ? readdirSync(join(modules, '@types')).join(', ') : ''}`,
  );
  assert.ok(!existsSync(join(modules, 'protobufjs')), 'protobufjs is no dependency of qkv any more');
  // No source maps ship, so no file may point to one (bundlers and dev servers would report it missing).
  const pointing = jsUnder(join(modules, 'qkv', 'dist')).filter((f) =>
    readFileSync(f, 'utf8').includes('sourceMappingURL'),
  );
  assert.deepEqual(pointing, [], 'files that name a source map the package does not ship');
});

test('the installed library computes, and `qkv --help` runs as an installed command', () => {
  const { project } = packedInstall();
  const script = join(project, 'check.mjs');
  writeFileSync(
    script,
    [
      "import { tensor, F } from 'qkv';",
      'const q = tensor([[1, 0], [0, 1]]);',
      'const v = tensor([[2, 3], [4, 5]]);',
      // Seed 003's worked example: softmax(QK^T / sqrt(2)) V.
      'const out = F.scaledDotProductAttention(q, q, v);',
      'console.log(JSON.stringify(out.toArray().map((x) => Math.round(x * 100) / 100)));',
    ].join('\n'),
  );
  const r = spawnSync(process.execPath, [script], { cwd: project, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), [2.66, 3.66, 3.34, 4.34]);
  const bin = join(project, 'node_modules', '.bin', 'qkv');
  const help = spawnSync(bin, ['--help'], { cwd: project, encoding: 'utf8' });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /translate/);
  const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
  assert.ok(version.length > 0);
});
