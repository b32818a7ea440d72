/**
 * `npm run bench:web`: the WebGPU benchmark page (bench/web/index.html) in headless Chromium: qkv's webgpu
 * backend against tfjs-backend-webgpu and ONNX Runtime Web's WebGPU provider, qkv's wasm backend in the same
 * page as the CPU reference; GEMM (NN, NT, TN), multi-head attention forward and forward+backward, a Seq2Seq
 * training step, GPT-2-124M-shape greedy decoding. Every output is checked against the others (or qkv wasm's)
 * before it is timed; a failed check stops the run. Writes a new results file
 * bench/results/DATE-CPU-webgpu-ADAPTER.md (never overwriting one) with the adapter's name.
 *
 *   npm run bench:web                          the full sizes (for a machine with a GPU)
 *   npm run bench:web -- --small               small sizes: proves the harness (SwiftShader, no GPU)
 *   npm run bench:web -- --only gemm,mha       some workloads (gemm, mha, train, gpt)
 *   npm run bench:web -- --no-write            print the table, write no file
 *   npm run bench:web -- --require-gpu         stop if the adapter is SwiftShader or another fallback adapter
 * Environment: QKV_CHROMIUM (the browser, default /usr/bin/chromium), QKV_CHROMIUM_FLAGS (extra flags, e.g.
 * to reach a real GPU: docs/webgpu.md).
 *
 * Without a GPU, Chromium's WebGPU adapter is SwiftShader (a CPU implementation of Vulkan): the file then says
 * so, and its times are not GPU speeds.
 */
import { loadavg } from 'node:os';
import { acquireBenchLock } from '../lock.ts';
import { writeNewResults } from '../results.ts';
import type { BenchConfig, BenchResult } from './page-bench.ts';
import { adapterSlug, resultsText } from './report.ts';
import { CHROMIUM_FLAGS, ensureBuild, extraFlags, openPage, startServer } from './serve.ts';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const known = new Set(['--small', '--only', '--no-write', '--samples', '--min-ms', '--require-gpu']);
for (const a of args)
  if (a.startsWith('--') && !known.has(a)) {
    console.error(`bench:web: unknown option '${a}' (known: ${[...known].join(', ')})`);
    process.exit(2);
  }
const small = args.includes('--small');
const only = flag('--only')?.split(',');
for (const w of only ?? [])
  if (!['gemm', 'mha', 'train', 'gpt'].includes(w)) {
    console.error(`bench:web: --only: unknown workload '${w}' (expected gemm, mha, train, gpt)`);
    process.exit(2);
  }

const config: BenchConfig = {
  small,
  ...(only && { only }),
  time: {
    samples: Number(flag('--samples') ?? (small ? 3 : 5)),
    minMs: Number(flag('--min-ms') ?? (small ? 20 : 100)),
    capMs: small ? 2000 : 3000,
  },
};

acquireBenchLock();
const loadStart = loadavg()
  .map((x) => x.toFixed(2))
  .join(' ');
const started = performance.now();
ensureBuild();
const { server, url } = await startServer();
const { browser, page, errors } = await openPage(url, (line) => {
  if (line.startsWith('[bench]')) console.log(line.slice(8));
});
const chromium = browser.version();
let result: BenchResult;
try {
  const state = await page.getAttribute('body', 'data-ready');
  if (state !== 'ok') throw new Error(`the page did not start: ${await page.getAttribute('body', 'data-error')}`);
  if (args.includes('--require-gpu')) {
    const a = await page.evaluate(
      () => (window as unknown as { qkvBench: { adapter: BenchResult['adapter'] } }).qkvBench.adapter,
    );
    if (a.fallback || /swiftshader/i.test(`${a.vendor} ${a.architecture} ${a.description}`))
      throw new Error(
        `bench:web --require-gpu: the adapter is ${a.vendor} ${a.architecture} (fallback: ${a.fallback}), not a GPU; ` +
          'see docs/webgpu.md for the Chromium flags (QKV_CHROMIUM_FLAGS)',
      );
  }
  result = await page.evaluate(
    (c) => (window as unknown as { qkvBench: { run(c: BenchConfig): Promise<BenchResult> } }).qkvBench.run(c),
    config,
  );
} finally {
  await browser.close();
  server.close();
}
if (errors.length > 0) throw new Error(`the page threw: ${errors.join('; ')}`);
const loadEnd = loadavg()
  .map((x) => x.toFixed(2))
  .join(' ');

const text = resultsText(result, {
  writtenBy: '`npm run bench:web` (bench/web/run.ts)',
  small,
  minMs: config.time.minMs,
  started,
  loadStart,
  loadEnd,
  runner: `Browser: Chromium ${chromium}, headless, flags \`${[...CHROMIUM_FLAGS, ...extraFlags()].join(' ')}\`.`,
});
console.log(`\n${text}`);
if (!args.includes('--no-write')) {
  const file = writeNewResults(text, `webgpu-${small ? 'small-' : ''}${adapterSlug(result.adapter)}`);
  console.log(`written: bench/${file}`);
}
