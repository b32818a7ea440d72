/**
 * The benchmark page (index.html; `npm run bench:web` drives it): qkv's webgpu backend against
 * tfjs-backend-webgpu and ONNX Runtime Web's WebGPU provider, with qkv's wasm backend in the same page as the
 * CPU reference, all in one page run. Every output is checked before it is timed (see each workload's file).
 * The page loads the engines, then sets `data-ready` on <body>; the runner calls `qkvBench.run(config)`.
 */
/// <reference types="@webgpu/types" />
import { backendInfo, loadWasmKernels, models, setBackend } from '../../src/index.ts';
import { RECIPE, type TrainShape } from '../train-step.ts';
import type { Check, Row, TimeOptions } from './page-common.ts';
import { countGpuCalls, log } from './page-common.ts';
import { gemmWorkload } from './page-gemm.ts';
import { gptWorkload, type GptWork } from './page-gpt.ts';
import { type MhaShape, mhaWorkload } from './page-mha.ts';
import { loadPeers, type Peers } from './page-peers.ts';
import { trainWorkload, type TrainWork } from './page-train.ts';

/** What to run: the full sizes (a GPU) or `--small` ones that only prove the harness (SwiftShader, no GPU). */
export interface BenchConfig {
  small: boolean;
  /** Which workloads (default all): gemm, mha, train, gpt. */
  only?: string[];
  /** Square GEMM sizes instead of the plan's (a large GPU: 2048). */
  gemmSizes?: number[];
  time: TimeOptions;
}

export interface BenchResult {
  adapter: AdapterLine;
  qkvWebgpu: string;
  qkvWasm: string;
  versions: Record<string, string>;
  notes: string[];
  rows: Row[];
  checks: Check[];
  /** What each workload ran (the shapes), for the results file. */
  shapes: string[];
  userAgent: string;
  ms: number;
}

export interface AdapterLine {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  fallback: boolean;
  features: string[];
}

async function adapterLine(): Promise<AdapterLine> {
  const a = await navigator.gpu?.requestAdapter({ powerPreference: 'high-performance' });
  if (!a) throw new Error('this browser gives no WebGPU adapter (navigator.gpu or requestAdapter failed)');
  const i = a.info;
  return {
    vendor: i.vendor,
    architecture: i.architecture,
    device: i.device,
    description: i.description,
    fallback: (i as { isFallbackAdapter?: boolean }).isFallbackAdapter ?? false,
    features: [...a.features].filter((f) => /f16|subgroups|timestamp/.test(f)).sort(),
  };
}

const SMALL_TRAIN: TrainShape = {
  ...models.MULTI30K_SMALL,
  vocabSize: 100,
  dModel: 32,
  nhead: 2,
  numEncoderLayers: 1,
  numDecoderLayers: 1,
  dimFeedforward: 64,
  dropout: 0.3,
  weightDecay: 1e-4,
};

/** The workloads a run times (their names are the rows'; node-bench.ts gives PyTorch the same list). */
export function benchPlan(config: Pick<BenchConfig, 'small' | 'gemmSizes'>) {
  const small = config.small;
  const gemm = config.gemmSizes ?? (small ? [48, 96] : [256, 512, 1024]);
  const mha: MhaShape[] = small ? [{ B: 2, L: 8, E: 32, H: 4 }] : [{ B: 32, L: 32, E: 512, H: 8 }];
  const train: TrainWork[] = small
    ? [{ name: 'train step Seq2Seq d32 1+1, vocabulary 100 (4×8 tokens)', shape: SMALL_TRAIN, B: 4, T: 8 }]
    : [{ name: 'train step Seq2Seq d128 4+4, shipped EN→DE recipe (128×32 tokens)', shape: RECIPE, B: 128, T: 32 }];
  const gptConfig: models.GPTConfig = small
    ? { vocabSize: 500, blockSize: 64, nLayer: 2, nHead: 2, nEmbd: 64, dropout: 0, positions: 'learned' }
    : { ...models.GPT2_124M, dropout: 0, activation: 'gelu' };
  const gpt: GptWork[] = small
    ? [{ name: 'GPT d64 2 layers, vocabulary 500, 8 + 4 tokens, KV cache', config: gptConfig, prompt: 8, newTokens: 4 }]
    : [{ name: 'GPT-2 124M shape, 8 + 32 tokens, KV cache', config: gptConfig, prompt: 8, newTokens: 32 }];
  return { gemm, mha, train, gpt };
}

async function run(config: BenchConfig): Promise<BenchResult> {
  const t0 = performance.now();
  const want = (w: string) => !config.only || config.only.includes(w);
  const p = benchPlan(config);
  const rows: Row[] = [];
  const checks: Check[] = [];
  const shapes: string[] = [];
  if (want('gemm')) {
    shapes.push(`GEMM: square ${p.gemm.join(', ')}`);
    const r = await gemmWorkload(p.gemm, peers, config.time);
    rows.push(...r.rows);
    checks.push(...r.checks);
  }
  if (want('mha')) {
    shapes.push(
      `MHA: nn.MultiheadAttention(E, H, { batchFirst: true }), self-attention on (B, L, E): ${JSON.stringify(p.mha)}`,
    );
    const r = await mhaWorkload(p.mha, peers, config.time);
    rows.push(...r.rows);
    checks.push(...r.checks);
  }
  if (want('train')) {
    for (const w of p.train) shapes.push(`${w.name}: ${JSON.stringify(w.shape)}`);
    const r = await trainWorkload(p.train, config.time);
    rows.push(...r.rows);
    checks.push(...r.checks);
  }
  if (want('gpt')) {
    for (const w of p.gpt) shapes.push(`${w.name}: ${JSON.stringify(w.config)}`);
    const r = await gptWorkload(p.gpt, peers, config.time);
    rows.push(...r.rows);
    checks.push(...r.checks);
  }
  return {
    adapter,
    qkvWebgpu: webgpuLine,
    qkvWasm: wasmLine,
    versions: peers.versions,
    notes: peers.notes,
    rows,
    checks,
    shapes,
    userAgent: navigator.userAgent,
    ms: performance.now() - t0,
  };
}

let peers: Peers;
let adapter: AdapterLine;
let webgpuLine = '';
let wasmLine = '';

/**
 * Load the engines (qkv wasm, qkv webgpu, the peers) and hand back `run`: the page's start, and the start of
 * bench/webgpu/node-bench.ts, which runs the same workloads in Node on Dawn (navigator.gpu from `webgpu`).
 */
export async function startBench(): Promise<{ run: typeof run; adapter: AdapterLine }> {
  countGpuCalls();
  adapter = await adapterLine();
  if (!(await loadWasmKernels())) throw new Error(`qkv's wasm backend did not load: ${backendInfo().reason}`);
  await setBackend('wasm');
  const w = backendInfo();
  wasmLine = `${w.wasmVariant ?? ''} on ${w.threads} thread${w.threads === 1 ? '' : 's'} (${w.reason})`;
  await setBackend('webgpu');
  webgpuLine = backendInfo().reason;
  peers = await loadPeers();
  log(`adapter ${JSON.stringify(adapter)}; ${peers.notes.join('; ') || 'both peers loaded'}`);
  return { run, adapter };
}

if (typeof document !== 'undefined')
  startBench().then(
    (bench) => {
      (window as unknown as { qkvBench: typeof bench }).qkvBench = bench;
      document.body.setAttribute('data-ready', 'ok');
    },
    (e: unknown) => {
      const msg = (e as Error).message ?? String(e);
      document.body.setAttribute('data-error', msg);
      document.body.setAttribute('data-ready', 'error');
      log(`failed to start: ${msg}`);
    },
  );
