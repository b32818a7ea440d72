/**
 * The encoder-only Transformer of BERT (Devlin et al. 2019) and its descendants (RoBERTa, DistilBERT,
 * XLM-R), readable top to bottom: a token is embedded (word + learned position [+ token type]), normalised
 * (the embedding LayerNorm), passed through qkv's own post-norm {@link TransformerEncoder} (the paper's
 * encoder half, §3.1, with GELU and BERT's ε), and then read by a head: the bare model's states, the
 * masked-LM head (a transform and the tied word table), or a classification head on the first token.
 *
 * The differences between the families are switches of {@link EncoderConfig}, set by their config readers
 * (models/hf/bert.ts): DistilBERT has no token types (`typeVocabSize` 0); RoBERTa and XLM-R number positions
 * after the padding id (`positions: 'after-padding'`); BERT's pooler and classifier use tanh, DistilBERT's
 * pre-classifier ReLU.
 */
import * as F from '../ops/index.ts';
import { Dropout, Embedding, LayerNorm, Linear } from '../nn/layers.ts';
import { Module } from '../nn/module.ts';
import { TransformerEncoder, TransformerEncoderLayer, type Activation } from '../nn/transformer.ts';
import { shapeToString } from '../tensor/shape.ts';
import { Tensor } from '../tensor/tensor.ts';

/** How position ids are numbered. */
export type PositionScheme =
  /** 0, 1, …, T − 1 in every row (BERT, DistilBERT). */
  | 'absolute'
  /**
   * fairseq's numbering (RoBERTa, XLM-R): a token that is not padding gets padId + 1 + (its index among the
   * row's non-padding tokens), padding gets padId, so the table's first padId + 1 rows are never used by text.
   */
  | 'after-padding';

/** The non-linearity of the classification head's first layer: tanh (BERT's pooler, RoBERTa) or ReLU (DistilBERT). */
export type PoolActivation = 'tanh' | 'relu';

/** The head on top of the encoder. */
export type EncoderHead =
  /** The bare model (BertModel): hidden states, and with `pooler` BERT's pooled first token. */
  | { kind: 'none'; pooler: boolean }
  /** *ForMaskedLM: dense → activation → LayerNorm → the word table (tied) + a bias, at every position. */
  | { kind: 'masked-lm'; activation: Activation; layerNormEps: number }
  /** *ForSequenceClassification: dense → activation on the first token → a projection onto the labels. */
  | { kind: 'classification'; numLabels: number; activation: PoolActivation };

/** Everything that defines an {@link Encoder}. */
export interface EncoderConfig {
  /** Rows of the word table. */
  vocabSize: number;
  /** d_model: width of the embeddings and of every layer (BERT's hidden_size, DistilBERT's dim). */
  dModel: number;
  /** h: attention heads per layer. */
  nhead: number;
  /** N: encoder layers. */
  numLayers: number;
  /** d_ff: the feed-forward block's inner width (intermediate_size, hidden_dim). */
  dimFeedforward: number;
  /** The feed-forward non-linearity (BERT: exact GELU). */
  activation: Activation;
  /** ε of every LayerNorm of the encoder and of the embeddings (BERT 1e-12, RoBERTa 1e-5). */
  layerNormEps: number;
  /** Rows of the learned position table (max_position_embeddings). */
  maxPositions: number;
  /** Rows of the token-type (segment) table; 0: none (DistilBERT). */
  typeVocabSize: number;
  /** The padding id (its word row is the padding row; RoBERTa numbers positions after it). */
  padId: number;
  /** How positions are numbered. */
  positions: PositionScheme;
  /** Dropout on embeddings, sub-layer outputs and attention weights while training (0 at inference). */
  dropout: number;
  /** The head. */
  head: EncoderHead;
}

/** The inputs of one forward pass, as transformers names them (camelCased). */
export interface EncoderInputs {
  /** (B, T) int32 token ids. */
  inputIds: Tensor;
  /** (B, T) int32: 1 for a token, 0 for padding (never attended to as a key). Default: all 1. */
  attentionMask?: Tensor | null;
  /** (B, T) int32 segment ids (0 for the first text, 1 for the second). Default: all 0. */
  tokenTypeIds?: Tensor | null;
  /** (B, T) int32 position ids. Default: as `config.positions` numbers them (`after-padding` reads the ids). */
  positionIds?: Tensor | null;
  /** Also return every layer's attention weights (B, h, T, T). */
  needWeights?: boolean;
}

/** What {@link Encoder.forward} returns. */
export interface EncoderOutput {
  /** The last layer's states (B, T, dModel). */
  hidden: Tensor;
  /** Per layer, the attention weights (B, h, T, T), when asked for; else null. */
  attentions: Tensor[] | null;
}

/**
 * Position ids as transformers numbers them, on the host, from the rows of ids (B rows of T): `absolute`
 * 0..T−1; `after-padding` as RoBERTa's create_position_ids_from_input_ids (cumsum of id ≠ pad, times that
 * mask, plus padId).
 */
export function positionIds(
  ids: ArrayLike<number>,
  B: number,
  T: number,
  scheme: PositionScheme,
  padId: number,
): Int32Array {
  const out = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    let seen = 0;
    for (let t = 0; t < T; t++) {
      const i = b * T + t;
      if (scheme === 'absolute') out[i] = t;
      else out[i] = ids[i] === padId ? padId : padId + ++seen;
    }
  }
  return out;
}

/** Word + position (+ token type) embeddings, summed in transformers' order, then LayerNorm and dropout. */
export class EncoderEmbeddings extends Module {
  /** The word table (vocabSize, dModel); tied to the masked-LM head's output projection. */
  readonly word: Embedding;
  /** The learned position table (maxPositions, dModel). */
  readonly position: Embedding;
  /** The segment table (typeVocabSize, dModel), or null (DistilBERT). */
  readonly tokenType: Embedding | null;
  /** The embedding LayerNorm. */
  readonly norm: LayerNorm;
  /** Dropout after the LayerNorm. */
  readonly dropout: Dropout;

  constructor(readonly config: EncoderConfig) {
    super();
    const c = config;
    this.word = this.registerModule('word', new Embedding(c.vocabSize, c.dModel, { paddingIdx: c.padId }));
    this.position = this.registerModule('position', new Embedding(c.maxPositions, c.dModel));
    this.tokenType =
      c.typeVocabSize > 0 ? this.registerModule('tokenType', new Embedding(c.typeVocabSize, c.dModel)) : null;
    this.norm = this.registerModule('norm', new LayerNorm(c.dModel, { eps: c.layerNormEps }));
    this.dropout = this.registerModule('dropout', new Dropout(c.dropout));
  }

  /** ids (B, T) → (B, T, dModel). */
  forward(ids: Tensor, tokenTypeIds: Tensor | null, positions: Tensor): Tensor {
    let x = this.word.forward(ids); // (B, T, E)
    if (this.tokenType) {
      // transformers adds the segment row of each token (row 0 when none is given) before the positions.
      const types = tokenTypeIds ?? new Tensor(new Int32Array(ids.shape[1]), [1, ids.shape[1]], 'int32');
      x = F.add(x, this.tokenType.forward(types)); // (B, T, E) + (B or 1, T, E)
    }
    x = F.add(x, this.position.forward(positions)); // (B, T, E) + (B or 1, T, E)
    return this.dropout.forward(this.norm.forward(x));
  }
}

/**
 * BERT-style encoder (see the file comment): embeddings, N post-norm layers of qkv's TransformerEncoder,
 * and the configured head.
 */
export class Encoder extends Module {
  /** The config it was built from. */
  readonly config: EncoderConfig;
  /** Word, position and segment embeddings with their LayerNorm. */
  readonly embeddings: EncoderEmbeddings;
  /** N post-norm encoder layers (torch.nn's layout, batch-first), no final LayerNorm. */
  readonly encoder: TransformerEncoder;
  /** The bare BERT's pooler (dense, then tanh on the first token), or null. */
  readonly pooler: Linear | null;
  /** The masked-LM transform (dense → activation → LayerNorm), or null. */
  readonly mlmDense: Linear | null;
  /** The masked-LM transform's LayerNorm, or null. */
  readonly mlmNorm: LayerNorm | null;
  /** The masked-LM output bias (vocabSize), added to h · word tableᵀ; or null. */
  readonly mlmBias: Tensor | null;
  /** The classification head's first layer (dModel → dModel, on the first token), or null. */
  readonly classifierDense: Linear | null;
  /** The classification head's projection onto the labels, or null. */
  readonly classifierOut: Linear | null;
  /** Dropout inside the classification head (training only). */
  readonly classifierDropout: Dropout;

  constructor(config: EncoderConfig) {
    super();
    const c = (this.config = { ...config });
    if (c.dModel % c.nhead !== 0) throw new Error(`Encoder: dModel ${c.dModel} is not divisible by nhead ${c.nhead}`);
    this.embeddings = this.registerModule('embeddings', new EncoderEmbeddings(c));
    this.encoder = this.registerModule(
      'encoder',
      new TransformerEncoder(
        new TransformerEncoderLayer({
          dModel: c.dModel,
          nhead: c.nhead,
          dimFeedforward: c.dimFeedforward,
          dropout: c.dropout,
          activation: c.activation,
          layerNormEps: c.layerNormEps,
          batchFirst: true,
          normFirst: false, // post-norm: LayerNorm(x + Sublayer(x)), as the paper and BERT
        }),
        c.numLayers,
      ),
    );
    const h = c.head;
    this.pooler = h.kind === 'none' && h.pooler ? this.registerModule('pooler', new Linear(c.dModel, c.dModel)) : null;
    const mlm = h.kind === 'masked-lm';
    this.mlmDense = mlm ? this.registerModule('mlmDense', new Linear(c.dModel, c.dModel)) : null;
    this.mlmNorm = mlm ? this.registerModule('mlmNorm', new LayerNorm(c.dModel, { eps: h.layerNormEps })) : null;
    this.mlmBias = mlm
      ? this.registerParameter('mlmBias', new Tensor(new Float32Array(c.vocabSize), [c.vocabSize]))
      : null;
    const cls = h.kind === 'classification';
    this.classifierDense = cls ? this.registerModule('classifierDense', new Linear(c.dModel, c.dModel)) : null;
    this.classifierOut = cls ? this.registerModule('classifierOut', new Linear(c.dModel, h.numLabels)) : null;
    this.classifierDropout = this.registerModule('classifierDropout', new Dropout(c.dropout));
  }

  /** The last layer's states (B, T, dModel) of a batch, masks and ids as transformers takes them. */
  forward(inputs: EncoderInputs): EncoderOutput {
    const { inputIds: ids } = inputs;
    if (ids.dtype !== 'int32' || ids.ndim !== 2)
      throw new Error(
        `Encoder: inputIds must be int32 ids of shape (B, T), got ${ids.dtype} ${shapeToString(ids.shape)}`,
      );
    const [B, T] = ids.shape;
    const c = this.config;
    if (T > c.maxPositions - (c.positions === 'after-padding' ? c.padId + 1 : 0))
      throw new Error(
        `Encoder: ${T} tokens exceed the ${c.maxPositions - (c.positions === 'after-padding' ? c.padId + 1 : 0)} ` +
          'positions the model has (max_position_embeddings)',
      );
    for (const [name, t] of [
      ['attentionMask', inputs.attentionMask],
      ['tokenTypeIds', inputs.tokenTypeIds],
      ['positionIds', inputs.positionIds],
    ] as const) {
      if (t && (t.dtype !== 'int32' || t.ndim !== 2 || t.shape[0] !== B || t.shape[1] !== T))
        throw new Error(
          `Encoder: ${name} must be int32 of shape [${B}, ${T}], got ${t.dtype} ${shapeToString(t.shape)}`,
        );
    }
    if (inputs.tokenTypeIds && !this.embeddings.tokenType)
      throw new Error('Encoder: tokenTypeIds given, but the model has no token-type table (DistilBERT)');
    const positions =
      inputs.positionIds ??
      (c.positions === 'absolute'
        ? new Tensor(positionIds([], 1, T, 'absolute', c.padId), [1, T], 'int32')
        : new Tensor(positionIds(ids.dataSync<Int32Array>(), B, T, c.positions, c.padId), [B, T], 'int32'));
    const x = this.embeddings.forward(ids, inputs.tokenTypeIds ?? null, positions);
    // (B, T): TRUE where the key is padding, torch.nn's key_padding_mask; transformers adds finfo.min there.
    const padding = inputs.attentionMask ? F.eq(inputs.attentionMask, 0) : null;
    if (!inputs.needWeights)
      return { hidden: this.encoder.forward(x, { srcKeyPaddingMask: padding }), attentions: null };
    return this.forwardWithWeights(x, padding);
  }

  /** The encoder layer by layer, keeping each layer's per-head attention weights (for the explorer). */
  private forwardWithWeights(x: Tensor, padding: Tensor | null): EncoderOutput {
    const attentions: Tensor[] = [];
    let h = x;
    for (const layer of this.encoder.layers) {
      const { weights } = layer.selfAttn.forward(h, h, h, {
        keyPaddingMask: padding,
        needWeights: true,
        averageAttnWeights: false,
      });
      attentions.push(weights!); // (B, h, T, T)
      h = layer.forward(h, { srcKeyPaddingMask: padding });
    }
    return { hidden: h, attentions };
  }

  /** BERT's pooled output (B, dModel): tanh(dense(first token's state)). */
  pool(hidden: Tensor): Tensor {
    if (!this.pooler) throw new Error('Encoder: this model has no pooler (config.head is not a bare BERT with pooler)');
    return F.tanh(this.pooler.forward(firstToken(hidden)));
  }

  /** Masked-LM logits (B, T, vocabSize) from the states. */
  maskedLM(hidden: Tensor): Tensor {
    const h = this.config.head;
    if (h.kind !== 'masked-lm') throw new Error(`Encoder: maskedLM needs a masked-LM head, the model has '${h.kind}'`);
    const t = this.mlmNorm!.forward(activate(this.mlmDense!.forward(hidden), h.activation));
    // The output projection is the word table itself (tied, as every BERT-family checkpoint), plus its own bias.
    return F.add(this.embeddings.word.attend(t), this.mlmBias!); // (B, T, V)
  }

  /** Classification logits (B, numLabels) from the states: the head reads the first token ([CLS], <s>). */
  classify(hidden: Tensor): Tensor {
    const h = this.config.head;
    if (h.kind !== 'classification')
      throw new Error(`Encoder: classify needs a classification head, the model has '${h.kind}'`);
    const pooled = this.classifierDense!.forward(this.classifierDropout.forward(firstToken(hidden)));
    const a = h.activation === 'tanh' ? F.tanh(pooled) : F.relu(pooled);
    return this.classifierOut!.forward(this.classifierDropout.forward(a)); // (B, numLabels)
  }
}

/** (B, T, E) → (B, E): the first position of every row. */
function firstToken(hidden: Tensor): Tensor {
  const [B, , E] = hidden.shape;
  return F.narrow(hidden, 1, 0, 1).reshape(B, E);
}

function activate(x: Tensor, a: Activation): Tensor {
  if (a === 'gelu') return F.gelu(x);
  if (a === 'relu') return F.relu(x);
  return F.mul(x, F.sigmoid(x));
}
