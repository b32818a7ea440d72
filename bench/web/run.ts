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
import { cpus, loadavg, totalmem } from 'node:os';
import { acquireBenchLock } from '../lock.ts';
import { codeVersion, cpuName, writeNewResults } from '../results.ts';
import type { BenchConfig, BenchResult } from './page-bench.ts';
import type { GpuCounts, Row } from './page-common.ts';
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
  const config: BenchConfig = {
    small,
    ...(only && { only }),
    time: {
      samples: Number(flag('--samples') ?? (small ? 3 : 5)),
      minMs: Number(flag('--min-ms') ?? (small ? 20 : 100)),
      capMs: small ? 2000 : 3000,
    },
  };
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

const a = result.adapter;
const adapterName = [a.vendor, a.architecture, a.device, a.description].filter(Boolean).join(' ') || 'unknown';
const swiftshader = a.fallback || /swiftshader/i.test(adapterName);
const slug = adapterName
  .toLowerCase()
  .replace(/[^a-z0-9]+/g, '-')
  .replace(/^-|-$/g, '');

function fmt(x: number | null, unit: Row['unit']): string {
  if (x === null) return '—';
  if (unit === 'ms') return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
  return x >= 100 ? x.toFixed(0) : x.toFixed(1);
}
/** How many times faster qkv webgpu is than `other` (rates: qkv/other; times: other/qkv). */
function faster(r: Row, other: number | null): string {
  if (r.qkv === null || other === null) return '—';
  return `${(r.unit === 'ms' ? other / r.qkv : r.qkv / other).toFixed(2)}×`;
}

const lines: string[] = [];
lines.push('# WebGPU benchmark results', '');
lines.push(
  `Written by \`npm run bench:web\` (bench/web/run.ts)${small ? ' with `--small`' : ''} on ` +
    `${new Date().toISOString().slice(0, 10)}, in ${((performance.now() - started) / 60000).toFixed(1)} minutes, ` +
    `${codeVersion()}.`,
  '',
);
if (swiftshader)
  lines.push(
    '**No GPU: the WebGPU adapter is SwiftShader, a CPU implementation of Vulkan.** This run proves the harness ' +
      '(the pages load, every engine runs, every check passes); its times are CPU emulation on a shared machine ' +
      'and say nothing about any engine’s speed on a GPU. Do not quote them.',
    '',
  );
lines.push(
  `Host: ${cpus().length} × ${cpuName()}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}, ` +
    `load average at start ${loadStart}, at end ${loadEnd}.`,
  `Browser: Chromium ${chromium}, headless, flags \`${[...CHROMIUM_FLAGS, ...extraFlags()].join(' ')}\`.`,
  `Adapter: ${adapterName}${a.fallback ? ' (a fallback adapter)' : ''}; features ` +
    `${a.features.join(', ') || 'none of shader-f16, subgroups, timestamp-query'}.`,
  `qkv webgpu: ${result.qkvWebgpu}. qkv wasm (the CPU reference, in the same page): ${result.qkvWasm}.`,
  `Peers: ${Object.entries(result.versions)
    .map(([k, v]) => `${k} ${v}`)
    .join('; ')}${result.notes.length ? `. Not run: ${result.notes.join('; ')}` : ''}.`,
  '',
);
lines.push(
  'Every output was checked before it was timed (the list below). GEMM rows are GFLOP/s (m×k×n; NN = A·B, ' +
    'NT = A·Bᵀ, TN = Aᵀ·B; operands already on the device, output left there), MHA and training rows ' +
    'milliseconds per call, the GPT row tokens per second (the prompt step included). Each GPU sample runs the ' +
    'call R times and then reads the last output back, R chosen so that a sample lasts at least ' +
    `${small ? 20 : 100} ms; medians of the samples after a warm-up call. The training step reads its loss back ` +
    'every step, as qkv’s trainers do. "vs" columns: how many times faster qkv webgpu is (above 1: qkv faster).',
  '',
);
for (const s of result.shapes) lines.push(`- ${s}`);
lines.push('');
lines.push(
  '| workload | unit | qkv webgpu | tfjs-webgpu | ORT-web webgpu | qkv wasm | qkv vs tfjs | qkv vs ORT | webgpu vs wasm | note |',
  '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
);
for (const r of result.rows)
  lines.push(
    `| ${r.workload} | ${r.unit} | ${fmt(r.qkv, r.unit)} | ${fmt(r.tfjs, r.unit)} | ${fmt(r.ort, r.unit)} | ` +
      `${fmt(r.wasm, r.unit)} | ${faster(r, r.tfjs)} | ${faster(r, r.ort)} | ${faster(r, r.wasm)} | ${r.note ?? ''} |`,
  );
lines.push(
  '',
  'GPU work per call (the GPT row: per token), counted at the WebGPU API in the page, the same on any adapter: ' +
    'compute dispatches / queue submits / buffer maps (reads back; a sample’s one closing read is shared among ' +
    'its calls), then the compute pipelines made during the timed calls (0 for an engine whose shaders are all ' +
    'made in the warm-up).',
  '',
  '| workload | qkv webgpu | tfjs-webgpu | ORT-web webgpu |',
  '| --- | --- | --- | --- |',
);
const num = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(x < 1 ? 2 : 1));
const work = (c: GpuCounts | undefined) =>
  c ? `${num(c.dispatches)} / ${num(c.submits)} / ${num(c.reads)}; ${c.pipelines} new` : '—';
for (const r of result.rows)
  lines.push(`| ${r.workload} | ${work(r.counts.qkv)} | ${work(r.counts.tfjs)} | ${work(r.counts.ort)} |`);
lines.push('', 'Checks (each before its engine was timed; max |difference| seen, and the bound per element):', '');
for (const c of result.checks) lines.push(`- ${c.what}: ${c.maxDiff.toExponential(2)} (bound ${c.bound})`);
lines.push('');
const text = lines.join('\n');
console.log(`\n${text}`);
if (!args.includes('--no-write')) {
  const file = writeNewResults(text, `webgpu-${small ? 'small-' : ''}${slug}`);
  console.log(`written: bench/${file}`);
}
