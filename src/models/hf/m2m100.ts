/**
 * Hugging Face M2M100 checkpoints (facebook/m2m100_*, facebook/nllb-200-*: config.json model_type 'm2m_100') onto
 * qkv's own Seq2Seq: a mapping of names and layouts, not a second model. HF's M2M100ForConditionalGeneration
 * (modeling_m2m_100.py, fairseq's transformer) differs from the paper's in these switches:
 *
 *   - positions: fairseq's sinusoids (positionLayout 'fairseq': frequencies exp(−j·ln 10000/(d/2 − 1)), sines then
 *     cosines), numbered from padding_idx + 1 (positionOffset), computed and never stored;
 *   - embeddings × √d_model (`scale_embedding`), one table for the encoder, the decoder and the output projection;
 *   - pre-norm layers (normFirst), and a LayerNorm after each stack (finalNorm);
 *   - no bias on the logits; decoding starts from `decoder_start_token_id` (EOS, 2), which the decoder attends to
 *     (maskTargetPadding false, as generate() passes no decoder mask); layer drop only matters when training.
 *
 *   HF (model.safetensors / pytorch_model.bin)      qkv (Seq2Seq state dict)
 *   model.shared.weight (V, E)                       embedding.weight (also …embed_tokens, lm_head: tied, checked)
 *   model.{encoder,decoder}.layer_norm.*             transformer.{encoder,decoder}.norm.*
 *   model.{encoder,decoder}.layers.i.*               as Marian's layers (./marian.ts mapLayers)
 *
 * One difference is not reproduced: HF gives a padding id *inside* a target the padding position (a zero row),
 * qkv the next position; generate() never feeds one unless the model generates `<pad>`.
 */
import { shapeToString } from '../../tensor/shape.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import type { Activation } from '../../nn/transformer.ts';
import type { Seq2SeqConfig } from '../seq2seq.ts';
import { mapLayers, type MarianIds } from './marian.ts';

/** HF's ACT2FN names qkv's feed-forward block has. */
const ACTIVATIONS: Record<string, Activation> = { relu: 'relu', gelu: 'gelu', silu: 'silu', swish: 'silu' };

function positiveInt(c: Record<string, unknown>, k: string): number {
  const v = c[k];
  if (!Number.isInteger(v) || (v as number) <= 0)
    throw new Error(`config.json: ${k} must be a positive integer, got ${JSON.stringify(v)}`);
  return v as number;
}

/**
 * qkv's Seq2SeqConfig and the special ids of an HF M2M100 config.json, or one line naming the key that does not
 * fit.
 */
export function m2m100ConfigFromHf(json: unknown): { model: Seq2SeqConfig; ids: MarianIds } {
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw new Error(`config.json: expected a JSON object, got ${json === null ? 'null' : typeof json}`);
  const c = json as Record<string, unknown>;
  if (c.model_type !== 'm2m_100') throw new Error(`config.json: model_type '${String(c.model_type)}' is not 'm2m_100'`);
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
  if (c.tie_word_embeddings === false)
    throw new Error('config.json: tie_word_embeddings false is not supported (qkv ties the output projection)');
  const act = c.activation_function ?? 'relu';
  const activation = typeof act === 'string' && Object.hasOwn(ACTIVATIONS, act) ? ACTIVATIONS[act] : undefined;
  if (!activation)
    throw new Error(
      `config.json: activation_function ${JSON.stringify(act)} is not supported (expected one of ` +
        `${Object.keys(ACTIVATIONS).join(', ')})`,
    );
  const id = (k: string, fallback: number): number => {
    const v = c[k] ?? fallback;
    if (!Number.isInteger(v) || (v as number) < 0 || (v as number) >= V)
      throw new Error(`config.json: ${k} must be an id in [0, ${V}), got ${JSON.stringify(c[k])}`);
    return v as number;
  };
  // M2M100Config's defaults: pad 1, eos 2, decoder start 2.
  const padId = id('pad_token_id', 1);
  const ids = { padId, eosId: id('eos_token_id', 2), decoderStartId: id('decoder_start_token_id', 2) };
  if (ids.eosId === padId) throw new Error(`config.json: eos_token_id ${ids.eosId} equals pad_token_id`);
  const model: Seq2SeqConfig = {
    vocabSize: V,
    dModel: d,
    nhead: heads,
    numEncoderLayers: positiveInt(c, 'encoder_layers'),
    numDecoderLayers: positiveInt(c, 'decoder_layers'),
    dimFeedforward: c.encoder_ffn_dim as number,
    dropout: 0, // inference: HF's dropouts and layer drop only matter when training
    activation,
    normFirst: true,
    maxLen: positiveInt(c, 'max_position_embeddings'),
    padId,
    positionLayout: 'fairseq',
    positionOffset: padId + 1,
    scaleEmbedding: c.scale_embedding !== false, // M2M100Config's default is true
    finalNorm: true,
    finalLogitsBias: false,
    maskTargetPadding: false,
  };
  return { model, ids };
}

/**
 * qkv's Seq2Seq state dict from HF M2M100 tensors (names with or without `model.`): q/k/v fused, the tied tables
 * checked equal. An Error names the first tensor that is missing, unexpected, or differs from what it must equal.
 */
export function m2m100StateDict(tensors: Record<string, Tensor>, config: Seq2SeqConfig): Record<string, Tensor> {
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
  const { vocabSize: V, dModel: E } = config;
  const TIED = ['shared.weight', 'encoder.embed_tokens.weight', 'decoder.embed_tokens.weight', 'lm_head.weight'];
  const sharedName = TIED.find((n) => byName.has(n)) ?? 'shared.weight';
  const shared = take(sharedName, [V, E]);
  const out: Record<string, Tensor> = { 'embedding.weight': shared };
  for (const name of TIED) {
    if (name === sharedName || !byName.has(name)) continue;
    const t = take(name, [V, E]).dataSync<Float32Array>();
    const s = shared.dataSync<Float32Array>();
    if (t.some((x, i) => x !== s[i]))
      throw new Error(`${name} differs from ${sharedName}: qkv ties the embeddings and the output projection`);
  }
  for (const side of ['encoder', 'decoder'] as const) {
    out[`transformer.${side}.norm.weight`] = take(`${side}.layer_norm.weight`, [E]);
    out[`transformer.${side}.norm.bias`] = take(`${side}.layer_norm.bias`, [E]);
  }
  mapLayers(take, config, out);
  for (const name of byName.keys()) {
    if (!used.has(name)) throw new Error(`unexpected tensor ${name} (not part of an M2M100 model qkv reads)`);
  }
  return out;
}
