/**
 * bertviz's neuron view for one head of a GPT: how query token i comes to attend where it does.
 * The block's input is normalised (ln_1) and projected: q_i is i's query vector, k_j the key of
 * every position j ≤ i (the causal mask hides the rest), q_i ⊙ k_j their elementwise product, whose
 * sum scaled by 1/√d is the score (§3.2.1), and the softmax of the scores is the attention row
 * that the heatmap draws. A Llama-family decoder's queries and keys are turned by their rotary angles first, and
 * a query head reads the keys of the KV head its group shares. Pure numbers, from the model's own modules.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import type { GPT } from '../models/gpt.ts';
import * as F from '../ops/index.ts';
import { Tensor } from '../tensor/tensor.ts';
import { valuesOf } from './attention-data.ts';

export interface NeuronView {
  layer: number;
  head: number;
  /** The query position. */
  query: number;
  /** q_i (headDim). */
  q: number[];
  /** k_j for j = 0..query (each headDim). */
  keys: number[][];
  /** q_i ⊙ k_j, elementwise (query + 1 rows of headDim). */
  products: number[][];
  /** The scale, 1/√headDim. */
  scale: number;
  /** Σ (q_i ⊙ k_j) · scale, per key j. */
  scores: number[];
  /** softmax(scores): the attention row. */
  weights: number[];
}

/** The neuron view of `head` in `layer` for query position `query` of ids (0-based everywhere). */
export function neuronView(model: GPT, ids: readonly number[], layer: number, head: number, query: number): NeuronView {
  const { q, k } = projections(model, ids, layer, head, query);
  return fromProjections(model, ids.length, layer, head, query, q.dataSync<Float32Array>(), k.dataSync<Float32Array>());
}

/** {@link neuronView} on every device: the queries and keys read back asynchronously (a GPU's are read only so). */
export async function neuronViewAsync(
  model: GPT,
  ids: readonly number[],
  layer: number,
  head: number,
  query: number,
): Promise<NeuronView> {
  const { q, k } = projections(model, ids, layer, head, query);
  const [qd, kd] = await Promise.all([valuesOf(q), valuesOf(k)]);
  return fromProjections(model, ids.length, layer, head, query, qd, kd);
}

/** The checks, then block `layer`'s queries and keys over ids, (1, h, T, d) each. */
function projections(
  model: GPT,
  ids: readonly number[],
  layer: number,
  head: number,
  query: number,
): { q: Tensor; k: Tensor } {
  const { nLayer, nHead } = model.config;
  const T = ids.length;
  if (!Number.isInteger(layer) || layer < 0 || layer >= nLayer)
    throw new Error(`neuronView: layer ${layer} does not exist (0..${nLayer - 1})`);
  if (!Number.isInteger(head) || head < 0 || head >= nHead)
    throw new Error(`neuronView: head ${head} does not exist (0..${nHead - 1})`);
  if (!Number.isInteger(query) || query < 0 || query >= T)
    throw new Error(`neuronView: query ${query} is not a position of the ${T} tokens`);
  return noGrad(() => {
    let x = model.embed(new Tensor(Int32Array.from(ids), [1, T], 'int32')); // (1, T, E)
    // Rotary positions (Llama, Qwen2, Mistral): every block's queries and keys turned by their positions' angles.
    const rope = model.rope ? model.rope.tables(0, T) : null;
    const blocks = [...model.h];
    for (let l = 0; l < layer; l++) x = blocks[l].forward(x, rope);
    const block = blocks[layer];
    const { q, k } = block.attn.projectSelf(block.ln1.forward(x));
    if (!rope) return { q, k };
    return { q: F.rotaryEmbedding(q, rope.cos, rope.sin), k: F.rotaryEmbedding(k, rope.cos, rope.sin) };
  });
}

/** The view from the queries' and keys' values (1, h, T, d). */
function fromProjections(
  model: GPT,
  T: number,
  layer: number,
  head: number,
  query: number,
  qd: Float32Array,
  kd: Float32Array,
): NeuronView {
  const { nHead, nEmbd } = model.config;
  const d = model.config.headDim ?? nEmbd / nHead;
  // Grouped-query attention: query head `head` reads the keys of KV head ⌊head / (nHead / nKVHead)⌋.
  const kvHead = Math.floor(head / (nHead / (model.config.nKVHead ?? nHead)));
  const row = (t: Float32Array, hd: number, j: number) =>
    Array.from(t.subarray((hd * T + j) * d, (hd * T + j + 1) * d));
  const qi = row(qd, head, query);
  const keys = Array.from({ length: query + 1 }, (_, j) => row(kd, kvHead, j));
  const products = keys.map((kj) => kj.map((v, c) => v * qi[c]));
  const scale = 1 / Math.sqrt(d);
  const scores = products.map((p) => p.reduce((s, v) => s + v, 0) * scale);
  const max = Math.max(...scores);
  const e = scores.map((s) => Math.exp(s - max));
  const z = e.reduce((s, v) => s + v, 0);
  return { layer, head, query, q: qi, keys, products, scale, scores, weights: e.map((v) => v / z) };
}
