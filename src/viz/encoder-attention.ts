/**
 * A BERT-family encoder's self-attention over a text, for the explorer (issue 57, point 5): the text tokenized as
 * the folder's pipelines tokenize it (its special tokens, [CLS] … [SEP] or <s> … </s>, cut to the model's length),
 * optionally padded as a batch pads a shorter text (the pad id, attention mask 0: no position attends to a padding
 * key), one pass that keeps every layer's per-head weights ([layer][head][query][key]), each token labelled and
 * marked special or padding; the neuron view of one head (queries, keys, their products and scores over every
 * key: an encoder's attention is not causal); and fill-mask: the pipeline's own top tokens and scores
 * (pipelines/fill-mask.ts) with the attention of the masked position that chose them. Runs anywhere qkv runs (no
 * Node APIs): the explorer calls it in its model worker.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import type { LoadedEncoder } from '../folder/encoder.ts';
import { positionIds, type Encoder } from '../models/encoder.ts';
import { withEvalMode } from '../nn/module.ts';
import * as F from '../ops/index.ts';
import { fillMaskPipeline, type FillMaskResult } from '../pipelines/fill-mask.ts';
import { Tensor } from '../tensor/tensor.ts';
import type { HfEncoding, HfTokenizer } from '../text/hf-tokenizer.ts';
import { headsOfAsync, valuesOf, type AttentionStack } from './attention-data.ts';
import type { AttentionMaps } from './attention-maps.ts';
import type { NeuronView } from './neuron.ts';

/** The name of an encoder's one kind of attention, as pages and titles print it. */
export const ENCODER_ATTENTION_NAME = 'self-attention';

/** What a token is, for the page to show it as what it is. */
export type TokenRole = 'text' | 'special' | 'padding';

/** An encoder's self-attention over one text. */
export interface EncoderAttention {
  /** The text as given. */
  text: string;
  /** The ids fed to the model: the tokenizer's (special tokens included), then padding up to `padTo`. */
  ids: number[];
  /** One label per id: a special token as it is written ([CLS], </s>), a piece of text as it reads. */
  tokens: string[];
  /** What each id is: text, a special token, or padding (attention mask 0). */
  roles: TokenRole[];
  /** Tokens the text was cut by to fit the model (0: none). */
  truncated: number;
  /** [layer][head][query][key] over `ids`; a padding key's column is 0 in every row. */
  attention: AttentionStack;
}

/** Options of {@link encoderAttentionAsync}. */
export interface EncoderAttentionOptions {
  /** Pad the ids with the pad token to this many, as a longer text in the same batch would (default: no padding). */
  padTo?: number;
}

/** The parts of an opened encoder folder the explorer runs. */
export type ExplorerEncoder = Pick<LoadedEncoder, 'model' | 'tokenizer' | 'maxTokens'>;

/** A token as the page labels it: a special one as written, a WordPiece or byte-level piece as it reads. */
export function encoderTokenLabel(tokenizer: HfTokenizer, id: number): string {
  const raw = tokenizer.idToToken(id) ?? `#${id}`;
  if (tokenizer.isSpecial(id)) return raw;
  // Byte-level BPE writes a space as Ġ, SentencePiece (XLM-R's Unigram) as ▁: both shown as ␣.
  return raw.replace(/^[Ġ▁]/, '␣').replaceAll('Ċ', '⏎');
}

/** The text tokenized as the pipelines tokenize it, and its padding checked. */
function encodeFor(enc: ExplorerEncoder, text: string, padTo: number | undefined): HfEncoding {
  if (text.trim() === '') throw new Error('encoder attention: the text is empty');
  const r = enc.tokenizer.encodeInput(text, { maxLength: enc.maxTokens });
  if (padTo !== undefined) {
    if (!Number.isInteger(padTo) || padTo < 1)
      throw new Error(`encoder attention: padTo must be a whole number >= 1, got ${padTo}`);
    if (padTo > enc.maxTokens)
      throw new Error(`encoder attention: padTo ${padTo} is more than the ${enc.maxTokens} tokens the model reads`);
  }
  return r;
}

/** The row's tensors padded to `padTo`, as transformers' tokenizer(padding=True) pads a shorter text of a batch. */
function inputsFor(model: Encoder, row: HfEncoding, padTo: number | undefined) {
  const c = model.config;
  const T = Math.max(row.ids.length, padTo ?? 0);
  const ids = new Int32Array(T).fill(c.padId);
  ids.set(row.ids);
  const mask = new Int32Array(T);
  mask.fill(1, 0, row.ids.length);
  const types = new Int32Array(T);
  types.set(row.typeIds);
  const int = (a: Int32Array) => new Tensor(a, [1, T], 'int32');
  return {
    T,
    inputs: {
      inputIds: int(ids),
      attentionMask: int(mask),
      tokenTypeIds: model.embeddings.tokenType ? int(types) : null,
      positionIds: int(positionIds(ids, 1, T, c.positions, c.padId)),
    },
  };
}

/** Every layer's self-attention (per head) of the encoder over a text; numbers read back on every device. */
export async function encoderAttentionAsync(
  enc: ExplorerEncoder,
  text: string,
  options: EncoderAttentionOptions = {},
): Promise<EncoderAttention> {
  const row = encodeFor(enc, text, options.padTo);
  const { T, inputs } = inputsFor(enc.model, row, options.padTo);
  const weights = withEvalMode(enc.model, () =>
    noGrad(() => enc.model.forward({ ...inputs, needWeights: true }).attentions!),
  );
  const attention = await headsOfAsync(weights);
  const padId = enc.model.config.padId;
  const ids = [...row.ids, ...new Array<number>(T - row.ids.length).fill(padId)];
  return {
    text,
    ids,
    tokens: ids.map((id) => encoderTokenLabel(enc.tokenizer, id)),
    roles: ids.map((id, i) => (i >= row.ids.length ? 'padding' : enc.tokenizer.isSpecial(id) ? 'special' : 'text')),
    truncated: row.truncated,
    attention,
  };
}

/** The maps of an encoder's attention, to draw with attention-maps.ts (not causal: every key is seen). */
export function encoderMaps(a: EncoderAttention): AttentionMaps {
  return {
    name: ENCODER_ATTENTION_NAME,
    maps: a.attention,
    rows: a.tokens,
    cols: a.tokens,
    xLabel: 'key (attended to)',
    yLabel: 'query (attending)',
    causal: false,
    minCell: 12,
  };
}

/**
 * The attention of one position (the mask) in every layer and head, as one map: a row per layer × head
 * (`L1 H1`, `L1 H2`, …), a column per token. Drawn by the same heatmap as the other maps.
 */
export function positionMaps(a: EncoderAttention, position: number): AttentionMaps {
  if (!Number.isInteger(position) || position < 0 || position >= a.ids.length)
    throw new Error(`positionMaps: position ${position} is not one of the ${a.ids.length} tokens`);
  const rows: string[] = [];
  const map: number[][] = [];
  a.attention.forEach((layer, l) => {
    layer.forEach((head, hd) => {
      rows.push(`L${l + 1} H${hd + 1}`);
      map.push(head[position]);
    });
  });
  return {
    name: `attention of ${a.tokens[position]} (position ${position + 1})`,
    maps: [[map]],
    rows,
    cols: a.tokens,
    xLabel: 'key (attended to)',
    yLabel: 'layer and head',
    causal: false,
    minCell: 12,
  };
}

/** A fill-mask run: the pipeline's candidates and the attention of the text it read. */
export interface FillMaskAttention {
  /** transformers' pipeline('fill-mask') results, highest score first (pipelines/fill-mask.ts). */
  results: FillMaskResult[];
  /** The mask token of the folder ([MASK], <mask>). */
  maskToken: string;
  /** The mask's position in `attention.ids`. */
  maskAt: number;
  /** The encoder's attention over the masked text. */
  attention: EncoderAttention;
}

/**
 * The top `topK` tokens for the mask of `text` (exactly the fill-mask pipeline's results: the same code), and the
 * attention of every layer and head over the text, whose mask row is what chose them.
 */
export async function fillMaskWithAttention(enc: LoadedEncoder, text: string, topK = 5): Promise<FillMaskAttention> {
  const fill = fillMaskPipeline({ ...enc, kind: 'hf-encoder' });
  const results = await fill(text, { topK, onWarning: () => {} });
  const attention = await encoderAttentionAsync(enc, text);
  const maskId = enc.tokenizer.tokenToId(fill.maskToken)!;
  return { results, maskToken: fill.maskToken, maskAt: attention.ids.indexOf(maskId), attention };
}

/** The neuron view of `head` in `layer` for `query` over the encoder's input (padding as {@link EncoderAttention}). */
export async function encoderNeuronViewAsync(
  enc: ExplorerEncoder,
  text: string,
  layer: number,
  head: number,
  query: number,
  options: EncoderAttentionOptions = {},
): Promise<NeuronView> {
  const c = enc.model.config;
  if (!Number.isInteger(layer) || layer < 0 || layer >= c.numLayers)
    throw new Error(`neuronView: layer ${layer} does not exist (0..${c.numLayers - 1})`);
  if (!Number.isInteger(head) || head < 0 || head >= c.nhead)
    throw new Error(`neuronView: head ${head} does not exist (0..${c.nhead - 1})`);
  const row = encodeFor(enc, text, options.padTo);
  const { T, inputs } = inputsFor(enc.model, row, options.padTo);
  if (!Number.isInteger(query) || query < 0 || query >= T)
    throw new Error(`neuronView: query ${query} is not a position of the ${T} tokens`);
  const { q, k } = withEvalMode(enc.model, () =>
    noGrad(() => {
      const m = enc.model;
      const positions = inputs.positionIds!;
      let x = m.embeddings.forward(inputs.inputIds, inputs.tokenTypeIds ?? null, positions);
      // TRUE where the key is padding, as Encoder.forward makes it.
      const padding = inputs.attentionMask ? F.eq(inputs.attentionMask, 0) : null;
      const layers = [...m.encoder.layers];
      for (let l = 0; l < layer; l++) x = layers[l].forward(x, { srcKeyPaddingMask: padding });
      // Post-norm: the layer's input goes to the attention as it is.
      return layers[layer].selfAttn.projectSelf(x);
    }),
  );
  const [qd, kd] = await Promise.all([valuesOf(q), valuesOf(k)]);
  const d = c.dModel / c.nhead;
  const at = (t: Float32Array, j: number) => Array.from(t.subarray((head * T + j) * d, (head * T + j + 1) * d));
  const qi = at(qd, query);
  const keys = Array.from({ length: T }, (_, j) => at(kd, j));
  const products = keys.map((kj) => kj.map((v, i) => v * qi[i]));
  const scale = 1 / Math.sqrt(d);
  const real = row.ids.length;
  // A padding key is masked: its score is −∞ and its weight 0, as the model's mask makes it.
  const scores = products.map((p, j) => (j < real ? p.reduce((s, v) => s + v, 0) * scale : -Infinity));
  const max = Math.max(...scores);
  const e = scores.map((s) => (s === -Infinity ? 0 : Math.exp(s - max)));
  const z = e.reduce((s, v) => s + v, 0);
  return { layer, head, query, q: qi, keys, products, scale, scores, weights: e.map((v) => v / z) };
}
