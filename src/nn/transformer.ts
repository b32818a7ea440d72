import * as F from '../ops/index.ts';
import { causalBias } from '../ops/attention.ts';
import { Tensor } from '../tensor/tensor.ts';
import { MultiheadAttention } from './attention.ts';
import { xavierUniform_ } from './init.ts';
import { Dropout, LayerNorm, Linear } from './layers.ts';
import { Module, ModuleList } from './module.ts';

export type Activation = 'relu' | 'gelu';

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
  activation?: Activation;
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
    activation: o.activation ?? 'relu',
    layerNormEps: o.layerNormEps ?? 1e-5,
    batchFirst: o.batchFirst ?? false,
    normFirst: o.normFirst ?? false,
  };
}

function activate(x: Tensor, a: Activation): Tensor {
  if (a === 'relu') return F.relu(x);
  if (a === 'gelu') return F.gelu(x);
  throw new Error(`Transformer: activation must be 'relu' or 'gelu', got '${a as string}'`);
}

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
  readonly options: Required<TransformerLayerOptions>;
  readonly selfAttn: MultiheadAttention;
  readonly linear1: Linear;
  readonly dropout: Dropout;
  readonly linear2: Linear;
  readonly norm1: LayerNorm;
  readonly norm2: LayerNorm;
  readonly dropout1: Dropout;
  readonly dropout2: Dropout;

  constructor(options: TransformerLayerOptions) {
    super();
    const o = (this.options = resolved(options));
    this.selfAttn = this.registerModule('self_attn', new MultiheadAttention(o.dModel, o.nhead, { dropout: o.dropout, batchFirst: o.batchFirst }));
    this.linear1 = this.registerModule('linear1', new Linear(o.dModel, o.dimFeedforward));
    this.dropout = this.registerModule('dropout', new Dropout(o.dropout));
    this.linear2 = this.registerModule('linear2', new Linear(o.dimFeedforward, o.dModel));
    this.norm1 = this.registerModule('norm1', new LayerNorm(o.dModel, { eps: o.layerNormEps }));
    this.norm2 = this.registerModule('norm2', new LayerNorm(o.dModel, { eps: o.layerNormEps }));
    this.dropout1 = this.registerModule('dropout1', new Dropout(o.dropout));
    this.dropout2 = this.registerModule('dropout2', new Dropout(o.dropout));
  }

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
      attnMask: o.srcMask, keyPaddingMask: o.srcKeyPaddingMask, needWeights: false, isCausal: o.isCausal,
    });
    return this.dropout1.forward(output);
  }

  /** FFN(x) = max(0, x·W1 + b1)·W2 + b2 (§3.3). */
  private ffBlock(x: Tensor): Tensor {
    return this.dropout2.forward(this.linear2.forward(this.dropout.forward(activate(this.linear1.forward(x), this.options.activation))));
  }
}

export interface DecoderLayerForwardOptions {
  tgtMask?: Tensor | null;
  memoryMask?: Tensor | null;
  tgtKeyPaddingMask?: Tensor | null;
  memoryKeyPaddingMask?: Tensor | null;
  tgtIsCausal?: boolean;
  memoryIsCausal?: boolean;
}

/**
 * One decoder layer (§3.1): masked self-attention, attention over the encoder output ("memory",
 * cross-attention), and the feed-forward block.
 */
export class TransformerDecoderLayer extends Module {
  readonly options: Required<TransformerLayerOptions>;
  readonly selfAttn: MultiheadAttention;
  readonly multiheadAttn: MultiheadAttention;
  readonly linear1: Linear;
  readonly dropout: Dropout;
  readonly linear2: Linear;
  readonly norm1: LayerNorm;
  readonly norm2: LayerNorm;
  readonly norm3: LayerNorm;
  readonly dropout1: Dropout;
  readonly dropout2: Dropout;
  readonly dropout3: Dropout;

  constructor(options: TransformerLayerOptions) {
    super();
    const o = (this.options = resolved(options));
    const mha = () => new MultiheadAttention(o.dModel, o.nhead, { dropout: o.dropout, batchFirst: o.batchFirst });
    this.selfAttn = this.registerModule('self_attn', mha());
    this.multiheadAttn = this.registerModule('multihead_attn', mha());
    this.linear1 = this.registerModule('linear1', new Linear(o.dModel, o.dimFeedforward));
    this.dropout = this.registerModule('dropout', new Dropout(o.dropout));
    this.linear2 = this.registerModule('linear2', new Linear(o.dimFeedforward, o.dModel));
    this.norm1 = this.registerModule('norm1', new LayerNorm(o.dModel, { eps: o.layerNormEps }));
    this.norm2 = this.registerModule('norm2', new LayerNorm(o.dModel, { eps: o.layerNormEps }));
    this.norm3 = this.registerModule('norm3', new LayerNorm(o.dModel, { eps: o.layerNormEps }));
    this.dropout1 = this.registerModule('dropout1', new Dropout(o.dropout));
    this.dropout2 = this.registerModule('dropout2', new Dropout(o.dropout));
    this.dropout3 = this.registerModule('dropout3', new Dropout(o.dropout));
  }

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

  private saBlock(x: Tensor, o: DecoderLayerForwardOptions): Tensor {
    const { output } = this.selfAttn.forward(x, x, x, {
      attnMask: o.tgtMask, keyPaddingMask: o.tgtKeyPaddingMask, needWeights: false, isCausal: o.tgtIsCausal,
    });
    return this.dropout1.forward(output);
  }

  private mhaBlock(x: Tensor, mem: Tensor, o: DecoderLayerForwardOptions): Tensor {
    const { output } = this.multiheadAttn.forward(x, mem, mem, {
      attnMask: o.memoryMask, keyPaddingMask: o.memoryKeyPaddingMask, needWeights: false, isCausal: o.memoryIsCausal,
    });
    return this.dropout2.forward(output);
  }

  private ffBlock(x: Tensor): Tensor {
    return this.dropout3.forward(this.linear2.forward(this.dropout.forward(activate(this.linear1.forward(x), this.options.activation))));
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
  readonly layers: ModuleList<TransformerEncoderLayer>;
  readonly norm: LayerNorm | null;

  constructor(encoderLayer: TransformerEncoderLayer, numLayers: number, norm: LayerNorm | null = null) {
    super();
    this.layers = this.registerModule('layers', new ModuleList(clones(encoderLayer, numLayers, () => new TransformerEncoderLayer(encoderLayer.options))));
    this.norm = norm ? this.registerModule('norm', norm) : null;
  }

  forward(src: Tensor, options: { mask?: Tensor | null; srcKeyPaddingMask?: Tensor | null; isCausal?: boolean } = {}): Tensor {
    let x = src;
    for (const layer of this.layers) {
      x = layer.forward(x, { srcMask: options.mask, srcKeyPaddingMask: options.srcKeyPaddingMask, isCausal: options.isCausal });
    }
    return this.norm ? this.norm.forward(x) : x;
  }
}

/** A stack of N decoder layers with an optional final LayerNorm (torch.nn.TransformerDecoder). */
export class TransformerDecoder extends Module {
  readonly layers: ModuleList<TransformerDecoderLayer>;
  readonly norm: LayerNorm | null;

  constructor(decoderLayer: TransformerDecoderLayer, numLayers: number, norm: LayerNorm | null = null) {
    super();
    this.layers = this.registerModule('layers', new ModuleList(clones(decoderLayer, numLayers, () => new TransformerDecoderLayer(decoderLayer.options))));
    this.norm = norm ? this.registerModule('norm', norm) : null;
  }

  forward(tgt: Tensor, memory: Tensor, options: DecoderLayerForwardOptions = {}): Tensor {
    let x = tgt;
    for (const layer of this.layers) x = layer.forward(x, memory, options);
    return this.norm ? this.norm.forward(x) : x;
  }
}

export interface TransformerOptions extends Partial<TransformerLayerOptions> {
  /** N, the number of encoder layers (6 in the paper). */
  numEncoderLayers?: number;
  /** N, the number of decoder layers (6 in the paper). */
  numDecoderLayers?: number;
}

export interface TransformerForwardOptions {
  srcMask?: Tensor | null;
  tgtMask?: Tensor | null;
  memoryMask?: Tensor | null;
  srcKeyPaddingMask?: Tensor | null;
  tgtKeyPaddingMask?: Tensor | null;
  memoryKeyPaddingMask?: Tensor | null;
  srcIsCausal?: boolean;
  tgtIsCausal?: boolean;
  memoryIsCausal?: boolean;
}

/**
 * The encoder-decoder Transformer of the paper, as torch.nn.Transformer: defaults are the base
 * model (dModel 512, 8 heads, 6+6 layers, dFf 2048, dropout 0.1). Embeddings, positions and the
 * output projection are not part of it (see models/), exactly as in PyTorch.
 */
export class Transformer extends Module {
  readonly dModel: number;
  readonly nhead: number;
  readonly batchFirst: boolean;
  readonly encoder: TransformerEncoder;
  readonly decoder: TransformerDecoder;

  constructor(options: TransformerOptions = {}) {
    super();
    const layer: TransformerLayerOptions = {
      dModel: options.dModel ?? 512,
      nhead: options.nhead ?? 8,
      dimFeedforward: options.dimFeedforward ?? 2048,
      dropout: options.dropout ?? 0.1,
      activation: options.activation ?? 'relu',
      layerNormEps: options.layerNormEps ?? 1e-5,
      batchFirst: options.batchFirst ?? false,
      normFirst: options.normFirst ?? false,
    };
    this.dModel = layer.dModel;
    this.nhead = layer.nhead;
    this.batchFirst = layer.batchFirst!;
    const eps = { eps: layer.layerNormEps };
    this.encoder = this.registerModule('encoder', new TransformerEncoder(new TransformerEncoderLayer(layer), options.numEncoderLayers ?? 6, new LayerNorm(layer.dModel, eps)));
    this.decoder = this.registerModule('decoder', new TransformerDecoder(new TransformerDecoderLayer(layer), options.numDecoderLayers ?? 6, new LayerNorm(layer.dModel, eps)));
    // torch.nn.Transformer._reset_parameters: Xavier-uniform on every matrix.
    for (const p of this.parameters()) if (p.ndim > 1) xavierUniform_(p);
  }

  /** src (S, N, E) and tgt (T, N, E), or batch-first; returns (T, N, E) / (N, T, E). */
  forward(src: Tensor, tgt: Tensor, options: TransformerForwardOptions = {}): Tensor {
    const bd = this.batchFirst ? 0 : 1;
    if (src.ndim === 3 && tgt.ndim === 3 && src.shape[bd] !== tgt.shape[bd]) {
      throw new Error(`Transformer: the batch number of src and tgt must be equal, got src ${src.shape[bd]} and tgt ${tgt.shape[bd]}`);
    }
    if (src.shape[src.ndim - 1] !== this.dModel || tgt.shape[tgt.ndim - 1] !== this.dModel) {
      throw new Error(`Transformer: the feature number of src and tgt must be equal to dModel ${this.dModel}, got src [${src.shape.join(', ')}] and tgt [${tgt.shape.join(', ')}]`);
    }
    const memory = this.encoder.forward(src, { mask: options.srcMask, srcKeyPaddingMask: options.srcKeyPaddingMask, isCausal: options.srcIsCausal });
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
