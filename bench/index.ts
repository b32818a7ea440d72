/**
 * `npm run bench`: qkv against its peers on one machine, in one run.
 *
 * Every workload is first checked (the wasm kernels against their js twins, through the same
 * public API), then timed: median of several samples after a warm-up, each sample repeating the
 * call until it lasts >= 20 ms (calls slower than 3 s are timed once). qkv runs on the wasm backend
 * as its trainers do: parameters in WebAssembly memory, and each timed forward/backward/training
 * step inside a `memoryScope`, so activations live in wasm memory too and are freed when the call
 * ends (that cost is included); the GEMM operands are placed in wasm memory. GEMMs and attention
 * use all cores (QKV_THREADS), other kernels one. Peers, in child processes run one after another:
 *   - TensorFlow.js 4 with @tensorflow/tfjs-backend-wasm (SIMD; one thread under Node), on the
 *     GEMMs and the attention layers (it has no Transformer model to train);
 *   - PyTorch from /usr/bin/python3 when it imports torch, with 2 threads and OMP_WAIT_POLICY=PASSIVE.
 * Scripts of their own run as children too, each with its peers (their headers say how): bench/gpt2.ts,
 * gpt2-quantized.ts, translate-quantized.ts, encoders.ts, decoders.ts (a SmolLM2-135M-shaped Llama against ONNX
 * Runtime and transformers' LlamaForCausalLM), finetune.ts (LoRA steps on that Llama against PyTorch + PEFT),
 * onnx.ts.
 * Prints a table and writes it, with the machine's description, to a new file bench/results/DATE-CPU.md
 * (one file per run, never overwritten).
 *   npm run bench                 everything (~8 minutes on 2 cores)
 *   npm run bench -- --no-peers   qkv only
 */
import { spawnSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { acquireBenchLock } from './lock.ts';
import { decodersTable, type DecoderRow } from './decoders-shape.ts';
import { finetuneTable, type FinetuneRow } from './finetune-shape.ts';
import { batchIds, RECIPE, SMALL, trainer, type TrainShape } from './train-step.ts';
import { codeVersion, cpuName, writeNewResults } from './results.ts';
import type { GemmParams } from '../src/backend/backend.ts';
import { gemm as jsGemm } from '../src/backend/js/gemm.ts';
import { wasmGemm } from '../src/backend/wasm/gemm.ts';
import { wasmVariant } from '../src/backend/wasm/loader.ts';
import { numThreads } from '../src/backend/wasm/threads.ts';
import { alloc } from '../src/backend/wasm/memory.ts';
import { manualSeed, memoryScope, nn, noGrad, randn, setBackend } from '../src/index.ts';

acquireBenchLock();
const root = fileURLToPath(new URL('..', import.meta.url));
const withPeers = !process.argv.includes('--no-peers');
const started = performance.now();
const loadStart = loadavg()
  .map((x) => x.toFixed(2))
  .join(' ');
const log = (s: string) => console.log(s);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

/** Median ms per call. */
function timed(fn: () => void, { samples = 5, minMs = 20, capMs = 3000 } = {}): number {
  let t0 = performance.now();
  fn();
  const first = performance.now() - t0;
  if (first > capMs) return first;
  const reps = Math.max(1, Math.ceil(minMs / Math.max(first, 0.01)));
  fn();
  const ts: number[] = [];
  for (let s = 0; s < samples; s++) {
    t0 = performance.now();
    for (let r = 0; r < reps; r++) fn();
    ts.push((performance.now() - t0) / reps);
  }
  return median(ts);
}

function close(a: ArrayLike<number>, b: ArrayLike<number>, what: string, atol = 1e-4, rtol = 1e-4): void {
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const err = Math.abs(a[i]! - b[i]!);
    if (!(err <= atol + rtol * Math.abs(b[i]!)))
      throw new Error(`check failed: ${what}: element ${i} wasm ${a[i]} vs js ${b[i]}`);
    worst = Math.max(worst, err);
  }
  log(`check: ${what}: wasm matches js (max |diff| ${worst.toExponential(1)})`);
}

interface Work {
  kind: 'gemm' | 'mha_fwd' | 'mha_fwdbwd' | 'mha_long' | 'train';
  name: string;
  [k: string]: unknown;
}
interface Row {
  name: string;
  unit: 'GFLOP/s' | 'ms';
  flops?: number;
  qkv: number;
  js?: number;
  note?: string;
  peak?: number;
}
const rows: Row[] = [];

// ---------------------------------------------------------------------------------------------
// GEMM
const rand = (n: number) => Float32Array.from({ length: n }, () => Math.random() * 2 - 1);
const gemmParams = (m: number, n: number, k: number, transA: boolean, transB: boolean): GemmParams => ({
  batch: 1,
  m,
  n,
  k,
  transA,
  transB,
  strideA: 0,
  strideB: 0,
  strideC: 0,
  accumulate: false,
});
const T = [
  ['NN', false, false],
  ['NT', false, true],
  ['TN', true, false],
  ['TT', true, true],
] as const;
{
  const [m, n, k] = [67, 131, 93];
  for (const [name, ta, tb] of T) {
    const p = gemmParams(m, n, k, ta, tb);
    const a = rand(m * k),
      b = rand(k * n),
      c = new Float32Array(m * n),
      ref = new Float32Array(m * n);
    wasmGemm(a, b, c, p);
    jsGemm(a, b, ref, p);
    close(c, ref, `gemm ${m}x${k}x${n} ${name}`, 1e-5, 1e-5);
  }
}
const gemmShapes: [number, number, number][] = [
  [128, 128, 128],
  [256, 256, 256],
  [512, 512, 512],
  [1024, 1024, 1024],
  [2048, 2048, 2048],
  [4096, 512, 512],
  [4096, 512, 2048],
  [4096, 2048, 512],
];
const work: Work[] = [];
for (const [m, k, n] of gemmShapes) {
  // Operands in wasm memory, where a training step's tensors are (js reads them just the same).
  const inWasm = (x: Float32Array) => {
    const y = alloc(x.length, false);
    y.set(x);
    return y;
  };
  const a = inWasm(rand(m * k)),
    b = inWasm(rand(k * n)),
    c = alloc(m * n);
  for (const [tn, ta, tb] of T) {
    const name = `gemm ${m}×${k}×${n} ${tn}`;
    const p = gemmParams(m, n, k, ta, tb);
    const flops = 2 * m * n * k;
    const qkv = flops / (timed(() => wasmGemm(a, b, c, p)) * 1e6);
    const js = m <= 256 ? flops / (timed(() => jsGemm(a, b, c, p)) * 1e6) : undefined;
    rows.push({ name, unit: 'GFLOP/s', flops, qkv, js });
    work.push({ kind: 'gemm', name, m, k, n, ta, tb });
    log(`${name}: wasm ${qkv.toFixed(1)} GFLOP/s${js ? `, js ${js.toFixed(2)}` : ''}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Multi-head self-attention (nn.MultiheadAttention, batchFirst, no dropout, no weights returned)
function mhaRun(
  be: string,
  N: number,
  L: number,
  E: number,
  H: number,
  backward: boolean,
): { out: Float32Array; dx: Float32Array | null; fn: () => void } {
  setBackend(be);
  manualSeed(5);
  const mha = new nn.MultiheadAttention(E, H, { batchFirst: true, dropout: 0 });
  const x = randn([N, L, E]);
  const r = randn([N, L, E]);
  const fwd = () => mha.forward(x, x, x, { needWeights: false }).output;
  if (!backward) {
    const fn = () => void noGrad(fwd);
    return { out: noGrad(fwd).dataSync() as Float32Array, dx: null, fn };
  }
  x.requiresGrad_();
  const fn = () => {
    mha.zeroGrad();
    x.grad = null;
    fwd().mul(r).sum().backward();
  };
  fn();
  return { out: noGrad(fwd).dataSync() as Float32Array, dx: x.grad!.dataSync<Float32Array>(), fn };
}
for (const [N, L] of [
  [32, 32],
  [1, 256],
] as const) {
  const w = mhaRun('wasm', N, L, 512, 8, true);
  const j = mhaRun('js', N, L, 512, 8, true);
  close(w.out, j.out, `MultiheadAttention (${N}, ${L}, 512, 8) output`);
  close(w.dx!, j.dx!, `MultiheadAttention (${N}, ${L}, 512, 8) input gradient`);
}
for (const [N, L] of [
  [32, 32],
  [4, 512],
] as const) {
  for (const backward of [false, true]) {
    const name = `MHA (${N}, ${L}, 512, 8) ${backward ? 'fwd+bwd' : 'fwd'}`;
    const { fn } = mhaRun('wasm', N, L, 512, 8, backward);
    const qkv = timed(() => memoryScope(fn));
    rows.push({ name, unit: 'ms', qkv });
    work.push({ kind: backward ? 'mha_fwdbwd' : 'mha_fwd', name, b: N, l: L, e: 512, h: 8 });
    log(`${name}: wasm ${qkv.toFixed(1)} ms`);
  }
}
setBackend('wasm');

// Long sequences: a fresh process per length, so peak memory is the workload's own.
for (const L of [2048, 8192]) {
  const name = `MHA (1, ${L}, 512, 8) fwd, no weights`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/long.ts', String(L)], {
    cwd: root,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`bench/long.ts ${L} failed: ${r.stderr}`);
  const { ms, peak_mb } = JSON.parse(r.stdout.trim().split('\n').pop()!) as { ms: number; peak_mb: number };
  rows.push({ name, unit: 'ms', qkv: ms, peak: peak_mb });
  work.push({ kind: 'mha_long', name, b: 1, l: L, e: 512, h: 8 });
  log(`${name}: wasm ${ms.toFixed(0)} ms, peak +${peak_mb.toFixed(0)} MB`);
}

// ---------------------------------------------------------------------------------------------
// One training step of a translation model at two shapes (bench/train-step.ts).
for (const [label, shape] of [
  ['', SMALL],
  [', shipped EN→DE recipe', RECIPE],
] as [string, TrainShape][]) {
  const losses = ['wasm', 'js'].map((be) => {
    const t = trainer(be, shape, 4, 12);
    manualSeed(9);
    const l = [t.step(), t.step()];
    return { l, w: t.model.embedding.weight.dataSync<Float32Array>() };
  });
  close(losses[0]!.l, losses[1]!.l, `Seq2Seq training${label}, losses of 2 steps (batch 4×12)`);
  close(losses[0]!.w, losses[1]!.w, `Seq2Seq training${label}, embedding after 2 Adam steps`);
  const B = 128,
    Tn = 32;
  const t = trainer('wasm', shape, B, Tn);
  const name = `train step Seq2Seq d${shape.dModel} ${shape.numEncoderLayers}+${shape.numDecoderLayers}${label} (${B}×${Tn} tokens)`;
  const qkv = timed(() => void memoryScope(t.step), { samples: 3, capMs: 60000 });
  rows.push({ name, unit: 'ms', qkv });
  work.push({
    kind: 'train',
    name,
    b: B,
    t: Tn,
    ids: batchIds(shape.vocabSize, B, Tn),
    cfg: {
      vocab: shape.vocabSize,
      dModel: shape.dModel,
      nhead: shape.nhead,
      enc: shape.numEncoderLayers,
      dec: shape.numDecoderLayers,
      dff: shape.dimFeedforward,
      dropout: shape.dropout,
      attnDropout: shape.attentionDropout ?? shape.dropout,
      actDropout: shape.activationDropout ?? shape.dropout,
      weightDecay: shape.weightDecay,
    },
  });
  log(`${name}: wasm ${qkv.toFixed(0)} ms`);
}
setBackend('wasm');

// ---------------------------------------------------------------------------------------------
// GPT-2 124M-shaped generation, 64 tokens with the KV cache (bench/gpt2.ts runs qkv and PyTorch).
const gpt2Name = 'GPT-2 124M shape, 64 tokens, KV cache';
let gpt2Torch: number | null = null;
{
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/gpt2.ts', ...(withPeers ? [] : ['--no-peers'])], {
    cwd: root,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`bench/gpt2.ts failed: ${r.stderr}`);
  const out = r.stdout.trim().split('\n');
  for (const l of out.slice(0, -1)) log(l);
  const g = JSON.parse(out[out.length - 1]!) as { qkv_ms: number; torch_ms: number | null };
  rows.push({ name: gpt2Name, unit: 'ms', qkv: g.qkv_ms });
  gpt2Torch = g.torch_ms;
}

// ---------------------------------------------------------------------------------------------
// GPT-2 124M-shaped greedy decoding in fp32, int8 and q4: qkv, PyTorch (quantize_dynamic), ONNX Runtime
// (MatMulInteger, MatMulNBits), in its own process (bench/gpt2-quantized.ts).
let quantizedTable = '';
{
  log('GPT-2 124M shape in low precision: qkv, PyTorch, ONNX Runtime...');
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'bench/gpt2-quantized.ts', ...(withPeers ? [] : ['--no-peers'])],
    { cwd: root, encoding: 'utf8', maxBuffer: 1 << 24 },
  );
  if (r.status !== 0) throw new Error(`bench/gpt2-quantized.ts failed: ${r.stderr}`);
  const out = r.stdout.trim().split('\n');
  log(out.slice(0, -1).join('\n'));
  const res = JSON.parse(out[out.length - 1]!) as {
    tokens: number;
    rows: {
      engine: string;
      dtype: string;
      ms: number;
      tps: number;
      weight_mib: number;
      peak_mib?: number | null;
      note?: string;
    }[];
  };
  const base = res.rows.find((x) => x.engine === 'qkv' && x.dtype === 'fp32')!;
  quantizedTable = [
    `| GPT-2 124M shape, ${res.tokens} greedy tokens | ms | tokens/s | × qkv fp32 tokens/s | weights MiB | × smaller | peak MiB | |`,
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...res.rows.map(
      (x) =>
        `| ${x.engine} ${x.dtype} | ${x.ms.toFixed(0)} | ${x.tps.toFixed(1)} | ${(x.tps / base.tps).toFixed(2)} | ` +
        `${x.weight_mib.toFixed(1)} | ${(base.weight_mib / x.weight_mib).toFixed(1)} | ` +
        `${x.peak_mib == null ? '—' : x.peak_mib.toFixed(0)} | ${x.note ?? ''} |`,
    ),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Translation in fp32, int8 and q4: qkv and ONNX Runtime on the same search code (bench/translate-quantized.ts).
let translateTable = '';
{
  log('translation of val in low precision: qkv, ONNX Runtime...');
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/translate-quantized.ts'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  if (r.status !== 0) throw new Error(`bench/translate-quantized.ts failed: ${r.stderr}`);
  const out = r.stdout.trim().split('\n');
  log(out.slice(0, -1).join('\n'));
  const res = JSON.parse(out[out.length - 1]!) as {
    sentences: number;
    rows: { engine: string; dtype: string; ms: number; same: number; sameAsQkv?: number }[];
  };
  const base = res.rows.find((x) => x.engine === 'qkv' && x.dtype === 'fp32')!;
  translateTable = [
    `| beam 4, first ${res.sentences} val sentences (models/multi30k-en-de, member 1) | ms | × qkv fp32's speed | translations as qkv fp32's | as qkv's in the same dtype |`,
    '| --- | --- | --- | --- | --- |',
    ...res.rows.map(
      (x) =>
        `| ${x.engine} ${x.dtype} | ${x.ms.toFixed(0)} | ${(base.ms / x.ms).toFixed(2)} | ${x.same}/${res.sentences} | ` +
        `${x.sameAsQkv === undefined ? '' : `${x.sameAsQkv}/${res.sentences}`} |`,
    ),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Sentence embeddings of a MiniLM-L6-shaped BERT: qkv fp32/int8, ONNX Runtime on its export, PyTorch (transformers),
// in its own process (bench/encoders.ts).
let encodersTable = '';
{
  log('sentence embeddings, MiniLM-L6 shape: qkv, ONNX Runtime, PyTorch...');
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'bench/encoders.ts', ...(withPeers ? [] : ['--no-peers'])],
    { cwd: root, encoding: 'utf8', maxBuffer: 1 << 24 },
  );
  if (r.status !== 0) throw new Error(`bench/encoders.ts failed: ${r.stderr}`);
  const out = r.stdout.trim().split('\n');
  log(out.slice(0, -1).join('\n'));
  const res = JSON.parse(out[out.length - 1]!) as {
    sentences: number;
    tokens: number;
    cpu: string;
    rows: { engine: string; dtype: string; ms: number; sps: number; note?: string }[];
  };
  const base = res.rows[0]!;
  encodersTable = [
    `| ${res.sentences} sentences (${res.tokens} tokens), MiniLM-L6 shape, on ${res.cpu} | ms | sentences/s | × qkv fp32 | |`,
    '| --- | --- | --- | --- | --- |',
    ...res.rows.map(
      (x) =>
        `| ${x.engine} ${x.dtype} | ${x.ms.toFixed(0)} | ${x.sps.toFixed(1)} | ${(x.sps / base.sps).toFixed(2)} | ${x.note ?? ''} |`,
    ),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Today's decoders: a SmolLM2-135M-shaped Llama, 64 greedy tokens: qkv fp32/int8/q4, ONNX Runtime on its exports,
// PyTorch (transformers' LlamaForCausalLM) on the same weights, with peak memory (bench/decoders.ts, its own process).
let decodersTableText = '';
{
  log('SmolLM2-135M shape, 64 greedy tokens: qkv, ONNX Runtime, PyTorch...');
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'bench/decoders.ts', '--in-index', ...(withPeers ? [] : ['--no-peers'])],
    { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 },
  );
  if (r.status !== 0) throw new Error(`bench/decoders.ts failed: ${r.stderr}`);
  const out = r.stdout.trim().split('\n');
  log(out.slice(0, -1).join('\n'));
  const res = JSON.parse(out[out.length - 1]!) as { rows: DecoderRow[]; cpu: string; note?: string };
  decodersTableText = `${res.note ? `${res.note}.\n\n` : ''}${decodersTable(res.rows, res.cpu)}`;
}

// ---------------------------------------------------------------------------------------------
// Fine-tuning: LoRA on the SmolLM2-135M shape, 256 tokens a step, qkv with and without recomputation and over int8/q4
// bases, PyTorch + PEFT on the same weights; step time and peak memory (bench/finetune.ts, a process per row).
let finetuneTableText = '';
{
  log('SmolLM2-135M shape, LoRA steps: qkv, PyTorch + PEFT...');
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'bench/finetune.ts', '--in-index', ...(withPeers ? [] : ['--no-peers'])],
    { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 },
  );
  if (r.status !== 0) throw new Error(`bench/finetune.ts failed: ${r.stderr}`);
  const out = r.stdout.trim().split('\n');
  log(out.slice(0, -1).join('\n'));
  const res = JSON.parse(out[out.length - 1]!) as { rows: FinetuneRow[]; cpu: string; note?: string };
  finetuneTableText = `${res.note ? `${res.note}.\n\n` : ''}${finetuneTable(res.rows, res.cpu)}`;
}

// ---------------------------------------------------------------------------------------------
// Decoding: qkv (wasm) against ONNX Runtime on the same exported model (bench/onnx.ts, its own process).
let onnxTable = '';
{
  log('decoding: qkv vs ONNX Runtime...');
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/onnx.ts'], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`bench/onnx.ts failed: ${r.stderr}`);
  const out = r.stdout.trim().split('\n');
  log(out.slice(0, -1).join('\n'));
  const res = JSON.parse(out.pop()!) as { name: string; qkv: number; ort: number }[];
  onnxTable = [
    '| decoding (models/multi30k-en-de) | qkv wasm ms | ONNX Runtime ms | qkv / ORT |',
    '| --- | --- | --- | --- |',
    ...res.map((x) => `| ${x.name} | ${x.qkv.toFixed(1)} | ${x.ort.toFixed(1)} | ${(x.qkv / x.ort).toFixed(2)} |`),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Peers
type PeerResult = Record<string, { ms: number; peak_mb?: number }>;
let tfjs: PeerResult = {};
const torch: PeerResult = {};
if (gpt2Torch !== null) torch[gpt2Name] = { ms: gpt2Torch };
let torchNote = '';
if (withPeers) {
  log('TensorFlow.js (wasm backend)...');
  const tfWork = work.filter((w) => w.kind !== 'train' && !(w.kind === 'mha_long' && (w.l as number) > 2048));
  const r = spawnSync(process.execPath, ['bench/peers/tfjs.mjs', JSON.stringify(tfWork)], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  if (r.status === 0) tfjs = JSON.parse(r.stdout.trim().split('\n').pop()!) as PeerResult;
  else log(`TensorFlow.js failed: ${r.stderr.slice(-2000)}`);

  const probe = spawnSync('/usr/bin/python3', ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    torchNote = 'PyTorch: skipped (/usr/bin/python3 cannot import torch; apt-get install python3-torch)';
    log(torchNote);
  } else {
    torchNote = `PyTorch ${probe.stdout.trim()} (2 threads, OMP_WAIT_POLICY=PASSIVE)`;
    log(`${torchNote}...`);
    const env = { ...process.env, OMP_WAIT_POLICY: 'PASSIVE', OMP_NUM_THREADS: '2' };
    // Long sequences in their own processes (peak memory), the rest in one.
    const batches = [
      work.filter((w) => w.kind !== 'mha_long'),
      ...work.filter((w) => w.kind === 'mha_long').map((w) => [w]),
    ];
    for (const b of batches) {
      const p = spawnSync('/usr/bin/python3', ['bench/peers/torch_bench.py', JSON.stringify(b), '2'], {
        cwd: root,
        encoding: 'utf8',
        env,
        maxBuffer: 1 << 26,
      });
      if (p.status === 0) Object.assign(torch, JSON.parse(p.stdout.trim().split('\n').pop()!) as PeerResult);
      else log(`PyTorch failed: ${p.stderr.slice(-2000)}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Table
const fmt = (r: Row, ms: number | undefined) =>
  ms === undefined ? '—' : r.unit === 'GFLOP/s' ? (r.flops! / (ms * 1e6)).toFixed(1) : ms.toFixed(ms < 100 ? 1 : 0);
const qkvMs = (r: Row) => (r.unit === 'GFLOP/s' ? r.flops! / (r.qkv * 1e6) : r.qkv);
const header = [
  'workload',
  'unit',
  'qkv wasm',
  'qkv js',
  'tfjs-wasm',
  'PyTorch',
  'qkv vs tfjs',
  'qkv vs PyTorch',
  'peak MB qkv / tfjs / torch',
];
const lines = [header, header.map(() => '---')];
for (const r of rows) {
  const tf = tfjs[r.name],
    pt = torch[r.name];
  const q = qkvMs(r);
  lines.push([
    r.name,
    r.unit,
    r.unit === 'GFLOP/s' ? r.qkv.toFixed(1) : fmt(r, r.qkv),
    r.js === undefined ? '—' : r.js.toFixed(2),
    fmt(r, tf?.ms),
    fmt(r, pt?.ms),
    tf ? `${(tf.ms / q).toFixed(2)}× faster` : '—',
    pt ? `${(q / pt.ms).toFixed(2)}× time` : '—',
    r.peak !== undefined
      ? `${r.peak.toFixed(0)} / ${tf?.peak_mb?.toFixed(0) ?? '—'} / ${pt?.peak_mb?.toFixed(0) ?? '—'}`
      : '',
  ]);
}
const table = lines.map((l) => `| ${l.join(' | ')} |`).join('\n');
const machine = `${cpus().length} × ${cpuName()}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, qkv wasm build ${wasmVariant()} with ${numThreads()} GEMM threads, load average at start ${loadStart}, at end ${loadavg()
  .map((x) => x.toFixed(2))
  .join(' ')}`;
const minutes = ((performance.now() - started) / 60000).toFixed(1);
log(`\n${machine}\n${torchNote}\n\n${table}\n\n(${minutes} min)`);
// One file per run, never overwritten (bench/torchrun.ts writes its own).
const written = writeNewResults(`# Benchmark results

Written by \`npm run bench\` (bench/index.ts) on ${new Date().toISOString().slice(0, 10)}, in ${minutes} minutes, ${codeVersion()}.

Machine: ${machine}.
Peers: TensorFlow.js with @tensorflow/tfjs-backend-wasm (SIMD, one thread under Node); ${torchNote || 'PyTorch not run'}.

Every qkv workload was first checked against the js backend (GEMM on 67×93×131 in every layout; attention output and input gradient; two training steps' losses and weights) — see the \`check:\` lines of the run.
GEMM rows are GFLOP/s (m×k×n, NN = C = A·B, NT = A·Bᵀ, TN = Aᵀ·B, TT = Aᵀ·Bᵀ), the others milliseconds; medians after a warm-up (calls over 3 s timed once).
"qkv vs tfjs" is how many times faster qkv is; "qkv vs PyTorch" is qkv's time over PyTorch's (1 = parity, lower is better).
MHA is \`nn.MultiheadAttention(512, 8, batchFirst)\` self-attention without returned weights, input (batch, length, 512); fwd+bwd includes the input gradient.
The GPT-2 row is \`bench/gpt2.ts\`: a GPT of GPT-2 small's shape (124M parameters, random weights) continuing 8 tokens by 64, greedy, with the KV cache; PyTorch runs the same equations with its own KV cache (tokens/s = 64000 / ms).
The training steps are \`models.Seq2Seq\`, 128 pairs × 32 tokens with some padding, \`F.crossEntropy\` with label smoothing 0.1 and \`optim.Adam\`, at two shapes: dModel 256, 4 heads, 3+3 layers, dFf 1024, vocabulary 8000, dropout 0.1; and the shipped EN→DE recipe, dModel 128, 4 heads, 4+4 layers, dFf 512, vocabulary 8000, dropout 0.3 on sub-layer outputs and embeddings (attention and activation dropout 0), AdamW weight decay 1e-4. PyTorch runs the same models built from \`torch.nn.Transformer\` (its attention and activation dropout set to match) and \`torch.optim.AdamW\` where there is weight decay. TensorFlow.js has no Transformer to train and is not run there, nor at length 8192.
Peak MB is the process's peak resident memory minus its resident memory just before the long-sequence forward (a fresh process each).
Timings are only comparable within one run: on a shared machine a load average above the core count means other work took CPU from every contestant.

${table}

Decoding with the same search code on two engines: qkv's wasm backend, and ONNX Runtime (onnxruntime-node, CPU) running the model's \`qkv export --format onnx\` graphs (bench/onnx.ts; both checked to give the same tokens first). Greedy makes exactly 20 tokens of one sentence (median of 25 runs, the engines alternating); beam 4 (α 0.6) decodes the first 32 test_2016_flickr sentences as one batch (median of 5).

${onnxTable}

GPT-2 124M-shaped decoding in low precision (bench/gpt2-quantized.ts): the model of the GPT-2 row continuing 8 tokens by 64, greedy, with the KV cache, in fp32, int8 and q4 on qkv (wasm; \`module.quantize\`: the layers int8 or q4, the embedding table, which is also the tied head, int8), PyTorch (fp32, and \`torch.ao.quantization.quantize_dynamic\` int8 on every nn.Linear, its quantized engine named) and ONNX Runtime running qkv's exports (fp32 MatMul, int8 MatMulInteger, q4 MatMulNBits). Weights MiB: qkv's state dict (float32 4 bytes, int8 1, q4 ½ a value, with the scales), PyTorch's as torch.save writes it, ONNX Runtime's the graph. Peak MiB: a process of its own per row (bench/gpt2-peak.ts) makes the model and decodes once; its peak resident memory less its memory before the model. qkv's model is made as a folder of that dtype loads it (no float32 weights for int8/q4), ONNX Runtime's from the graph file, PyTorch's int8 by quantize_dynamic from the float model (so its peak holds both).

${quantizedTable}

Translation in low precision (bench/translate-quantized.ts): the shipped EN→DE model's first member translating the first val sentences with beam 4 (α 0.6) in batches of 32, in fp32, int8 and q4, on qkv (wasm; \`module.quantize\`, as \`--dtype q8|q4\`) and on ONNX Runtime running qkv's exports of the same three models, both on the same search code; medians of 3 runs. PyTorch has no implementation of this search here: its low-precision rows are the GPT-2 table's.

${translateTable}

Sentence embeddings (bench/encoders.ts): a BERT of all-MiniLM-L6-v2's shape (6 layers, 384 wide, 12 heads, feed-forward 1536, vocabulary 30522; random weights made and saved by transformers, with a WordPiece trained on Multi30K) as a sentence-transformers folder (mean pooling, normalized), embedding the first 256 test_2016_flickr sentences in batches of 32, longest first (the pipeline's batching, as sentence-transformers' encode() sorts; every engine gets the same batches): qkv (wasm, 2 threads; \`pipeline('feature-extraction')\`, fp32 and \`{ dtype: 'q8' }\`), ONNX Runtime (2 threads) on the folder's \`qkv export --format onnx\` graphs (fp32 MatMul, int8 MatMulInteger) fed by qkv's tokenizer, and PyTorch 2.13 with transformers 5.18 (.venv-ref, 2 threads; fp32 and \`quantize_dynamic\` int8) on the same folder. Every engine's embeddings are checked against qkv fp32's first (fp32 within 1e-4, int8 within 0.05); medians of 5 runs, qkv and ONNX Runtime alternating, PyTorch in its own process.

${encodersTable}

Today's decoders (bench/decoders.ts): a Llama of SmolLM2-135M's shape (30 layers, 576 wide, 9 heads over 3 KV heads, SwiGLU 1536, vocabulary 49152, tied head, rotary θ 100000; random weights seeded in qkv) continuing a 16-id prompt by 64 greedy tokens, batch 1, with the KV cache: qkv (wasm, 2 threads; fp32, \`quantize({ dtype: 'int8' })\`, q4 with float16 scales and the tied table q4), ONNX Runtime (2 threads) on qkv's exports of the same weights (fp32 MatMul, int8 MatMulInteger, q4 MatMulNBits with an int8 table: the export takes no q4 table), and PyTorch with transformers' LlamaForCausalLM (.venv-ref, 2 threads, \`generate()\`) on the same weights written as a Hugging Face folder. Medians of 5 runs, qkv and ONNX Runtime alternating, PyTorch in its own process; peak MiB from a process of its own per row; tokens: how many equal qkv fp32's (random weights can tie).

${decodersTableText}

Fine-tuning (bench/finetune.ts): LoRA (PEFT's default for llama: q_proj and v_proj, r 8, α 16) on the Llama of the table above, one sequence of 256 tokens a step, AdamW with Trainer's defaults and clipping at 1: qkv (wasm, 2 threads; the fp32 base with and without recomputing each block's activations in the backward pass, and QLoRA-style int8 and q4 bases through \`quantizeForLora\`) and PyTorch + PEFT (.venv-ref, 2 threads; with and without transformers' gradient checkpointing) on the same weights written as a Hugging Face folder. Medians of 3 steps after one; each row in a process of its own, its peak resident memory less its memory before the model; the fp32 rows' first losses checked to agree first. bitsandbytes has no CPU kernels here, so the quantized rows have no PyTorch twin.

${finetuneTableText}
`);
log(`wrote bench/${written}`);
