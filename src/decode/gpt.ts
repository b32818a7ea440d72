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
import { enterEvalMode } from '../nn/module.ts';
import { Generator as RandomGenerator } from '../tensor/random.ts';
import * as F from '../ops/index.ts';
import { memoryScope } from '../tensor/storage.ts';
import { Tensor } from '../tensor/tensor.ts';
import { checkSamplingOptions, sampleToken, type SamplingOptions } from './sample.ts';

/** Options of {@link generate} and its streaming forms: how many tokens, how to sample, when to stop. */
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
  /**
   * Hugging Face's repetition penalty (Keskar et al. 2019, transformers' RepetitionPenaltyLogitsProcessor): before
   * the token is drawn, the logit of every id already in the sequence (the prompt's included) is divided by it, or
   * multiplied where negative. Default 1 (none).
   */
  repetitionPenalty?: number;
  /** The `stopIds` cannot be drawn before this many tokens are generated (transformers' min_new_tokens). Default 0. */
  minNewTokens?: number;
}

/**
 * The logits a token is drawn from: the raw ones, or a copy with the repetition penalty and the blocked stop ids
 * applied (in transformers' order: the penalty on the raw logits, then EOS blocked to −∞).
 */
function processedLogits(logits: Float32Array, ids: readonly number[], n: number, o: GenerateOptions): Float32Array {
  const penalty = o.repetitionPenalty ?? 1;
  const block = n < (o.minNewTokens ?? 0) && (o.stopIds?.length ?? 0) > 0;
  if (penalty === 1 && !block) return logits;
  const out = logits.slice();
  if (penalty !== 1) {
    const p = Math.fround(penalty); // transformers multiplies float32 logits by the penalty as a float32 scalar
    for (const id of new Set(ids)) out[id] = out[id] < 0 ? out[id] * p : out[id] / p;
  }
  if (block) for (const id of o.stopIds!) out[id] = -Infinity;
  return out;
}

/** One generated token and the next-token logits (vocabSize) it was drawn from. */
export interface GeneratedToken {
  /** The token drawn. */
  id: number;
  /** The raw next-token logits it was drawn from (before temperature, top-k or top-p), (vocabSize). */
  logits: Float32Array;
}

/**
 * What generation asks of an engine: the last row's next-token logits after feeding `fed`, either
 * from an empty context (`fresh`: the prompt, or a context cut to fit) or after the context fed so
 * far (the KV cache). qkv's GPT and ONNX Runtime both answer it.
 */
export interface LmRun {
  fed: number[];
  fresh: boolean;
}

/** An engine that answers LmRun asynchronously (ONNX Runtime). */
export interface AsyncLm {
  /** Number of token ids, the length of the logits `run` returns. */
  readonly vocabSize: number;
  /** Longest context the model takes; generation cuts the context to fit. */
  readonly blockSize: number;
  /**
   * The last position's next-token logits (vocabSize) after feeding `fed`: from an empty context
   * when `fresh`, else after everything fed so far.
   */
  run(fed: number[], fresh: boolean): Promise<Float32Array>;
}

export type GenerationEvent = { run: LmRun } | { token: GeneratedToken };

/**
 * Generation itself, written once for every engine (the dynamic and the static KV cache, ONNX Runtime): it
 * yields the runs it needs (resumed with their logits) and the tokens it draws.
 */
export function* generation(
  vocabSize: number,
  blockSize: number,
  prompt: readonly number[],
  options: GenerateOptions,
): Generator<GenerationEvent, void, Float32Array | undefined> {
  const name = 'generate';
  checkSamplingOptions(options, name);
  const { maxTokens, useCache = true } = options;
  if (!Number.isInteger(maxTokens) || maxTokens < 0)
    throw new Error(`${name}: maxTokens must be a non-negative integer, got ${maxTokens}`);
  if (prompt.length === 0) throw new Error(`${name}: the prompt is empty (give at least one token)`);
  const penalty = options.repetitionPenalty ?? 1;
  if (!(penalty > 0) || !Number.isFinite(penalty))
    throw new Error(`${name}: repetitionPenalty must be a finite number > 0, got ${penalty}`);
  const minNew = options.minNewTokens ?? 0;
  if (!Number.isInteger(minNew) || minNew < 0)
    throw new Error(`${name}: minNewTokens must be a non-negative integer, got ${minNew}`);
  if (prompt.length > blockSize)
    throw new Error(`${name}: the prompt has ${prompt.length} tokens, more than the context of ${blockSize}`);
  for (const id of prompt) {
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize)
      throw new Error(`${name}: prompt token ${id} is not an id in [0, ${vocabSize})`);
  }
  const rng = options.generator ?? new RandomGenerator(options.seed ?? 0);
  const stop = new Set(options.stopIds ?? []);
  const keep = Math.max(1, Math.floor(blockSize / 2));
  const ids = prompt.slice();
  let start = 0; // the context is ids[start..]
  let logits = (yield { run: { fed: ids.slice(), fresh: true } })!;
  for (let n = 0; n < maxTokens; n++) {
    // Whatever the engine, non-finite logits stop generation with the step, not a silent garbage token.
    for (let j = 0; j < logits.length; j++) {
      if (logits[j] - logits[j] !== 0) {
        throw new Error(
          `generate: step ${n + 1}: logit ${j} is ${String(logits[j])}: the ` +
            `model's weights or activations hold NaN or Infinity`,
        );
      }
    }
    const id = sampleToken(processedLogits(logits, ids, n, options), options, rng);
    yield { token: { id, logits } };
    ids.push(id);
    if (n === maxTokens - 1 || stop.has(id)) break;
    if (ids.length - start > blockSize) {
      start = ids.length - keep;
      logits = (yield { run: { fed: ids.slice(start), fresh: true } })!;
    } else {
      logits = (yield { run: useCache ? { fed: [id], fresh: false } : { fed: ids.slice(start), fresh: true } })!;
    }
  }
}

/**
 * A KV cache kept from one generation to the next (a conversation: `qkv chat`): the keys and values of `ids`.
 * A generation feeds only the part of its prompt after the longest common prefix of `ids` and the prompt; where
 * the prompt departs from `ids` (it rewrites an earlier token), the cache is first cropped to that prefix.
 * Call {@link release} when the conversation ends (or is reset).
 */
export class KeptCache {
  /** The cache, null until a generation fills it. */
  cache: GPTCache | null = null;
  /** The ids whose keys and values the cache holds, in order (position 0 first). */
  ids: number[] = [];
  /** Of the last generation's prompt, how many tokens came from the cache (0: none, or fed again). */
  reused = 0;
  /**
   * How many cached tokens the last generation dropped: those after the longest common prefix of the cache's ids
   * and its prompt (0 where the cache held a prefix of the prompt).
   */
  dropped = 0;

  /** Free the cache (it starts empty next time). */
  release(): void {
    this.cache?.release();
    this.cache = null;
    this.ids = [];
  }
}

/** The length of the longest common prefix of a and b. */
function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/**
 * Generate token by token (a lazy iterator, for streaming): the model runs in eval mode without
 * autograd while it is iterated, and its mode is restored when the iteration ends. With `kept` (and the cache
 * on), the KV cache is the kept one: what it holds of the prompt is not fed again, and it is left filled for the
 * next call.
 */
export function* generateStream(
  model: GPT,
  prompt: readonly number[],
  options: GenerateOptions,
  kept?: KeptCache,
): IterableIterator<GeneratedToken> {
  const { vocabSize, blockSize } = model.config;
  const useCache = options.useCache ?? true;
  const restoreMode = enterEvalMode(model);
  let cache: GPTCache | null = null;
  let first = true;
  // The kept cache's ids while it is being fed: cleared first, so that an error mid-run leaves it empty-handed.
  let keptIds: number[] = [];
  const keep = useCache ? kept : undefined;
  if (keep) {
    keep.reused = 0;
    keep.dropped = 0;
  }
  try {
    // Last-row logits of running the model on `fed`: from scratch (no cache, or a new cache) or cached. Each
    // run is a memoryScope (under wasm its activations live in wasm memory, kernels in place, released when
    // the run ends); the cache owns its storage outside it (GPTCache.ownStorage), released when generation
    // ends or the context is cut.
    const run = ({ fed, fresh }: LmRun): Float32Array =>
      noGrad(() =>
        memoryScope(() => {
          const x = new Tensor(Int32Array.from(fed), [1, fed.length], 'int32');
          let logits: Tensor;
          if (!useCache) logits = model.forward(x);
          else if (keep) {
            let feed = fed;
            if (fresh) {
              // What the cache holds of the prompt, leaving at least one token to feed (the logits of its last).
              const n = first ? Math.min(commonPrefix(keep.ids, fed), fed.length - 1) : 0;
              if (keep.cache && n > 0) {
                // The cached tokens after the common prefix (the new rendering departs there) are dropped.
                if (n < keep.ids.length) {
                  keep.cache.crop(n);
                  keep.dropped = keep.ids.length - n;
                }
                feed = fed.slice(n);
                keep.reused = n;
                keptIds = keep.ids.slice(0, n);
              } else {
                if (first) keep.dropped = keep.ids.length;
                keep.cache?.release();
                keep.cache = model.initCache().ownStorage();
                keptIds = [];
              }
              first = false;
            }
            keep.ids = [];
            const f = new Tensor(Int32Array.from(feed), [1, feed.length], 'int32');
            logits = model.forwardCached(f, keep.cache!).logits;
            keptIds.push(...feed);
            keep.ids = keptIds;
            return logits.dataSync<Float32Array>().slice((feed.length - 1) * vocabSize, feed.length * vocabSize);
          } else {
            if (fresh) {
              cache?.release();
              cache = model.initCache().ownStorage();
            }
            logits = model.forwardCached(x, cache!).logits;
          }
          return logits.dataSync<Float32Array>().slice((fed.length - 1) * vocabSize, fed.length * vocabSize);
        }),
      );
    const g = generation(vocabSize, blockSize, prompt, options);
    for (let r = g.next(); !r.done; ) {
      if ('run' in r.value) r = g.next(run(r.value.run));
      else {
        yield r.value.token;
        r = g.next();
      }
    }
  } finally {
    (cache as GPTCache | null)?.release();
    restoreMode();
  }
}

/**
 * A GPT as an {@link AsyncLm}: each run is recorded at once (without gradients) and its last row of logits
 * read back asynchronously, so models on a device that reads back only asynchronously (a GPU) generate
 * through generateStreamAsync with the same draws as generateStream. The model is put in eval mode while
 * it runs.
 */
export function gptAsyncLm(model: GPT, useCache = true): AsyncLm {
  const { vocabSize, blockSize } = model.config;
  let cache: GPTCache | null = null;
  return {
    vocabSize,
    blockSize,
    async run(fed, fresh) {
      const restore = enterEvalMode(model);
      let last: Tensor;
      try {
        last = noGrad(() => {
          const x = new Tensor(Int32Array.from(fed), [1, fed.length], 'int32');
          let logits: Tensor;
          if (!useCache) logits = model.forward(x);
          else {
            if (fresh) cache = model.initCache();
            logits = model.forwardCached(x, cache!).logits;
          }
          return F.narrow(logits.reshape(fed.length, vocabSize), 0, fed.length - 1, 1);
        });
      } finally {
        restore();
      }
      return (await last.data()) as Float32Array;
    },
  };
}

/** The same generation on an asynchronous engine (ONNX Runtime): same checks, same draws, same cuts. */
export async function* generateStreamAsync(
  lm: AsyncLm,
  prompt: readonly number[],
  options: GenerateOptions,
): AsyncIterableIterator<GeneratedToken> {
  const g = generation(lm.vocabSize, lm.blockSize, prompt, options);
  for (let r = g.next(); !r.done; ) {
    if ('run' in r.value) r = g.next(await lm.run(r.value.run.fed, r.value.run.fresh));
    else {
      yield r.value.token;
      r = g.next();
    }
  }
}

/** Generate all at once: the new ids, and the logits each was drawn from. */
export function generate(
  model: GPT,
  prompt: readonly number[],
  options: GenerateOptions,
): {
  /** The generated ids, the prompt not included. */
  ids: number[];
  /** The next-token logits each id was drawn from, (vocabSize) each. */
  logits: Float32Array[];
} {
  const ids: number[] = [];
  const logits: Float32Array[] = [];
  for (const t of generateStream(model, prompt, options)) {
    ids.push(t.id);
    logits.push(t.logits);
  }
  return { ids, logits };
}
