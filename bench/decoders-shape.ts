/**
 * What bench/decoders.ts and bench/decoders-peak.ts share: the SmolLM2-135M-shaped Llama config (as a Hugging Face
 * config.json, which qkv reads with models/hf/llama.ts and transformers with LlamaConfig), or with `--smoke` a tiny
 * one of the same kind; the prompt; the number of greedy tokens; the CPU's name as lscpu gives it.
 */
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FILES } from '../src/folder/spec.ts';
import { writeSafetensors } from '../src/io/safetensors.ts';
import { hfDecoderTarget, planHfDecoderLoad } from '../src/models/hf/llama.ts';
import type { GPTConfig } from '../src/models/gpt-config.ts';
import { Tensor } from '../src/tensor/tensor.ts';
import { cpuName } from './results.ts';

export const smoke = process.argv.includes('--smoke');

/** SmolLM2-135M's config.json (random weights: no eos, so every engine makes exactly NEW tokens), or a tiny one. */
export const HF_CONFIG = {
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  vocab_size: smoke ? 512 : 49152,
  hidden_size: smoke ? 96 : 576,
  intermediate_size: smoke ? 128 : 1536,
  num_hidden_layers: smoke ? 2 : 30,
  num_attention_heads: smoke ? 6 : 9,
  num_key_value_heads: smoke ? 2 : 3,
  max_position_embeddings: smoke ? 256 : 8192,
  rms_norm_eps: 1e-5,
  rope_theta: 100000,
  rope_scaling: null,
  hidden_act: 'silu',
  attention_bias: false,
  mlp_bias: false,
  tie_word_embeddings: true,
  bos_token_id: null,
  eos_token_id: null,
  pad_token_id: null,
  torch_dtype: 'float32',
};

/** Greedy tokens generated per run. */
export const NEW = 64;
/** The prompt: 16 ids. */
export const PROMPT = Array.from({ length: 16 }, (_, i) => (i * 7919 + 13) % HF_CONFIG.vocab_size);
/** The seed of qkv's random weights (manualSeed). */
export const SEED = 1;
/** The layers' matrices (not the table) are qkv's init times this (bench/decoders.ts says why). */
export const LAYER_SCALE = 10;
/** Threads of every engine: qkv's wasm GEMMs, ONNX Runtime's intra-op pool, PyTorch's. */
export const THREADS = 2;

/** The CPU's model name from lscpu (cores and /proc/cpuinfo's family, model, AVX level beside it). */
export function cpuLine(): string {
  let model = '';
  try {
    model = /^Model name:\s*(.*)$/m.exec(execFileSync('lscpu', { encoding: 'utf8' }))?.[1]?.trim() ?? '';
  } catch {}
  return `${model || 'lscpu: no model name'}; ${cpuName()}; ${cpus().length} cores`;
}

/** One row of the table: an engine and dtype, its median, weights, peak, load, and tokens against qkv's. */
export interface DecoderRow {
  engine: string;
  dtype: string;
  ms: number;
  tps: number;
  weight_mib: number;
  peak_mib: number | null;
  /** The 1-minute load average, median over the row's timed runs. */
  load: number;
  /** How many of its tokens equal qkv fp32's (and qkv's in its dtype). */
  tokens: string;
  note?: string;
}

/** The rows as a Markdown table (bench/decoders.ts's results file, bench/index.ts's), the CPU on every row. */
export function decodersTable(rows: DecoderRow[], cpu: string): string {
  const fp = rows.find((r) => r.engine === 'qkv' && r.dtype === 'fp32') ?? rows[0]!;
  return [
    `| ${smoke ? 'tiny Llama (--smoke)' : 'SmolLM2-135M shape'}, ${NEW} greedy tokens | ms | tokens/s | ` +
      '× qkv fp32 | weights MiB | peak MiB | tokens | CPU (lscpu) | load (1 min) | |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.engine} ${r.dtype} | ${r.ms.toFixed(0)} | ${r.tps.toFixed(1)} | ${(r.tps / fp.tps).toFixed(2)} | ` +
        `${r.weight_mib.toFixed(1)} | ${r.peak_mib == null ? '—' : r.peak_mib.toFixed(0)} | ${r.tokens} | ${cpu} | ` +
        `${r.load.toFixed(2)} | ${r.note ?? ''} |`,
    ),
  ].join('\n');
}

/**
 * qkv weights of HF_CONFIG's Llama written as a Hugging Face folder (config.json and model.safetensors) in `folder`,
 * for the peers that read one: each HF tensor sliced from qkv's by models/hf/llama.ts's map, every qkv parameter
 * filled exactly once with the shapes the loader wants (the loader's own plan checks it). Returns the bytes written.
 * Call it on the js backend: the copies then stay off WebAssembly memory (4 GiB at most), which holds the models.
 */
export function writeHfLlamaFolder(folder: string, weights: Record<string, Tensor>, cfg: GPTConfig): number {
  const hfNames = ['model.embed_tokens.weight', 'model.norm.weight'];
  for (let i = 0; i < HF_CONFIG.num_hidden_layers; i++)
    for (const m of [
      'input_layernorm',
      'post_attention_layernorm',
      ...['q', 'k', 'v', 'o'].map((x) => `self_attn.${x}_proj`),
      ...['gate', 'up', 'down'].map((x) => `mlp.${x}_proj`),
    ])
      hfNames.push(`model.layers.${i}.${m}.weight`);
  const hf: Record<string, Tensor> = {};
  for (const name of hfNames) {
    const target = hfDecoderTarget(name, cfg);
    if (!target) throw new Error(`writeHfLlamaFolder: no qkv place for ${name}`);
    const src = weights[target.name]!;
    const width = src.shape.length > 1 ? src.shape[1]! : 1;
    const data = src.dataSync<Float32Array>();
    hf[name] = target.rows
      ? new Tensor(data.slice(target.rows[0] * width, (target.rows[0] + target.rows[1]) * width), [
          target.rows[1],
          width,
        ])
      : new Tensor(data.slice(), src.shape);
  }
  planHfDecoderLoad(
    Object.entries(hf).map(([name, t]) => ({ name, shape: t.shape })),
    weights,
    cfg,
  );
  mkdirSync(folder);
  writeFileSync(join(folder, FILES.config), JSON.stringify(HF_CONFIG, null, 2));
  writeFileSync(join(folder, FILES.weights), writeSafetensors(hf));
  return Object.values(hf).reduce((n, x) => n + x.size * 4, 0);
}
