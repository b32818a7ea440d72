/**
 * A qkv Seq2Seq as three ONNX graphs, in the layout of Hugging Face's encoder-decoder exports
 * (optimum's encoder_model / decoder_model / decoder_with_past_model):
 *
 *   encoder_model.onnx            input_ids, attention_mask (B, S) int64
 *                                 → last_hidden_state (B, S, E)
 *   decoder_model.onnx            input_ids (B, L), encoder_attention_mask (B, S), encoder_hidden_states (B, S, E)
 *                                 → logits (B, L, V), present.N.decoder.{key,value} (B, h, L, dK),
 *                                   present.N.encoder.{key,value} (B, h, S, dK)
 *   decoder_with_past_model.onnx  input_ids (B, L), encoder_attention_mask (B, S),
 *                                 past_key_values.N.decoder.{key,value} (B, h, P, dK),
 *                                 past_key_values.N.encoder.{key,value} (B, h, S, dK)
 *                                 → logits (B, L, V), present.N.decoder.{key,value} (B, h, P + L, dK)
 *
 * The same computation as qkv's Seq2Seq.forward / decodeIncremental: embeddings · √dModel plus
 * the sinusoid of each position (§3.4–3.5), post-norm (or pre-norm) layers, the final LayerNorm of
 * each stack, and logits with the tied embedding matrix. Target ids equal to padId are masked as
 * keys, as qkv does; past positions are taken as non-padding (decoding never feeds padding).
 * Marian's switches (models/hf/marian.ts) are built as Seq2Seq computes them: positions in sin|cos
 * halves, no embedding scale where scaleEmbedding is false, SiLU, no final LayerNorms, the final
 * logits bias, and no target padding mask.
 * With `withAttention`, every layer's per-head weights are extra outputs: encoder_attentions.N
 * (B, h, S, S), decoder_attentions.N (B, h, L, P + L), cross_attentions.N (B, h, L, S).
 */
import type { Seq2SeqConfig } from '../../models/seq2seq.ts';
import { sinusoidalTable } from '../../nn/layers.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { GraphBuilder, type WeightDType } from './builder.ts';
import {
  attend,
  causalBias,
  dim,
  feedForward,
  keepMaskBias,
  layerNorm,
  matmulT,
  projectPart,
  projectSelf,
  tableRows,
  Weights,
} from './layers.ts';

/** Options of the graph writers. */
export interface ExportOptions {
  /** Initializers as fp32 (default), or fp16 each followed by a Cast to fp32. */
  dtype?: WeightDType;
  /** Also output every layer's per-head attention weights. */
  withAttention?: boolean;
}

const EPS = 1e-5;

/** The target side's embedding table: its own with separate vocabularies, else the shared one. */
function targetTable(c: Seq2SeqConfig): string {
  return c.tgtVocabSize === undefined ? 'embedding.weight' : 'tgtEmbedding.weight';
}

/** Token embedding (of `table`) · √dModel + the sinusoids of positions `positions` (L): (B, L, E). */
function embed(
  g: GraphBuilder,
  w: Weights,
  c: Seq2SeqConfig,
  ids: string,
  positions: string,
  table = 'embedding.weight',
): string {
  const tok = tableRows(g, w, table, ids, 'tok_emb');
  const scaled =
    (c.scaleEmbedding ?? true) ? g.op('Mul', [tok, g.constFloat(Math.sqrt(c.dModel))], 'tok_emb_scaled') : tok;
  // fairseq's models (M2M100/NLLB) number positions from padding_idx + 1: the table's rows start there.
  const first = c.positionOffset ?? 0;
  const rows = c.maxLen + first;
  const table2 = sinusoidalTable(rows, c.dModel, c.positionLayout).dataSync() as Float32Array;
  const pe = g.table('positions.pe', table2, [rows, c.dModel]);
  const at = first === 0 ? positions : g.op('Add', [positions, g.constInt([first], true)], 'positions.offset');
  return g.op('Add', [scaled, g.op('Gather', [pe, at], 'pos_emb')], 'embedded');
}

/** Post-norm LayerNorm(x + f(x)) or pre-norm x + f(LayerNorm(x)). */
function residual(
  g: GraphBuilder,
  w: Weights,
  c: Seq2SeqConfig,
  x: string,
  norm: string,
  f: (y: string) => string,
): string {
  if (c.normFirst) return g.op('Add', [x, f(layerNorm(g, w, x, norm, EPS))], `${norm}.res`);
  return layerNorm(g, w, g.op('Add', [x, f(x)], `${norm}.res`), norm, EPS);
}

/**
 * `encoder_model.onnx`: input_ids and attention_mask (B, S) int64 in, last_hidden_state (B, S, E)
 * out (and encoder_attentions.N with `withAttention`). Returns the serialised ModelProto.
 */
export function seq2seqEncoderGraph(
  c: Seq2SeqConfig,
  weights: Record<string, Tensor>,
  o: ExportOptions = {},
): Uint8Array {
  const g = new GraphBuilder('qkv_seq2seq_encoder', o.dtype ?? 'fp32');
  const w = new Weights(g, weights, 'ONNX export');
  const E = c.dModel;
  const ids = g.input('input_ids', 'int64', ['batch_size', 'encoder_sequence_length']);
  const mask = g.input('attention_mask', 'int64', ['batch_size', 'encoder_sequence_length']);
  const positions = g.op(
    'Range',
    [g.constInt([0], true), g.op('Squeeze', [dim(g, ids, 1), g.constInt([0])], 'S'), g.constInt([1], true)],
    'positions',
  );
  const bias = keepMaskBias(g, mask);
  let x = embed(g, w, c, ids, positions);
  const attn: string[] = [];
  for (let i = 0; i < c.numEncoderLayers; i++) {
    const p = `transformer.encoder.layers.${i}`;
    x = residual(g, w, c, x, `${p}.norm1`, (y) => {
      const { q, k, v } = projectSelf(g, w, y, `${p}.self_attn`, c.nhead, E);
      const r = attend(g, w, `${p}.self_attn`, q, k, v, bias, E, c.nhead);
      attn.push(r.weights);
      return r.out;
    });
    x = residual(g, w, c, x, `${p}.norm2`, (y) => feedForward(g, w, y, `${p}.linear1`, `${p}.linear2`, c.activation));
  }
  if (c.finalNorm ?? true) x = layerNorm(g, w, x, 'transformer.encoder.norm', EPS);
  g.output('last_hidden_state', x, 'float32', ['batch_size', 'encoder_sequence_length', E]);
  if (o.withAttention)
    attn.forEach((a, i) =>
      g.output(`encoder_attentions.${i}`, a, 'float32', [
        'batch_size',
        c.nhead,
        'encoder_sequence_length',
        'encoder_sequence_length',
      ]),
    );
  return g.toBytes('qkv Seq2Seq encoder');
}

/** decoder_model.onnx (withPast false: the first step, from encoder_hidden_states) or decoder_with_past_model.onnx. */
export function seq2seqDecoderGraph(
  c: Seq2SeqConfig,
  weights: Record<string, Tensor>,
  withPast: boolean,
  o: ExportOptions = {},
): Uint8Array {
  const g = new GraphBuilder(withPast ? 'qkv_seq2seq_decoder_with_past' : 'qkv_seq2seq_decoder', o.dtype ?? 'fp32');
  const w = new Weights(g, weights, 'ONNX export');
  const E = c.dModel;
  const h = c.nhead;
  const dK = E / h;
  const N = c.numDecoderLayers;
  const [Bd, Ld, Sd, Pd, Td] = [
    'batch_size',
    'decoder_sequence_length',
    'encoder_sequence_length',
    'past_decoder_sequence_length',
    'total_decoder_sequence_length',
  ];
  const ids = g.input('input_ids', 'int64', [Bd, Ld]);
  const memMask = g.input('encoder_attention_mask', 'int64', [Bd, Sd]);
  const memory = withPast ? null : g.input('encoder_hidden_states', 'float32', [Bd, Sd, E]);
  const past: { k: string; v: string; ck: string; cv: string }[] = [];
  if (withPast) {
    for (let i = 0; i < N; i++) {
      const n = `past_key_values.${i}`;
      past.push({
        k: g.input(`${n}.decoder.key`, 'float32', [Bd, h, Pd, dK]),
        v: g.input(`${n}.decoder.value`, 'float32', [Bd, h, Pd, dK]),
        ck: g.input(`${n}.encoder.key`, 'float32', [Bd, h, Sd, dK]),
        cv: g.input(`${n}.encoder.value`, 'float32', [Bd, h, Sd, dK]),
      });
    }
  }
  // Positions past .. past + L − 1; self-attention bias (B, 1, L, T): causal + padding ids as keys.
  const pastLen = withPast && N > 0 ? dim(g, past[0].k, 2) : g.constInt([0]);
  const total = g.op('Add', [pastLen, dim(g, ids, 1)], 'total');
  const { bias: causal, positions } = causalBias(g, pastLen, total);
  // Marian attends to its padding start id (maskTargetPadding false): no target padding is masked.
  const padId = (c.maskTargetPadding ?? true) ? c.padId : -1;
  const newPad = g.op(
    'Where',
    [g.op('Equal', [ids, g.constInt([padId], true)], 'is_pad'), g.constFloat(-Infinity), g.constFloat(0)],
    'pad_bias_new',
  ); // (B, L)
  const pastZeros = g.op(
    'ConstantOfShape',
    [g.op('Concat', [dim(g, ids, 0), pastLen], 'past_shape', { axis: 0 })],
    'pad_bias_past',
  ); // (B, P) of 0
  const padBias = g.op(
    'Unsqueeze',
    [g.op('Concat', [pastZeros, newPad], 'pad_bias', { axis: 1 }), g.constInt([1, 2])],
    'pad_bias4',
  ); // (B, 1, 1, T)
  const selfBias = g.op('Add', [causal, padBias], 'self_bias');
  const crossBias = keepMaskBias(g, memMask);

  let x = embed(g, w, c, ids, positions, targetTable(c));
  const selfW: string[] = [];
  const crossW: string[] = [];
  for (let i = 0; i < N; i++) {
    const p = `transformer.decoder.layers.${i}`;
    const n = `present.${i}`;
    x = residual(g, w, c, x, `${p}.norm1`, (y) => {
      const cur = projectSelf(g, w, y, `${p}.self_attn`, h, E);
      const k = withPast ? g.op('Concat', [past[i].k, cur.k], `${n}.k`, { axis: 2 }) : cur.k; // (B, h, T, dK)
      const v = withPast ? g.op('Concat', [past[i].v, cur.v], `${n}.v`, { axis: 2 }) : cur.v;
      g.output(`${n}.decoder.key`, k, 'float32', [Bd, h, withPast ? Td : Ld, dK]);
      g.output(`${n}.decoder.value`, v, 'float32', [Bd, h, withPast ? Td : Ld, dK]);
      const r = attend(g, w, `${p}.self_attn`, cur.q, k, v, selfBias, E, h);
      selfW.push(r.weights);
      return r.out;
    });
    x = residual(g, w, c, x, `${p}.norm2`, (y) => {
      const a = `${p}.multihead_attn`;
      let ck: string;
      let cv: string;
      if (withPast) {
        ({ ck, cv } = past[i]);
      } else {
        // Cross-attention keys/values of the memory, computed once (the first step) and passed on.
        ck = projectPart(g, w, memory!, a, 1, h, E);
        cv = projectPart(g, w, memory!, a, 2, h, E);
        g.output(`${n}.encoder.key`, ck, 'float32', [Bd, h, Sd, dK]);
        g.output(`${n}.encoder.value`, cv, 'float32', [Bd, h, Sd, dK]);
      }
      const r = attend(g, w, a, projectPart(g, w, y, a, 0, h, E), ck, cv, crossBias, E, h);
      crossW.push(r.weights);
      return r.out;
    });
    x = residual(g, w, c, x, `${p}.norm3`, (y) => feedForward(g, w, y, `${p}.linear1`, `${p}.linear2`, c.activation));
  }
  if (c.finalNorm ?? true) x = layerNorm(g, w, x, 'transformer.decoder.norm', EPS);
  // The pre-softmax projection shares the (target) embedding matrix (§3.4): logits = x·Eᵀ (+ Marian's bias).
  const mm = matmulT(g, w, x, targetTable(c), 'logits_mm');
  const logits = c.finalLogitsBias ? g.op('Add', [mm, w.get('finalLogitsBias')], 'logits_biased') : mm;
  g.output('logits', logits, 'float32', [Bd, Ld, c.tgtVocabSize ?? c.vocabSize]);
  if (o.withAttention) {
    const T = withPast ? Td : Ld;
    selfW.forEach((a, i) => g.output(`decoder_attentions.${i}`, a, 'float32', [Bd, h, Ld, T]));
    crossW.forEach((a, i) => g.output(`cross_attentions.${i}`, a, 'float32', [Bd, h, Ld, Sd]));
  }
  return g.toBytes(withPast ? 'qkv Seq2Seq decoder step with past keys/values' : 'qkv Seq2Seq decoder, first step');
}
