/**
 * Over 500 lines: torch.nn's five Transformer classes (encoder and decoder layers, encoder, decoder,
 * Transformer) in one file, as torch/nn/modules/transformer.py keeps them, with their options and the
 * incremental decoding step; the KV cache lives in nn/kv-cache.ts.
 */
import * as F from '../ops/index.ts';
import { causalBias, maskToBias } from '../ops/attention.ts';
import { shapeToString } from '../tensor/shape.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { MultiheadAttention } from './attention.ts';
import { xavierUniform_ } from './init.ts';
import { Dropout, LayerNorm, Linear } from './layers.ts';
import { appendSelf, TransformerDecoderCache, type DecoderLayerCache } from './kv-cache.ts';
import { Module, ModuleList } from './module.ts';

/**
 * The feed-forward block's non-linearity: the paper's ReLU (§3.3), GELU as in GPT/BERT, or SiLU
 * x·σ(x) (Marian's `swish`, Ramachandran et al. 2017).
 */
export type Activation = 'relu' | 'gelu' | 'silu';

/** The hyper-parameters of one layer (torch.nn.TransformerEncoderLayer's, camelCased). */
export interface TransformerLayerOptions {
  /** Model width d_model (512 in the paper). */
  dModel: number;
  /** Number of heads h (8 in the paper). */
  nhead: number;
  /** Inner width d_ff of the feed-forward block (2048 in the paper). */
  dimFeedforward?: number;
  /** P_drop on every sub-layer output and inside attention (0.1 in the paper). */
  dropout?: number;
  /**
   * Dropout on the attention weights (default: `dropout`, as torch.nn). A qkv extension (fairseq's
   * `attention_dropout`): PyTorch's layers use `dropout` for both. At 0 training takes the fused
   * attention kernel, which never stores the L×S weights.
   */
  attentionDropout?: number;
  /** Dropout after the feed-forward activation (default: `dropout`, as torch.nn; fairseq's `activation_dropout`). */
  activationDropout?: number;
  /** Non-linearity between the two feed-forward matrices (default 'relu', as the paper). */
  activation?: Activation;
  /** The ε added to the variance in every LayerNorm (default 1e-5, as torch.nn). */
  layerNormEps?: number;
  /** (N, T, E) instead of (T, N, E). */
  batchFirst?: boolean;
  /** Pre-norm x + Sublayer(LayerNorm(x)) (GPT-2 style) instead of the paper's LayerNorm(x + Sublayer(x)). */
  normFirst?: boolean;
}

function resolved(o: TransformerLayerOptions): Required<TransformerLayerOptions> {
  return {
    dModel: o.dModel,
    nhead: o.nhead,
    dimFeedforward: o.dimFeedforward ?? 2048,
    dropout: o.dropout ?? 0.1,
    attentionDropout: o.attentionDropout ?? o.dropout ?? 0.1,
    activationDropout: o.activationDropout ?? o.dropout ?? 0.1,
    activation: o.activation ?? 'relu',
    layerNormEps: o.layerNormEps ?? 1e-5,
    batchFirst: o.batchFirst ?? false,
    normFirst: o.normFirst ?? false,
  };
}

/** The feed-forward nonlinearity `a` of x (the decoder layer's, also run by decode/static-seq2seq.ts). */
export function activate(x: Tensor, a: Activation): Tensor {
  if (a === 'relu') return F.relu(x);
  if (a === 'gelu') return F.gelu(x);
  if (a === 'silu') return F.mul(x, F.sigmoid(x));
  throw new Error(`Transformer: activation must be 'relu', 'gelu' or 'silu', got '${a as string}'`);
}

/** The masks of one TransformerEncoderLayer.forward (torch's src_mask, src_key_padding_mask, is_causal). */
export interface EncoderLayerForwardOptions {
  /** (S, S) or (N·nhead, S, S); bool TRUE = blocked, or float added. */
  srcMask?: Tensor | null;
  /** (N, S): TRUE = padding. */
  srcKeyPaddingMask?: Tensor | null;
  /** Apply a causal mask to self-attention. */
  isCausal?: boolean;
}

/** One encoder layer (§3.1): self-attention and a position-wise feed-forward block, each residual. */
export class TransformerEncoderLayer extends Module {
  /** The options with every default filled in. */
  readonly options: Required<TransformerLayerOptions>;
  /** Multi-head self-attention (torch's `self_attn`). */
  readonly selfAttn: MultiheadAttention;
  /** W1, b1 of the feed-forward block: dModel → dimFeedforward. */
  readonly linear1: Linear;
  /** Dropout after the feed-forward activation (`activationDropout`). */
  readonly dropout: Dropout;
  /** W2, b2 of the feed-forward block: dimFeedforward → dModel. */
  readonly linear2: Linear;
  /** LayerNorm of the self-attention sub-layer (on its input when normFirst, else after the residual add). */
  readonly norm1: LayerNorm;
  /** LayerNorm of the feed-forward sub-layer (placed as norm1). */
  readonly norm2: LayerNorm;
  /** Residual dropout on the self-attention output (§5.4). */
  readonly dropout1: Dropout;
  /** Residual dropout on the feed-forward output (§5.4). */
  readonly dropout2: Dropout;

  constructor(options: TransformerLayerOptions) {
    super();
    const o = (this.options = resolved(options));
    this.selfAttn = this.registerModule(
      'self_attn',
      new MultiheadAttention(o.dModel, o.nhead, { dropout: o.attentionDropout, batchFirst: o.batchFirst }),
    );
    this.linear1 = this.registerModule('linear1', new Linear(o.dModel, o.dimFeedforward));
    this.dropout = this.registerModule('dropout', new Dropout(o.activationDropout));
    this.linear2 = this.registerModule('linear2', new Linear(o.dimFeedforward, o.dModel));
    this.norm1 = this.registerModule('norm1', new LayerNorm(o.dModel, { eps: o.layerNormEps }));
    this.norm2 = this.registerModule('norm2', new LayerNorm(o.dModel, { eps: o.layerNormEps }));
    this.dropout1 = this.registerModule('dropout1', new Dropout(o.dropout));
    this.dropout2 = this.registerModule('dropout2', new Dropout(o.dropout));
  }

  /** src (S, N, E), or (N, S, E) batch-first; returns the same shape. */
  forward(src: Tensor, options: EncoderLayerForwardOptions = {}): Tensor {
    let x = src;
    if (this.options.normFirst) {
      x = F.add(x, this.saBlock(this.norm1.forward(x), options));
      x = F.add(x, this.ffBlock(this.norm2.forward(x)));
    } else {
      x = this.norm1.forward(F.add(x, this.saBlock(x, options)));
      x = this.norm2.forward(F.add(x, this.ffBlock(x)));
    }
    return x;
  }

  private saBlock(x: Tensor, o: EncoderLayerForwardOptions): Tensor {
    const { output } = this.selfAttn.forward(x, x, x, {
      attnMask: o.srcMask,
      keyPaddingMask: o.srcKeyPaddingMask,
      needWeights: false,
      isCausal: o.isCausal,
    });
    return this.dropout1.forward(output);
  }

  /** FFN(x) = max(0, x·W1 + b1)·W2 + b2 (§3.3). */
  private ffBlock(x: Tensor): Tensor {
    return this.dropout2.forward(
      this.linear2.forward(this.dropout.forward(activate(this.linear1.forward(x), this.options.activation))),
    );
  }
}

/** The masks of a teacher-forced decoder forward (torch.nn.TransformerDecoderLayer's, camelCased). */
export interface DecoderLayerForwardOptions {
  /** Self-attention mask (T, T) or (N·nhead, T, T): bool TRUE = blocked, or float, added. */
  tgtMask?: Tensor | null;
  /** Cross-attention mask (T, S) or (N·nhead, T, S): bool TRUE = blocked, or float, added. */
  memoryMask?: Tensor | null;
  /** (N, T): TRUE = this target position is padding and is never attended to. */
  tgtKeyPaddingMask?: Tensor | null;
  /** (N, S): TRUE = this memory position is padding and is never attended to. */
  memoryKeyPaddingMask?: Tensor | null;
  /** Apply a causal mask to self-attention (position i sees targets ≤ i), the paper's decoder masking (§3.2.3). */
  tgtIsCausal?: boolean;
  /** Apply a causal mask to cross-attention. */
  memoryIsCausal?: boolean;
}

/** The masks of one incremental step of a TransformerDecoderLayer (forwardStep). */
export interface DecoderLayerStepOptions {
  /** (N, t + L), every target key so far including the L new ones: TRUE = padding, or float, added. */
  tgtKeyPaddingMask?: Tensor | null;
  /** (N, S): TRUE = padding in the memory, or float, added. */
  memoryKeyPaddingMask?: Tensor | null;
  /** Also return the per-head self- and cross-attention weights of the new positions. */
  needWeights?: boolean;
}

/** What an incremental decoder step (forwardStep) returns. */
export interface DecoderStepResult {
  /** Outputs of the L new positions, in the module's layout ((N, L, E) batch-first, else (L, N, E)). */
  output: Tensor;
  /** Per layer: self-attention weights (N, h, L, t + L), when asked for. */
  selfWeights: Tensor[] | null;
  /** Per layer: cross-attention weights (N, h, L, S), when asked for. */
  crossWeights: Tensor[] | null;
}

/**
 * One decoder layer (§3.1): masked self-attention, attention over the encoder output ("memory",
 * cross-attention), and the feed-forward block.
 */
export class TransformerDecoderLayer extends Module {
  /** The options with every default filled in. */
  readonly options: Required<TransformerLayerOptions>;
  /** Masked multi-head self-attention over the target (torch's `self_attn`). */
  readonly selfAttn: MultiheadAttention;
  /** Cross-attention: queries from the target, keys and values from the memory (torch's `multihead_attn`). */
  readonly multiheadAttn: MultiheadAttention;
  /** W1, b1 of the feed-forward block: dModel → dimFeedforward. */
  readonly linear1: Linear;
  /** Dropout after the feed-forward activation (`activationDropout`). */
  readonly dropout: Dropout;
  /** W2, b2 of the feed-forward block: dimFeedforward → dModel. */
  readonly linear2: Linear;
  /** LayerNorm of the self-attention sub-layer (on its input when normFirst, else after the residual add). */
  readonly norm1: LayerNorm;
  /** LayerNorm of the cross-attention sub-layer (placed as norm1). */
  readonly norm2: LayerNorm;
  /** LayerNorm of the feed-forward sub-layer (placed as norm1). */
  readonly norm3: LayerNorm;
  /** Residual dropout on the self-attention output (§5.4). */
  readonly dropout1: Dropout;
  /** Residual dropout on the cross-attention output (§5.4). */
  readonly dropout2: Dropout;
  /** Residual dropout on the feed-forward output (§5.4). */
  readonly dropout3: Dropout;

  constructor(options: TransformerLayerOptions) {
    super();
    const o = (this.options = resolved(options));
    const mha = () =>
      new MultiheadAttention(o.dModel, o.nhead, { dropout: o.attentionDropout, batchFirst: o.batchFirst });
    this.selfAttn = this.registerModule('self_attn', mha());
    this.multiheadAttn = this.registerModule('multihead_attn', mha());
    this.linear1 = this.registerModule('linear1', new Linear(o.dModel, o.dimFeedforward));
    this.dropout = this.registerModule('dropout', new Dropout(o.activationDropout));
    this.linear2 = this.registerModule('linear2', new Linear(o.dimFeedforward, o.dModel));
    this.norm1 = this.registerModule('norm1', new LayerNorm(o.dModel, { eps: o.layerNormEps }));
    this.norm2 = this.registerModule('norm2', new LayerNorm(o.dModel, { eps: o.layerNormEps }));
    this.norm3 = this.registerModule('norm3', new LayerNorm(o.dModel, { eps: o.layerNormEps }));
    this.dropout1 = this.registerModule('dropout1', new Dropout(o.dropout));
    this.dropout2 = this.registerModule('dropout2', new Dropout(o.dropout));
    this.dropout3 = this.registerModule('dropout3', new Dropout(o.dropout));
  }

  /**
   * Teacher-forced forward: tgt (T, N, E) and memory (S, N, E), or (N, T, E) and (N, S, E)
   * batch-first; returns tgt's shape. Pass a causal tgtMask or tgtIsCausal for the paper's decoder.
   */
  forward(tgt: Tensor, memory: Tensor, options: DecoderLayerForwardOptions = {}): Tensor {
    let x = tgt;
    if (this.options.normFirst) {
      x = F.add(x, this.saBlock(this.norm1.forward(x), options));
      x = F.add(x, this.mhaBlock(this.norm2.forward(x), memory, options));
      x = F.add(x, this.ffBlock(this.norm3.forward(x)));
    } else {
      x = this.norm1.forward(F.add(x, this.saBlock(x, options)));
      x = this.norm2.forward(F.add(x, this.mhaBlock(x, memory, options)));
      x = this.norm3.forward(F.add(x, this.ffBlock(x)));
    }
    return x;
  }

  /** This layer's cache for a memory (in the layer's layout): cross-attention keys/values, computed once. */
  initCache(memory: Tensor): DecoderLayerCache {
    const mem = this.options.batchFirst ? memory : F.transpose(memory, 0, 1);
    const { k, v } = this.multiheadAttn.projectKeyValue(mem, mem);
    return { selfK: null, selfV: null, memoryK: k, memoryV: v };
  }

  /**
   * Incremental forward: the outputs of L new target positions x ((N, L, E) batch-first, else
   * (L, N, E)), given the keys/values of the earlier positions in `cache`, which gets the new
   * ones appended. Equals the rows of forward() over the whole prefix with a causal tgtMask.
   * Only the new positions are projected; they attend to every earlier position and causally
   * among themselves.
   */
  forwardStep(x: Tensor, cache: DecoderLayerCache, options: DecoderLayerStepOptions = {}): DecoderStepResult {
    const bf = this.options.batchFirst;
    let h = bf ? x : F.transpose(x, 0, 1);
    const needWeights = options.needWeights ?? false;
    const w: { self: Tensor | null; cross: Tensor | null } = { self: null, cross: null };
    if (this.options.normFirst) {
      h = F.add(h, this.saStep(this.norm1.forward(h), cache, options, w));
      h = F.add(h, this.mhaStep(this.norm2.forward(h), cache, options, w));
      h = F.add(h, this.ffBlock(this.norm3.forward(h)));
    } else {
      h = this.norm1.forward(F.add(h, this.saStep(h, cache, options, w)));
      h = this.norm2.forward(F.add(h, this.mhaStep(h, cache, options, w)));
      h = this.norm3.forward(F.add(h, this.ffBlock(h)));
    }
    return {
      output: bf ? h : F.transpose(h, 0, 1),
      selfWeights: needWeights ? [w.self!] : null,
      crossWeights: needWeights ? [w.cross!] : null,
    };
  }

  /** forwardStep's self-attention block: the new positions' keys and values join the cache. */
  private saStep(
    y: Tensor,
    cache: DecoderLayerCache,
    options: DecoderLayerStepOptions,
    w: { self: Tensor | null },
  ): Tensor {
    const L = y.shape[1];
    const { q, k, v } = this.selfAttn.projectSelf(y);
    appendSelf(cache, k, v);
    const r = this.selfAttn.attendProjected(q, cache.selfK!, cache.selfV!, {
      keyPaddingMask: options.tgtKeyPaddingMask,
      isCausal: L > 1,
      needWeights: options.needWeights ?? false,
    });
    w.self = r.weights;
    return this.dropout1.forward(r.output);
  }

  /** forwardStep's cross-attention block, over the memory's cached keys and values. */
  private mhaStep(
    y: Tensor,
    cache: DecoderLayerCache,
    options: DecoderLayerStepOptions,
    w: { cross: Tensor | null },
  ): Tensor {
    const r = this.multiheadAttn.attendProjected(this.multiheadAttn.projectQuery(y), cache.memoryK, cache.memoryV, {
      keyPaddingMask: options.memoryKeyPaddingMask,
      needWeights: options.needWeights ?? false,
    });
    w.cross = r.weights;
    return this.dropout2.forward(r.output);
  }

  private saBlock(x: Tensor, o: DecoderLayerForwardOptions): Tensor {
    const { output } = this.selfAttn.forward(x, x, x, {
      attnMask: o.tgtMask,
      keyPaddingMask: o.tgtKeyPaddingMask,
      needWeights: false,
      isCausal: o.tgtIsCausal,
    });
    return this.dropout1.forward(output);
  }

  private mhaBlock(x: Tensor, mem: Tensor, o: DecoderLayerForwardOptions): Tensor {
    const { output } = this.multiheadAttn.forward(x, mem, mem, {
      attnMask: o.memoryMask,
      keyPaddingMask: o.memoryKeyPaddingMask,
      needWeights: false,
      isCausal: o.memoryIsCausal,
    });
    return this.dropout2.forward(output);
  }

  private ffBlock(x: Tensor): Tensor {
    return this.dropout3.forward(
      this.linear2.forward(this.dropout.forward(activate(this.linear1.forward(x), this.options.activation))),
    );
  }
}

/** N copies of a layer, as torch: each starts with the template layer's weights. */
function clones<L extends Module>(layer: L, n: number, make: () => L): L[] {
  if (!Number.isInteger(n) || n < 0) throw new Error(`Transformer: numLayers must be a non-negative integer, got ${n}`);
  const sd = layer.stateDict();
  return Array.from({ length: n }, (_, i) => {
    if (i === 0) return layer;
    const c = make();
    c.loadStateDict(sd);
    return c;
  });
}

/** A stack of N encoder layers with an optional final LayerNorm (torch.nn.TransformerEncoder). */
export class TransformerEncoder extends Module {
  /** The N layers; the first is the layer passed in, the others copies of its initial weights. */
  readonly layers: ModuleList<TransformerEncoderLayer>;
  /** LayerNorm applied to the last layer's output, or null for none. */
  readonly norm: LayerNorm | null;

  constructor(encoderLayer: TransformerEncoderLayer, numLayers: number, norm: LayerNorm | null = null) {
    super();
    this.layers = this.registerModule(
      'layers',
      new ModuleList(clones(encoderLayer, numLayers, () => new TransformerEncoderLayer(encoderLayer.options))),
    );
    this.norm = norm ? this.registerModule('norm', norm) : null;
  }

  /**
   * src (S, N, E), or (N, S, E) batch-first, through every layer then `norm`; the same shape back.
   * `mask`, `srcKeyPaddingMask`, `isCausal` go to each layer as EncoderLayerForwardOptions' srcMask,
   * srcKeyPaddingMask, isCausal.
   */
  forward(
    src: Tensor,
    options: { mask?: Tensor | null; srcKeyPaddingMask?: Tensor | null; isCausal?: boolean } = {},
  ): Tensor {
    let x = src;
    for (const layer of this.layers) {
      x = layer.forward(x, {
        srcMask: options.mask,
        srcKeyPaddingMask: options.srcKeyPaddingMask,
        isCausal: options.isCausal,
      });
    }
    return this.norm ? this.norm.forward(x) : x;
  }
}

/** A stack of N decoder layers with an optional final LayerNorm (torch.nn.TransformerDecoder). */
export class TransformerDecoder extends Module {
  /** The N layers; the first is the layer passed in, the others copies of its initial weights. */
  readonly layers: ModuleList<TransformerDecoderLayer>;
  /** LayerNorm applied to the last layer's output, or null for none. */
  readonly norm: LayerNorm | null;

  constructor(decoderLayer: TransformerDecoderLayer, numLayers: number, norm: LayerNorm | null = null) {
    super();
    this.layers = this.registerModule(
      'layers',
      new ModuleList(clones(decoderLayer, numLayers, () => new TransformerDecoderLayer(decoderLayer.options))),
    );
    this.norm = norm ? this.registerModule('norm', norm) : null;
  }

  /**
   * Teacher-forced forward of tgt (T, N, E) over memory (S, N, E) (or batch-first) through every
   * layer, each with the same masks, then `norm`; returns tgt's shape.
   */
  forward(tgt: Tensor, memory: Tensor, options: DecoderLayerForwardOptions = {}): Tensor {
    let x = tgt;
    for (const layer of this.layers) x = layer.forward(x, memory, options);
    return this.norm ? this.norm.forward(x) : x;
  }

  /** The layers' layout (batch-first when there are none). */
  private get batchFirst(): boolean {
    return this.layers.length === 0 || this.layers.at(0).options.batchFirst;
  }

  /**
   * Start incremental decoding of a batch: the cross-attention keys/values of `memory` ((N, S, E)
   * batch-first, else (S, N, E)) for every layer, and its padding mask ((N, S), TRUE = padding).
   */
  initCache(memory: Tensor, options: { memoryKeyPaddingMask?: Tensor | null } = {}): TransformerDecoderCache {
    const bf = this.batchFirst;
    if (memory.ndim !== 3)
      throw new Error(
        `TransformerDecoder.initCache: memory must be ` +
          `${bf ? '(N, S, E)' : '(S, N, E)'}, got ${shapeToString(memory.shape)}`,
      );
    const N = memory.shape[bf ? 0 : 1];
    const S = memory.shape[bf ? 1 : 0];
    let bias: Tensor | null = null;
    const kpm = options.memoryKeyPaddingMask ?? null;
    if (kpm) {
      if (kpm.ndim !== 2 || kpm.shape[0] !== N || kpm.shape[1] !== S) {
        throw new Error(
          `TransformerDecoder.initCache: memoryKeyPaddingMask must have shape ` +
            `[${N}, ${S}], got ${shapeToString(kpm.shape)}`,
        );
      }
      // Kept on the device even when it masks nothing (a zero bias adds exactly nothing): no value read back.
      bias = maskToBias(kpm, 'block', 'TransformerDecoder.initCache', 'memoryKeyPaddingMask');
      if (bias === kpm) bias = kpm.clone(); // the cache owns its copy
    }
    return new TransformerDecoderCache(
      [...this.layers].map((l) => l.initCache(memory)),
      bias,
      N,
    );
  }

  /**
   * Incremental forward of L new target positions tgt ((N, L, E) batch-first, else (L, N, E)):
   * every layer attends over the cached prefix plus the new positions, the cache grows by L.
   * tgtKeyPaddingMask (N, L) marks new positions that are padding (masked as keys from now on).
   */
  forwardStep(
    tgt: Tensor,
    cache: TransformerDecoderCache,
    options: { tgtKeyPaddingMask?: Tensor | null; needWeights?: boolean } = {},
  ): DecoderStepResult {
    const bf = this.batchFirst;
    const N = tgt.shape[bf ? 0 : 1];
    const L = tgt.shape[bf ? 1 : 0];
    if (tgt.ndim !== 3 || N !== cache.batchSize) {
      throw new Error(
        `TransformerDecoder.forwardStep: tgt must be ` +
          `${bf ? '(N, L, E)' : '(L, N, E)'} with N = ${cache.batchSize} (the ` +
          `cache's rows), got ${shapeToString(tgt.shape)}`,
      );
    }
    if (cache.layers.length !== this.layers.length) {
      throw new Error(
        `TransformerDecoder.forwardStep: the cache has ${cache.layers.length} ` +
          `layers, the decoder ${this.layers.length}`,
      );
    }
    cache.appendTargetPadding(options.tgtKeyPaddingMask ?? null, L);
    const needWeights = options.needWeights ?? false;
    const selfWeights: Tensor[] = [];
    const crossWeights: Tensor[] = [];
    let x = tgt;
    let i = 0;
    for (const layer of this.layers) {
      const r = layer.forwardStep(x, cache.layers[i++], {
        tgtKeyPaddingMask: cache.tgtKeyPaddingMask,
        memoryKeyPaddingMask: cache.memoryKeyPaddingMask,
        needWeights,
      });
      x = r.output;
      if (needWeights) {
        selfWeights.push(...r.selfWeights!);
        crossWeights.push(...r.crossWeights!);
      }
    }
    cache.length += L;
    return {
      output: this.norm ? this.norm.forward(x) : x,
      selfWeights: needWeights ? selfWeights : null,
      crossWeights: needWeights ? crossWeights : null,
    };
  }
}

/**
 * torch.nn.Transformer's hyper-parameters, camelCased: the layer options (all optional here,
 * defaulting to the paper's base model) and the depth of each stack.
 */
export interface TransformerOptions extends Partial<TransformerLayerOptions> {
  /** N, the number of encoder layers (6 in the paper). */
  numEncoderLayers?: number;
  /** N, the number of decoder layers (6 in the paper). */
  numDecoderLayers?: number;
  /**
   * A LayerNorm after each stack (default true, as torch.nn.Transformer); false: none, as Hugging Face's
   * post-norm BART and Marian, whose every layer already ends in one.
   */
  finalNorm?: boolean;
}

/** The masks of Transformer.forward (torch.nn.Transformer.forward's, camelCased). */
export interface TransformerForwardOptions {
  /** Encoder self-attention mask (S, S) or (N·nhead, S, S): bool TRUE = blocked, or float, added. */
  srcMask?: Tensor | null;
  /** Decoder self-attention mask (T, T) or (N·nhead, T, T), usually generateSquareSubsequentMask(T). */
  tgtMask?: Tensor | null;
  /** Cross-attention mask (T, S) or (N·nhead, T, S). */
  memoryMask?: Tensor | null;
  /** (N, S): TRUE = this source position is padding (masked as a key in the encoder). */
  srcKeyPaddingMask?: Tensor | null;
  /** (N, T): TRUE = this target position is padding (masked as a key in decoder self-attention). */
  tgtKeyPaddingMask?: Tensor | null;
  /** (N, S): TRUE = this memory position is padding (masked as a key in cross-attention); usually srcKeyPaddingMask. */
  memoryKeyPaddingMask?: Tensor | null;
  /** Apply a causal mask to encoder self-attention. */
  srcIsCausal?: boolean;
  /** Apply a causal mask to decoder self-attention (instead of passing tgtMask). */
  tgtIsCausal?: boolean;
  /** Apply a causal mask to cross-attention. */
  memoryIsCausal?: boolean;
}

/**
 * The encoder-decoder Transformer of the paper, as torch.nn.Transformer: defaults are the base
 * model (dModel 512, 8 heads, 6+6 layers, dFf 2048, dropout 0.1). Embeddings, positions and the
 * output projection are not part of it (see models/), exactly as in PyTorch.
 */
export class Transformer extends Module {
  /** Model width d_model. */
  readonly dModel: number;
  /** Number of heads h. */
  readonly nhead: number;
  /** Whether inputs and outputs are (N, T, E) rather than (T, N, E). */
  readonly batchFirst: boolean;
  /** N encoder layers and a final LayerNorm. */
  readonly encoder: TransformerEncoder;
  /** N decoder layers and a final LayerNorm. */
  readonly decoder: TransformerDecoder;

  constructor(options: TransformerOptions = {}) {
    super();
    const layer: TransformerLayerOptions = {
      dModel: options.dModel ?? 512,
      nhead: options.nhead ?? 8,
      dimFeedforward: options.dimFeedforward ?? 2048,
      dropout: options.dropout ?? 0.1,
      attentionDropout: options.attentionDropout,
      activationDropout: options.activationDropout,
      activation: options.activation ?? 'relu',
      layerNormEps: options.layerNormEps ?? 1e-5,
      batchFirst: options.batchFirst ?? false,
      normFirst: options.normFirst ?? false,
    };
    this.dModel = layer.dModel;
    this.nhead = layer.nhead;
    this.batchFirst = layer.batchFirst!;
    const eps = { eps: layer.layerNormEps };
    this.encoder = this.registerModule(
      'encoder',
      new TransformerEncoder(
        new TransformerEncoderLayer(layer),
        options.numEncoderLayers ?? 6,
        (options.finalNorm ?? true) ? new LayerNorm(layer.dModel, eps) : null,
      ),
    );
    this.decoder = this.registerModule(
      'decoder',
      new TransformerDecoder(
        new TransformerDecoderLayer(layer),
        options.numDecoderLayers ?? 6,
        (options.finalNorm ?? true) ? new LayerNorm(layer.dModel, eps) : null,
      ),
    );
    // torch.nn.Transformer._reset_parameters: Xavier-uniform on every matrix.
    for (const p of this.parameters()) if (p.ndim > 1) xavierUniform_(p);
  }

  /** src (S, N, E) and tgt (T, N, E), or batch-first; returns (T, N, E) / (N, T, E). */
  forward(src: Tensor, tgt: Tensor, options: TransformerForwardOptions = {}): Tensor {
    const bd = this.batchFirst ? 0 : 1;
    if (src.ndim === 3 && tgt.ndim === 3 && src.shape[bd] !== tgt.shape[bd]) {
      throw new Error(
        `Transformer: the batch number of src and tgt must be equal, got src ${src.shape[bd]} and tgt ${tgt.shape[bd]}`,
      );
    }
    if (src.shape[src.ndim - 1] !== this.dModel || tgt.shape[tgt.ndim - 1] !== this.dModel) {
      throw new Error(
        `Transformer: the feature number of src and tgt must be equal to ` +
          `dModel ${this.dModel}, got src [${src.shape.join(', ')}] and tgt ` +
          `[${tgt.shape.join(', ')}]`,
      );
    }
    const memory = this.encoder.forward(src, {
      mask: options.srcMask,
      srcKeyPaddingMask: options.srcKeyPaddingMask,
      isCausal: options.srcIsCausal,
    });
    return this.decoder.forward(tgt, memory, {
      tgtMask: options.tgtMask,
      memoryMask: options.memoryMask,
      tgtKeyPaddingMask: options.tgtKeyPaddingMask,
      memoryKeyPaddingMask: options.memoryKeyPaddingMask,
      tgtIsCausal: options.tgtIsCausal,
      memoryIsCausal: options.memoryIsCausal,
    });
  }

  /** (sz, sz) float mask: 0 on and below the diagonal, −∞ above (torch's generate_square_subsequent_mask). */
  static generateSquareSubsequentMask(sz: number): Tensor {
    return causalBias(sz, sz);
  }
}
