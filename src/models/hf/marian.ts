/**
 * Hugging Face Marian checkpoints (Helsinki-NLP opus-mt-*) onto qkv's own Seq2Seq: a mapping of
 * names and layouts, not a second model. HF's MarianMTModel (modeling_marian.py) is the paper's
 * post-norm Transformer with these differences, each a Seq2Seq switch:
 *
 *   - positions: sinusoids with every sine in the first half of the columns and every cosine in the
 *     second (positionLayout 'halves'), from position 0, stored in the file but never trained;
 *   - embeddings × √dModel (`scale_embedding`, true in every opus-mt config), one table shared by the
 *     encoder, the decoder and the output projection;
 *   - the feed-forward activation `swish` (= SiLU) in opus-mt; no LayerNorm after either stack;
 *   - `final_logits_bias` (1, V) added to the logits;
 *   - decoding starts from `decoder_start_token_id`, which is the padding id, and the decoder attends
 *     to it (maskTargetPadding false).
 *
 *   HF (pytorch_model.bin / model.safetensors)        qkv (Seq2Seq state dict)
 *   model.shared.weight (V, E)                         embedding.weight
 *   model.{encoder,decoder}.embed_tokens.weight        = shared (checked equal where present)
 *   lm_head.weight                                     = shared (checked equal where present)
 *   model.{encoder,decoder}.embed_positions.weight     checked against qkv's table, not loaded
 *   final_logits_bias (1, V)                           finalLogitsBias
 *   model.encoder.layers.i.self_attn.{q,k,v}_proj.*    transformer.encoder.layers.i.self_attn.in_proj_*
 *                                                      (rows [q; k; v])
 *   ...self_attn.out_proj.* / fc1.* / fc2.*            ...self_attn.out_proj.* / linear1.* / linear2.*
 *   ...self_attn_layer_norm.* / final_layer_norm.*     ...norm1.* / norm2.* (decoder: norm1.* / norm3.*)
 *   model.decoder.layers.i.encoder_attn.*              transformer.decoder.layers.i.multihead_attn.*
 *   model.decoder.layers.i.encoder_attn_layer_norm.*   transformer.decoder.layers.i.norm2.*
 *
 * HF scales q by 1/√dK after its projection, torch.nn.MultiheadAttention scales the scores: the same
 * numbers. Any other tensor is refused, naming it.
 */
import type { MultiheadAttention } from '../../nn/attention.ts';
import { sinusoidalTable, type Linear } from '../../nn/layers.ts';
import type { Module } from '../../nn/module.ts';
import type { LinearSite } from './peft.ts';
import { shapeToString } from '../../tensor/shape.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { fused, sameValues } from './tensors.ts';
import type { Activation } from '../../nn/transformer.ts';
import type { Seq2SeqConfig } from '../seq2seq.ts';

/** The keys of HF's MarianConfig that qkv reads (config.json as the Hub serves it). */
export interface HfMarianConfig {
  /** Must be 'marian'. */
  model_type: string;
  /** The shared vocabulary's size (vocab.json's, <pad> included). */
  vocab_size: number;
  /** The decoder's vocabulary; must equal vocab_size (separate vocabularies are refused). */
  decoder_vocab_size?: number | null;
  /** Width of every layer. */
  d_model: number;
  /** Layers of each stack. */
  encoder_layers: number;
  decoder_layers: number;
  /** Heads per attention; the encoder's and decoder's must be equal. */
  encoder_attention_heads: number;
  decoder_attention_heads: number;
  /** Feed-forward width; the encoder's and decoder's must be equal. */
  encoder_ffn_dim: number;
  decoder_ffn_dim: number;
  /** Rows of the position table (512 in opus-mt). */
  max_position_embeddings: number;
  /** `swish` in opus-mt; also `silu`, `relu`, `gelu`. */
  activation_function?: string;
  /** Embeddings × √d_model (default false in MarianConfig; true in every opus-mt config). */
  scale_embedding?: boolean;
  /** The padding id (the last id in opus-mt). */
  pad_token_id: number;
  /** The end-of-sentence id (0 in opus-mt). */
  eos_token_id: number;
  /** The decoder's first input (the padding id in opus-mt). */
  decoder_start_token_id?: number;
  /** One table for encoder and decoder (default true); false is refused. */
  share_encoder_decoder_embeddings?: boolean;
}

/** HF's ACT2FN names qkv's feed-forward block has. */
const ACTIVATIONS: Record<string, Activation> = { swish: 'silu', silu: 'silu', relu: 'relu', gelu: 'gelu' };

/** The ids a Marian model decodes with. */
export interface MarianIds {
  /** The padding id. */
  padId: number;
  /** The end-of-sentence id. */
  eosId: number;
  /** The decoder's first input (config.json decoder_start_token_id, default the padding id). */
  decoderStartId: number;
}

function positiveInt(c: Record<string, unknown>, k: string): number {
  const v = c[k];
  if (!Number.isInteger(v) || (v as number) <= 0)
    throw new Error(`config.json: ${k} must be a positive integer, got ${JSON.stringify(v)}`);
  return v as number;
}

/**
 * qkv's Seq2SeqConfig and the special ids of an HF Marian config.json, or one line naming the key that
 * does not fit.
 */
export function marianConfigFromHf(json: unknown): { model: Seq2SeqConfig; ids: MarianIds } {
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw new Error(`config.json: expected a JSON object, got ${json === null ? 'null' : typeof json}`);
  const c = json as Record<string, unknown>;
  if (c.model_type !== 'marian') throw new Error(`config.json: model_type '${String(c.model_type)}' is not 'marian'`);
  const V = positiveInt(c, 'vocab_size');
  const d = positiveInt(c, 'd_model');
  for (const [a, b] of [
    ['encoder_attention_heads', 'decoder_attention_heads'],
    ['encoder_ffn_dim', 'decoder_ffn_dim'],
  ]) {
    if (positiveInt(c, a) !== positiveInt(c, b))
      throw new Error(`config.json: ${a} ${String(c[a])} differs from ${b} ${String(c[b])} (qkv builds one size)`);
  }
  const heads = c.encoder_attention_heads as number;
  if (d % heads !== 0)
    throw new Error(`config.json: d_model ${d} is not divisible by encoder_attention_heads ${heads}`);
  if (c.share_encoder_decoder_embeddings === false || (c.decoder_vocab_size != null && c.decoder_vocab_size !== V))
    throw new Error(
      `config.json: separate encoder and decoder vocabularies (share_encoder_decoder_embeddings false, ` +
        `decoder_vocab_size ${String(c.decoder_vocab_size)}) are not supported: qkv reads opus-mt's one shared table`,
    );
  const act = c.activation_function ?? 'swish';
  const activation = typeof act === 'string' && Object.hasOwn(ACTIVATIONS, act) ? ACTIVATIONS[act] : undefined;
  if (!activation)
    throw new Error(
      `config.json: activation_function ${JSON.stringify(act)} is not supported (expected one of ` +
        `${Object.keys(ACTIVATIONS).join(', ')})`,
    );
  const id = (k: string, fallback?: number): number => {
    const v = c[k] ?? fallback;
    if (!Number.isInteger(v) || (v as number) < 0 || (v as number) >= V)
      throw new Error(`config.json: ${k} must be an id in [0, ${V}), got ${JSON.stringify(c[k])}`);
    return v as number;
  };
  const padId = id('pad_token_id');
  const ids = { padId, eosId: id('eos_token_id'), decoderStartId: id('decoder_start_token_id', padId) };
  if (ids.eosId === padId) throw new Error(`config.json: eos_token_id ${ids.eosId} equals pad_token_id`);
  const model: Seq2SeqConfig = {
    vocabSize: V,
    dModel: d,
    nhead: heads,
    numEncoderLayers: positiveInt(c, 'encoder_layers'),
    numDecoderLayers: positiveInt(c, 'decoder_layers'),
    dimFeedforward: c.encoder_ffn_dim as number,
    dropout: 0, // inference: HF's dropouts only matter when training
    activation,
    normFirst: false,
    maxLen: positiveInt(c, 'max_position_embeddings'),
    padId,
    positionLayout: 'halves',
    scaleEmbedding: c.scale_embedding === true,
    finalNorm: false,
    finalLogitsBias: true,
    maskTargetPadding: false,
  };
  return { model, ids };
}

/** The largest |a − b| between two same-shaped tensors. */
function maxDiff(a: Tensor, b: Tensor): number {
  const x = a.dataSync<Float32Array>();
  const y = b.dataSync<Float32Array>();
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i] - y[i]));
  return Number.isNaN(m) ? Infinity : m;
}

/** How far a stored position table may be from qkv's: a float32 rounding of the same sinusoids, or fp16's. */
const POSITION_TOLERANCE = 2e-3;

const LAYER_NAMES: Record<'encoder' | 'decoder', Record<string, string>> = {
  encoder: {
    'self_attn.out_proj': 'self_attn.out_proj',
    fc1: 'linear1',
    fc2: 'linear2',
    self_attn_layer_norm: 'norm1',
    final_layer_norm: 'norm2',
  },
  decoder: {
    'self_attn.out_proj': 'self_attn.out_proj',
    'encoder_attn.out_proj': 'multihead_attn.out_proj',
    fc1: 'linear1',
    fc2: 'linear2',
    self_attn_layer_norm: 'norm1',
    encoder_attn_layer_norm: 'norm2',
    final_layer_norm: 'norm3',
  },
};

/** q, k, v projections of one attention ([q; k; v] rows, as torch's in_proj). */
const QKV = ['q_proj', 'k_proj', 'v_proj'] as const;

/** A tensor of the file by its name (without `model.`), checked against the shape it must have. */
export type TakeTensor = (name: string, shape: number[]) => Tensor;

/**
 * The layers of a BART-family encoder-decoder (Marian, M2M100/NLLB: the same names) into `out` under qkv's
 * Transformer names, q/k/v fused into in_proj (rows [q; k; v]).
 */
export function mapLayers(take: TakeTensor, config: Seq2SeqConfig, out: Record<string, Tensor>): void {
  const { dModel: E, dimFeedforward: Ff } = config;
  for (const side of ['encoder', 'decoder'] as const) {
    const n = side === 'encoder' ? config.numEncoderLayers : config.numDecoderLayers;
    for (let i = 0; i < n; i++) {
      const hf = `${side}.layers.${i}`;
      const qkv = `transformer.${side}.layers.${i}`;
      const attns =
        side === 'encoder'
          ? [['self_attn', 'self_attn']]
          : [
              ['self_attn', 'self_attn'],
              ['encoder_attn', 'multihead_attn'],
            ];
      for (const [a, q] of attns) {
        out[`${qkv}.${q}.in_proj_weight`] = fused(QKV.map((p) => take(`${hf}.${a}.${p}.weight`, [E, E])));
        out[`${qkv}.${q}.in_proj_bias`] = fused(QKV.map((p) => take(`${hf}.${a}.${p}.bias`, [E])));
      }
      for (const [from, to] of Object.entries(LAYER_NAMES[side])) {
        const w = from === 'fc1' ? [Ff, E] : from === 'fc2' ? [E, Ff] : from.endsWith('out_proj') ? [E, E] : [E];
        const b = from === 'fc1' ? [Ff] : [E];
        out[`${qkv}.${to}.weight`] = take(`${hf}.${from}.weight`, w);
        out[`${qkv}.${to}.bias`] = take(`${hf}.${from}.bias`, b);
      }
    }
  }
}

/**
 * qkv's Seq2Seq state dict from HF Marian tensors (names with or without the `model.` prefix): q/k/v
 * fused, the tied tables and the position tables checked. An Error names the first tensor that is
 * missing, unexpected, or differs from what it must equal.
 */
export function marianStateDict(tensors: Record<string, Tensor>, config: Seq2SeqConfig): Record<string, Tensor> {
  const byName = new Map<string, Tensor>();
  for (const [k, t] of Object.entries(tensors)) {
    if (t.dtype !== 'float32') throw new Error(`${k}: expected floating-point values, got ${t.dtype}`);
    byName.set(k.startsWith('model.') ? k.slice('model.'.length) : k, t);
  }
  const used = new Set<string>();
  const take = (name: string, shape: number[]): Tensor => {
    const t = byName.get(name);
    if (!t) throw new Error(`missing tensor model.${name}`);
    if (shapeToString(t.shape) !== shapeToString(shape))
      throw new Error(`${name}: expected shape ${shapeToString(shape)}, got ${shapeToString(t.shape)}`);
    used.add(name);
    return t;
  };
  const { vocabSize: V, dModel: E, maxLen } = config;
  // The shared table; a file that kept only one of its tied names holds it under that name.
  const TIED = ['shared.weight', 'encoder.embed_tokens.weight', 'decoder.embed_tokens.weight', 'lm_head.weight'];
  const sharedName = TIED.find((n) => byName.has(n)) ?? 'shared.weight';
  const shared = take(sharedName, [V, E]);
  const out: Record<string, Tensor> = { 'embedding.weight': shared };
  // Tied copies (pytorch_model.bin holds them all; save_pretrained's safetensors may drop them).
  for (const name of TIED) {
    if (name === sharedName || !byName.has(name)) continue;
    if (!sameValues(take(name, [V, E]), shared))
      throw new Error(
        `${name} differs from ${tensorsName(tensors, sharedName)}: qkv ties the embeddings and the output projection`,
      );
  }
  const bias = byName.has('final_logits_bias') ? take('final_logits_bias', [1, V]) : null;
  out.finalLogitsBias = bias ?? new Tensor(new Float32Array(V), [1, V], 'float32');
  // The position tables are fixed sinusoids (never trained): checked, and qkv's own used.
  const table = sinusoidalTable(maxLen, E, 'halves');
  for (const side of ['encoder', 'decoder']) {
    const name = `${side}.embed_positions.weight`;
    if (!byName.has(name)) continue;
    const t = take(name, [maxLen, E]);
    const diff = maxDiff(t, table);
    if (!(diff <= POSITION_TOLERANCE))
      throw new Error(
        `${name} is not Marian's sinusoid table (sines, then cosines; differs by up to ${diff}): ` +
          `qkv computes the positions and does not load them`,
      );
  }
  mapLayers(take, config, out);
  for (const name of byName.keys()) {
    if (!used.has(name))
      throw new Error(`unexpected tensor ${tensorsName(tensors, name)} (not part of a Marian model qkv reads)`);
  }
  return out;
}

/** A tensor's name as the file spells it. */
function tensorsName(tensors: Record<string, Tensor>, name: string): string {
  return Object.hasOwn(tensors, `model.${name}`) ? `model.${name}` : name;
}

/** How generate() decodes a Marian folder by default: the encoder-decoder reader's (./seq2seq-generation.ts). */
export {
  checkGenerationIds,
  hfSeq2SeqGeneration as hfGeneration,
  type HfGeneration,
} from './seq2seq-generation.ts';
// ---- Fine-tuning: the linear layers PEFT adapts, and the weights written back under HF's names -------------

/** A submodule of `model` by its qkv path (`transformer.encoder.layers.0.self_attn`). */
function moduleAt<M>(model: Module, path: string): M {
  const m = model.namedModules().find(([n]) => n === path);
  if (!m) throw new Error(`internal: no module '${path}' in the Seq2Seq`);
  return m[1] as M;
}

/** HF attention names and qkv's, per stack. */
const ATTENTIONS = {
  encoder: [['self_attn', 'self_attn']],
  decoder: [
    ['self_attn', 'self_attn'],
    ['encoder_attn', 'multihead_attn'],
  ],
};

/**
 * MarianMTModel's linear layers by their module paths (`model.encoder.layers.0.self_attn.q_proj`), as PEFT matches
 * target_modules against them, on qkv's layers: q/k/v_proj are rows of the packed in_proj_weight, out_proj, fc1 and
 * fc2 nn.Linear layers. lm_head is the shared table (tied), not a site.
 */
export function marianLinearSites(model: Module, config: Seq2SeqConfig): LinearSite[] {
  const E = config.dModel;
  const sites: LinearSite[] = [];
  for (const side of ['encoder', 'decoder'] as const) {
    const n = side === 'encoder' ? config.numEncoderLayers : config.numDecoderLayers;
    for (let i = 0; i < n; i++) {
      const hf = `model.${side}.layers.${i}`;
      const qkv = `transformer.${side}.layers.${i}`;
      for (const [a, q] of ATTENTIONS[side]) {
        const attention = moduleAt<MultiheadAttention>(model, `${qkv}.${q}`);
        for (const part of ['q', 'k', 'v'] as const)
          sites.push({
            path: `${hf}.${a}.${part}_proj`,
            layer: { attention, part },
            inFeatures: E,
            outFeatures: E,
            conv1d: false,
          });
        sites.push(linearSite(`${hf}.${a}.out_proj`, moduleAt<Linear>(model, `${qkv}.${q}.out_proj`)));
      }
      sites.push(linearSite(`${hf}.fc1`, moduleAt<Linear>(model, `${qkv}.linear1`)));
      sites.push(linearSite(`${hf}.fc2`, moduleAt<Linear>(model, `${qkv}.linear2`)));
    }
  }
  return sites;
}

function linearSite(path: string, linear: Linear): LinearSite {
  return { path, layer: { linear }, inFeatures: linear.inFeatures, outFeatures: linear.outFeatures, conv1d: false };
}

/**
 * A Seq2Seq's state dict (qkv's names: `model.stateDict()`, or any tensors by those names, such as gradients) under
 * MarianMTModel's names, as save_pretrained writes them (transformers 5: the shared table once as
 * `model.shared.weight`, no position tables, `final_logits_bias`), q/k/v split out of in_proj, so transformers opens
 * the folder. New tensors, not the given ones.
 */
export function marianHfStateDict(own: Record<string, Tensor>, config: Seq2SeqConfig): Record<string, Tensor> {
  const get = (k: string): Tensor => {
    const t = own[k];
    if (!t) throw new Error(`internal: no '${k}' in the Seq2Seq`);
    return t;
  };
  const E = config.dModel;
  const out: Record<string, Tensor> = {
    final_logits_bias: get('finalLogitsBias').clone(),
    'model.shared.weight': get('embedding.weight').clone(),
  };
  for (const side of ['encoder', 'decoder'] as const) {
    const n = side === 'encoder' ? config.numEncoderLayers : config.numDecoderLayers;
    for (let i = 0; i < n; i++) {
      const hf = `model.${side}.layers.${i}`;
      const qkv = `transformer.${side}.layers.${i}`;
      for (const [a, q] of ATTENTIONS[side]) {
        const w = get(`${qkv}.${q}.in_proj_weight`).dataSync<Float32Array>();
        const b = get(`${qkv}.${q}.in_proj_bias`).dataSync<Float32Array>();
        QKV.forEach((p, j) => {
          out[`${hf}.${a}.${p}.weight`] = new Tensor(w.slice(j * E * E, (j + 1) * E * E), [E, E], 'float32');
          out[`${hf}.${a}.${p}.bias`] = new Tensor(b.slice(j * E, (j + 1) * E), [E], 'float32');
        });
      }
      for (const [from, to] of Object.entries(LAYER_NAMES[side])) {
        out[`${hf}.${from}.weight`] = get(`${qkv}.${to}.weight`).clone();
        out[`${hf}.${from}.bias`] = get(`${qkv}.${to}.bias`).clone();
      }
    }
  }
  return out;
}
