/**
 * Rotary position embedding (RoPE, Su et al. 2021, "RoFormer" §3.4) as transformers computes it for Llama,
 * Qwen2 and Mistral: feature pair (i, i + D/2) of every query and key head at position t is turned by the
 * angle t·θ_i, θ_i = base^(−2i/D), so a query–key product depends on their distance only. Its frequencies are
 * computed once (with Llama 3's rescaling where the config asks); the cos/sin tables of the positions a call
 * needs are made on the host per call (T·D/2 values) and applied by one kernel (F.rotaryEmbedding).
 * Arithmetic follows transformers' float32 steps (LlamaRotaryEmbedding, modeling_rope_utils.py).
 */
import * as F from '../ops/index.ts';
import { upload } from '../ops/util.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { Module } from './module.ts';

/** transformers' rope types that qkv computes (rope_parameters.rope_type, or rope_scaling.type of older configs). */
export type RopeScaling =
  | {
      /** θ_i = base^(−2i/D), as the paper. */
      type: 'default';
    }
  | {
      /** Position interpolation: every θ_i divided by `factor`. */
      type: 'linear';
      /** The divisor of every frequency. */
      factor: number;
    }
  | {
      /**
       * Llama 3.1's: long wavelengths (> originalMaxPositionEmbeddings / lowFreqFactor) divided by `factor`,
       * short ones (< … / highFreqFactor) kept, those between interpolated smoothly.
       */
      type: 'llama3';
      /** The divisor of the long wavelengths' frequencies (8 in Llama 3.1). */
      factor: number;
      /** originalMaxPositionEmbeddings / lowFreqFactor: the wavelength past which frequencies are divided. */
      lowFreqFactor: number;
      /** originalMaxPositionEmbeddings / highFreqFactor: the wavelength below which frequencies are kept. */
      highFreqFactor: number;
      /** The context the model was first trained with (8192 in Llama 3.1). */
      originalMaxPositionEmbeddings: number;
    };

const f = Math.fround;

/** θ_0 .. θ_{D/2−1} in float32, as transformers' rope init functions compute them. */
export function ropeInverseFrequencies(
  dim: number,
  base: number,
  scaling: RopeScaling = { type: 'default' },
): Float32Array {
  const half = dim >> 1;
  const inv = new Float32Array(half);
  // 1 / base^(2i/D): the exponent rounded to float32 first, as torch.arange(0, D, 2).float() / D.
  for (let i = 0; i < half; i++) inv[i] = f(1 / f(f(base) ** f((2 * i) / dim)));
  if (scaling.type === 'linear') for (let i = 0; i < half; i++) inv[i] = f(inv[i] / scaling.factor);
  if (scaling.type === 'llama3') {
    const { factor, lowFreqFactor: low, highFreqFactor: high, originalMaxPositionEmbeddings: old } = scaling;
    const lowWavelen = old / low;
    const highWavelen = old / high;
    for (let i = 0; i < half; i++) {
      const wavelen = f(f(2 * Math.PI) / inv[i]);
      const scaled = wavelen > lowWavelen ? f(inv[i] / factor) : inv[i];
      if (wavelen < highWavelen || wavelen > lowWavelen) inv[i] = scaled;
      else {
        const smooth = f(f(f(old / wavelen) - low) / (high - low));
        inv[i] = f(f(f(f(1 - smooth) * scaled) / factor) + f(smooth * scaled));
      }
    }
  }
  return inv;
}

/** Options of {@link RotaryEmbedding}. */
export interface RotaryEmbeddingOptions {
  /** The base of the frequencies, rope_theta (10000 in the paper and Llama 2; 500000 in Llama 3). */
  base?: number;
  /** How the frequencies are rescaled for long contexts (default: not). */
  scaling?: RopeScaling;
}

/**
 * The rotary embedding of heads `dim` wide: `forward(x, offset)` turns x (..., T, dim) as positions
 * offset .. offset + T − 1. No parameters (transformers keeps inv_freq as a buffer it does not save).
 */
export class RotaryEmbedding extends Module {
  /** θ_i, float32 (dim / 2). */
  readonly inverseFrequencies: Float32Array;
  /** The base of the frequencies (rope_theta). */
  readonly base: number;
  /** The frequencies' rescaling. */
  readonly scaling: RopeScaling;

  constructor(
    /** The width of each head turned (head_dim); even. */
    readonly dim: number,
    options: RotaryEmbeddingOptions = {},
  ) {
    super();
    if (!Number.isInteger(dim) || dim < 2 || dim % 2 !== 0)
      throw new Error(`RotaryEmbedding: dim must be a positive even integer, got ${dim}`);
    this.base = options.base ?? 10000;
    if (!(this.base > 1)) throw new Error(`RotaryEmbedding: base must be > 1, got ${this.base}`);
    this.scaling = options.scaling ?? { type: 'default' };
    this.inverseFrequencies = ropeInverseFrequencies(dim, this.base, this.scaling);
  }

  /**
   * The cos and sin tables (T, dim/2) of positions offset .. offset + T − 1, float32 as transformers'
   * (the angle t·θ_i rounded to float32, then its cos and sin), on the current backend's device.
   */
  tables(
    offset: number,
    T: number,
  ): {
    /** cos(t·θ_i), (T, dim/2). */
    cos: Tensor;
    /** sin(t·θ_i), (T, dim/2). */
    sin: Tensor;
  } {
    const half = this.dim >> 1;
    const c = new Float32Array(T * half);
    const s = new Float32Array(T * half);
    for (let t = 0; t < T; t++) {
      for (let i = 0; i < half; i++) {
        const angle = f((offset + t) * this.inverseFrequencies[i]);
        c[t * half + i] = Math.cos(angle);
        s[t * half + i] = Math.sin(angle);
      }
    }
    return { cos: upload(c, [T, half]), sin: upload(s, [T, half]) };
  }

  /** x (..., T, dim) turned as positions offset .. offset + T − 1. */
  forward(x: Tensor, offset = 0): Tensor {
    const { cos, sin } = this.tables(offset, x.shape[x.ndim - 2]);
    return F.rotaryEmbedding(x, cos, sin);
  }
}
