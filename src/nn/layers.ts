import * as F from '../ops/index.ts';
import { Tensor, full, zeros } from '../tensor/tensor.ts';
import { linearDefault_, normal_, uniform_ } from './init.ts';
import { Module } from './module.ts';

/** y = x·Wᵀ + b; weight (outFeatures, inFeatures) as torch.nn.Linear. */
export class Linear extends Module {
  readonly weight: Tensor;
  readonly bias: Tensor | null;

  constructor(readonly inFeatures: number, readonly outFeatures: number, options: { bias?: boolean } = {}) {
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

  forward(x: Tensor): Tensor {
    return F.linear(x, this.weight, this.bias);
  }
}

/** A lookup table of vectors; the row at paddingIdx starts at zero and receives no gradient. */
export class Embedding extends Module {
  readonly weight: Tensor;
  readonly paddingIdx: number | null;

  constructor(readonly numEmbeddings: number, readonly embeddingDim: number, options: { paddingIdx?: number | null } = {}) {
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
    if (pad !== null) this.weight.data.fill(0, pad * embeddingDim, (pad + 1) * embeddingDim);
  }

  forward(ids: Tensor): Tensor {
    return F.embedding(ids, this.weight, this.paddingIdx);
  }
}

export interface LayerNormOptions {
  eps?: number;
  elementwiseAffine?: boolean;
  /** Learn a bias (torch >= 2.1 option). Default true. */
  bias?: boolean;
}

export class LayerNorm extends Module {
  readonly normalizedShape: number[];
  readonly eps: number;
  readonly weight: Tensor | null;
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

  forward(x: Tensor): Tensor {
    return F.layerNorm(x, this.normalizedShape, this.weight, this.bias, this.eps);
  }
}

export class Dropout extends Module {
  constructor(readonly p = 0.5) {
    super();
    if (!(p >= 0 && p <= 1)) throw new Error(`Dropout: p must be in [0, 1], got ${p}`);
  }

  forward(x: Tensor): Tensor {
    return F.dropout(x, this.p, this.training);
  }
}

export class ReLU extends Module {
  forward(x: Tensor): Tensor {
    return F.relu(x);
  }
}

export class GELU extends Module {
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
  readonly pe: Tensor;
  readonly dropout: Dropout;
  readonly batchFirst: boolean;

  constructor(readonly dModel: number, options: { dropout?: number; maxLen?: number; batchFirst?: boolean } = {}) {
    super();
    checkPositiveInt('PositionalEncoding', 'dModel', dModel);
    this.batchFirst = options.batchFirst ?? true;
    this.pe = this.registerBuffer('pe', sinusoidalTable(options.maxLen ?? 5000, dModel), false);
    this.dropout = this.registerModule('dropout', new Dropout(options.dropout ?? 0.1));
  }

  /** x (B, T, dModel) if batchFirst (default), else (T, B, dModel). */
  forward(x: Tensor): Tensor {
    if (x.ndim !== 3 || x.shape[2] !== this.dModel) {
      throw new Error(`PositionalEncoding: input must be 3-D with last dim dModel ${this.dModel}, got shape [${x.shape.join(', ')}]`);
    }
    const T = this.batchFirst ? x.shape[1] : x.shape[0];
    const maxLen = this.pe.shape[0];
    if (T > maxLen) throw new Error(`PositionalEncoding: sequence length ${T} exceeds maxLen ${maxLen}`);
    const table = new Tensor(this.pe.data.subarray(0, T * this.dModel) as Float32Array, [T, this.dModel], 'float32');
    const pe = this.batchFirst ? table : table.reshape(T, 1, this.dModel);
    return this.dropout.forward(F.add(x, pe));
  }
}

/** The (maxLen, dModel) sinusoid table; odd dModel keeps the last sine column. */
export function sinusoidalTable(maxLen: number, dModel: number): Tensor {
  const t = full([maxLen, dModel], 0);
  const d = t.data as Float32Array;
  for (let pos = 0; pos < maxLen; pos++) {
    for (let i = 0; i < dModel; i += 2) {
      // torch tutorials compute exp(-(ln 10000)·i/dModel); the same number, kept in float64 here.
      const angle = pos / Math.pow(10000, i / dModel);
      d[pos * dModel + i] = Math.sin(angle);
      if (i + 1 < dModel) d[pos * dModel + i + 1] = Math.cos(angle);
    }
  }
  return t;
}

export function checkPositiveInt(owner: string, arg: string, v: number): void {
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${owner}: ${arg} must be a positive integer, got ${v}`);
}
