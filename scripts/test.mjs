#!/usr/bin/env node
// Runs every test file under test/ with node's test runner through tsx (TypeScript, no build).
// Usage: node scripts/test.mjs [filter]   e.g. node scripts/test.mjs nn/
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'fixtures' ? [] : walk(p);
    return name.endsWith('.test.ts') ? [p] : [];
  });
}

const filter = process.argv[2] ?? '';
const files = walk('test').filter((f) => f.includes(filter)).sort();
if (files.length === 0) {
  console.error(`no test files match '${filter}'`);
  process.exit(1);
}
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
