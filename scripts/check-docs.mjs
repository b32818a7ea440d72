#!/usr/bin/env node
// `npm run check-docs`: every name the package exports (from src/index.ts, as the API reference
// `npm run docs` shows it) must have a doc comment: classes, functions, interfaces, type aliases,
// variables, and their methods, properties and accessors (TypeDoc's validation.notDocumented, set in
// typedoc.json). Runs TypeDoc without writing anything, prints each undocumented name and a count per
// file, and exits 1 if there is any (or any other TypeDoc warning or error, such as a broken {@link}).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const r = spawnSync(process.execPath, [join(root, 'node_modules', 'typedoc', 'bin', 'typedoc'), '--emit', 'none'], {
  cwd: root,
  encoding: 'utf8',
});
if (r.error) throw r.error;
// eslint-disable-next-line no-control-regex
// biome-ignore lint/suspicious/noControlCharactersInRegex: strips ANSI colour codes (ESC [ … m) from TypeDoc's output.
const lines = `${r.stdout}${r.stderr}`.replace(/\x1b\[[0-9;]*m/g, '').split('\n');
const problems = [
  ...new Set(lines.filter((l) => /^\[(warning|error)\]/.test(l) && !/^\[warning\] Found \d+ errors/.test(l))),
];
const undocumented = problems.filter((l) => l.includes('does not have any documentation'));
const byFile = new Map();
for (const l of undocumented) {
  const file = l.match(/defined in \S+?\/(src\/\S+?),/)?.[1] ?? '?';
  byFile.set(file, (byFile.get(file) ?? 0) + 1);
}
for (const l of problems) console.log(l);
if (byFile.size > 0) {
  console.log('\nundocumented exports by file:');
  for (const [file, n] of [...byFile].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])))
    console.log(`${String(n).padStart(5)}  ${file}`);
}
const other = problems.length - undocumented.length;
console.log(`\ncheck-docs: ${undocumented.length} undocumented exports, ${other} other TypeDoc warnings or errors`);
process.exit(problems.length === 0 && r.status === 0 ? 0 : 1);
