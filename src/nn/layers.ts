import { noGrad } from '../autograd/grad-mode.ts';
import * as F from '../ops/index.ts';
import { Tensor, full, zeros } from '../tensor/tensor.ts';
import { linearDefault_, normal_, uniform_ } from './init.ts';
import { LoraLinear, type LoraOptions } from './lora.ts';
import { Module, type QuantizeOptions } from './module.ts';

/** y = x·Wᵀ + b; weight (outFeatures, inFeatures) as torch.nn.Linear. */
export class Linear extends Module {
  /**
   * (outFeatures, inFeatures), initialised as torch does (Kaiming uniform, a = √5); after
   * `quantize({ dtype })`, its int8 or q4 values, with their scales in {@link weightScale}.
   */
  weight: Tensor;
  /** The quantized weight's float32 scales, (outFeatures, 1) for int8, (outFeatures, inFeatures/32) for q4. */
  weightScale: Tensor | null = null;
  /** (outFeatures), or null when built with `bias: false`. */
  readonly bias: Tensor | null;

  constructor(
    /** Size of each input's last dim. */
    readonly inFeatures: number,
    /** Size of each output's last dim. */
    readonly outFeatures: number,
    options: { bias?: boolean } = {},
  ) {
    super();
    checkPositiveInt('Linear', 'inFeatures', inFeatures);
    checkPositiveInt('Linear', 'outFeatures', outFeatures);
    this.weight = this.registerParameter('weight', linearDefault_(zeros(outFeatures, inFeatures)));
    if (options.bias ?? true) {
      const b = 1 / Math.sqrt(inFeatures);
      this.bias = this.registerParameter('bias', uniform_(zeros(outFeatures), -b, b));
    } else {
      this.bias = null;
    }
  }

  /** A low-rank adapter added to the output (addLora), registered as `lora`; null without one. */
  lora: LoraLinear | null = null;

  /**
   * A quantized weight's product: false, the int8/q4 kernels (x's rows quantized on the fly; inference, no
   * gradient); true, x·dequant(W)ᵀ in float32 with the gradient to x (F.linearDequantized: QLoRA training, set by
   * nn/qlora.ts `prepareQuantizedTraining`). No effect on a float weight.
   */
  computeDequantized = false;

  /** x (..., inFeatures) -> (..., outFeatures), plus the LoRA update where an adapter is attached. */
  forward(x: Tensor): Tensor {
    const y = !this.weightScale
      ? F.linear(x, this.weight, this.bias)
      : this.computeDequantized
        ? F.linearDequantized(x, this.weight, this.weightScale, this.bias)
        : F.linearQuantized(x, this.weight, this.weightScale, this.bias);
    return this.lora ? F.add(y, this.lora.forward(x)) : y;
  }

  /** Attach a new LoRA pair (inFeatures → r → outFeatures) whose update forward() adds; one per layer. */
  addLora(options: LoraOptions): LoraLinear {
    if (this.lora) throw new Error('Linear.addLora: this layer already has an adapter (merge or remove it first)');
    this.lora = this.registerModule('lora', new LoraLinear(this.inFeatures, this.outFeatures, options));
    return this.lora;
  }

  /** Drop the adapter; with `merge`, first add its ΔW = scaling·B·A into the weight (float weights only). */
  removeLora(merge: boolean): void {
    if (!this.lora) return;
    if (merge) {
      if (this.weightScale) throw new Error('Linear.removeLora: cannot merge an adapter into a quantized weight');
      const lora = this.lora;
      mergeInto(
        this.weight,
        noGrad(() => lora.deltaWeight()),
        0,
      );
    }
    this.removeModule('lora');
    this.lora = null;
  }

  /** The weight as a quantized pair in `dtype` (Module.quantize); a second call leaves it as it is. */
  override quantizeOwn(o: Required<QuantizeOptions>): void {
    if (this.weightScale) return;
    const { values, scale } = F.quantizeWeight(this.weight, o.dtype, o);
    this.replaceParameter('weight', [
      ['weight', values],
      ['weight_scale', scale],
    ]);
    this.weight = values;
    this.weightScale = scale;
  }
}

/** Add `delta` (rows, cols) into rows [start, start + rows) of the 2-D weight `w`, in place, outside autograd. */
export function mergeInto(w: Tensor, delta: Tensor, start: number): void {
  const d = delta.dataSync<Float32Array>();
  const values = w.dataSync<Float32Array>().slice();
  const at = start * w.shape[1];
  for (let i = 0; i < d.length; i++) values[at + i] += d[i];
  w.write(values);
}

/** A lookup table of vectors; the row at paddingIdx starts at zero and receives no gradient. */
export class Embedding extends Module {
  /**
   * The table (numEmbeddings, embeddingDim), drawn from N(0, 1) as torch does; after `quantize()`, its int8
   * or q4 values, with their scales in {@link weightScale}.
   */
  weight: Tensor;
  /** The quantized table's float32 scales, (numEmbeddings, 1) for int8, (numEmbeddings, embeddingDim/32) for q4. */
  weightScale: Tensor | null = null;
  /** The padding row (a negative index given is counted from the end), or null. */
  readonly paddingIdx: number | null;

  constructor(
    /** Rows of the table: the vocabulary size. */
    readonly numEmbeddings: number,
    /** Width of each vector. */
    readonly embeddingDim: number,
    options: { paddingIdx?: number | null } = {},
  ) {
    super();
    checkPositiveInt('Embedding', 'numEmbeddings', numEmbeddings);
    checkPositiveInt('Embedding', 'embeddingDim', embeddingDim);
    let pad = options.paddingIdx ?? null;
    if (pad !== null) {
      if (!Number.isInteger(pad) || pad >= numEmbeddings || pad < -numEmbeddings) {
        throw new Error(`Embedding: paddingIdx must be within numEmbeddings ${numEmbeddings}, got ${pad}`);
      }
      if (pad < 0) pad += numEmbeddings;
    }
    this.paddingIdx = pad;
    this.weight = this.registerParameter('weight', normal_(zeros(numEmbeddings, embeddingDim)));
    if (pad !== null) this.weight.device.fill(this.weight.storage, 'float32', 0, embeddingDim, pad * embeddingDim);
  }

  /** Integer ids (...) -> their rows (..., embeddingDim). */
  forward(ids: Tensor): Tensor {
    if (this.weightScale) return F.embeddingQuantized(ids, this.weight, this.weightScale);
    return F.embedding(ids, this.weight, this.paddingIdx);
  }

  /**
   * h (..., embeddingDim) -> h·tableᵀ (..., numEmbeddings): the table as a tied output projection (logits over
   * the vocabulary), through the quantized kernels when the table is quantized.
   */
  attend(h: Tensor): Tensor {
    if (this.weightScale) return F.linearQuantized(h, this.weight, this.weightScale);
    return F.linear(h, this.weight);
  }

  /** The table as a quantized pair in `tables` (Module.quantize), unless that is 'float32' or it is quantized. */
  override quantizeOwn(o: Required<QuantizeOptions>): void {
    if (this.weightScale || o.tables === 'float32') return;
    const { values, scale } = F.quantizeWeight(this.weight, o.tables, o);
    this.replaceParameter('weight', [
      ['weight', values],
      ['weight_scale', scale],
    ]);
    this.weight = values;
    this.weightScale = scale;
  }
}

/** Options of {@link LayerNorm}, torch's names. */
export interface LayerNormOptions {
  /** Added to the variance before the square root. Default 1e-5. */
  eps?: number;
  /** Learn a scale (and, with `bias`, a shift) per element. Default true. */
  elementwiseAffine?: boolean;
  /** Learn a bias (torch >= 2.1 option). Default true. */
  bias?: boolean;
}

/**
 * Layer normalisation (Ba et al. 2016) over the last dims, as torch.nn.LayerNorm: the sub-layers' LayerNorm(x +
 * Sublayer(x)) (§3.1).
 */
export class LayerNorm extends Module {
  /** The trailing dims normalised over. */
  readonly normalizedShape: number[];
  /** Added to the variance before the square root. */
  readonly eps: number;
  /** Scale γ (normalizedShape), starting at 1; null without elementwiseAffine. */
  readonly weight: Tensor | null;
  /** Shift β (normalizedShape), starting at 0; null without it. */
  readonly bias: Tensor | null;

  constructor(normalizedShape: number | number[], options: LayerNormOptions = {}) {
    super();
    this.normalizedShape = typeof normalizedShape === 'number' ? [normalizedShape] : normalizedShape.slice();
    for (const d of this.normalizedShape) checkPositiveInt('LayerNorm', 'normalizedShape', d);
    this.eps = options.eps ?? 1e-5;
    const affine = options.elementwiseAffine ?? true;
    this.weight = affine ? this.registerParameter('weight', full(this.normalizedShape, 1)) : null;
    this.bias = affine && (options.bias ?? true) ? this.registerParameter('bias', full(this.normalizedShape, 0)) : null;
  }

  /** x (..., *normalizedShape), normalised over those dims, then scaled and shifted. */
  forward(x: Tensor): Tensor {
    return F.layerNorm(x, this.normalizedShape, this.weight, this.bias, this.eps);
  }
}

/** Options of {@link RMSNorm}, torch's names. */
export interface RMSNormOptions {
  /** Added to mean(x²) before the square root. Default: float32's machine epsilon (torch's). */
  eps?: number;
  /** Learn a scale per element (starting at 1). Default true. */
  elementwiseAffine?: boolean;
}

/**
 * RMS normalisation (Zhang & Sennrich 2019) over the last dims, as torch.nn.RMSNorm and transformers'
 * LlamaRMSNorm: x / √(mean(x²) + ε) · weight. LayerNorm without the mean and the shift: the norm of the
 * decoders of Llama, Qwen2 and Mistral. One kernel each way (F.rmsNorm).
 */
export class RMSNorm extends Module {
  /** The trailing dims normalised over. */
  readonly normalizedShape: number[];
  /** Added to mean(x²) before the square root. */
  readonly eps: number | undefined;
  /** Scale γ (normalizedShape), starting at 1; null without elementwiseAffine. */
  readonly weight: Tensor | null;

  constructor(normalizedShape: number | number[], options: RMSNormOptions = {}) {
    super();
    this.normalizedShape = typeof normalizedShape === 'number' ? [normalizedShape] : normalizedShape.slice();
    for (const d of this.normalizedShape) checkPositiveInt('RMSNorm', 'normalizedShape', d);
    if (options.eps !== undefined && !(options.eps >= 0))
      throw new Error(`RMSNorm: eps must be >= 0, got ${options.eps}`);
    this.eps = options.eps;
    this.weight =
      (options.elementwiseAffine ?? true) ? this.registerParameter('weight', full(this.normalizedShape, 1)) : null;
  }

  /** x (..., *normalizedShape), divided by its root mean square over those dims, then scaled. */
  forward(x: Tensor): Tensor {
    return F.rmsNorm(x, this.normalizedShape, this.weight, this.eps);
  }
}

/**
 * The gated feed-forward block of Llama, Qwen2 and Mistral (Shazeer 2020, SwiGLU):
 * down_proj(silu(gate_proj(x)) · up_proj(x)), transformers' LlamaMLP with its names. The gate and its product
 * are one kernel (F.swiglu).
 */
export class SwiGLU extends Module {
  /** `gate_proj`: dModel → dFf, through silu. */
  readonly gateProj: Linear;
  /** `up_proj`: dModel → dFf, the gated values. */
  readonly upProj: Linear;
  /** `down_proj`: dFf → dModel, back to the residual stream. */
  readonly downProj: Linear;

  constructor(
    /** The model width (hidden_size). */
    readonly dModel: number,
    /** The inner width (intermediate_size). */
    readonly dFf: number,
    options: { bias?: boolean } = {},
  ) {
    super();
    const bias = options.bias ?? false;
    this.gateProj = this.registerModule('gate_proj', new Linear(dModel, dFf, { bias }));
    this.upProj = this.registerModule('up_proj', new Linear(dModel, dFf, { bias }));
    this.downProj = this.registerModule('down_proj', new Linear(dFf, dModel, { bias }));
  }

  /** x (..., dModel) → (..., dModel), each position on its own. */
  forward(x: Tensor): Tensor {
    return this.downProj.forward(F.swiglu(this.gateProj.forward(x), this.upProj.forward(x)));
  }
}

/** Inverted dropout (§5.4, residual dropout), active only in training mode (`train()` / `eval()`). */
export class Dropout extends Module {
  constructor(
    /** Probability of zeroing each element. */
    readonly p = 0.5,
  ) {
    super();
    if (!(p >= 0 && p <= 1)) throw new Error(`Dropout: p must be in [0, 1], got ${p}`);
  }

  /** In training mode, x with elements zeroed with probability p and the rest scaled by 1/(1 − p); else x. */
  forward(x: Tensor): Tensor {
    return F.dropout(x, this.p, this.training);
  }
}

/** max(0, x) as a module (torch.nn.ReLU). */
export class ReLU extends Module {
  /** max(0, x) elementwise. */
  forward(x: Tensor): Tensor {
    return F.relu(x);
  }
}

/** GELU, the exact erf form, as a module (torch.nn.GELU). */
export class GELU extends Module {
  /** x·Φ(x) elementwise (Φ the standard normal CDF). */
  forward(x: Tensor): Tensor {
    return F.gelu(x);
  }
}

/**
 * The paper's sinusoidal position encoding (§3.5): PE(pos, 2i) = sin(pos/10000^(2i/dModel)),
 * PE(pos, 2i+1) = cos(...), added to the embeddings, then dropout. The table is a buffer, not a
 * parameter, and not saved (it is a function of dModel alone).
 */
export class PositionalEncoding extends Module {
  /** The sinusoid table (maxLen, dModel), a non-persistent buffer. */
  readonly pe: Tensor;
  /** Dropout applied to the sums (§5.4; p 0.1 by default). */
  readonly dropout: Dropout;
  /** Inputs are (B, T, dModel) (default) rather than (T, B, dModel). */
  readonly batchFirst: boolean;

  constructor(
    /** The model width: the table's columns. */
    readonly dModel: number,
    options: { dropout?: number; maxLen?: number; batchFirst?: boolean; layout?: SinusoidLayout } = {},
  ) {
    super();
    checkPositiveInt('PositionalEncoding', 'dModel', dModel);
    this.batchFirst = options.batchFirst ?? true;
    this.pe = this.registerBuffer('pe', sinusoidalTable(options.maxLen ?? 5000, dModel, options.layout), false);
    this.dropout = this.registerModule('dropout', new Dropout(options.dropout ?? 0.1));
  }

  /** x (B, T, dModel) if batchFirst (default), else (T, B, dModel). */
  forward(x: Tensor): Tensor {
    if (x.ndim !== 3 || x.shape[2] !== this.dModel) {
      throw new Error(
        `PositionalEncoding: input must be 3-D with last dim dModel ${this.dModel}, got shape [${x.shape.join(', ')}]`,
      );
    }
    const T = this.batchFirst ? x.shape[1] : x.shape[0];
    const maxLen = this.pe.shape[0];
    if (T > maxLen) throw new Error(`PositionalEncoding: sequence length ${T} exceeds maxLen ${maxLen}`);
    // The first T rows of the table, on its device (a row copy, as no read back to the host is needed).
    const table = T === maxLen ? this.pe : F.narrow(this.pe, 0, 0, T);
    const pe = this.batchFirst ? table : table.reshape(T, 1, this.dModel);
    return this.dropout.forward(F.add(x, pe));
  }
}

/**
 * Where the sines and cosines of the position table go: 'interleaved' as the paper's §3.5 (sin in even
 * columns, cos in odd), or 'halves' as Hugging Face's Marian (fairseq's and Marian-NMT's layout): the
 * sines of every frequency in the first ⌈d/2⌉ columns, the cosines of the same frequencies after them; or
 * 'fairseq' as M2M100/NLLB (fairseq's `SinusoidalPositionalEmbedding`, tensor2tensor's): sines then cosines too,
 * but of the frequencies exp(−j·ln(10000)/(⌊d/2⌋ − 1)), j < ⌊d/2⌋, computed in float32 as torch does, and a zero
 * last column for odd d. (The rows a fairseq model reads start at padding_idx + 1: Seq2Seq's positionOffset.)
 */
export type SinusoidLayout = 'interleaved' | 'halves' | 'fairseq';

/** The (maxLen, dModel) sinusoid table; odd dModel keeps the last sine column. */
export function sinusoidalTable(maxLen: number, dModel: number, layout: SinusoidLayout = 'interleaved'): Tensor {
  const d = new Float32Array(maxLen * dModel);
  if (layout === 'fairseq') {
    // HF's M2M100SinusoidalPositionalEmbedding.get_embedding, step by step in float32 (Math.fround) as torch
    // computes it: emb = ln(10000)/(half − 1); freq_j = exp(j · −emb); angle = pos · freq_j; [sin | cos].
    const half = Math.floor(dModel / 2);
    const emb = Math.fround(-Math.log(10000) / (half - 1));
    const freq = Array.from({ length: half }, (_, j) => Math.fround(Math.exp(Math.fround(j * emb))));
    for (let pos = 0; pos < maxLen; pos++) {
      for (let j = 0; j < half; j++) {
        const angle = Math.fround(pos * freq[j]);
        d[pos * dModel + j] = Math.sin(angle);
        d[pos * dModel + half + j] = Math.cos(angle);
      }
    }
    return new Tensor(d, [maxLen, dModel], 'float32');
  }
  if (layout === 'halves') {
    // HF's MarianSinusoidalPositionalEmbedding: column j < ⌈d/2⌉ is sin(pos / 10000^(2j/d)), column
    // ⌈d/2⌉ + j the cos of the same angle (computed in float64, stored float32, as there).
    const sines = Math.ceil(dModel / 2);
    for (let pos = 0; pos < maxLen; pos++) {
      for (let j = 0; j < sines; j++) {
        const angle = pos / 10000 ** ((2 * j) / dModel);
        d[pos * dModel + j] = Math.sin(angle);
        if (sines + j < dModel) d[pos * dModel + sines + j] = Math.cos(angle);
      }
    }
    return new Tensor(d, [maxLen, dModel], 'float32');
  }
  for (let pos = 0; pos < maxLen; pos++) {
    for (let i = 0; i < dModel; i += 2) {
      // torch tutorials compute exp(-(ln 10000)·i/dModel); the same number, kept in float64 here.
      const angle = pos / 10000 ** (i / dModel);
      d[pos * dModel + i] = Math.sin(angle);
      if (i + 1 < dModel) d[pos * dModel + i + 1] = Math.cos(angle);
    }
  }
  return new Tensor(d, [maxLen, dModel], 'float32');
}

/** Throws `OWNER: ARG must be a positive integer, got V` unless v is one. */
export function checkPositiveInt(owner: string, arg: string, v: number): void {
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${owner}: ${arg} must be a positive integer, got ${v}`);
}
