/**
 * Text generation with a GPT: feed the prompt, then repeatedly draw the next token and feed it.
 * With the KV cache (default) each step runs the model on the one new token only; without it,
 * each step re-runs the whole context (the reference the cache is tested against).
 *
 * Longer than the context: once the context would exceed blockSize tokens, it is cut to its last
 * ⌊blockSize/2⌋ tokens (positions restart at 0), and the cache is rebuilt from them in one call.
 * Both paths cut at the same steps, so they see the same contexts and draw the same tokens.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import type { GPT, GPTCache } from '../models/gpt.ts';
import { Generator as RandomGenerator } from '../tensor/random.ts';
import { Tensor } from '../tensor/tensor.ts';
import { checkSamplingOptions, sampleToken, type SamplingOptions } from './sample.ts';

export interface GenerateOptions extends SamplingOptions {
  /** Tokens to generate (the prompt not included). */
  maxTokens: number;
  /** Seed of a fresh random stream for sampling (default 0); ignored when `generator` is given. */
  seed?: number;
  /** The random stream to draw from (advanced in place). */
  generator?: RandomGenerator;
  /** Incremental decoding through the KV cache (default true); false re-runs the context each step. */
  useCache?: boolean;
  /** Stop after generating one of these ids (it is still yielded). */
  stopIds?: readonly number[];
}

/** One generated token and the next-token logits (vocabSize) it was drawn from. */
export interface GeneratedToken {
  id: number;
  logits: Float32Array;
}

/**
 * Generate token by token (a lazy iterator, for streaming): the model runs in eval mode without
 * autograd while it is iterated, and its mode is restored when the iteration ends.
 */
export function* generateStream(model: GPT, prompt: readonly number[], options: GenerateOptions): IterableIterator<GeneratedToken> {
  const name = 'generate';
  checkSamplingOptions(options, name);
  const { vocabSize, blockSize } = model.config;
  const { maxTokens, useCache = true } = options;
  if (!Number.isInteger(maxTokens) || maxTokens < 0) throw new Error(`${name}: maxTokens must be a non-negative integer, got ${maxTokens}`);
  if (prompt.length === 0) throw new Error(`${name}: the prompt is empty (give at least one token)`);
  if (prompt.length > blockSize) throw new Error(`${name}: the prompt has ${prompt.length} tokens, more than the context of ${blockSize}`);
  for (const id of prompt) {
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) throw new Error(`${name}: prompt token ${id} is not an id in [0, ${vocabSize})`);
  }
  const rng = options.generator ?? new RandomGenerator(options.seed ?? 0);
  const stop = new Set(options.stopIds ?? []);
  const keep = Math.max(1, Math.floor(blockSize / 2));

  const wasTraining = model.training;
  model.eval();
  try {
    const ids = prompt.slice();
    let start = 0; // the context is ids[start..]
    let cache: GPTCache | null = null;
    // Last-row logits of running the model on `fed`: from scratch (no cache, or a new cache) or cached.
    const run = (fed: number[], fresh: boolean): Float32Array => noGrad(() => {
      const x = new Tensor(Int32Array.from(fed), [1, fed.length], 'int32');
      let logits: Tensor;
      if (!useCache) logits = model.forward(x);
      else {
        if (fresh) cache = model.initCache();
        logits = model.forwardCached(x, cache!).logits;
      }
      const row = (logits.data as Float32Array).slice((fed.length - 1) * vocabSize, fed.length * vocabSize);
      for (let j = 0; j < row.length; j++) {
        if (row[j] - row[j] !== 0) {
          throw new Error(`generate: step ${ids.length - prompt.length + 1}: logit ${j} is ${String(row[j])}: the model's weights or activations hold NaN or Infinity`);
        }
      }
      return row;
    });
    let logits = run(ids, true);
    for (let n = 0; n < maxTokens; n++) {
      const id = sampleToken(logits, options, rng);
      yield { id, logits };
      ids.push(id);
      if (n === maxTokens - 1 || stop.has(id)) break;
      if (ids.length - start > blockSize) {
        start = ids.length - keep;
        logits = run(ids.slice(start), true);
      } else {
        logits = useCache ? run([id], false) : run(ids.slice(start), true);
      }
    }
  } finally {
    if (wasTraining) model.train();
  }
}

/** Generate all at once: the new ids, and the logits each was drawn from. */
export function generate(model: GPT, prompt: readonly number[], options: GenerateOptions): { ids: number[]; logits: Float32Array[] } {
  const ids: number[] = [];
  const logits: Float32Array[] = [];
  for (const t of generateStream(model, prompt, options)) {
    ids.push(t.id);
    logits.push(t.logits);
  }
  return { ids, logits };
}
