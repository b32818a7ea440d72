/**
 * `pipeline('feature-extraction', folder)`: a sentence (or sentences) to its embedding, with transformers.js's
 * options and result: `{ pooling: 'mean' | 'cls' | 'none', normalize }`, a Tensor of shape [texts, dim] (for
 * 'none': every token's state, [texts, T, dim], padded to the longest). The defaults are the folder's
 * sentence-transformers modules (modules.json's Pooling with 1_Pooling/config.json, and a Normalize module)
 * where it has them, else transformers.js's (no pooling, no normalizing). Mean pooling is sentence-transformers'
 * (the states of the tokens the attention mask keeps, summed, over their count); normalize divides by the L2
 * norm (torch.nn.functional.normalize, ε 1e-12).
 */
import type { OpenedEncoder } from '../folder/open.ts';
import type { Pooling } from '../folder/encoder.ts';
import { Tensor } from '../tensor/tensor.ts';
import { runEncoder, textsOf, type EncoderCallOptions } from './encoder-batch.ts';
import { checkOptions, type OptionSpec } from './options.ts';

/** Per-call options of a {@link FeatureExtractionPipeline}. */
export interface FeatureExtractionOptions extends EncoderCallOptions {
  /** 'mean' (the tokens, padding left out), 'cls' (the first token), 'none' (every token); default the folder's. */
  pooling?: Pooling;
  /** Divide each embedding by its L2 norm. Default: the folder's (a Normalize module), else false. */
  normalize?: boolean;
}

const OPTIONS: OptionSpec = { pooling: 'pooling', normalize: 'boolean', onWarning: 'function', signal: 'signal' };

/** What `pipeline('feature-extraction', folder)` gives. */
export interface FeatureExtractionPipeline {
  /** The embeddings of one text or of several: [texts, dim] pooled, [texts, T, dim] with pooling 'none'. */
  (input: string | readonly string[], options?: FeatureExtractionOptions): Promise<Tensor>;
  readonly task: 'feature-extraction';
  /** The opened folder: model, tokenizer, embedding defaults. */
  readonly opened: OpenedEncoder;
}

/** The feature-extraction pipeline of an opened encoder folder. */
export function featureExtractionPipeline(opened: OpenedEncoder): FeatureExtractionPipeline {
  const run = async (input: string | readonly string[], options: FeatureExtractionOptions = {}) => {
    checkOptions('feature-extraction', options, OPTIONS);
    const { texts } = textsOf('feature-extraction', input);
    const pooling = options.pooling ?? opened.embedding.pooling;
    const normalize = options.normalize ?? opened.embedding.normalize;
    const E = opened.model.config.dModel;
    const batches = await runEncoder('feature-extraction', opened, texts, 'none', options);
    if (pooling === 'none') {
      const T = Math.max(0, ...batches.map((b) => b.T));
      const out = new Float32Array(texts.length * T * E);
      for (const b of batches) {
        for (let r = 0; r < b.rows.length; r++) {
          const n = b.index[r]!;
          for (let t = 0; t < b.T; t++) {
            const row = b.hidden.subarray((r * b.T + t) * E, (r * b.T + t + 1) * E);
            out.set(normalize ? normalized(Array.from(row)) : row, (n * T + t) * E);
          }
        }
      }
      return new Tensor(out, [texts.length, T, E]);
    }
    const out = new Float32Array(texts.length * E);
    for (const b of batches) {
      b.rows.forEach((row, r) => {
        const v = new Float64Array(E);
        const count = pooling === 'cls' ? 1 : row.ids.length; // the attention mask keeps the row's own tokens
        for (let t = 0; t < count; t++) for (let e = 0; e < E; e++) v[e] += b.hidden[(r * b.T + t) * E + e];
        // sentence-transformers: sum / max(count, 1e-9), in float32
        const pooled = Array.from(v, (x) => Math.fround(Math.fround(x) / Math.max(count, 1e-9)));
        out.set(normalize ? normalized(pooled) : pooled, b.index[r]! * E);
      });
    }
    return new Tensor(out, [texts.length, E]);
  };
  return Object.assign(run, { task: 'feature-extraction' as const, opened }) as FeatureExtractionPipeline;
}

/** x / max(‖x‖₂, 1e-12), torch.nn.functional.normalize. */
function normalized(x: number[]): number[] {
  let s = 0;
  for (const v of x) s += v * v;
  const n = Math.max(Math.sqrt(s), 1e-12);
  return x.map((v) => Math.fround(v / n));
}
