/**
 * GPT decoding over a static KV cache (issue 62, point 2), so that one capture (src/compile) serves every step.
 * The cache is preallocated at the search's maximum length S: per block keys and values (B, hKV, S, headDim),
 * zero where nothing was written. A step of L new tokens at positions p..p+L−1 has the same input shapes at
 * every p; the position enters as data (`positions` (L) int32: the rows of the position table, learned or
 * sinusoidal, or of the rotary tables, taken by an embedding kernel) and as one dynamic scalar, the filled
 * length p + L (compile/capture.ts's withScalars: a replay takes it anew):
 *
 * - the new keys and values are copied into rows p..p+L−1 of the cache (a copyRows whose offset is the scalar's);
 * - each block attends over keys [0, p + L) only: the filled rows of every (batch, KV head) copied into a
 *   (B, hKV, p + L, headDim) prefix (a copyRows whose run length is the scalar's; none with one batch row and
 *   one KV head, where the cache's first rows are that prefix), the attention's key length the scalar, causal
 *   aligned to the end: the dynamic cache's own call on the same keys, so the logits are its bits (test/compile).
 *
 * A sliding-window block (Mistral) attends over all S keys with an input bias (L, S): −∞ after each query's
 * position and for keys `window` or more positions before it (the dynamic cache's windowBias); the attention
 * kernels add nothing for a key at −∞ and sum in the same order, so these logits are the dynamic cache's too.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import { type Captured, compile, type CompiledStep, withScalars } from '../compile/capture.ts';
import { OwnedStorage } from '../compile/owned.ts';
import type { GPT } from '../models/gpt.ts';
import { enterEvalMode } from '../nn/module.ts';
import * as F from '../ops/index.ts';
import { K, st, upload } from '../ops/util.ts';
import { memoryScope } from '../tensor/storage.ts';
import { Tensor } from '../tensor/tensor.ts';
import { type GeneratedToken, type GenerateOptions, generateStream, generation } from './gpt.ts';

/** A GPT's keys and values for positions 0..maxLength−1, written in place, and the step that writes them. */
export class StaticGPTDecoder {
  /** Per block keys and values (batch, hKV, maxLength, headDim). */
  readonly layers: {
    /** Keys, zero where no position was written. */
    k: Tensor;
    /** Values, zero where no position was written. */
    v: Tensor;
  }[];
  /** Positions fed so far: the position of the next token. */
  length = 0;
  private readonly compiled: CompiledStep | null;
  private readonly storage: OwnedStorage;
  private readonly rope: { cos: Tensor; sin: Tensor } | null;
  /** The window sizes of the sliding-window blocks, each one more bias input of the step. */
  private readonly windows: number[];
  /** The filled length after the running step (p + L): the step's dynamic scalar. */
  private filled = 0;
  /** Where a block's filled keys and values are copied for its attention (B, hKV, S, headDim); null: not needed. */
  private readonly prefix: { k: Tensor['storage']; v: Tensor['storage'] } | null;

  /**
   * `maxLength`: the longest sequence a search feeds (≤ blockSize). `compiled` (default true): each step is
   * captured once per shape (prefill, then one token) and replayed; false runs it eagerly (the reference).
   */
  constructor(
    /** The model whose steps it runs (its weights are read by reference: updates are seen). */
    readonly model: GPT,
    /** Positions the cache holds. */
    readonly maxLength: number,
    options: { batch?: number; compiled?: boolean } = {},
  ) {
    const c = model.config;
    if (!Number.isInteger(maxLength) || maxLength < 1 || maxLength > c.blockSize)
      throw new Error(`StaticGPTDecoder: maxLength must be an integer in [1, ${c.blockSize}], got ${maxLength}`);
    const batch = options.batch ?? 1;
    if (!Number.isInteger(batch) || batch < 1)
      throw new Error(`StaticGPTDecoder: batch must be a positive integer, got ${batch}`);
    const blocks = [...model.h];
    this.windows = [...new Set(blocks.flatMap((b) => (b.window === null ? [] : [b.window])))];
    const device = K().device;
    const a = blocks[0].attn;
    const shape = [batch, a.numKVHeads, maxLength, a.headDim];
    const n = shape.reduce((x, y) => x * y, 1);
    this.storage = new OwnedStorage(device, this);
    const zeros = (): Tensor => Tensor.fromStorage(device, this.storage.alloc('float32', n), shape, 'float32');
    this.layers = blocks.map(() => ({ k: zeros(), v: zeros() }));
    const unwindowed = blocks.some((b) => b.window === null);
    this.prefix =
      unwindowed && batch * a.numKVHeads > 1
        ? { k: this.storage.alloc('float32', n), v: this.storage.alloc('float32', n) }
        : null;
    this.rope = model.rope ? model.rope.tables(0, maxLength) : null;
    const step = (...inputs: Tensor[]): Tensor => this.forward(inputs);
    this.compiled = (options.compiled ?? true) ? compile(step, { scalars: () => [this.filled] }) : null;
  }

  /** The captures held (one per step shape: the prefill's, the one-token step's), or null when not compiled. */
  get captures(): ReadonlyMap<string, Captured> | null {
    return this.compiled?.captures ?? null;
  }

  /**
   * Free the cache and the captures now (else once the decoder is collected); the decoder cannot be used
   * afterwards, nor the logits of its steps.
   */
  release(): void {
    this.compiled?.clear();
    this.storage.releaseAll();
  }

  /** Forget every position (zero the cache): the next step starts at position 0. */
  reset(): void {
    const device = K().device;
    for (const l of this.layers) for (const t of [l.k, l.v]) device.fill(t.storage, 'float32', 0, t.size);
    this.length = 0;
  }

  /**
   * Logits (batch, L, vocabSize) of L new ids (batch, L) at positions length..length+L−1, their keys and values
   * written into the cache. Run it without grad (generateStatic does). With `compiled`, the returned tensor is
   * the capture's output buffer: read it before the next step.
   */
  step(ids: Tensor): Tensor {
    const L = ids.shape[1];
    const S = this.maxLength;
    const p = this.length;
    if (p + L > S) throw new Error(`StaticGPTDecoder: positions ${p}..${p + L - 1} exceed the cache's maxLength ${S}`);
    const positions = new Tensor(
      Int32Array.from({ length: L }, (_, l) => p + l),
      [L],
      'int32',
    );
    // A window w: −∞ after each query's position (query i = p + l) and for keys j ≤ i − w, as the dynamic
    // cache's windowBias over its p + L keys.
    const windowed = this.windows.map((w) => {
      const b = new Float32Array(L * S);
      for (let l = 0; l < L; l++) {
        b.fill(Number.NEGATIVE_INFINITY, l * S + p + l + 1, (l + 1) * S);
        b.fill(Number.NEGATIVE_INFINITY, l * S, l * S + Math.max(0, p + l - w + 1));
      }
      return upload(b, [L, S]);
    });
    const inputs = [ids, positions, ...windowed];
    this.filled = p + L;
    const logits = this.compiled ? this.compiled(...inputs)[0] : this.forward(inputs);
    this.length += L;
    return logits;
  }

  /** The step as a function of its inputs only (what is captured): see the file comment. */
  private forward([ids, positions, ...windowed]: Tensor[]): Tensor {
    const m = this.model;
    const [B, L] = ids.shape;
    const S = this.maxLength;
    const len = this.filled; // the dynamic scalar: keys [0, len) are filled once this step has written
    let x = m.wte.forward(ids);
    if (m.wpe) x = F.add(x, m.wpe.forward(positions));
    else if (m.pe) x = F.add(x, F.embedding(positions, m.pe));
    x = m.drop.forward(x);
    const rope = this.rope && {
      cos: F.embedding(positions, this.rope.cos),
      sin: F.embedding(positions, this.rope.sin),
    };
    [...m.h].forEach((block, i) => {
      let { q, k, v } = block.attn.projectSelf(block.ln1.forward(x));
      if (rope) {
        q = F.rotaryEmbedding(q, rope.cos, rope.sin);
        k = F.rotaryEmbedding(k, rope.cos, rope.sin);
      }
      const cache = this.layers[i];
      const [, hKV, , D] = cache.k.shape;
      // Rows p..p+L−1 of each (batch, KV head) ← the new keys and values (p = len − L, set at each replay).
      const at = (what: string, args: unknown[], [n]: readonly number[]): void => {
        if (what === 'copyRows') args[4] = (n - L) * D;
      };
      withScalars(at, () => {
        for (const [t, c] of [
          [k, cache.k],
          [v, cache.v],
        ] as const)
          K(t, c).copyRows(st(t), 0, L * D, c.storage, (len - L) * D, S * D, B * hKV, L * D);
      });
      let r: { output: Tensor };
      if (block.window === null) {
        // Keys [0, len) of each (batch, KV head), contiguous: the dynamic cache's keys.
        const filled = (c: Tensor, into: Tensor['storage'] | undefined): Tensor => {
          if (!into) return Tensor.fromStorage(c.device, c.storage, [B, hKV, len, D], 'float32');
          K(c).copyRows(c.storage, 0, S * D, into, 0, len * D, B * hKV, len * D);
          return Tensor.fromStorage(c.device, into, [B, hKV, len, D], 'float32');
        };
        const runs = (what: string, args: unknown[], [n]: readonly number[]): void => {
          if (what === 'copyRows') args[5] = args[7] = n * D;
        };
        const keys = withScalars(runs, () => filled(cache.k, this.prefix?.k));
        const values = withScalars(runs, () => filled(cache.v, this.prefix?.v));
        // The attention's key length (its other calls, the heads' permute and the output projection, keep theirs).
        const keyLength = (what: string, args: unknown[], [n]: readonly number[]): void => {
          if (what === 'attention') (args[6] as { s: number }).s = n;
        };
        r = withScalars(keyLength, () => block.attn.attendProjected(q, keys, values, { isCausal: L > 1 }));
      } else {
        const attnBias = windowed[this.windows.indexOf(block.window)];
        r = block.attn.attendProjected(q, cache.k, cache.v, { isCausal: false, attnBias });
      }
      x = F.add(x, block.residDropout.forward(r.output));
      x = F.add(x, block.mlp.forward(block.ln2.forward(x)));
    });
    return m.head(x);
  }
}

/** Options of {@link generateStatic}: {@link GenerateOptions}, and whether steps are captured and replayed. */
export interface StaticGenerateOptions extends GenerateOptions {
  /** Capture each step shape once and replay it (default true); false runs the static cache eagerly. */
  compiled?: boolean;
  /**
   * A decoder of this model to reuse (its captures with it, so that a second generation replays from its first
   * step); its maxLength must hold the prompt and maxTokens (or be the blockSize). Default: a new one.
   */
  decoder?: StaticGPTDecoder;
}

/**
 * generateStream's tokens (the same draws, cuts and checks: decode/gpt.ts's `generation`) over a static KV cache
 * of length min(blockSize, prompt + maxTokens), each step replayed from a capture by default.
 */
export function* generateStaticStream(
  model: GPT,
  prompt: readonly number[],
  options: StaticGenerateOptions,
): IterableIterator<GeneratedToken> {
  const { vocabSize, blockSize } = model.config;
  const restoreMode = enterEvalMode(model);
  let made: StaticGPTDecoder | null = null;
  try {
    const maxLength = Math.min(blockSize, Math.max(1, prompt.length + Math.max(0, options.maxTokens)));
    const given = options.decoder;
    if (given && (given.model !== model || given.maxLength < maxLength))
      throw new Error(
        `generateStatic: options.decoder must be a StaticGPTDecoder of this model with maxLength >= ${maxLength}, ` +
          `got ${given.model === model ? `maxLength ${given.maxLength}` : "another model's"}`,
      );
    made = given ? null : new StaticGPTDecoder(model, maxLength, { compiled: options.compiled });
    const decoder = given ?? made!;
    const run = (fed: number[], fresh: boolean): Float32Array =>
      noGrad(() =>
        memoryScope(() => {
          if (fresh) decoder.reset();
          const logits = decoder.step(new Tensor(Int32Array.from(fed), [1, fed.length], 'int32'));
          return logits.dataSync<Float32Array>().slice((fed.length - 1) * vocabSize, fed.length * vocabSize);
        }),
      );
    const g = generation(vocabSize, blockSize, prompt, options);
    for (let r = g.next(); !r.done; ) {
      if ('run' in r.value) r = g.next(run(r.value.run.fed, r.value.run.fresh));
      else {
        yield r.value.token;
        r = g.next();
      }
    }
  } finally {
    (made as StaticGPTDecoder | null)?.release(); // a decoder made here is freed here (a given one is the caller's)
    restoreMode();
  }
}

/**
 * Whether the static generation serves `model`: its parameters read back synchronously (the CPU backends; a
 * GPU's are read asynchronously, which the static generation does not do yet).
 */
export function staticCacheServes(model: GPT): boolean {
  return model.parameters().every((p) => p.device.readSync !== undefined);
}

/**
 * What the text-generation pipeline and `qkv generate` draw with: {@link generateStaticStream} (the static
 * cache, its steps replayed) where the KV cache is on, `options.compiled` is true and the static cache
 * serves the model ({@link staticCacheServes}); else generateStream, the dynamic cache op by op. Both draw the
 * same tokens from the same logits, bit for bit (test/compile/compiled-pipelines.test.ts).
 */
export function generateStreamCompiled(
  model: GPT,
  prompt: readonly number[],
  options: GenerateOptions & { compiled?: boolean },
): IterableIterator<GeneratedToken> {
  const { compiled, ...rest } = options;
  if (compiled === true && (options.useCache ?? true) && staticCacheServes(model))
    return generateStaticStream(model, prompt, rest);
  return generateStream(model, prompt, rest);
}

/** Generate all at once over the static cache: the new ids, and the logits each was drawn from. */
export function generateStatic(
  model: GPT,
  prompt: readonly number[],
  options: StaticGenerateOptions,
): {
  /** The generated ids, the prompt not included. */
  ids: number[];
  /** The next-token logits each id was drawn from, (vocabSize) each. */
  logits: Float32Array[];
} {
  const ids: number[] = [];
  const logits: Float32Array[] = [];
  for (const t of generateStaticStream(model, prompt, options)) {
    ids.push(t.id);
    logits.push(t.logits);
  }
  return { ids, logits };
}
