/**
 * The flow's types and the pieces its two builders share (flow-seq2seq.ts, flow-gpt.ts; the entry is
 * flow.ts). The whole forward pass of a model as a flow of named stages, the Transformer Explainer's view on
 * any model qkv runs: token embedding, positions and their sum; per layer the attention (each head's
 * weights, queries, keys, values and output), the residual sums, the layer norms and the feed-forward
 * block; the final norm, the logits and the softmax. For a Seq2Seq (qkv's translators and Hugging Face
 * Marian folders) the encoder over the source and the decoder over a target prefix, its
 * cross-attention keyed by the source; for a GPT (qkv's and Hugging Face GPT-2) the blocks over the
 * tokens.
 *
 * The flow is the model's own forward, composed here from the modules' public pieces (embed, the
 * layers' attention, norms, linears and dropouts, generator / head) with the ops the modules' forward
 * methods use, in the same order, in eval mode without gradients: its logits equal `model.forward`'s
 * bit for bit (test/viz/flow.test.ts). The stream is carried by the same attention calls the model
 * makes (no weights asked); each head's weights come from a second call of the same module that asks
 * for them, and its queries, keys and values from the module's own projections, for display only.
 *
 * Sizes stay bounded for a page: every stage holds, per token, the vector's norm, mean, standard
 * deviation, min, max and its first `dims` components; the whole vectors stay in the {@link FlowRun}
 * and are read on demand (`vectors(stageId)`). Pure numbers, no Node APIs: `qkv flow` prints them, the
 * explorer draws them in its model worker.
 */
import type { MultiheadAttention } from '../nn/attention.ts';
import * as F from '../ops/index.ts';
import { Tensor } from '../tensor/tensor.ts';
import { valuesOf } from './attention-data.ts';

/** One token's vector at one stage, summarised. */
export interface FlowRow {
  /** Euclidean norm ‖x‖. */
  norm: number;
  mean: number;
  /** Standard deviation over the components (population: divided by the width). */
  std: number;
  min: number;
  max: number;
  /** The first `dims` components (all of them when the vector is that short). */
  head: number[];
}

/** One head of an attention stage. */
export interface FlowHead {
  /** softmax(q·kᵀ/√dₖ + mask), [query][key]. */
  weights: number[][];
  /** The head's queries, one row per query token (width dₖ). */
  q: FlowRow[];
  /** The head's keys, one row per key token. */
  k: FlowRow[];
  /** The head's values, one row per key token. */
  v: FlowRow[];
  /** weights · v: the head's output per query token, before the heads are joined and projected by Wᴼ. */
  out: FlowRow[];
  /**
   * Grouped-query attention (Llama, Qwen2, Mistral): the key/value head this query head reads (from 0), shared with
   * the other heads of its group, whose `k` and `v` are the same rows; absent where every head has its own.
   */
  kvHead?: number;
}

/** One of the most probable next tokens at a position. */
export interface FlowTop {
  id: number;
  /** The token as the page labels it. */
  token: string;
  logit: number;
  /** Its softmax probability. */
  p: number;
}

/** What a stage computes. */
export type FlowStageKind =
  | 'embedding'
  | 'position'
  | 'sum'
  | 'norm'
  | 'attention'
  | 'residual'
  | 'ffn-hidden'
  | 'ffn-out'
  | 'logits'
  | 'softmax';

/** The axes a flow's rows run along: 'source' and 'target' (Seq2Seq), 'tokens' (GPT). */
export type FlowAxis = 'source' | 'target' | 'tokens';

/** One stage of the flow: a (tokens × width) tensor of the forward pass, summarised per token. */
export interface FlowStage {
  /** Unique and stable, e.g. `enc.0.attn`, `dec.2.cross`, `h.1.mlp.hidden`, `logits` (layers from 0). */
  id: string;
  /** The column group it belongs to, e.g. 'encoder layer 1', 'embedding (source)', 'output'. */
  group: string;
  /** The layer, counted from 0; null outside the layers. */
  layer: number | null;
  kind: FlowStageKind;
  /** Short name, e.g. 'self-attention', 'x + attention', 'LayerNorm'. */
  title: string;
  /** What it computes, in the paper's notation. */
  formula: string;
  /** Whose tokens the rows are. */
  axis: FlowAxis;
  /** The vectors' width. */
  width: number;
  /** One summary per token of `axis`. */
  rows: FlowRow[];
  /** Attention stages: whose tokens the keys are. */
  keys?: FlowAxis;
  /** Attention stages: keys after the query are masked. */
  causal?: boolean;
  /** Attention stages: every head. */
  heads?: FlowHead[];
  /** Attention stages with grouped-query attention: how many key/value heads the query heads share. */
  kvHeads?: number;
  /** Logits and softmax: per position, the `top` most probable next tokens. */
  top?: FlowTop[][];
}

/** The tokens of one axis. */
export interface FlowTokens {
  ids: number[];
  /** One label per id. */
  tokens: string[];
}

/** A model's forward pass as stages (see the file comment). */
export interface ModelFlow {
  /** 'seq2seq': encoder and decoder; 'gpt': decoder-only blocks; 'encoder': a BERT-family encoder. */
  model: 'seq2seq' | 'gpt' | 'encoder';
  /** The model's shape. */
  config: {
    dModel: number;
    heads: number;
    /** Layers per stack: [encoder, decoder] for a Seq2Seq, [blocks] for a GPT, [layers] for an encoder. */
    layers: number[];
    dFF: number;
    vocabSize: number;
    /** Post-norm LayerNorm(x + f(x)) (the paper's) or pre-norm x + f(LayerNorm(x)). */
    norm: 'post' | 'pre';
    /** Grouped-query attention: the key/value heads per layer (fewer than `heads`); absent otherwise. */
    kvHeads?: number;
    /** A Llama-family decoder: rotary positions (no position table), RMSNorm, the SwiGLU MLP. */
    family?: 'llama';
  };
  /** How many leading components each row keeps. */
  dims: number;
  /** The tokens of each axis the stages use. */
  axes: Partial<Record<FlowAxis, FlowTokens>>;
  stages: FlowStage[];
}

/** A flow with its full tensors. */
export interface FlowRun {
  flow: ModelFlow;
  /** The logits (1, T, vocab) of the pass: model.forward's. */
  logits: Tensor;
  /** Every component of a stage's vectors, one row per token ([token][component]); throws for an unknown id. */
  vectors(stageId: string): number[][];
}

/** Options of the flow functions. */
export interface FlowOptions {
  /** Leading components kept per row (default 16). */
  dims?: number;
  /** Next tokens listed per position (default 5). */
  top?: number;
  /** A token's label (default `#id`); `axis` says whose vocabulary the id is in. */
  label?: (id: number, axis: FlowAxis) => string;
}

/** The default of {@link FlowOptions.dims}. */
export const FLOW_DIMS = 16;
/** The default of {@link FlowOptions.top}. */
export const FLOW_TOP = 5;

/** Summaries of the rows of a (…, T, D) tensor's last two axes. */
export function rowsOf(data: Float32Array, T: number, D: number, dims: number): FlowRow[] {
  return Array.from({ length: T }, (_, t) => {
    const r = data.subarray(t * D, (t + 1) * D);
    let s = 0;
    let s2 = 0;
    let min = Infinity;
    let max = -Infinity;
    for (let i = 0; i < D; i++) {
      const x = r[i];
      s += x;
      s2 += x * x;
      if (x < min) min = x;
      if (x > max) max = x;
    }
    const mean = s / D;
    let v = 0;
    for (let i = 0; i < D; i++) v += (r[i] - mean) ** 2;
    return { norm: Math.sqrt(s2), mean, std: Math.sqrt(v / D), min, max, head: Array.from(r.subarray(0, dims)) };
  });
}

export function checkOptions(o: FlowOptions): {
  dims: number;
  top: number;
  label: (id: number, axis: FlowAxis) => string;
} {
  const dims = o.dims ?? FLOW_DIMS;
  const top = o.top ?? FLOW_TOP;
  if (!Number.isInteger(dims) || dims < 1) throw new Error(`flow: dims must be a positive integer, got ${dims}`);
  if (!Number.isInteger(top) || top < 1) throw new Error(`flow: top must be a positive integer, got ${top}`);
  return { dims, top, label: o.label ?? ((id) => `#${id}`) };
}

export function idTensor(ids: readonly number[], what: string): Tensor {
  if (ids.length === 0) throw new Error(`flow: ${what} has no tokens`);
  return new Tensor(Int32Array.from(ids), [1, ids.length], 'int32');
}

/**
 * Records stages and keeps their values. Reading them back is the recorder's: at once (dataSync, a CPU
 * device), or with `deferred` after the pass, every read asked for at once by {@link Recorder.readAll}
 * (`await t.data()`, every device: a GPU's tensors read back only so). The stages are the same either way.
 */
export class Recorder {
  readonly stages: FlowStage[] = [];
  readonly data = new Map<string, { data: Float32Array; T: number; D: number }>();
  /** A deferred recorder's reads not done yet, in the order they were asked for. */
  private readonly pending: { tensors: Tensor[]; then: (values: Float32Array[]) => void }[] = [];
  constructor(
    readonly dims: number,
    readonly deferred = false,
  ) {}

  /** `then` with the values of `tensors`: now, or (deferred) when readAll reads them, in the order asked. */
  read(tensors: Tensor[], then: (values: Float32Array[]) => void): void {
    if (this.deferred) this.pending.push({ tensors, then });
    else then(tensors.map((t) => t.dataSync<Float32Array>()));
  }

  /** A deferred recorder's reads: every tensor asked for at once, then each `then` in order. */
  async readAll(): Promise<void> {
    const pending = this.pending.splice(0);
    const values = await Promise.all(pending.map((r) => Promise.all(r.tensors.map(valuesOf))));
    pending.forEach((r, i) => r.then(values[i]));
  }

  /** A stage of tensor x (1, T, D); `extra` adds the attention or output fields. */
  add(meta: Omit<FlowStage, 'rows' | 'width'>, x: Tensor, extra: Partial<FlowStage> = {}): void {
    const T = x.shape[x.ndim - 2];
    const D = x.shape[x.ndim - 1];
    const stage: FlowStage = { ...meta, width: D, rows: [], ...extra };
    this.stages.push(stage);
    this.read([x], ([values]) => {
      const data = values.slice();
      this.data.set(meta.id, { data, T, D });
      stage.rows = rowsOf(data, T, D, this.dims);
    });
  }

  vectors(id: string): number[][] {
    const d = this.data.get(id);
    if (!d) throw new Error(`flow: no stage '${id}' (stages: ${[...this.data.keys()].join(', ')})`);
    return Array.from({ length: d.T }, (_, t) => Array.from(d.data.subarray(t * d.D, (t + 1) * d.D)));
  }
}

/** The masks of one attention call, as the model passes them. */
export interface AttendMasks {
  attnMask?: Tensor | null;
  keyPaddingMask?: Tensor | null;
  isCausal?: boolean;
}

/**
 * One attention sub-layer as the model calls it: `mha.forward(x, kv, kv, masks)` without weights (the
 * stream), and every head's weights, q, k, v and output from the same module (for display; `heads` is
 * filled when the recorder reads them).
 */
export function attend(
  rec: Recorder,
  mha: MultiheadAttention,
  x: Tensor,
  memory: Tensor | null,
  masks: AttendMasks,
): { output: Tensor; heads: FlowHead[] } {
  const kv = memory ?? x;
  const { output } = mha.forward(x, kv, kv, { ...masks, needWeights: false });
  const w = mha.forward(x, kv, kv, { ...masks, needWeights: true, averageAttnWeights: false }).weights!;
  const qkv = memory ? { q: mha.projectQuery(x), ...mha.projectKeyValue(memory, memory) } : mha.projectSelf(x);
  const ctx = F.matmul(w, qkv.v); // (1, h, L, dK)
  const [, h, L, S] = w.shape;
  const dK = mha.headDim;
  const dims = rec.dims;
  const heads: FlowHead[] = [];
  rec.read([w, qkv.q, qkv.k, qkv.v, ctx], ([wd, qd, kd, vd, cd]) => {
    for (let a = 0; a < h; a++) {
      heads.push({
        weights: Array.from({ length: L }, (_, i) => Array.from(wd.subarray((a * L + i) * S, (a * L + i + 1) * S))),
        q: rowsOf(qd.subarray(a * L * dK, (a + 1) * L * dK), L, dK, dims),
        k: rowsOf(kd.subarray(a * S * dK, (a + 1) * S * dK), S, dK, dims),
        v: rowsOf(vd.subarray(a * S * dK, (a + 1) * S * dK), S, dK, dims),
        out: rowsOf(cd.subarray(a * L * dK, (a + 1) * L * dK), L, dK, dims),
      });
    }
  });
  return { output, heads };
}

/**
 * One self-attention sub-layer of a decoder that turns its queries and keys itself (rotary positions) or reads grouped
 * KV heads, as models/gpt.ts's Block calls it: `mha.attendProjected(q, k, v, options)` without weights (the stream),
 * then with them (for display). q (1, h, L, dK), k and v (1, hKV, S, dK). Each query head's k and v rows are its
 * group's KV head (`kvHead`, set where hKV < h); its output is weights · v of that KV head.
 */
export function attendProjected(
  rec: Recorder,
  mha: MultiheadAttention,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  options: { isCausal: boolean; attnBias: Tensor | null },
): { output: Tensor; heads: FlowHead[] } {
  const { output } = mha.attendProjected(q, k, v, { ...options, needWeights: false });
  const w = mha.attendProjected(q, k, v, { ...options, needWeights: true }).weights!;
  const [, h, L, S] = w.shape;
  const hKV = k.shape[1];
  const g = h / hKV;
  const dK = mha.headDim;
  // The g query heads of a group are consecutive: (1, h, L, S) read as (1, hKV, g·L, S) meets its KV head's values.
  const ctx = F.matmul(w.reshape(1, hKV, g * L, S), v); // (1, hKV, g·L, dK) = (1, h, L, dK)
  const dims = rec.dims;
  const heads: FlowHead[] = [];
  rec.read([w, q, k, v, ctx], ([wd, qd, kd, vd, cd]) => {
    for (let a = 0; a < h; a++) {
      const kv = Math.floor(a / g);
      heads.push({
        weights: Array.from({ length: L }, (_, i) => Array.from(wd.subarray((a * L + i) * S, (a * L + i + 1) * S))),
        q: rowsOf(qd.subarray(a * L * dK, (a + 1) * L * dK), L, dK, dims),
        k: rowsOf(kd.subarray(kv * S * dK, (kv + 1) * S * dK), S, dK, dims),
        v: rowsOf(vd.subarray(kv * S * dK, (kv + 1) * S * dK), S, dK, dims),
        out: rowsOf(cd.subarray(a * L * dK, (a + 1) * L * dK), L, dK, dims),
        ...(g > 1 && { kvHead: kv }),
      });
    }
  });
  return { output, heads };
}

/** The feed-forward block's non-linearity, as nn/transformer.ts applies it. */
export function activate(x: Tensor, a: 'relu' | 'gelu' | 'silu'): Tensor {
  if (a === 'relu') return F.relu(x);
  if (a === 'gelu') return F.gelu(x);
  return F.mul(x, F.sigmoid(x));
}

export const ACTIVATION_NAMES = { relu: 'ReLU', gelu: 'GELU', silu: 'SiLU', gelu_tanh: 'GELU (tanh)' } as const;

/** The logits and softmax stages, with each position's top tokens. */
export function outputStages(
  rec: Recorder,
  logits: Tensor,
  axis: FlowAxis,
  top: number,
  label: (id: number) => string,
  formula = 'h · Eᵀ (the tied embedding)',
): void {
  const V = logits.shape[2];
  const T = logits.shape[1];
  const probs = F.softmax(logits, -1);
  const tops: FlowTop[][] = [];
  const group = 'output';
  rec.add({ id: 'logits', group, layer: null, kind: 'logits', title: 'logits', formula, axis }, logits, { top: tops });
  rec.add(
    { id: 'softmax', group, layer: null, kind: 'softmax', title: 'softmax', formula: 'p = softmax(logits)', axis },
    probs,
    { top: tops },
  );
  // After the two stages' reads: their values, kept by the recorder.
  rec.read([], () => {
    const ld = rec.data.get('logits')!.data;
    const pd = rec.data.get('softmax')!.data;
    for (let t = 0; t < T; t++) {
      const row = ld.subarray(t * V, (t + 1) * V);
      const order: number[] = [];
      for (let id = 0; id < V; id++) {
        // Insertion into the `top` best so far (ties: the lower id first).
        let at = order.length;
        while (at > 0 && row[id] > row[order[at - 1]]) at--;
        if (at < top) {
          order.splice(at, 0, id);
          if (order.length > top) order.pop();
        }
      }
      tops.push(order.map((id) => ({ id, token: label(id), logit: row[id], p: pd[t * V + id] })));
    }
  });
}
