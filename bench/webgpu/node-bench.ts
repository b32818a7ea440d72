/// <reference types="@webgpu/types" />
/**
 * The WebGPU benchmark (bench/web/'s workloads: GEMM, MHA forward and forward+backward, a Seq2Seq training
 * step, GPT-2-124M-shape greedy decoding) in Node on Dawn (npm `webgpu`), for a machine with a GPU and no
 * browser, such as a lent GPU server. The same code as the page: `startBench()` of bench/web/page-bench.ts,
 * the same checks before every timing, the same results text (bench/web/report.ts). With `--torch`, PyTorch
 * on CUDA (bench/webgpu/torch_cuda.py, the same shapes and inputs' kinds) becomes a column.
 *
 *   node --import tsx bench/webgpu/node-bench.ts [--small] [--only gemm,mha] [--gemm 256,1024,2048]
 *                                                [--torch python3] [--out FILE]
 * The device machine runs a bundle of it (bench/webgpu/device-bench.sh says how it is made and run).
 * Environment: VK_ICD_FILENAMES (which Vulkan driver Dawn uses; records/webgpu-h100/README.md).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { create, globals } from 'webgpu';
import type { BenchConfig } from '../web/page-bench.ts';
import { resultsText } from '../web/report.ts';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const known = new Set(['--small', '--only', '--gemm', '--torch', '--out', '--samples', '--min-ms']);
for (const a of args)
  if (a.startsWith('--') && !known.has(a)) {
    console.error(`node-bench: unknown option '${a}' (known: ${[...known].join(', ')})`);
    process.exit(2);
  }
const small = args.includes('--small');
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const loadStart = load();
const started = performance.now();

// WebGPU's globals (GPUBufferUsage, the prototypes the GPU-call counter wraps) and navigator.gpu from Dawn.
Object.assign(globalThis, globals);
const gpu = create([]);
Object.defineProperty(globalThis, 'navigator', {
  value: { gpu, userAgent: `Node ${process.version}`, hardwareConcurrency: availableParallelism() },
  configurable: true,
});

// Dawn's Node binding refuses views on a SharedArrayBuffer (ONNX Runtime Web writes from its threaded wasm
// memory): hand it a copy, as a browser would read the same bytes.
const queue = (globals as unknown as { GPUQueue: { prototype: GPUQueue } }).GPUQueue.prototype;
const writeBuffer = queue.writeBuffer;
queue.writeBuffer = function (this: GPUQueue, buffer: GPUBuffer, offset: number, data: unknown, ...rest: number[]) {
  const d =
    ArrayBuffer.isView(data) && data.buffer instanceof SharedArrayBuffer
      ? new (data.constructor as new (v: ArrayBufferView) => ArrayBufferView)(data)
      : data;
  return (writeBuffer as (...a: unknown[]) => undefined).call(this, buffer, offset, d, ...rest);
} as GPUQueue['writeBuffer'];

const { benchPlan, startBench } = await import('../web/page-bench.ts');
const { LAYOUTS } = await import('../web/page-gemm.ts');
const { batchIds } = await import('../train-step.ts');

const gemmSizes = flag('--gemm')?.split(',').map(Number);
const config: BenchConfig = {
  small,
  ...(flag('--only') && { only: flag('--only')!.split(',') }),
  ...(gemmSizes && { gemmSizes }),
  time: {
    samples: Number(flag('--samples') ?? (small ? 3 : 5)),
    minMs: Number(flag('--min-ms') ?? (small ? 20 : 100)),
    capMs: small ? 2000 : 3000,
  },
};
const want = (w: string) => !config.only || config.only.includes(w);

const bench = await startBench();
const result = await bench.run(config);

/** PyTorch on CUDA, the same workloads (names are the rows'), if asked and if it runs. */
function torchColumn(python: string): NonNullable<Parameters<typeof resultsText>[1]['torch']> {
  const p = benchPlan(config);
  const jobs: Record<string, unknown>[] = [];
  if (want('gemm'))
    for (const s of p.gemm)
      for (const [layout, ta, tb] of LAYOUTS)
        jobs.push({ kind: 'gemm', name: `gemm ${s}×${s}×${s} ${layout}`, m: s, k: s, n: s, ta, tb });
  if (want('mha'))
    for (const s of p.mha)
      for (const backward of [false, true])
        jobs.push({
          kind: 'mha',
          name: `MHA (${s.B}, ${s.L}, ${s.E}, ${s.H}) ${backward ? 'fwd+bwd' : 'fwd'}`,
          ...s,
          backward,
        });
  if (want('train'))
    for (const w of p.train)
      jobs.push({
        kind: 'train',
        name: w.name,
        b: w.B,
        t: w.T,
        ids: batchIds(w.shape.vocabSize, w.B, w.T),
        cfg: {
          vocab: w.shape.vocabSize,
          dModel: w.shape.dModel,
          nhead: w.shape.nhead,
          enc: w.shape.numEncoderLayers,
          dec: w.shape.numDecoderLayers,
          dff: w.shape.dimFeedforward,
          dropout: w.shape.dropout,
          attnDropout: w.shape.attentionDropout ?? w.shape.dropout,
          actDropout: w.shape.activationDropout ?? w.shape.dropout,
          weightDecay: w.shape.weightDecay,
        },
      });
  if (want('gpt'))
    for (const w of p.gpt)
      jobs.push({
        kind: 'gpt',
        name: w.name,
        vocab: w.config.vocabSize,
        block: w.config.blockSize,
        layers: w.config.nLayer,
        heads: w.config.nHead,
        embd: w.config.nEmbd,
        prompt: Array.from({ length: w.prompt }, (_, i) => (i * 7919 + 13) % w.config.vocabSize),
        newTokens: w.newTokens,
      });
  const r = spawnSync(python, ['bench/webgpu/torch_cuda.py', JSON.stringify({ jobs, time: config.time })], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  if (r.status !== 0)
    return {
      version: '?',
      device: '?',
      values: {},
      note: `it did not run: ${(r.stderr || String(r.error)).slice(-400)}`,
    };
  const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
    version: string;
    device: string;
    values: Record<string, number>;
    note?: string;
  };
  return out;
}

const torchPython = flag('--torch');
const text = resultsText(result, {
  writtenBy: '`bench/webgpu/node-bench.ts` (Node on Dawn)',
  small,
  minMs: config.time.minMs,
  started,
  loadStart,
  loadEnd: load(),
  runner: `Runner: Node ${process.version} with npm \`webgpu\` (Dawn); VK_ICD_FILENAMES=${process.env.VK_ICD_FILENAMES ?? '(unset)'}.`,
  ...(torchPython && { torch: torchColumn(torchPython) }),
});
console.log(`\n${text}`);
const out = flag('--out');
if (out) writeFileSync(out, text);
process.exit(0);
