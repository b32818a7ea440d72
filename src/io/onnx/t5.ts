/**
 * A Hugging Face T5 / Flan-T5 (models/hf/t5.ts) as the three ONNX graphs of seq2seq.ts, with the same names, inputs
 * and outputs (optimum's encoder_model / decoder_model / decoder_with_past_model layout), so decode/onnxruntime.ts's
 * OrtSeq2Seq runs them unchanged:
 *
 *   encoder_model.onnx            input_ids, attention_mask (B, S) int64 → last_hidden_state (B, S, d)
 *   decoder_model.onnx            input_ids (B, L), encoder_attention_mask (B, S), encoder_hidden_states (B, S, d)
 *                                 → logits (B, L, V), present.N.{decoder,encoder}.{key,value}
 *   decoder_with_past_model.onnx  input_ids (B, L), encoder_attention_mask (B, S), past_key_values.N.…
 *                                 → logits (B, L, V), present.N.decoder.{key,value} (B, h, P + L, d_kv)
 *
 * What differs from seq2seq.ts's graphs is what differs in the model: no position encoding but T5's relative
 * position bias (1, h, L, T) added to every self-attention's scores, the query at position P + i against the key at
 * j biased by the bucket of j − (P + i), bidirectional in the encoder, earlier keys only in the decoder (the buckets
 * of the offsets −(maxDistance + 1) .. maxDistance + 1 computed by qkv's own relativePositionBucket into a constant
 * lookup: beyond them every offset falls in the last bucket); T5's RMS layer norm; pre-norm blocks without biases;
 * heads of width d_kv; ReLU or gated-GELU (tanh) feed-forward; the decoder's output × d_model^-0.5 (T5 v1.0) before
 * the tied table, or a separate head. q's rows hold qkv's √d_kv factor, undone by the 1/√d_kv of the scores, as
 * qkv computes them. Weights are fp32 or fp16 (no quantized T5 graphs).
 */
import type { T5Config } from '../../models/hf/t5.ts';
import { relativePositionBucket } from '../../nn/relative-position-bias.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { GraphBuilder } from './builder.ts';
import { rmsNorm } from './decoder-blocks.ts';
import { causalBias, dim, geluTanh, keepMaskBias, linear, matmulT, mergeHeads, splitHeads, Weights } from './layers.ts';
import type { ExportOptions } from './seq2seq.ts';

/** The relative position bias (1, h, L, T) of queries at `positions` (L) against keys 0..T − 1 (`total`: [T]). */
function positionBias(
  g: GraphBuilder,
  w: Weights,
  c: T5Config,
  table: string,
  positions: string,
  total: string,
  bidirectional: boolean,
): string {
  const keys = g.op(
    'Range',
    [g.constInt([0], true), g.op('Squeeze', [total, g.constInt([0])], 'rpb.total'), g.constInt([1], true)],
    'rpb.keys',
  ); // (T)
  const rel = g.op(
    'Sub',
    [g.op('Unsqueeze', [keys, g.constInt([0])], 'rpb.kp'), g.op('Unsqueeze', [positions, g.constInt([1])], 'rpb.qp')],
    'rpb.rel',
  ); // (L, T): key − query
  const far = c.maxDistance + 1;
  const lookup = Array.from({ length: 2 * far + 1 }, (_, i) =>
    relativePositionBucket(i - far, bidirectional, c.numBuckets, c.maxDistance),
  );
  const clipped = g.op(
    'Max',
    [g.op('Min', [rel, g.constInt([far], true)], 'rpb.min'), g.constInt([-far], true)],
    'rpb.clipped',
  );
  const buckets = g.op(
    'Gather',
    [g.constInt(lookup), g.op('Add', [clipped, g.constInt([far], true)], 'rpb.index')],
    'rpb.buckets',
  ); // (L, T)
  const values = g.op('Gather', [w.get(table), buckets], 'rpb.values'); // (L, T, h)
  return g.op('Unsqueeze', [g.op('Transpose', [values], 'rpb.hlt', { perm: [2, 0, 1] }), g.constInt([0])], 'rpb');
}

/** Projection i (0 q, 1 k, 2 v) of a bias-free packed in_proj (3·h·d_kv, d): (B, h, T, d_kv). */
function project(g: GraphBuilder, w: Weights, c: T5Config, x: string, prefix: string, i: number): string {
  const inner = c.numHeads * c.dKv;
  return splitHeads(g, matmulT(g, w, x, `${prefix}.in_proj_weight`, `${prefix}.p${i}`, [i, inner]), c.numHeads, c.dKv);
}

/** softmax(q·kᵀ/√d_kv + bias)·v, heads merged, then the bias-free output projection: (B, L, d). */
function attend(
  g: GraphBuilder,
  w: Weights,
  c: T5Config,
  prefix: string,
  q: string,
  k: string,
  v: string,
  bias: string,
) {
  const kT = g.op('Transpose', [k], `${prefix}.kT`, { perm: [0, 1, 3, 2] });
  const scores = g.op(
    'Mul',
    [g.op('MatMul', [q, kT], `${prefix}.qk`), g.constFloat(1 / Math.sqrt(c.dKv))],
    `${prefix}.scores`,
  );
  const weights = g.op('Softmax', [g.op('Add', [scores, bias], `${prefix}.biased`)], `${prefix}.weights`, { axis: -1 });
  const ctx = g.op('MatMul', [weights, v], `${prefix}.ctx`);
  return { out: linear(g, w, mergeHeads(g, ctx, c.numHeads * c.dKv), `${prefix}.out_proj`, false), weights };
}

/** T5's feed-forward: wo(relu(wi x)) or wo(gelu_new(wi_0 x) · wi_1 x). */
function feedForward(g: GraphBuilder, w: Weights, c: T5Config, x: string, prefix: string): string {
  const h = c.gated
    ? g.op(
        'Mul',
        [geluTanh(g, linear(g, w, x, `${prefix}.wi_0`, false)), linear(g, w, x, `${prefix}.wi_1`, false)],
        `${prefix}.gated`,
      )
    : g.op('Relu', [linear(g, w, x, `${prefix}.wi`, false)], `${prefix}.relu`);
  return linear(g, w, h, `${prefix}.wo`, false);
}

/** x + f(RMSNorm(x)), T5's pre-norm residual. */
function residual(g: GraphBuilder, w: Weights, c: T5Config, x: string, norm: string, f: (y: string) => string) {
  return g.op('Add', [x, f(rmsNorm(g, w, x, norm, c.eps))], `${norm}.res`);
}

/** `encoder_model.onnx` of a T5 (see the file comment). Returns the serialised ModelProto. */
export function t5EncoderGraph(c: T5Config, weights: Record<string, Tensor>, o: ExportOptions = {}): Uint8Array {
  const g = new GraphBuilder('qkv_t5_encoder', o.dtype ?? 'fp32');
  const w = new Weights(g, weights, 'ONNX export');
  const [Bd, Sd] = ['batch_size', 'encoder_sequence_length'];
  const ids = g.input('input_ids', 'int64', [Bd, Sd]);
  const mask = g.input('attention_mask', 'int64', [Bd, Sd]);
  const S = dim(g, ids, 1);
  const positions = g.op(
    'Range',
    [g.constInt([0], true), g.op('Squeeze', [S, g.constInt([0])], 'S'), g.constInt([1], true)],
    'positions',
  );
  // T5 adds its padding mask to the position bias: (1, h, S, S) + (B, 1, 1, S).
  const rpb = positionBias(g, w, c, 'encoder_bias.relative_attention_bias.weight', positions, S, true);
  const bias = g.op('Add', [rpb, keepMaskBias(g, mask)], 'self_bias');
  let x = g.op('Gather', [w.get('shared.weight'), ids], 'embedded');
  const attn: string[] = [];
  for (let i = 0; i < c.numLayers; i++) {
    const p = `encoder_${i}`;
    x = residual(g, w, c, x, `${p}.norm0`, (y) => {
      const a = `${p}.self_attn`;
      const r = attend(
        g,
        w,
        c,
        a,
        project(g, w, c, y, a, 0),
        project(g, w, c, y, a, 1),
        project(g, w, c, y, a, 2),
        bias,
      );
      attn.push(r.weights);
      return r.out;
    });
    x = residual(g, w, c, x, `${p}.norm1`, (y) => feedForward(g, w, c, y, `${p}.ff`));
  }
  x = rmsNorm(g, w, x, 'encoder_norm', c.eps);
  g.output('last_hidden_state', x, 'float32', [Bd, Sd, c.dModel]);
  if (o.withAttention)
    attn.forEach((a, i) => g.output(`encoder_attentions.${i}`, a, 'float32', [Bd, c.numHeads, Sd, Sd]));
  return g.toBytes('qkv T5 encoder');
}

/** decoder_model.onnx (withPast false: the first step, from encoder_hidden_states) or decoder_with_past_model.onnx. */
export function t5DecoderGraph(
  c: T5Config,
  weights: Record<string, Tensor>,
  withPast: boolean,
  o: ExportOptions = {},
): Uint8Array {
  const g = new GraphBuilder(withPast ? 'qkv_t5_decoder_with_past' : 'qkv_t5_decoder', o.dtype ?? 'fp32');
  const w = new Weights(g, weights, 'ONNX export');
  const h = c.numHeads;
  const dK = c.dKv;
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
  const memory = withPast ? null : g.input('encoder_hidden_states', 'float32', [Bd, Sd, c.dModel]);
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
  // Queries at past .. past + L − 1 against keys 0 .. past + L − 1: causal + T5's bias (1, h, L, T), every target
  // position attended (generate() passes no decoder mask).
  const pastLen = withPast && N > 0 ? dim(g, past[0].k, 2) : g.constInt([0]);
  const total = g.op('Add', [pastLen, dim(g, ids, 1)], 'total');
  const { bias: causal, positions } = causalBias(g, pastLen, total);
  const rpb = positionBias(g, w, c, 'decoder_bias.relative_attention_bias.weight', positions, total, false);
  const selfBias = g.op('Add', [rpb, causal], 'self_bias');
  const crossBias = keepMaskBias(g, memMask);
  let x = g.op('Gather', [w.get('shared.weight'), ids], 'embedded');
  const selfW: string[] = [];
  const crossW: string[] = [];
  for (let i = 0; i < N; i++) {
    const p = `decoder_${i}`;
    const n = `present.${i}`;
    x = residual(g, w, c, x, `${p}.norm0`, (y) => {
      const a = `${p}.self_attn`;
      const [ky, vy] = [project(g, w, c, y, a, 1), project(g, w, c, y, a, 2)];
      const k = withPast ? g.op('Concat', [past[i].k, ky], `${n}.k`, { axis: 2 }) : ky; // (B, h, T, d_kv)
      const v = withPast ? g.op('Concat', [past[i].v, vy], `${n}.v`, { axis: 2 }) : vy;
      g.output(`${n}.decoder.key`, k, 'float32', [Bd, h, withPast ? Td : Ld, dK]);
      g.output(`${n}.decoder.value`, v, 'float32', [Bd, h, withPast ? Td : Ld, dK]);
      const r = attend(g, w, c, a, project(g, w, c, y, a, 0), k, v, selfBias);
      selfW.push(r.weights);
      return r.out;
    });
    x = residual(g, w, c, x, `${p}.norm1`, (y) => {
      const a = `${p}.cross_attn`;
      let ck: string;
      let cv: string;
      if (withPast) ({ ck, cv } = past[i]);
      else {
        // The encoder states' keys and values, computed once (the first step) and passed on.
        ck = project(g, w, c, memory!, a, 1);
        cv = project(g, w, c, memory!, a, 2);
        g.output(`${n}.encoder.key`, ck, 'float32', [Bd, h, Sd, dK]);
        g.output(`${n}.encoder.value`, cv, 'float32', [Bd, h, Sd, dK]);
      }
      const r = attend(g, w, c, a, project(g, w, c, y, a, 0), ck, cv, crossBias);
      crossW.push(r.weights);
      return r.out;
    });
    x = residual(g, w, c, x, `${p}.norm2`, (y) => feedForward(g, w, c, y, `${p}.ff`));
  }
  x = rmsNorm(g, w, x, 'decoder_norm', c.eps);
  if (c.scaleDecoderOutputs) x = g.op('Mul', [x, g.constFloat(c.dModel ** -0.5)], 'scaled_output');
  const logits = matmulT(g, w, x, c.separateHead ? 'lm_head.weight' : 'shared.weight', 'logits_mm');
  g.output('logits', logits, 'float32', [Bd, Ld, c.vocabSize]);
  if (o.withAttention) {
    const T = withPast ? Td : Ld;
    selfW.forEach((a, i) => g.output(`decoder_attentions.${i}`, a, 'float32', [Bd, h, Ld, T]));
    crossW.forEach((a, i) => g.output(`cross_attentions.${i}`, a, 'float32', [Bd, h, Ld, Sd]));
  }
  return g.toBytes(withPast ? 'qkv T5 decoder step with past keys/values' : 'qkv T5 decoder, first step');
}
