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
import { repeatKv, rmsNorm, rotaryTables, rotate, swiglu, windowBias } from './decoder-blocks.ts';
import {
  attend,
  causalBias,
  dim,
  feedForward,
  layerNorm,
  linear,
  matmulT,
  mergeHeads,
  projectSelf,
  splitHeads,
  tableRows,
  Weights,
} from './layers.ts';
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
  const dK = c.headDim ?? E / h;
  const hk = c.nKVHead ?? h; // the cache holds the KV heads only
  const [Bd, Ld, Pd, Td] = ['batch_size', 'sequence_length', 'past_sequence_length', 'total_sequence_length'];
  const ids = g.input('input_ids', 'int64', [Bd, Ld]);
  const past = Array.from({ length: c.nLayer }, (_, i) => ({
    k: g.input(`past_key_values.${i}.key`, 'float32', [Bd, hk, Pd, dK]),
    v: g.input(`past_key_values.${i}.value`, 'float32', [Bd, hk, Pd, dK]),
  }));
  const pastLen = c.nLayer > 0 ? dim(g, past[0].k, 2) : g.constInt([0]);
  const total = g.op('Add', [pastLen, dim(g, ids, 1)], 'total');
  const { bias, positions } = causalBias(g, pastLen, total);
  if (isModern(c)) return modernDecoderGraph(g, w, c, ids, past, total, bias, positions, o);
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

/** Whether the config takes any of today's decoders' switches (the graph below), else GPT-2's graph above. */
function isModern(c: GPTConfig): boolean {
  return (
    c.positions === 'rotary' ||
    c.norm === 'rms' ||
    c.mlp === 'swiglu' ||
    (c.nKVHead ?? c.nHead) !== c.nHead ||
    c.headDim !== undefined ||
    c.qkvBias === false ||
    c.outBias === false ||
    c.mlpBias === false ||
    c.tiedHead === false ||
    c.slidingWindow !== undefined
  );
}

/**
 * The graph of a GPT with today's decoders' switches (Llama, Qwen2, Mistral as models/hf/llama.ts builds them):
 * RMS or Layer norms, rotary positions turning the queries and keys (the cache holds keys turned), hk KV heads
 * (past and present are (B, hk, P, D): the cache holds only the KV heads, repeated per query head inside the graph),
 * the SwiGLU or GELU MLP, optional biases, an untied lm_head, the sliding window on its layers.
 */
function modernDecoderGraph(
  g: GraphBuilder,
  w: Weights,
  c: GPTConfig,
  ids: string,
  past: { k: string; v: string }[],
  total: string,
  causal: string,
  positions: string,
  o: ExportOptions,
): Uint8Array {
  const E = c.nEmbd;
  const h = c.nHead;
  const hk = c.nKVHead ?? h;
  const D = c.headDim ?? E / h;
  const eps = c.layerNormEps ?? EPS;
  const [Bd, Ld, Td] = ['batch_size', 'sequence_length', 'total_sequence_length'];
  const norm = (x: string, prefix: string) =>
    c.norm === 'rms' ? rmsNorm(g, w, x, prefix, eps) : layerNorm(g, w, x, prefix, eps);
  const rope = c.positions === 'rotary' ? rotaryTables(g, c, positions) : null;
  let x = tableRows(g, w, 'wte.weight', ids, 'tok_emb');
  if (c.positions === 'learned') x = g.op('Add', [x, tableRows(g, w, 'wpe.weight', positions, 'pos_emb', 1)], 'emb');
  else if (c.positions === 'sinusoidal') {
    const pe = g.table('pe', sinusoidalTable(c.blockSize, E).dataSync() as Float32Array, [c.blockSize, E]);
    x = g.op('Add', [x, g.op('Gather', [pe, positions], 'pos_emb')], 'emb');
  }
  const attn: string[] = [];
  for (let i = 0; i < c.nLayer; i++) {
    const p = `h.${i}`;
    const a = norm(x, `${p}.ln_1`);
    let qkv = matmulT(g, w, a, `${p}.attn.in_proj_weight`, `${p}.qkv`);
    if (c.qkvBias ?? true) qkv = g.op('Add', [qkv, w.get(`${p}.attn.in_proj_bias`)], `${p}.qkv_b`);
    const [q0, k0, v0] = g.node('Split', [qkv, g.constInt([h * D, hk * D, hk * D])], [`${p}.q`, `${p}.k`, `${p}.v`], {
      axis: -1,
    });
    let q = splitHeads(g, q0, h, D);
    let kNew = splitHeads(g, k0, hk, D);
    if (rope) {
      q = rotate(g, q, rope, D, `${p}.q`);
      kNew = rotate(g, kNew, rope, D, `${p}.k`);
    }
    const k = g.op('Concat', [past[i].k, kNew], `present.${i}.k`, { axis: 2 }); // (B, hk, T, D)
    const v = g.op('Concat', [past[i].v, splitHeads(g, v0, hk, D)], `present.${i}.v`, { axis: 2 });
    g.output(`present.${i}.key`, k, 'float32', [Bd, hk, Td, D]);
    g.output(`present.${i}.value`, v, 'float32', [Bd, hk, Td, D]);
    const sliding = c.slidingWindow !== undefined && (c.slidingLayers?.includes(i) ?? true);
    const bias = sliding ? windowBias(g, causal, positions, total, c.slidingWindow!) : causal;
    const kT = g.op('Transpose', [repeatKv(g, k, h, hk, D, `${p}.k`)], `${p}.kT`, { perm: [0, 1, 3, 2] });
    const scores = g.op(
      'Add',
      [g.op('Mul', [g.op('MatMul', [q, kT], `${p}.qk`), g.constFloat(1 / Math.sqrt(D))], `${p}.scores`), bias],
      `${p}.masked`,
    );
    const weights = g.op('Softmax', [scores], `${p}.weights`, { axis: -1 });
    attn.push(weights);
    const ctx = mergeHeads(g, g.op('MatMul', [weights, repeatKv(g, v, h, hk, D, `${p}.v`)], `${p}.ctx`), h * D);
    x = g.op('Add', [x, linear(g, w, ctx, `${p}.attn.out_proj`, c.outBias ?? true)], `${p}.res1`);
    const b = norm(x, `${p}.ln_2`);
    const mlp =
      c.mlp === 'swiglu'
        ? swiglu(g, w, b, `${p}.mlp`, c.mlpBias ?? true)
        : feedForward(g, w, b, `${p}.mlp.c_fc`, `${p}.mlp.c_proj`, c.activation ?? 'gelu');
    x = g.op('Add', [x, mlp], `${p}.res2`);
  }
  x = norm(x, 'ln_f');
  const head = (c.tiedHead ?? true) ? 'wte.weight' : 'lm_head.weight';
  g.output('logits', matmulT(g, w, x, head, 'logits_mm'), 'float32', [Bd, Ld, c.vocabSize]);
  if (o.withAttention) attn.forEach((a, i) => g.output(`attentions.${i}`, a, 'float32', [Bd, h, Ld, Td]));
  return g.toBytes('qkv decoder (rotary, RMS norm, grouped KV heads, gated MLP) with past keys/values');
}
