/**
 * Hugging Face Llama-family checkpoints (model_type `llama`: SmolLM2, TinyLlama, Llama 3.x; `qwen2`: Qwen2/2.5;
 * `mistral`) onto qkv's own GPT: a config reader and a key map, not a second model. These are GPT-2's decoder
 * with switches (models/gpt-config.ts): RMS norms, rotary positions, a gated SiLU MLP, grouped KV heads, no biases
 * but Qwen2's on q/k/v, a tied or untied head, Mistral's sliding window. As transformers' modular_qwen2.py states
 * Qwen2 as its differences from Llama, this file states all three as theirs from GPT-2.
 *
 *   HF (model.safetensors, or shards)             qkv (GPT state dict)
 *   model.embed_tokens.weight         (V, E)      wte.weight
 *   model.layers.i.input_layernorm.weight         h.i.ln_1.weight            (RMSNorm)
 *   model.layers.i.self_attn.q_proj.weight (h·dK, E)   h.i.attn.in_proj_weight rows [0, h·dK)
 *   model.layers.i.self_attn.k_proj.weight (hKV·dK, E) … rows [h·dK, (h + hKV)·dK)
 *   model.layers.i.self_attn.v_proj.weight (hKV·dK, E) … rows [(h + hKV)·dK, (h + 2·hKV)·dK)
 *   model.layers.i.self_attn.{q,k,v}_proj.bias    h.i.attn.in_proj_bias, the same ranges (Qwen2)
 *   model.layers.i.self_attn.o_proj.weight        h.i.attn.out_proj.weight
 *   model.layers.i.post_attention_layernorm.weight h.i.ln_2.weight
 *   model.layers.i.mlp.{gate,up,down}_proj.weight h.i.mlp.{gate,up,down}_proj.weight
 *   model.norm.weight                             ln_f.weight
 *   lm_head.weight                    (V, E)      lm_head.weight (untied), else ignored when tied
 *
 * Layouts are the same (torch.nn.Linear's (out, in)); nothing is transposed. The rotary buffers some older files
 * hold (`rotary_emb.inv_freq`) are ignored: qkv computes them from the config.
 */
import type { GPTConfig } from '../gpt-config.ts';
import type { RopeScaling } from '../../nn/rotary.ts';
import { shapeToString } from '../../tensor/shape.ts';
import { Tensor } from '../../tensor/tensor.ts';
import type { MultiheadAttention } from '../../nn/attention.ts';
import type { Linear } from '../../nn/layers.ts';
import type { Module } from '../../nn/module.ts';
import type { LinearSite } from './peft.ts';

/** The model_types read here. */
export const HF_DECODER_TYPES = ['llama', 'qwen2', 'mistral'] as const;

type Json = Record<string, unknown>;

function num(c: Json, key: string, fallback?: number): number {
  const v = c[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new Error(`config.json: ${key} must be a number, got ${JSON.stringify(c[key])}`);
  return v;
}

function posInt(c: Json, key: string, fallback?: number): number {
  const v = c[key] ?? fallback;
  if (!Number.isInteger(v) || (v as number) <= 0)
    throw new Error(`config.json: ${key} must be a positive integer, got ${JSON.stringify(c[key])}`);
  return v as number;
}

/**
 * The rotary settings in either layout: transformers 5's `rope_parameters` ({rope_type, rope_theta, …}), or the
 * Hub's older `rope_theta` at the top with `rope_scaling` ({type | rope_type, factor, …} or null).
 */
function ropeOf(c: Json): { base: number; scaling: RopeScaling } {
  const params = (c.rope_parameters ?? null) as Json | null;
  const old = (c.rope_scaling ?? null) as Json | null;
  const src: Json = { ...(old ?? {}), ...(params ?? {}) };
  const base = num({ rope_theta: src.rope_theta ?? c.rope_theta }, 'rope_theta', 10000);
  const type = String(src.rope_type ?? src.type ?? 'default');
  const field = params ? 'rope_parameters' : 'rope_scaling';
  const f = (k: string) => {
    const v = src[k];
    if (typeof v !== 'number' || !(v > 0))
      throw new Error(`config.json: ${field}.${k} must be a positive number, got ${JSON.stringify(v)}`);
    return v;
  };
  if (type === 'default') return { base, scaling: { type: 'default' } };
  if (type === 'linear') return { base, scaling: { type: 'linear', factor: f('factor') } };
  if (type === 'llama3')
    return {
      base,
      scaling: {
        type: 'llama3',
        factor: f('factor'),
        lowFreqFactor: f('low_freq_factor'),
        highFreqFactor: f('high_freq_factor'),
        originalMaxPositionEmbeddings: f('original_max_position_embeddings'),
      },
    };
  throw new Error(`config.json: ${field} rope_type '${type}' is not supported (qkv reads default, linear and llama3)`);
}

/** qkv's GPTConfig for a Llama, Qwen2 or Mistral config.json, or one line naming the key that does not fit. */
export function decoderConfigFromHf(json: unknown): GPTConfig {
  const c = json as Json | null;
  if (!c || typeof c !== 'object' || Array.isArray(c))
    throw new Error(`config.json: expected a JSON object, got ${c === null ? 'null' : typeof c}`);
  const type = c.model_type as string;
  if (!(HF_DECODER_TYPES as readonly string[]).includes(type))
    throw new Error(`config.json: model_type '${String(type)}' is not one of ${HF_DECODER_TYPES.join(', ')}`);
  const E = posInt(c, 'hidden_size');
  const nHead = posInt(c, 'num_attention_heads');
  const nKVHead = posInt(c, 'num_key_value_heads', nHead);
  if (nHead % nKVHead !== 0)
    throw new Error(`config.json: num_attention_heads ${nHead} is not a multiple of num_key_value_heads ${nKVHead}`);
  const headDim = c.head_dim == null ? E / nHead : posInt(c, 'head_dim');
  if (!Number.isInteger(headDim))
    throw new Error(`config.json: hidden_size ${E} is not divisible by num_attention_heads ${nHead} (and no head_dim)`);
  const act = c.hidden_act ?? 'silu';
  if (act !== 'silu') throw new Error(`config.json: hidden_act '${String(act)}' is not supported (expected 'silu')`);
  if (c.pretraining_tp != null && c.pretraining_tp !== 1)
    throw new Error(`config.json: pretraining_tp ${String(c.pretraining_tp)} is not supported (expected 1)`);
  const nLayer = posInt(c, 'num_hidden_layers');
  const attentionBias = c.attention_bias === true;
  // Sliding windows: Mistral's on every layer; Qwen2's only with use_sliding_window, on the layers layer_types
  // names (transformers 5), else from max_window_layers on.
  let slidingWindow: number | undefined;
  let slidingLayers: number[] | undefined;
  const types = Array.isArray(c.layer_types) ? (c.layer_types as string[]) : null;
  if (type === 'mistral' && c.sliding_window != null) slidingWindow = posInt(c, 'sliding_window');
  if (type === 'qwen2' && c.use_sliding_window === true && c.sliding_window != null) {
    slidingWindow = posInt(c, 'sliding_window');
    const from = posInt(c, 'max_window_layers', 28);
    slidingLayers = Array.from({ length: nLayer }, (_, i) => i).filter((i) =>
      types ? types[i] === 'sliding_attention' : i >= from,
    );
  }
  return {
    vocabSize: posInt(c, 'vocab_size'),
    blockSize: posInt(c, 'max_position_embeddings'),
    nLayer,
    nHead,
    nEmbd: E,
    dropout: 0, // inference: attention_dropout only matters when training
    positions: 'rotary',
    layerNormEps: num(c, 'rms_norm_eps', 1e-6),
    norm: 'rms',
    mlp: 'swiglu',
    dFf: posInt(c, 'intermediate_size'),
    nKVHead,
    headDim,
    qkvBias: type === 'qwen2' || attentionBias,
    outBias: attentionBias,
    mlpBias: c.mlp_bias === true,
    tiedHead: c.tie_word_embeddings === true,
    rope: ropeOf(c),
    ...(slidingWindow !== undefined ? { slidingWindow } : {}),
    ...(slidingLayers !== undefined ? { slidingLayers } : {}),
  };
}

/** Where one HF tensor goes: qkv's parameter and, for q/k/v, the rows of the packed in_proj it fills. */
export interface DecoderTarget {
  name: string;
  /** First row (of the packed in_proj) and row count; absent: the whole parameter. */
  rows?: [start: number, count: number];
}

const SAME: Record<string, string> = {
  input_layernorm: 'ln_1',
  post_attention_layernorm: 'ln_2',
  'self_attn.o_proj': 'attn.out_proj',
  'mlp.gate_proj': 'mlp.gate_proj',
  'mlp.up_proj': 'mlp.up_proj',
  'mlp.down_proj': 'mlp.down_proj',
};

/** qkv's place for an HF tensor name; null: ignored (a tied lm_head, rotary buffers); undefined: unknown. */
export function hfDecoderTarget(hfName: string, c: GPTConfig): DecoderTarget | null | undefined {
  if (hfName === 'model.embed_tokens.weight') return { name: 'wte.weight' };
  if (hfName === 'model.norm.weight') return { name: 'ln_f.weight' };
  if (hfName === 'lm_head.weight') return (c.tiedHead ?? true) ? null : { name: 'lm_head.weight' };
  const m = /^model\.layers\.(\d+)\.(.+)\.(weight|bias)$/.exec(hfName);
  if (!m) return /\.rotary_emb\.inv_freq$/.test(hfName) ? null : undefined;
  const [, i, mod, kind] = m;
  if (mod.endsWith('rotary_emb')) return null;
  const qkv = /^self_attn\.([qkv])_proj$/.exec(mod);
  if (qkv) {
    const dK = c.headDim ?? c.nEmbd / c.nHead;
    const q = c.nHead * dK;
    const kv = (c.nKVHead ?? c.nHead) * dK;
    const rows: [number, number] = qkv[1] === 'q' ? [0, q] : qkv[1] === 'k' ? [q, kv] : [q + kv, kv];
    return { name: `h.${i}.attn.in_proj_${kind}`, rows };
  }
  if (Object.hasOwn(SAME, mod)) return { name: `h.${i}.${SAME[mod]}.${kind}` };
  return undefined;
}

/** One tensor to copy: HF's name, its entry (its place in its file), qkv's destination. */
export interface DecoderCopy<E> {
  hfName: string;
  entry: E;
  target: DecoderTarget;
}

/**
 * Check a checkpoint's tensors (every shard's, names and shapes) against the model's state dict before any data
 * is read; return what to copy where. Every parameter must be filled exactly once; errors name the tensor.
 */
export function planHfDecoderLoad<E extends { name: string; shape: readonly number[] }>(
  entries: readonly E[],
  own: Record<string, Tensor>,
  c: GPTConfig,
): DecoderCopy<E>[] {
  const plan: DecoderCopy<E>[] = [];
  const filled = new Map<string, number>();
  for (const e of entries) {
    const target = hfDecoderTarget(e.name, c);
    if (target === undefined)
      throw new Error(`model.safetensors: tensor '${e.name}' is not part of a Llama-family layout`);
    if (target === null) continue;
    const dst = own[target.name];
    if (!dst)
      throw new Error(
        `model.safetensors: tensor '${e.name}' does not fit config.json (no '${target.name}' in the model)`,
      );
    const want = target.rows ? [target.rows[1], ...dst.shape.slice(1)] : dst.shape;
    if (e.shape.length !== want.length || e.shape.some((d, k) => d !== want[k]))
      throw new Error(
        `model.safetensors: '${e.name}' has shape ${shapeToString(e.shape)}, ` +
          `config.json implies ${shapeToString(want)}`,
      );
    filled.set(target.name, (filled.get(target.name) ?? 0) + (target.rows ? target.rows[1] : dst.shape[0]));
    plan.push({ hfName: e.name, entry: e, target });
  }
  for (const [k, t] of Object.entries(own)) {
    const rows = filled.get(k) ?? 0;
    if (rows !== (t.shape[0] ?? 1))
      throw new Error(
        rows === 0
          ? `model.safetensors: tensor for '${k}' is missing`
          : `model.safetensors: '${k}' filled with ${rows} of its ${t.shape[0]} rows (a tensor given twice or missing)`,
      );
  }
  return plan;
}

/** Copy one HF tensor (float32) into its place: the whole parameter, or rows of the packed in_proj. */
export function copyDecoderTensor(dst: Tensor, src: Tensor, target: DecoderTarget): void {
  const data = src.dataSync<Float32Array>();
  if (!target.rows) {
    dst.write(data);
    return;
  }
  const width = dst.shape.length > 1 ? dst.shape[1] : 1;
  dst.write(data, target.rows[0] * width);
}

// ---- Fine-tuning: the linear layers PEFT adapts ------------------------------------------------------------

/** A submodule of `model` by its qkv path (`h.0.attn`). */
function moduleAt<M>(model: Module, path: string): M {
  const m = model.namedModules().find(([n]) => n === path);
  if (!m) throw new Error(`internal: no module '${path}' in the GPT`);
  return m[1] as M;
}

/**
 * LlamaForCausalLM's (and Qwen2's, Mistral's) linear layers by their module paths, as PEFT matches target_modules
 * against them (its default for llama: q_proj, v_proj), on qkv's layers: `self_attn.{q,k,v}_proj` are rows of the
 * packed in_proj (q h·dK rows, k and v hKV·dK each: grouped KV heads), `self_attn.o_proj` the attention's out_proj,
 * `mlp.{gate,up,down}_proj` the SwiGLU's. All are nn.Linear in Hugging Face (no Conv1D). An untied lm_head is left
 * out, as PEFT's all-linear leaves it.
 */
export function llamaLinearSites(model: Module & { readonly config: GPTConfig }): LinearSite[] {
  const c = model.config;
  const dK = c.headDim ?? c.nEmbd / c.nHead;
  const widths = { q: c.nHead * dK, k: (c.nKVHead ?? c.nHead) * dK, v: (c.nKVHead ?? c.nHead) * dK };
  const sites: LinearSite[] = [];
  const linear = (path: string, l: Linear): LinearSite => ({
    path,
    layer: { linear: l },
    inFeatures: l.inFeatures,
    outFeatures: l.outFeatures,
    conv1d: false,
  });
  for (let i = 0; i < c.nLayer; i++) {
    const p = `model.layers.${i}`;
    const attention = moduleAt<MultiheadAttention>(model, `h.${i}.attn`);
    for (const part of ['q', 'k', 'v'] as const)
      sites.push({
        path: `${p}.self_attn.${part}_proj`,
        layer: { attention, part },
        inFeatures: c.nEmbd,
        outFeatures: widths[part],
        conv1d: false,
      });
    sites.push(linear(`${p}.self_attn.o_proj`, moduleAt<Linear>(model, `h.${i}.attn.out_proj`)));
    for (const m of ['gate', 'up', 'down'])
      sites.push(linear(`${p}.mlp.${m}_proj`, moduleAt<Linear>(model, `h.${i}.mlp.${m}_proj`)));
  }
  return sites;
}

/**
 * A Llama-family GPT's state dict (qkv's names: `model.stateDict()`, or any tensors by those names, such as
 * gradients) under LlamaForCausalLM's names, as save_pretrained writes them: the packed in_proj split back into
 * q_proj, k_proj and v_proj (their biases too: Qwen2), lm_head only when untied. New tensors, not the given ones.
 */
export function llamaHfStateDict(own: Record<string, Tensor>, c: GPTConfig): Record<string, Tensor> {
  const dK = c.headDim ?? c.nEmbd / c.nHead;
  const q = c.nHead * dK;
  const kv = (c.nKVHead ?? c.nHead) * dK;
  const parts: [string, number, number][] = [
    ['q_proj', 0, q],
    ['k_proj', q, kv],
    ['v_proj', q + kv, kv],
  ];
  const own2hf = Object.fromEntries(Object.entries(SAME).map(([hf, mine]) => [mine, hf]));
  const out: Record<string, Tensor> = {};
  for (const [name, t] of Object.entries(own)) {
    if (name === 'wte.weight') out['model.embed_tokens.weight'] = t.clone();
    else if (name === 'ln_f.weight') out['model.norm.weight'] = t.clone();
    else if (name === 'lm_head.weight') out['lm_head.weight'] = t.clone();
    else {
      const packed = /^h\.(\d+)\.attn\.in_proj_(weight|bias)$/.exec(name);
      const m = /^h\.(\d+)\.(.+)\.(weight|bias)$/.exec(name);
      if (packed) {
        const [, i, kind] = packed;
        for (const [part, start, rows] of parts)
          out[`model.layers.${i}.self_attn.${part}.${kind}`] = rowsOf(t, start, rows);
      } else if (m && Object.hasOwn(own2hf, m[2])) out[`model.layers.${m[1]}.${own2hf[m[2]]}.${m[3]}`] = t.clone();
      else throw new Error(`internal: '${name}' has no place in a Llama-family checkpoint`);
    }
  }
  return out;
}

/** Rows [start, start + count) of a 1-D or 2-D tensor as a new float32 tensor. */
function rowsOf(t: Tensor, start: number, count: number): Tensor {
  const width = t.ndim > 1 ? t.shape[1] : 1;
  const data = t.dataSync<Float32Array>().slice(start * width, (start + count) * width);
  return new Tensor(data, t.ndim > 1 ? [count, width] : [count], 'float32');
}
