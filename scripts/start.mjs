#!/usr/bin/env node
// `npm start`: the attention explorer (`qkv explore`) on every model folder under models/ (EN→DE,
// EN→FR, the GPT: the page's model switcher lists them), else on the newest runs/*/ with a
// model.safetensors, else without a model (it says so); --model DIR (repeatable) serves others. Rebuilds the page
// (dist/web, about 2 s) when it is missing or older than web/ or src/, and runs the CLI from src
// through tsx, so it never serves a stale build. Arguments pass through: npm start -- --port 9000
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function newest(dir) {
  let m = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    m = Math.max(m, st.isDirectory() ? newest(p) : st.mtimeMs);
  }
  return m;
}

const index = join(root, 'dist', 'web', 'index.html');
if (!existsSync(index) || statSync(index).mtimeMs < Math.max(newest(join(root, 'web')), newest(join(root, 'src')))) {
  console.error('npm start: building the explorer page (npm run build:web)…');
  const r = spawnSync(
    process.execPath,
    [join(root, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', 'web/vite.config.ts'],
    { cwd: root, stdio: 'inherit' },
  );
  if (r.status !== 0) process.exit(r.status ?? 1);
}

const child = spawn(
  process.execPath,
  ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts'), 'explore', ...process.argv.slice(2)],
  { stdio: 'inherit' },
);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
