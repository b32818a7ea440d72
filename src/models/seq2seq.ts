/**
 * The paper's translation model, readable top to bottom: a token is embedded (shared table,
 * scaled by √dModel, §3.4), given its position (§3.5), passed through the encoder-decoder
 * Transformer (§3.1), and projected back onto the vocabulary with the same embedding matrix.
 * With separate source and target vocabularies (`tgtVocabSize`), the source has its own table and
 * the target's table is the one tied to the output projection (fairseq's
 * --share-decoder-input-output-embed).
 */
import * as F from '../ops/index.ts';
import type { TransformerDecoderCache } from '../nn/kv-cache.ts';
import { Transformer, type Activation } from '../nn/transformer.ts';
import { Embedding, PositionalEncoding, type SinusoidLayout } from '../nn/layers.ts';
import { Module } from '../nn/module.ts';
import { normal_ } from '../nn/init.ts';
import { causalBias } from '../ops/attention.ts';
import { shapeToString } from '../tensor/shape.ts';
import { Tensor } from '../tensor/tensor.ts';

/** Everything that defines a Seq2Seq model; saved as config.json beside the weights. */
export interface Seq2SeqConfig {
  /**
   * Shared source/target vocabulary size (one BPE vocabulary for both languages, §5.1); with
   * `tgtVocabSize`, the source vocabulary's size alone.
   */
  vocabSize: number;
  /**
   * Separate vocabularies: the target vocabulary's size, with its own embedding table
   * (`tgtEmbedding`, tied to the output projection). Absent: one table for both languages.
   */
  tgtVocabSize?: number;
  /** d_model: width of every sub-layer output and of the embeddings. */
  dModel: number;
  /** h: attention heads per layer; dK = dV = dModel / h. */
  nhead: number;
  /** N for the encoder. */
  numEncoderLayers: number;
  /** N for the decoder. */
  numDecoderLayers: number;
  /** d_ff: inner width of the position-wise feed-forward block. */
  dimFeedforward: number;
  /** P_drop on sub-layer outputs, on embeddings+positions, and on attention weights (§5.4). */
  dropout: number;
  /** Dropout on attention weights instead (default `dropout`; 0 lets training use the fused kernel). */
  attentionDropout?: number;
  /** Dropout after the feed-forward activation instead (default `dropout`). */
  activationDropout?: number;
  /** The feed-forward nonlinearity: `relu` as the paper (§3.3), or `gelu`. */
  activation: Activation;
  /** Pre-norm trains more stably at small scale; the paper is post-norm (false). */
  normFirst: boolean;
  /** Longest sequence the position table covers. */
  maxLen: number;
  /** Id of the padding token (masked as a key, ignored by the loss). */
  padId: number;
  // The switches below are absent in qkv's own models (each default is the paper's); Hugging Face's
  // Marian (models/hf/marian.ts) sets them.
  /**
   * The position table's layout (default 'interleaved', §3.5; 'halves': sines then cosines, as Marian; 'fairseq':
   * M2M100/NLLB's frequencies, sines then cosines).
   */
  positionLayout?: SinusoidLayout;
  /**
   * The table row of a sequence's first position (default 0). fairseq's models (M2M100/NLLB) number positions
   * from padding_idx + 1; the table then has maxLen + positionOffset rows.
   */
  positionOffset?: number;
  /** Multiply embeddings by √dModel (default true, §3.4; HF's `scale_embedding`). */
  scaleEmbedding?: boolean;
  /** A LayerNorm after the encoder and after the decoder stack (default true; Marian has none). */
  finalNorm?: boolean;
  /** A learned bias (1, vocab) added to the logits, `finalLogitsBias` (default false; Marian's `final_logits_bias`). */
  finalLogitsBias?: boolean;
  /**
   * Mask padding ids of the target as keys (default true). Marian starts decoding from the padding id
   * and attends to it: false.
   */
  maskTargetPadding?: boolean;
}

/** The paper's base model (Table 3), with the 37k shared WMT vocabulary. */
export const PAPER_BASE: Seq2SeqConfig = {
  vocabSize: 37000,
  dModel: 512,
  nhead: 8,
  numEncoderLayers: 6,
  numDecoderLayers: 6,
  dimFeedforward: 2048,
  dropout: 0.1,
  activation: 'relu',
  normFirst: false,
  maxLen: 512,
  padId: 0,
};

/** A size a 2-core CPU trains on Multi30K in hours (the vocabulary is set from the tokenizer). */
export const MULTI30K_SMALL: Seq2SeqConfig = {
  vocabSize: 8000,
  dModel: 256,
  nhead: 4,
  numEncoderLayers: 3,
  numDecoderLayers: 3,
  dimFeedforward: 1024,
  dropout: 0.1,
  activation: 'relu',
  normFirst: false,
  maxLen: 256,
  padId: 0,
};

/**
 * The encoder-decoder translation model (see the file comment): embeddings scaled by √dModel,
 * positions, {@link nn.Transformer}, and the tied output projection.
 */
/** Row `r` of a 2-D weight set to 0, on its device (the padding embedding, as nn.Embedding's padding_idx). */
function zeroRow(w: Tensor, r: number): void {
  const cols = w.shape[1];
  w.device.fill(w.storage, 'float32', 0, cols, r * cols);
}

export class Seq2Seq extends Module {
  /** The config it was built from (saved as config.json beside the weights). */
  readonly config: Seq2SeqConfig;
  /** The shared table, or with separate vocabularies the source's. */
  readonly embedding: Embedding;
  /** The target's table (separate vocabularies), tied to the output projection; else null. */
  readonly tgtEmbedding: Embedding | null;
  /** The sinusoidal position encoding (§3.5) with dropout, added to the scaled embeddings. */
  readonly positions: PositionalEncoding;
  /** The encoder-decoder stack (§3.1), torch.nn.Transformer's layout. */
  readonly transformer: Transformer;
  /** With config.finalLogitsBias, the (1, vocab) bias added to every logit row; else null. */
  readonly finalLogitsBias: Tensor | null;

  constructor(config: Seq2SeqConfig) {
    super();
    this.config = { ...config };
    const c = this.config;
    this.embedding = this.registerModule('embedding', new Embedding(c.vocabSize, c.dModel, { paddingIdx: c.padId }));
    this.positions = this.registerModule(
      'positions',
      new PositionalEncoding(c.dModel, {
        dropout: c.dropout,
        maxLen: c.maxLen + (c.positionOffset ?? 0),
        layout: c.positionLayout,
      }),
    );
    this.transformer = this.registerModule(
      'transformer',
      new Transformer({
        dModel: c.dModel,
        nhead: c.nhead,
        numEncoderLayers: c.numEncoderLayers,
        numDecoderLayers: c.numDecoderLayers,
        dimFeedforward: c.dimFeedforward,
        dropout: c.dropout,
        attentionDropout: c.attentionDropout,
        activationDropout: c.activationDropout,
        activation: c.activation,
        normFirst: c.normFirst,
        batchFirst: true,
        finalNorm: c.finalNorm,
      }),
    );
    // Tied input/output embedding: N(0, dModel^-0.5) keeps logits O(1) at the start.
    normal_(this.embedding.weight, 0, c.dModel ** -0.5);
    zeroRow(this.embedding.weight, c.padId);
    // Created last, so a shared-vocabulary model draws exactly the numbers it always did.
    this.tgtEmbedding = null;
    if (c.tgtVocabSize !== undefined) {
      this.tgtEmbedding = this.registerModule(
        'tgtEmbedding',
        new Embedding(c.tgtVocabSize, c.dModel, { paddingIdx: c.padId }),
      );
      normal_(this.tgtEmbedding.weight, 0, c.dModel ** -0.5);
      zeroRow(this.tgtEmbedding.weight, c.padId);
    }
    this.finalLogitsBias = c.finalLogitsBias
      ? this.registerBuffer(
          'finalLogitsBias',
          new Tensor(new Float32Array(this.targetVocabSize), [1, this.targetVocabSize]),
        )
      : null;
  }

  /** Size of the vocabulary the decoder reads and writes (the logits' last dimension). */
  get targetVocabSize(): number {
    return this.config.tgtVocabSize ?? this.config.vocabSize;
  }

  /** The table that embeds target ids and projects decoder states onto the target vocabulary. */
  private get targetTable(): Embedding {
    return this.tgtEmbedding ?? this.embedding;
  }

  /**
   * ids (B, T) -> (B, T, dModel): embedding · √dModel + positions, then dropout. `offset` is the
   * position of the first id (incremental decoding feeds position t alone); `side` picks the table
   * when the vocabularies are separate.
   */
  embed(ids: Tensor, offset = 0, side: 'src' | 'tgt' = 'src'): Tensor {
    const table = side === 'tgt' ? this.targetTable : this.embedding;
    const e = table.forward(ids);
    const x = (this.config.scaleEmbedding ?? true) ? F.mul(e, Math.sqrt(this.config.dModel)) : e;
    const first = this.config.positionOffset ?? 0;
    if (offset === 0 && first === 0) return this.positions.forward(x);
    const T = ids.shape[1];
    const pos = this.positions.pe;
    if (!Number.isInteger(offset) || offset < 0 || first + offset + T > pos.shape[0]) {
      throw new Error(`Seq2Seq: positions ${offset}..${offset + T - 1} exceed maxLen ${this.config.maxLen}`);
    }
    const pe = F.narrow(pos, 0, first + offset, T); // the table's rows of positions offset..offset+T-1, on its device
    return this.positions.dropout.forward(F.add(x, pe));
  }

  /** The target's padding mask, or null where the target's padding is attended to (config.maskTargetPadding). */
  private targetPadding(tgt: Tensor): Tensor | null {
    return (this.config.maskTargetPadding ?? true) ? this.paddingMask(tgt) : null;
  }

  /** Padding mask (B, T) for key positions: TRUE where the id is padding. */
  paddingMask(ids: Tensor): Tensor {
    return F.eq(ids, this.config.padId);
  }

  /** The encoder output ("memory") for source ids (B, S). */
  encode(src: Tensor, srcPadding?: Tensor): Tensor {
    this.checkIds(src, 'src');
    return this.transformer.encoder.forward(this.embed(src), {
      srcKeyPaddingMask: srcPadding ?? this.paddingMask(src),
    });
  }

  /** Decoder states (B, T, dModel) for target prefixes (B, T), attending causally and to memory. */
  decode(tgt: Tensor, memory: Tensor, srcPadding: Tensor): Tensor {
    this.checkIds(tgt, 'tgt');
    const T = tgt.shape[1];
    return this.transformer.decoder.forward(this.embed(tgt, 0, 'tgt'), memory, {
      tgtMask: causalBias(T, T),
      tgtKeyPaddingMask: this.targetPadding(tgt),
      memoryKeyPaddingMask: srcPadding,
    });
  }

  /**
   * The pre-softmax linear transformation shares the (target) embedding matrix (§3.4): logits = h·Eᵀ
   * (+ finalLogitsBias, Marian's).
   */
  generator(h: Tensor): Tensor {
    const logits = this.targetTable.attend(h);
    return this.finalLogitsBias ? F.add(logits, this.finalLogitsBias) : logits;
  }

  /**
   * Start incremental decoding: the decoder's key/value cache for this memory (B, S, dModel), with
   * the cross-attention keys/values of every layer computed once. Reorder rows with
   * `cache.reorder(rows)` (beam search).
   */
  initCache(memory: Tensor, srcPadding: Tensor | null): TransformerDecoderCache {
    return this.transformer.decoder.initCache(memory, { memoryKeyPaddingMask: srcPadding });
  }

  /**
   * Incremental decoding: logits (B, L, vocab) for the L next target ids (B, L) at positions
   * cache.length .. cache.length + L − 1, attending to the cached prefix; the cache grows by L.
   * Equal to the matching rows of forward() / decode() (padding ids are masked as keys in both).
   * With needWeights, per layer the self-attention (B, h, L, t + L) and cross-attention
   * (B, h, L, S) weights of the new positions.
   */
  decodeIncremental(
    tgt: Tensor,
    cache: TransformerDecoderCache,
    options: { needWeights?: boolean } = {},
  ): {
    /** Next-token logits of the new positions, (B, L, vocab). */
    logits: Tensor;
    /** With needWeights, per layer the self-attention (B, h, L, t + L); else null. */
    selfWeights: Tensor[] | null;
    /** With needWeights, per layer the cross-attention (B, h, L, S); else null. */
    crossWeights: Tensor[] | null;
  } {
    this.checkIds(tgt, 'tgt');
    const r = this.transformer.decoder.forwardStep(this.embed(tgt, cache.length, 'tgt'), cache, {
      tgtKeyPaddingMask: this.targetPadding(tgt),
      needWeights: options.needWeights,
    });
    return { logits: this.generator(r.output), selfWeights: r.selfWeights, crossWeights: r.crossWeights };
  }

  /** One decoding step: the last ids (B, 1) -> next-token logits (B, vocab); the cache grows by one. */
  decodeStep(lastTokens: Tensor, cache: TransformerDecoderCache): Tensor {
    this.checkIds(lastTokens, 'lastTokens');
    if (lastTokens.shape[1] !== 1)
      throw new Error(`Seq2Seq: decodeStep takes one id per row (B, 1), got ${shapeToString(lastTokens.shape)}`);
    const { logits } = this.decodeIncremental(lastTokens, cache);
    return logits.reshape(logits.shape[0], logits.shape[2]);
  }

  /** Teacher-forced logits (B, T, vocab) for src (B, S) and the shifted target input (B, T). */
  forward(src: Tensor, tgtIn: Tensor): Tensor {
    const srcPadding = this.paddingMask(src);
    return this.generator(this.decode(tgtIn, this.encode(src, srcPadding), srcPadding));
  }

  private checkIds(ids: Tensor, arg: string): void {
    if (ids.dtype !== 'int32' || ids.ndim !== 2) {
      throw new Error(
        `Seq2Seq: ${arg} must be int32 token ids of shape (B, T), got ${ids.dtype} ${shapeToString(ids.shape)}`,
      );
    }
  }
}
