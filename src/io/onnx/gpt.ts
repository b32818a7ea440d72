/**
 * A qkv GPT as one ONNX decoder graph with its key/value cache as inputs and outputs, in the
 * layout of Hugging Face's GPT-2 exports:
 *
 *   decoder_model.onnx  input_ids (B, L) int64, past_key_values.N.{key,value} (B, h, P, dK)
 *                       → logits (B, L, V), present.N.{key,value} (B, h, P + L, dK)
 *
 * The first call passes a past of length 0 (ONNX Runtime accepts empty tensors). The same
 * computation as qkv's GPT.forwardCached: token + position embeddings (learned, or the paper's
 * sinusoids), pre-norm blocks of causal self-attention and a GELU MLP, ln_f, and logits with the
 * tied matrix wte. With `withAttention`, also attentions.N (B, h, L, P + L).
 */
import type { GPTConfig } from '../../models/gpt.ts';
import { sinusoidalTable } from '../../nn/layers.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { GraphBuilder } from './builder.ts';
import { attend, causalBias, dim, feedForward, layerNorm, matmulT, projectSelf, tableRows, Weights } from './layers.ts';
import type { ExportOptions } from './seq2seq.ts';

const EPS = 1e-5;

/**
 * The GPT's one graph, `decoder_model.onnx`: input_ids (B, L) and past_key_values.N.{key,value}
 * (B, h, P, dK; P may be 0) in, logits and present.N.{key,value} out (and attentions.N with
 * `withAttention`). Returns the serialised ModelProto.
 */
export function gptDecoderGraph(c: GPTConfig, weights: Record<string, Tensor>, o: ExportOptions = {}): Uint8Array {
  const g = new GraphBuilder('qkv_gpt_decoder', o.dtype ?? 'fp32');
  const w = new Weights(g, weights, 'ONNX export');
  const E = c.nEmbd;
  const h = c.nHead;
  const dK = E / h;
  const [Bd, Ld, Pd, Td] = ['batch_size', 'sequence_length', 'past_sequence_length', 'total_sequence_length'];
  const ids = g.input('input_ids', 'int64', [Bd, Ld]);
  const past = Array.from({ length: c.nLayer }, (_, i) => ({
    k: g.input(`past_key_values.${i}.key`, 'float32', [Bd, h, Pd, dK]),
    v: g.input(`past_key_values.${i}.value`, 'float32', [Bd, h, Pd, dK]),
  }));
  const pastLen = c.nLayer > 0 ? dim(g, past[0].k, 2) : g.constInt([0]);
  const { bias, positions } = causalBias(g, pastLen, g.op('Add', [pastLen, dim(g, ids, 1)], 'total'));
  const pos =
    c.positions === 'learned'
      ? tableRows(g, w, 'wpe.weight', positions, 'pos_emb', 1)
      : g.op(
          'Gather',
          [g.table('pe', sinusoidalTable(c.blockSize, E).dataSync() as Float32Array, [c.blockSize, E]), positions],
          'pos_emb',
        );
  let x = g.op('Add', [tableRows(g, w, 'wte.weight', ids, 'tok_emb'), pos], 'embedded');
  const attn: string[] = [];
  for (let i = 0; i < c.nLayer; i++) {
    const p = `h.${i}`;
    const cur = projectSelf(g, w, layerNorm(g, w, x, `${p}.ln_1`, EPS), `${p}.attn`, h, E);
    const k = g.op('Concat', [past[i].k, cur.k], `present.${i}.k`, { axis: 2 }); // (B, h, T, dK)
    const v = g.op('Concat', [past[i].v, cur.v], `present.${i}.v`, { axis: 2 });
    g.output(`present.${i}.key`, k, 'float32', [Bd, h, Td, dK]);
    g.output(`present.${i}.value`, v, 'float32', [Bd, h, Td, dK]);
    const r = attend(g, w, `${p}.attn`, cur.q, k, v, bias, E, h);
    attn.push(r.weights);
    x = g.op('Add', [x, r.out], `${p}.res1`);
    x = g.op(
      'Add',
      [
        x,
        feedForward(
          g,
          w,
          layerNorm(g, w, x, `${p}.ln_2`, EPS),
          `${p}.mlp.c_fc`,
          `${p}.mlp.c_proj`,
          c.activation ?? 'gelu',
        ),
      ],
      `${p}.res2`,
    );
  }
  x = layerNorm(g, w, x, 'ln_f', EPS);
  g.output('logits', matmulT(g, w, x, 'wte.weight', 'logits_mm'), 'float32', [Bd, Ld, c.vocabSize]);
  if (o.withAttention) attn.forEach((a, i) => g.output(`attentions.${i}`, a, 'float32', [Bd, h, Ld, Td]));
  return g.toBytes('qkv GPT decoder with past keys/values');
}
