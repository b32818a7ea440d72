/**
 * What a GPT-family model (qkv's GPT, GPT-2, Llama, Qwen2, Mistral) takes in memory, from its config alone, before
 * any weight is read: the bytes of its state dict in fp32 or quantized as `Module.quantize` quantizes it (the
 * explorer says whether a folder fits the tab before it loads one), and the bytes a run's KV cache and attention
 * maps take per token. Exact: test/models/gpt-memory.test.ts holds the weights' bytes to a quantized model's state
 * dict.
 */
import { Q4_BLOCK, type QuantDType } from '../ops/matmul.ts';
import type { GPTConfig } from './gpt-config.ts';
import { gptParameterCount } from './gpt.ts';

/** The bytes of a state dict's weights. */
export interface GptWeightBytes {
  /** Every weight in float32. */
  fp32: number;
  /** As held after `quantize({ dtype })` (the model's default tables); equal to `fp32` for dtype null. */
  held: number;
  /** The quantized dtype asked for (null: fp32). */
  dtype: QuantDType | null;
  /** What the embedding tables are held in: the model's default for the dtype (Module.defaultTables). */
  tables: QuantDType | 'float32';
}

/** Bytes of a (rows, cols) float matrix held in `dtype`: int8 values and a float32 scale per row; q4 (Q4_0). */
function matrixBytes(rows: number, cols: number, dtype: QuantDType | 'float32'): number {
  const n = rows * cols;
  if (dtype === 'float32') return 4 * n;
  if (dtype === 'int8') return n + 4 * rows;
  return Math.ceil(n / 2) + 2 * rows * (cols / Q4_BLOCK);
}

/**
 * The bytes of the weights of a GPT of config `c`, in fp32 and as held once quantized to `dtype` (null: fp32): the
 * linear layers' matrices in `dtype`, the embedding tables in the model's default (int8, q4 in a tied
 * RMS-norm model's q4), norms and biases in float32. A q4 whose matrices' widths are not a multiple of 32 is
 * refused (quantize would refuse it), in one line.
 */
export function gptWeightBytes(c: GPTConfig, dtype: QuantDType | null): GptWeightBytes {
  const fp32 = 4 * gptParameterCount(c);
  if (dtype === null) return { fp32, held: fp32, dtype, tables: 'float32' };
  if (dtype !== 'int8' && dtype !== 'q4') throw new Error(`gptWeightBytes: dtype must be 'int8', 'q4' or null`);
  const E = c.nEmbd;
  const dK = c.headDim ?? E / c.nHead;
  const hKV = c.nKVHead ?? c.nHead;
  const F = c.dFf ?? 4 * E;
  const tied = c.tiedHead ?? true;
  // The model's default tables (GPT.defaultTables): q4 only for a tied RMS-norm model's q4.
  const tables: QuantDType = dtype === 'q4' && tied && c.norm === 'rms' ? 'q4' : 'int8';
  // (rows, cols) of each linear layer's weight: packed q/k/v, the output projection, the feed-forward block.
  const layer: [number, number][] = [
    [(c.nHead + 2 * hKV) * dK, E],
    [E, c.nHead * dK],
    ...(c.mlp === 'swiglu'
      ? ([
          [F, E],
          [F, E],
          [E, F],
        ] as [number, number][])
      : ([
          [F, E],
          [E, F],
        ] as [number, number][])),
  ];
  const matrices: [number, number, QuantDType][] = [
    ...Array.from({ length: c.nLayer }, () =>
      layer.map(([r, k]): [number, number, QuantDType] => [r, k, dtype]),
    ).flat(),
    ...(tied ? [] : [[c.vocabSize, E, dtype] as [number, number, QuantDType]]),
    [c.vocabSize, E, tables],
    ...(c.positions === 'learned' ? [[c.blockSize, E, tables] as [number, number, QuantDType]] : []),
  ];
  if (dtype === 'q4' || tables === 'q4') {
    const odd = matrices.find(([, k, d]) => d === 'q4' && k % Q4_BLOCK !== 0);
    if (odd)
      throw new Error(`q4 needs every matrix's width a multiple of ${Q4_BLOCK}: this model has one ${odd[1]} wide`);
  }
  // The rest (norms, biases) stays float32.
  const floats = fp32 - matrices.reduce((n, [r, k]) => n + 4 * r * k, 0);
  const held = floats + matrices.reduce((n, [r, k, d]) => n + matrixBytes(r, k, d), 0);
  return { fp32, held, dtype, tables };
}

/**
 * The bytes a run over `tokens` positions adds: the KV cache (keys and values of every layer's KV heads, float32)
 * and the attention maps the explorer keeps (every layer × head, tokens × tokens, float32).
 */
export function gptRunBytes(c: GPTConfig, tokens: number): { kvCache: number; maps: number } {
  const dK = c.headDim ?? c.nEmbd / c.nHead;
  const hKV = c.nKVHead ?? c.nHead;
  return { kvCache: 2 * c.nLayer * hKV * dK * tokens * 4, maps: c.nLayer * c.nHead * tokens * tokens * 4 };
}
