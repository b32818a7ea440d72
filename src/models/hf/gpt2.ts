/**
 * Hugging Face GPT-2 checkpoints (gpt2, distilgpt2, gpt2-medium, ...) onto qkv's own GPT: a
 * mapping of names and layouts, not a second model. HF's GPT-2 is the same network as
 * `models/gpt.ts` with GPT-2's options (learned positions, `gelu_new`, LayerNorm ε 1e-5, scores
 * scaled by 1/√headDim, tied output projection); only the files differ:
 *
 *   HF (model.safetensors)               shape          qkv (GPT state dict)          layout
 *   wte.weight / wpe.weight              (V, E) (P, E)  wte.weight / wpe.weight       same
 *   h.i.ln_1.* / h.i.ln_2.* / ln_f.*     (E)            same names                    same
 *   h.i.attn.c_attn.weight               (E, 3E)        h.i.attn.in_proj_weight       transposed (Conv1D)
 *   h.i.attn.c_attn.bias                 (3E)           h.i.attn.in_proj_bias         same: [q | k | v]
 *   h.i.attn.c_proj.weight / .bias       (E, E)         h.i.attn.out_proj.weight/.bias transposed
 *   h.i.mlp.c_fc.weight / .bias          (E, 4E)        h.i.mlp.c_fc.weight / .bias   transposed
 *   h.i.mlp.c_proj.weight / .bias        (4E, E)        h.i.mlp.c_proj.weight / .bias transposed
 *
 * HF's Conv1D computes x·W + b with W stored (in, out); torch.nn.Linear computes x·Wᵀ + b with W
 * stored (out, in), hence the transposes. Names may carry a `transformer.` prefix (what
 * save_pretrained writes for GPT2LMHeadModel); the causal-mask buffers `h.i.attn.bias` /
 * `h.i.attn.masked_bias` of older files are ignored (qkv builds the mask), and so is `lm_head.weight`
 * when it equals wte (tied). Anything else is refused, naming the tensor.
 */
import type { MultiheadAttention } from '../../nn/attention.ts';
import type { Linear } from '../../nn/layers.ts';
import type { GPTConfig } from '../gpt-config.ts';
import type { Module } from '../../nn/module.ts';
import { shapeToString } from '../../tensor/shape.ts';
import { Tensor } from '../../tensor/tensor.ts';
import type { LinearSite } from './peft.ts';

/** The keys of HF's GPT2Config that qkv reads (config.json as the Hub serves it). */
export interface HfGpt2Config {
  /** Must be `'gpt2'` (GPT-2 and its sizes, distilgpt2). */
  model_type: string;
  /** Vocabulary size (50257 for GPT-2) → vocabSize. */
  vocab_size: number;
  /** Context length (1024) → blockSize. */
  n_positions: number;
  /** Width of the residual stream (768 for gpt2) → nEmbd. */
  n_embd: number;
  /** Number of blocks → nLayer. */
  n_layer: number;
  /** Attention heads per block → nHead. */
  n_head: number;
  /** MLP width; null or absent means 4·n_embd, the only width qkv builds. */
  n_inner?: number | null;
  /** `gelu_new` (the default), `gelu_pytorch_tanh` or `gelu_fast` → gelu_tanh; `gelu` → the exact form. */
  activation_function?: string;
  /** ε of every LayerNorm (default 1e-5) → layerNormEps. */
  layer_norm_epsilon?: number;
  /** Scores scaled by 1/√headDim; `false` is refused. */
  scale_attn_weights?: boolean;
  /** Extra 1/(layer + 1) score scaling (Mistral's GPT-2 runs); `true` is refused. */
  scale_attn_by_inverse_layer_idx?: boolean;
  /** Mixed-precision attention trick of the same runs; `true` is refused. */
  reorder_and_upcast_attn?: boolean;
  /** Output projection tied to wte; `false` is refused. */
  tie_word_embeddings?: boolean;
  /** Cross-attention for encoder-decoder use; `true` is refused. */
  add_cross_attention?: boolean;
  /** The HF model classes the checkpoint was saved from, e.g. `['GPT2LMHeadModel']`; not checked. */
  architectures?: string[];
}

/** HF's activation names that are GPT-2's tanh GELU, and the exact one. */
const ACTIVATIONS: Record<string, GPTConfig['activation']> = {
  gelu_new: 'gelu_tanh',
  gelu_pytorch_tanh: 'gelu_tanh',
  gelu_fast: 'gelu_tanh',
  gelu: 'gelu',
};

/** A Hugging Face config.json (it has model_type; qkv's own have format). */
export function isHfConfig(json: unknown): boolean {
  return json !== null && typeof json === 'object' && 'model_type' in json && !('format' in json);
}

/** qkv's GPTConfig for an HF GPT-2 config.json, or one line naming the key that does not fit. */
export function gptConfigFromHf(json: unknown): GPTConfig {
  const c = json as Partial<HfGpt2Config> | null;
  if (!c || typeof c !== 'object')
    throw new Error(`config.json: expected a JSON object, got ${c === null ? 'null' : typeof c}`);
  if (c.model_type !== 'gpt2')
    throw new Error(
      `config.json: model_type '${String(c.model_type)}' is not supported ` +
        `(expected 'gpt2': GPT-2, distilgpt2, gpt2-medium/large/xl)`,
    );
  for (const k of ['vocab_size', 'n_positions', 'n_embd', 'n_layer', 'n_head'] as const) {
    if (!Number.isInteger(c[k]) || (c[k] as number) <= 0)
      throw new Error(`config.json: ${k} must be a positive integer, got ${JSON.stringify(c[k])}`);
  }
  const E = c.n_embd as number;
  if (c.n_inner != null && c.n_inner !== 4 * E)
    throw new Error(`config.json: n_inner ${c.n_inner} is not supported (qkv's MLP is 4·n_embd = ${4 * E} wide)`);
  const act = c.activation_function ?? 'gelu_new';
  const activation = Object.hasOwn(ACTIVATIONS, act) ? ACTIVATIONS[act] : undefined;
  if (!activation)
    throw new Error(
      `config.json: activation_function '${act}' is not supported (expected ` +
        `one of ${Object.keys(ACTIVATIONS).join(', ')})`,
    );
  if (c.scale_attn_weights === false)
    throw new Error('config.json: scale_attn_weights false is not supported (qkv scales scores by 1/√headDim)');
  if (c.scale_attn_by_inverse_layer_idx === true)
    throw new Error('config.json: scale_attn_by_inverse_layer_idx true is not supported');
  if (c.reorder_and_upcast_attn === true) throw new Error('config.json: reorder_and_upcast_attn true is not supported');
  if (c.add_cross_attention === true)
    throw new Error('config.json: add_cross_attention true is not supported (qkv reads decoder-only GPT-2)');
  if (c.tie_word_embeddings === false)
    throw new Error('config.json: tie_word_embeddings false is not supported (qkv ties the output projection to wte)');
  const eps = c.layer_norm_epsilon ?? 1e-5;
  return {
    vocabSize: c.vocab_size as number,
    blockSize: c.n_positions as number,
    nLayer: c.n_layer as number,
    nHead: c.n_head as number,
    nEmbd: E,
    dropout: 0, // inference: HF's *_pdrop only matter when training
    positions: 'learned',
    activation,
    layerNormEps: eps,
  };
}

/** Where one HF tensor goes in qkv's state dict; null: ignored (mask buffers, a tied lm_head). */
export interface HfTarget {
  name: string;
  transpose: boolean;
}

const CONV1D: Record<string, string> = {
  'attn.c_attn.weight': 'attn.in_proj_weight',
  'attn.c_proj.weight': 'attn.out_proj.weight',
  'mlp.c_fc.weight': 'mlp.c_fc.weight',
  'mlp.c_proj.weight': 'mlp.c_proj.weight',
};
const RENAMED: Record<string, string> = {
  'attn.c_attn.bias': 'attn.in_proj_bias',
  'attn.c_proj.bias': 'attn.out_proj.bias',
};
const KEPT = new Set(['ln_1.weight', 'ln_1.bias', 'ln_2.weight', 'ln_2.bias', 'mlp.c_fc.bias', 'mlp.c_proj.bias']);

/** qkv's name for an HF GPT-2 tensor name; null for the ignored buffers; undefined when unknown. */
export function hfGpt2Target(hfName: string): HfTarget | null | undefined {
  const name = hfName.startsWith('transformer.') ? hfName.slice('transformer.'.length) : hfName;
  if (name === 'lm_head.weight') return null;
  if (['wte.weight', 'wpe.weight', 'ln_f.weight', 'ln_f.bias'].includes(name)) return { name, transpose: false };
  const m = /^h\.(\d+)\.(.+)$/.exec(name);
  if (!m) return undefined;
  const [, i, rest] = m;
  if (rest === 'attn.bias' || rest === 'attn.masked_bias') return null;
  if (Object.hasOwn(CONV1D, rest)) return { name: `h.${i}.${CONV1D[rest]}`, transpose: true };
  if (Object.hasOwn(RENAMED, rest)) return { name: `h.${i}.${RENAMED[rest]}`, transpose: false };
  if (KEPT.has(rest)) return { name, transpose: false };
  return undefined;
}

/** One tensor to copy: HF's name and shape, qkv's destination, transposed or not. */
export interface HfCopy<E> {
  hfName: string;
  /** The entry given for it (e.g. its place in the file). */
  entry: E;
  target: HfTarget;
}

/**
 * Check an HF checkpoint's tensor list against the model's state dict (names, shapes) before any
 * data is read, and return what to copy where. Errors name the tensor.
 */
export function planHfGpt2Load<E extends { name: string; shape: readonly number[] }>(
  entries: readonly E[],
  own: Record<string, Tensor>,
): HfCopy<E>[] {
  const plan: HfCopy<E>[] = [];
  const seen = new Set<string>();
  for (const e of entries) {
    const target = hfGpt2Target(e.name);
    if (target === undefined)
      throw new Error(`model.safetensors: tensor '${e.name}' is not part of GPT-2's layout (another architecture?)`);
    if (target === null) {
      if (
        e.name.endsWith('lm_head.weight') &&
        own['wte.weight'] &&
        shapeToString(e.shape) !== shapeToString(own['wte.weight'].shape)
      ) {
        throw new Error(
          `model.safetensors: 'lm_head.weight' has shape ` +
            `${shapeToString(e.shape)}, wte ` +
            `${shapeToString(own['wte.weight'].shape)}: an untied head is not ` +
            `supported`,
        );
      }
      continue;
    }
    const dst = own[target.name];
    if (!dst)
      throw new Error(
        `model.safetensors: tensor '${e.name}' does not fit config.json (no ` +
          `'${target.name}' in a model of ${countLayers(own)} layers)`,
      );
    if (seen.has(target.name))
      throw new Error(
        `model.safetensors: tensor '${e.name}' appears twice (with and without the 'transformer.' prefix)`,
      );
    seen.add(target.name);
    const want = target.transpose ? [dst.shape[1], dst.shape[0]] : dst.shape;
    if (e.shape.length !== want.length || e.shape.some((d, k) => d !== want[k])) {
      throw new Error(
        `model.safetensors: '${e.name}' has shape ${shapeToString(e.shape)}, ` +
          `config.json implies ${shapeToString(want)}`,
      );
    }
    plan.push({ hfName: e.name, entry: e, target });
  }
  for (const k of Object.keys(own)) {
    if (!seen.has(k)) throw new Error(`model.safetensors: tensor for '${k}' is missing (HF name ${hfNameOf(k)})`);
  }
  return plan;
}

/** Copy one HF tensor (float32) into its qkv parameter's storage, transposing Conv1D weights. */
export function copyHfTensor(dst: Tensor, src: Tensor, transpose: boolean): void {
  const s = src.dataSync<Float32Array>();
  if (!transpose) {
    dst.write(s);
    return;
  }
  const d = new Float32Array(s.length);
  const [rows, cols] = src.shape; // HF (in, out) -> qkv (out, in)
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) d[c * rows + r] = s[base + c];
  }
  dst.write(d);
}

function countLayers(own: Record<string, Tensor>): number {
  return Object.keys(own).filter((k) => k.endsWith('.ln_1.weight')).length;
}

/** HF's name for a qkv parameter, for messages. */
function hfNameOf(qkv: string): string {
  for (const [hf, q] of Object.entries({ ...CONV1D, ...RENAMED })) {
    if (qkv.endsWith(`.${q}`)) return `'${qkv.slice(0, -q.length)}${hf}'`;
  }
  return `'${qkv}'`;
}

// ---- Fine-tuning: the linear layers PEFT adapts, and the weights written back under HF's names -------------

/** qkv's GPT (models/gpt.ts), as this file sees it: a module with its config. */
type GptModule = Module & { readonly config: GPTConfig };

/** A submodule of `model` by its qkv path (`h.0.attn`). */
function moduleAt<M>(model: Module, path: string): M {
  const m = model.namedModules().find(([n]) => n === path);
  if (!m) throw new Error(`internal: no module '${path}' in the GPT`);
  return m[1] as M;
}

/**
 * GPT2LMHeadModel's linear layers (all Conv1D) by their module paths, as PEFT matches target_modules against
 * them, on qkv's layers: `c_attn` is the packed q/k/v projection, `attn.c_proj` the attention's out_proj,
 * `mlp.c_fc` / `mlp.c_proj` the MLP's. lm_head is wte itself (tied), not a site.
 */
export function gpt2LinearSites(model: GptModule): LinearSite[] {
  const E = model.config.nEmbd;
  const sites: LinearSite[] = [];
  for (let i = 0; i < model.config.nLayer; i++) {
    const p = `transformer.h.${i}`;
    const attention = moduleAt<MultiheadAttention>(model, `h.${i}.attn`);
    sites.push(
      { path: `${p}.attn.c_attn`, layer: { attention, part: 'qkv' }, inFeatures: E, outFeatures: 3 * E, conv1d: true },
      site(`${p}.attn.c_proj`, moduleAt<Linear>(model, `h.${i}.attn.out_proj`)),
      site(`${p}.mlp.c_fc`, moduleAt<Linear>(model, `h.${i}.mlp.c_fc`)),
      site(`${p}.mlp.c_proj`, moduleAt<Linear>(model, `h.${i}.mlp.c_proj`)),
    );
  }
  return sites;
}

function site(path: string, linear: Linear): LinearSite {
  return { path, layer: { linear }, inFeatures: linear.inFeatures, outFeatures: linear.outFeatures, conv1d: true };
}

/**
 * A GPT's state dict (qkv's names: `model.stateDict()`, or any tensors by those names, such as gradients) under
 * GPT2LMHeadModel's names, as save_pretrained writes them (`transformer.` prefix, Conv1D weights (in, out), lm_head
 * left out: tied to wte), so transformers opens the folder. New tensors, not the given ones.
 */
export function gpt2HfStateDict(own: Record<string, Tensor>): Record<string, Tensor> {
  const out: Record<string, Tensor> = {};
  for (const [name, t] of Object.entries(own)) {
    const hf = hfNameOfOwn(name);
    out[`transformer.${hf.name}`] = hf.transpose ? transposed(t) : t.clone();
  }
  return out;
}

/** HF's name (without `transformer.`) for a qkv GPT tensor, and whether it is stored transposed (Conv1D). */
function hfNameOfOwn(name: string): { name: string; transpose: boolean } {
  const m = /^h\.(\d+)\.(.+)$/.exec(name);
  if (!m) return { name, transpose: false };
  const [, i, rest] = m;
  for (const [hf, q] of Object.entries(CONV1D)) if (rest === q) return { name: `h.${i}.${hf}`, transpose: true };
  for (const [hf, q] of Object.entries(RENAMED)) if (rest === q) return { name: `h.${i}.${hf}`, transpose: false };
  return { name, transpose: false };
}

/** A 2-D tensor's transpose as a new tensor (qkv (out, in) -> Conv1D (in, out)). */
function transposed(t: Tensor): Tensor {
  const [rows, cols] = t.shape;
  const s = t.dataSync<Float32Array>();
  const d = new Float32Array(s.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) d[c * rows + r] = s[r * cols + c];
  return new Tensor(d, [cols, rows], 'float32');
}
