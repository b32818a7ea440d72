// Loaded (--import) into every test file's process by scripts/test.mjs: when the process exits, appends
// one line `<ms>\t<file>` to the file QKV_TEST_TIMES names: the process's whole life (tsx loading, the
// imports, set-up and every test), which node's runner does not report per file. Nothing without it.
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';

const out = process.env.QKV_TEST_TIMES;
const file = process.argv[1];
if (out && file?.endsWith('.test.ts')) {
  process.on('exit', () => appendFileSync(out, `${Math.round(performance.now())}\t${relative(process.cwd(), file)}\n`));
}
