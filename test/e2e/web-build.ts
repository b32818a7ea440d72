/** The explorer page built by Vite (dist/web), rebuilt when missing or older than web/ or src/. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findWebDir } from '../../src/server/folders.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function newest(dir: string): number {
  let m = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    m = Math.max(m, st.isDirectory() ? newest(p) : st.mtimeMs);
  }
  return m;
}

export function ensureWebBuild(): string {
  const index = join(ROOT, 'dist', 'web', 'index.html');
  const stale =
    !existsSync(index) || statSync(index).mtimeMs < Math.max(newest(join(ROOT, 'web')), newest(join(ROOT, 'src')));
  if (stale) {
    const r = spawnSync(
      process.execPath,
      [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', 'web/vite.config.ts'],
      { cwd: ROOT, encoding: 'utf8' },
    );
    assert.equal(r.status, 0, `vite build failed:\n${r.stdout}\n${r.stderr}`);
  }
  const dir = findWebDir();
  assert.ok(dir, 'dist/web/index.html after the build');
  return dir;
}
