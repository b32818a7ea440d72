#!/usr/bin/env node
// House rules Biome does not check (issue 39): a source file of src/, web/src/ or assembly/ over 500
// lines says at its top why it is that long (its first comment contains "over 500 lines"), and no line
// of those folders is wider than 120 columns (Biome's lineWidth wraps code, not comments or strings;
// assembly/ is AssemblyScript, which Biome cannot parse at all, so this is its only width check).
// Generated files (a first line "// GENERATED" or "// @ts-nocheck" followed by it) are exempt.
// Usage: node scripts/check-source.mjs   (exit 1 with one line per problem)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIRS = ['src', 'web/src', 'assembly'];
const MAX_LINES = 500;
const MAX_WIDTH = 120;

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return walk(p);
    return /\.(ts|mjs|js)$/.test(name) ? [p] : [];
  });
}

const problems = [];
for (const dir of DIRS) {
  for (const file of walk(join(ROOT, dir))) {
    const rel = relative(ROOT, file);
    const text = readFileSync(file, 'utf8');
    if (/^(\/\/ @ts-nocheck\n)?\/\/ GENERATED/.test(text)) continue;
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    if (lines.length > MAX_LINES) {
      const header = text.match(/^\s*(\/\*\*?[\s\S]*?\*\/|(\/\/.*\n)+)/)?.[0] ?? '';
      if (!/over 500 lines/i.test(header)) {
        problems.push(
          `${rel}: ${lines.length} lines, over ${MAX_LINES}, and its first comment does not say why ("over 500 lines: …")`,
        );
      }
    }
    lines.forEach((line, i) => {
      if (line.length > MAX_WIDTH) problems.push(`${rel}:${i + 1}: ${line.length} columns, over ${MAX_WIDTH}`);
    });
  }
}
for (const p of problems) console.error(p);
if (problems.length > 0) {
  console.error(`check-source: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log('check-source: ok');
