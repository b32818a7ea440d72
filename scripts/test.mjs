#!/usr/bin/env node
// Runs every test file under test/ with node's test runner through tsx (TypeScript, no build),
// once per backend: QKV_BACKEND=js, webgpu (the files of WEBGPU_FILES), then wasm. Fails if any run fails.
// The output ends with node's summary lines (ℹ tests / pass / fail …), summed over the runs.
// QKV_POISON_SCOPES=1: memoryScope blocks are NaN-filled when handed out uninitialised and when
// released, so a read before write or a tensor used after its scope fails the tests that train.
// Files named *.once.test.ts do not depend on the backend (the Python bridge, ONNX Runtime, crash
// and load tests, child processes): they run in the last pass only.
// Each pass runs QKV_TEST_CONCURRENCY files at a time (the machine's cores unless set; 1: one after another),
// the slowest known ones first (SLOW_FIRST), so that no long file is left running alone at the end.
// The end of the output lists the slowest files (QKV_SLOWEST of them, 25 unless set) with their seconds per
// pass, timed by scripts/test-timer.mjs in each file's own process.
// Usage: node scripts/test.mjs [filter]         e.g. node scripts/test.mjs nn/
//        QKV_BACKENDS=js node scripts/test.mjs   one backend only
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'fixtures' ? [] : walk(p);
    return name.endsWith('.test.ts') ? [p] : [];
  });
}

// The slowest files of the suite on a 2-core machine (the report at the end of a run says which; seconds there):
// started first, in this order. Only the order depends on it: a file not named here starts after these.
const SLOW_FIRST = [
  'test/models/shipped-scores.once.test.ts',
  'test/webgpu/model.test.ts',
  'test/webgpu/viz.test.ts',
  'test/e2e/explorer-webgpu.once.test.ts',
  'test/python/train.once.test.ts',
  'test/e2e/webgpu-page.once.test.ts',
  'test/python/crash.once.test.ts',
  'test/python/sweep.once.test.ts',
  'test/readme.once.test.ts',
  'test/pipelines/translation.once.test.ts',
  'test/backend/webgpu-attention.once.test.ts',
  'test/cli/cli.test.ts',
  'test/decode/onnxruntime.once.test.ts',
  'test/e2e/explorer-page.test.ts',
  'test/cli/train-recipe.once.test.ts',
  'test/e2e/explorer-models.test.ts',
  'test/records/check-records.once.test.ts',
  'test/cli/onnx.once.test.ts',
  'test/e2e/onnx-web.once.test.ts',
  'test/e2e/web-app.once.test.ts',
];
const rank = (f) => {
  const i = SLOW_FIRST.indexOf(f);
  return i < 0 ? SLOW_FIRST.length : i;
};
const concurrency = Math.max(1, Number(process.env.QKV_TEST_CONCURRENCY ?? availableParallelism()) || 1);

const filter = process.argv[2] ?? '';
const files = walk('test')
  .filter((f) => f.includes(filter))
  .sort()
  .sort((a, b) => rank(a) - rank(b));
if (files.length === 0) {
  console.error(`no test files match '${filter}'`);
  process.exit(1);
}
// The wasm backend needs its module: build it when missing or older than its sources.
const wasmFiles = ['qkv-simd.wasm', 'qkv-relaxed.wasm'].map((f) => join('src/backend/wasm', f));
const newestSource = Math.max(...readdirSync('assembly').map((f) => statSync(join('assembly', f)).mtimeMs));
if (wasmFiles.some((f) => !existsSync(f) || statSync(f).mtimeMs < newestSource)) {
  const r = spawnSync(process.execPath, ['scripts/build-wasm.mjs'], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

const backends = (process.env.QKV_BACKENDS ?? 'js,webgpu,wasm').split(',').filter(Boolean);
// The webgpu tests run Dawn (the npm package `webgpu`); without a GPU, on the SwiftShader Vulkan driver that
// Debian's chromium ships, when VK_ICD_FILENAMES does not name another driver.
const swiftshader = '/usr/lib/chromium/vk_swiftshader_icd.json';
const webgpuEnv =
  process.env.VK_ICD_FILENAMES === undefined && existsSync(swiftshader) ? { VK_ICD_FILENAMES: swiftshader } : {};
const timesDir = mkdtempSync(join(tmpdir(), 'qkv-test-times-'));
const keys = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo', 'duration_ms'];

// The webgpu pass (Dawn in Node; SwiftShader without a GPU, slow) runs the files written for every device:
// they read values with `await t.data()`, never synchronously.
const WEBGPU_FILES = ['test/parity.test.ts', 'test/webgpu/'];

// Files that time the page's main thread (no task over 100 ms while a model runs): they run after the others,
// one at a time, so that a test file beside them on the other core cannot make their timings (explorer-frames:
// issue 63's frame gaps, measured at 42-94 ms on a quiet machine and over 100 ms at load 7-10).
const ALONE = ['test/e2e/flow.test.ts', 'test/e2e/explorer-page.test.ts', 'test/e2e/explorer-frames.once.test.ts'];

function run(backend, last) {
  // test/webgpu/ is written for the webgpu pass only (it compares the GPU with js in one process).
  const onDevice =
    backend === 'webgpu'
      ? files.filter((f) => WEBGPU_FILES.some((w) => f.startsWith(w)))
      : files.filter((f) => !f.startsWith('test/webgpu/'));
  const mine = last ? onDevice : onDevice.filter((f) => !f.endsWith('.once.test.ts'));
  console.log(
    `\n=== backend: ${backend}${last ? '' : ' (without *.once.test.ts)'}, ${concurrency} file(s) at a time ===`,
  );
  const together = mine.filter((f) => !ALONE.includes(f));
  const alone = mine.filter((f) => ALONE.includes(f));
  return runFiles(backend, together, concurrency).then((a) =>
    runFiles(backend, alone, 1).then((b) => ({
      backend,
      code: a.code || b.code,
      counts: Object.fromEntries(keys.map((k) => [k, a.counts[k] + b.counts[k]])),
    })),
  );
}

/** One `node --test` run of `list` on `backend`, `conc` files at a time: its exit code and summary counts. */
function runFiles(backend, list, conc) {
  return new Promise((resolve) => {
    if (list.length === 0) return resolve({ code: 0, counts: Object.fromEntries(keys.map((k) => [k, 0])) });
    if (conc === 1 && concurrency !== 1) console.log(`\n--- ${backend}: ${list.join(', ')}, alone ---`);
    const setup = ['--import', './scripts/test-timer.mjs', '--import', './test/helpers/backend-ready.ts'];
    const args = ['--import', 'tsx', ...setup, '--test', `--test-concurrency=${conc}`, '--test-reporter=spec'];
    const child = spawn(process.execPath, [...args, ...list], {
      stdio: ['inherit', 'pipe', 'inherit'],
      env: {
        ...process.env,
        ...webgpuEnv,
        QKV_BACKEND: backend,
        QKV_POISON_SCOPES: '1',
        QKV_TEST_TIMES: join(timesDir, backend),
      },
    });
    let tail = '';
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      tail = (tail + chunk.toString()).slice(-200_000); // the summary comes before the list of failures
    });
    child.on('close', (code) => {
      const counts = {};
      for (const k of keys) {
        // eslint-disable-next-line no-control-regex
        // biome-ignore lint/suspicious/noControlCharactersInRegex: strips ANSI colour codes (ESC [ … m) from the runner's output.
        const m = tail.replace(/\x1b\[[0-9;]*m/g, '').match(new RegExp(`ℹ ${k} ([0-9.]+)`));
        counts[k] = m ? Number(m[1]) : 0;
      }
      resolve({ code: code ?? 1, counts });
    });
  });
}

function slowest(n) {
  const rows = [];
  for (const b of backends) {
    const f = join(timesDir, b);
    if (!existsSync(f)) continue;
    for (const line of readFileSync(f, 'utf8').split('\n').filter(Boolean)) {
      const [ms, file] = line.split('\t');
      rows.push({ backend: b, file, ms: Number(ms) });
    }
  }
  rows.sort((a, b) => b.ms - a.ms);
  const total = rows.reduce((s, r) => s + r.ms, 0);
  console.log(
    `\n=== slowest ${Math.min(n, rows.length)} of ${rows.length} file runs (${(total / 1000).toFixed(0)} s in all) ===`,
  );
  for (const r of rows.slice(0, n))
    console.log(`${(r.ms / 1000).toFixed(1).padStart(7)} s  ${r.backend.padEnd(6)} ${r.file}`);
}

const started = performance.now();
const results = [];
for (const [i, b] of backends.entries()) {
  const t0 = performance.now();
  results.push(await run(b, i === backends.length - 1));
  results.at(-1).seconds = (performance.now() - t0) / 1000;
}
slowest(Number(process.env.QKV_SLOWEST ?? 25));
rmSync(timesDir, { recursive: true, force: true });
console.log(
  `\n=== passes: ${results.map((r) => `${r.backend} ${r.seconds.toFixed(0)} s`).join(', ')}; ${((performance.now() - started) / 1000).toFixed(0)} s in all ===`,
);
console.log(
  `\n=== summary: ${results.map((r) => `${r.backend} ${r.code === 0 ? 'passed' : 'FAILED'} (${r.counts.pass}/${r.counts.tests})`).join(', ')} ===`,
);
for (const k of keys) {
  const total = results.reduce((s, r) => s + r.counts[k], 0);
  console.log(`ℹ ${k} ${k === 'duration_ms' ? total.toFixed(3) : total}`);
}
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
