/**
 * The results file of a WebGPU benchmark run, from the workloads' rows: written by `npm run bench:web`
 * (Chromium, bench/web/run.ts) and by bench/webgpu/node-bench.ts (Node on Dawn, for a machine with a GPU
 * and no browser). One text for both, so the two runs read alike.
 */
import { cpus, totalmem } from 'node:os';
import { codeVersion, cpuName } from '../results.ts';
import type { AdapterLine, BenchResult } from './page-bench.ts';
import type { GpuCounts, Row } from './page-common.ts';

export interface ReportContext {
  /** What wrote the file, as markdown (the command and its file). */
  writtenBy: string;
  small: boolean;
  minMs: number;
  /** performance.now() when the run started. */
  started: number;
  loadStart: string;
  loadEnd: string;
  /** The line naming where the engines ran (the browser and its flags, or Node and Dawn). */
  runner: string;
  /** PyTorch on CUDA beside the WebGPU engines, by workload name (a rate or a time as the row's unit). */
  torch?: { version: string; device: string; values: Record<string, number>; note?: string };
}

export function adapterName(a: AdapterLine): string {
  return [a.vendor, a.architecture, a.device, a.description].filter(Boolean).join(' ') || 'unknown';
}

/** The adapter's name as a file-name part. */
export function adapterSlug(a: AdapterLine): string {
  return adapterName(a)
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

function fmt(x: number | null | undefined, unit: Row['unit']): string {
  if (x === null || x === undefined) return '—';
  if (unit === 'ms') return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
  return x >= 100 ? x.toFixed(0) : x.toFixed(1);
}

/** How many times faster qkv webgpu is than `other` (rates: qkv/other; times: other/qkv). */
function faster(r: Row, other: number | null | undefined): string {
  if (r.qkv === null || other === null || other === undefined) return '—';
  return `${(r.unit === 'ms' ? other / r.qkv : r.qkv / other).toFixed(2)}×`;
}

export function resultsText(result: BenchResult, c: ReportContext): string {
  const a = result.adapter;
  const name = adapterName(a);
  const swiftshader = a.fallback || /swiftshader/i.test(name);
  const torch = c.torch;
  const lines: string[] = [];
  lines.push('# WebGPU benchmark results', '');
  lines.push(
    `Written by ${c.writtenBy}${c.small ? ' with `--small`' : ''} on ` +
      `${new Date().toISOString().slice(0, 10)}, in ${((performance.now() - c.started) / 60000).toFixed(1)} minutes, ` +
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
      `load average at start ${c.loadStart}, at end ${c.loadEnd}.`,
    c.runner,
    `Adapter: ${name}${a.fallback ? ' (a fallback adapter)' : ''}; features ` +
      `${a.features.join(', ') || 'none of shader-f16, subgroups, timestamp-query'}.`,
    `qkv webgpu: ${result.qkvWebgpu}. qkv wasm (the CPU reference, in the same process): ${result.qkvWasm}.`,
    `Peers: ${Object.entries(result.versions)
      .map(([k, v]) => `${k} ${v}`)
      .join('; ')}${result.notes.length ? `. Not run: ${result.notes.join('; ')}` : ''}.`,
  );
  if (torch)
    lines.push(
      `PyTorch ${torch.version} on ${torch.device} (float32, TF32 off: torch.set_float32_matmul_precision('highest'))` +
        `, timed the same way (R calls, then a synchronizing read)${torch.note ? `; ${torch.note}` : ''}.`,
    );
  lines.push('');
  lines.push(
    'Every output was checked before it was timed (the list below). GEMM rows are GFLOP/s (m×k×n; NN = A·B, ' +
      'NT = A·Bᵀ, TN = Aᵀ·B; operands already on the device, output left there), MHA and training rows ' +
      'milliseconds per call, the GPT row tokens per second (the prompt step included). Each GPU sample runs the ' +
      'call R times and then reads the last output back, R chosen so that a sample lasts at least ' +
      `${c.minMs} ms; medians of the samples after a warm-up call. The training step reads its loss back ` +
      'every step, as qkv’s trainers do. "vs" columns: how many times faster qkv webgpu is (above 1: qkv faster).',
    '',
  );
  for (const s of result.shapes) lines.push(`- ${s}`);
  lines.push('');
  const tHead = torch ? ' PyTorch CUDA |' : '';
  const tVs = torch ? ' qkv vs PyTorch |' : '';
  lines.push(
    `| workload | unit | qkv webgpu | tfjs-webgpu | ORT-web webgpu |${tHead} qkv wasm | qkv vs tfjs | qkv vs ORT |${tVs} ` +
      'webgpu vs wasm | note |',
    `| --- | --- | --- | --- | --- |${torch ? ' --- |' : ''} --- | --- | --- |${torch ? ' --- |' : ''} --- | --- |`,
  );
  for (const r of result.rows) {
    const t = torch?.values[r.workload];
    lines.push(
      `| ${r.workload} | ${r.unit} | ${fmt(r.qkv, r.unit)} | ${fmt(r.tfjs, r.unit)} | ${fmt(r.ort, r.unit)} |` +
        `${torch ? ` ${fmt(t, r.unit)} |` : ''} ${fmt(r.wasm, r.unit)} | ${faster(r, r.tfjs)} | ${faster(r, r.ort)} |` +
        `${torch ? ` ${faster(r, t)} |` : ''} ${faster(r, r.wasm)} | ${r.note ?? ''} |`,
    );
  }
  lines.push(
    '',
    'GPU work per call (the GPT row: per token), counted at the WebGPU API, the same on any adapter: ' +
      'compute dispatches / queue submits / buffer maps (reads back; a sample’s one closing read is shared among ' +
      'its calls), then the compute pipelines made during the timed calls (0 for an engine whose shaders are all ' +
      'made in the warm-up).',
    '',
    '| workload | qkv webgpu | tfjs-webgpu | ORT-web webgpu |',
    '| --- | --- | --- | --- |',
  );
  const num = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(x < 1 ? 2 : 1));
  const work = (g: GpuCounts | undefined) =>
    g ? `${num(g.dispatches)} / ${num(g.submits)} / ${num(g.reads)}; ${g.pipelines} new` : '—';
  for (const r of result.rows)
    lines.push(`| ${r.workload} | ${work(r.counts.qkv)} | ${work(r.counts.tfjs)} | ${work(r.counts.ort)} |`);
  lines.push('', 'Checks (each before its engine was timed; max |difference| seen, and the bound per element):', '');
  for (const k of result.checks) lines.push(`- ${k.what}: ${k.maxDiff.toExponential(2)} (bound ${k.bound})`);
  lines.push('');
  return lines.join('\n');
}
