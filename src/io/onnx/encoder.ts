/**
 * A qkv Encoder (BERT, RoBERTa, XLM-R, DistilBERT: models/encoder.ts) as one ONNX graph, in the layout of Hugging
 * Face's encoder exports (optimum's model.onnx, which transformers.js runs):
 *
 *   model.onnx  input_ids, attention_mask (B, T) int64 [, token_type_ids (B, T) int64 where the model has a
 *               token-type table of more than one row (BERT)] → last_hidden_state (B, T, E)
 *               [, logits (B, T, V) masked-LM | (B, labels) classification] [, pooler_output (B, E) bare BERT]
 *
 * The same computation as Encoder.forward and its heads: word (+ token type) + position rows, summed in that
 * order, the embedding LayerNorm, N post-norm layers (LayerNorm(x + Sublayer(x)), the config's ε and
 * activation), padding keys masked with −∞ as qkv's key_padding_mask. Positions are numbered in the graph as
 * models/encoder.ts's positionIds numbers them: 0..T−1, or RoBERTa's after the padding id (padId + the running
 * count of non-padding ids, padId at padding). With `withAttention`, also attentions.N (B, h, T, T).
 */
import type { EncoderConfig } from '../../models/encoder.ts';
import type { Activation } from '../../nn/transformer.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { GraphBuilder } from './builder.ts';
import {
  attend,
  dim,
  feedForward,
  gelu,
  keepMaskBias,
  layerNorm,
  linear,
  matmulT,
  projectSelf,
  tableRows,
  Weights,
} from './layers.ts';
import type { ExportOptions } from './seq2seq.ts';

/** Position ids (B, T) int64 of `ids` (B, T) as the config numbers them (models/encoder.ts positionIds). */
function positions(g: GraphBuilder, c: EncoderConfig, ids: string): string {
  if (c.positions === 'absolute') {
    const T = g.op('Squeeze', [dim(g, ids, 1), g.constInt([0])], 'T');
    const range = g.op('Range', [g.constInt([0], true), T, g.constInt([1], true)], 'positions.range'); // (T)
    return g.op('Unsqueeze', [range, g.constInt([0])], 'positions'); // (1, T), broadcast over B
  }
  // fairseq: cumsum(id ≠ pad) · (id ≠ pad) + pad.
  const notPad = g.op(
    'Cast',
    [g.op('Not', [g.op('Equal', [ids, g.constInt([c.padId], true)], 'is_pad')], 'not_pad')],
    'not_pad.i',
    { to: 7 /* INT64 */ },
  );
  const count = g.op('CumSum', [notPad, g.constInt([1], true)], 'positions.count'); // (B, T)
  return g.op('Add', [g.op('Mul', [count, notPad], 'positions.kept'), g.constInt([c.padId], true)], 'positions');
}

/** (B, T, E) → (B, E): the first position of every row ([CLS], <s>). */
function firstToken(g: GraphBuilder, x: string): string {
  return g.op('Gather', [x, g.constInt([0], true)], 'first_token', { axis: 1 });
}

/**
 * `model.onnx` of an Encoder (see the file comment): the inputs its config takes, last_hidden_state and the
 * head's output. Returns the serialised ModelProto.
 */
export function encoderModelGraph(
  c: EncoderConfig,
  weights: Record<string, Tensor>,
  o: ExportOptions = {},
): Uint8Array {
  const g = new GraphBuilder('qkv_encoder', o.dtype ?? 'fp32');
  const w = new Weights(g, weights, 'ONNX export');
  const E = c.dModel;
  const h = c.nhead;
  const [Bd, Td] = ['batch_size', 'sequence_length'];
  const ids = g.input('input_ids', 'int64', [Bd, Td]);
  const mask = g.input('attention_mask', 'int64', [Bd, Td]);
  let x = tableRows(g, w, 'embeddings.word.weight', ids, 'word_emb');
  if (c.typeVocabSize > 0) {
    // A table of one row (RoBERTa, XLM-R) is always row 0, which Encoder.forward adds when no type ids are given:
    // no input for it, as in optimum's RoBERTa exports.
    // (B, T), or the scalar 0.
    const types = c.typeVocabSize > 1 ? g.input('token_type_ids', 'int64', [Bd, Td]) : g.constInt([0], true);
    const rows = tableRows(g, w, 'embeddings.tokenType.weight', types, 'type_emb', c.typeVocabSize > 1 ? 2 : 0);
    x = g.op('Add', [x, rows], 'word_type_emb'); // (B, T, E) + (B, T, E) or (E)
  }
  const pos = positions(g, c, ids);
  x = g.op('Add', [x, tableRows(g, w, 'embeddings.position.weight', pos, 'pos_emb')], 'embedded');
  x = layerNorm(g, w, x, 'embeddings.norm', c.layerNormEps);
  const bias = keepMaskBias(g, mask);
  const attn: string[] = [];
  for (let i = 0; i < c.numLayers; i++) {
    const p = `encoder.layers.${i}`;
    // Post-norm (§3.1, BERT): LayerNorm(x + Sublayer(x)).
    const { q, k, v } = projectSelf(g, w, x, `${p}.self_attn`, h, E);
    const r = attend(g, w, `${p}.self_attn`, q, k, v, bias, E, h);
    attn.push(r.weights);
    x = layerNorm(g, w, g.op('Add', [x, r.out], `${p}.res1`), `${p}.norm1`, c.layerNormEps);
    const ff = feedForward(g, w, x, `${p}.linear1`, `${p}.linear2`, c.activation);
    x = layerNorm(g, w, g.op('Add', [x, ff], `${p}.res2`), `${p}.norm2`, c.layerNormEps);
  }
  g.output('last_hidden_state', x, 'float32', [Bd, Td, E]);
  const head = c.head;
  if (head.kind === 'masked-lm') {
    const d = linear(g, w, x, 'mlmDense');
    const a = activate(g, d, head.activation);
    const t = layerNorm(g, w, a, 'mlmNorm', head.layerNormEps);
    // The tied word table as the output projection, plus the head's own bias.
    const logits = g.op('Add', [matmulT(g, w, t, 'embeddings.word.weight', 'mlm.mm'), w.get('mlmBias')], 'logits');
    g.output('logits', logits, 'float32', [Bd, Td, c.vocabSize]);
  } else if (head.kind === 'classification') {
    const d = linear(g, w, firstToken(g, x), 'classifierDense'); // (B, E)
    const a = g.op(head.activation === 'tanh' ? 'Tanh' : 'Relu', [d], 'classifier.act');
    g.output('logits', linear(g, w, a, 'classifierOut'), 'float32', [Bd, head.numLabels]);
  } else if (head.pooler) {
    const pooled = g.op('Tanh', [linear(g, w, firstToken(g, x), 'pooler')], 'pooled');
    g.output('pooler_output', pooled, 'float32', [Bd, E]);
  }
  if (o.withAttention) attn.forEach((a, i) => g.output(`attentions.${i}`, a, 'float32', [Bd, h, Td, Td]));
  return g.toBytes('qkv encoder (BERT family)');
}

/** The masked-LM transform's activation (as Encoder.maskedLM's: GELU (erf), ReLU or SiLU). */
function activate(g: GraphBuilder, x: string, a: Activation): string {
  if (a === 'relu') return g.op('Relu', [x], 'mlm.relu');
  if (a === 'silu') return g.op('Mul', [x, g.op('Sigmoid', [x], 'mlm.sigmoid')], 'mlm.silu');
  return gelu(g, x);
}
