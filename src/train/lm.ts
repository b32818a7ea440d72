/**
 * Training a GPT on text, nanoGPT's recipe as a resumable step machine: the corpus is one stream
 * of token ids (each line followed by a separator), a batch is `batchSize` random windows of
 * `seqLen` + 1 tokens (inputs and next-token targets), AdamW with weight decay on matrices and
 * tables only, linear warmup then cosine decay, gradient clipping. It holds no files: the training
 * loop (loop.ts) decides when to evaluate and where to save.
 *
 * Resuming is exact: the windows of step s are a function of (seed, s), and the dropout stream is
 * saved with the weights and AdamW's moments, so a resumed run has the losses of an uninterrupted one.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import { readSafetensors, writeSafetensors } from '../io/safetensors.ts';
import type { GPT } from '../models/gpt.ts';
import { withEvalMode } from '../nn/module.ts';
import * as F from '../ops/index.ts';
import { AdamW } from '../optim/adam.ts';
import { clipGradNorm, clipGradNormAsync } from '../optim/clip.ts';
import { memoryScope } from '../tensor/storage.ts';
import { cosineLr } from '../optim/schedule.ts';
import { Generator, defaultGenerator } from '../tensor/random.ts';
import { Tensor } from '../tensor/tensor.ts';
import type { HistoryEntry, Metric } from './loop.ts';
import type { CommonTrainerOptions } from './options.ts';
import { faultPoint } from '../util/fault.ts';

// ---- The recipe ------------------------------------------------------------------------------

/**
 * AdamW's weight decay shrinks weight matrices and embedding tables only (not biases or LayerNorm);
 * the seed draws the windows of every step.
 */
export interface LmTrainerOptions extends CommonTrainerOptions {
  /** Windows per batch. */
  batchSize: number;
  /** Tokens per window (default and maximum: the model's blockSize). */
  seqLen?: number;
  /** Peak learning rate, reached at the end of warmup. */
  lr: number;
  /** The learning rate at the end of the cosine decay and after it (nanoGPT: lr / 10). */
  minLr: number;
  /** Steps of linear warmup from lr / warmup to lr. */
  warmup: number;
  /** Step at which the cosine decay reaches minLr: the planned length of the run. */
  decaySteps: number;
}

/** nanoGPT's defaults for small models (β2 0.99 as its Shakespeare config, clip 1, decay 0.1). */
export const LM_RECIPE: LmTrainerOptions = {
  batchSize: 16,
  lr: 1e-3,
  minLr: 1e-4,
  warmup: 100,
  decaySteps: 5000,
  weightDecay: 0.1,
  betas: [0.9, 0.99],
  eps: 1e-8,
  clipNorm: 1,
  seed: 1,
};

/**
 * The training loop's moving average of the loss (weights of the previous value and the new loss):
 * 0.95 as it has always been for train-lm (SEQ2SEQ_SMOOTHING keeps qkv train's 0.98). history.json
 * files and resumable states hold that average, so another weight would change every run's files.
 */
export const LM_SMOOTHING = [0.95, 0.05] as const;

/** One evaluation of a language-model run in history.json (`seconds`: since its session started). */
export type LmHistoryEntry = HistoryEntry;

/** The validation loss (nats per token) picks a language model's best weights. */
export const VAL_LOSS: Metric<LmHistoryEntry> = { key: 'valLoss', name: 'val loss', higherIsBetter: false, digits: 3 };

/** What one LmTrainer.step reports. */
export interface LmStepResult {
  /** Steps done, this one included (1 after the first). */
  step: number;
  /** Mean next-token cross-entropy (nats per token) of the step's batch, before the update. */
  loss: number;
  /** Learning rate this step used (lrAt(step)). */
  lr: number;
  /** Target tokens in the batch. */
  tokens: number;
}

/** Where training stands; saved with every checkpoint. */
export interface LmTrainerPosition {
  /** Steps done (the next step is step + 1). */
  step: number;
  /** Dropout's random stream. */
  rng: number[];
}

/**
 * Trains a GPT on a token stream with nanoGPT's recipe (LM_RECIPE by default). Throws at construction
 * if seqLen is not an integer in [1, blockSize], batchSize is not a positive integer, or the corpus
 * is shorter than one window of seqLen + 1 tokens.
 */
export class LmTrainer {
  /** LM_RECIPE with the caller's options over it; seqLen defaults to the model's blockSize. */
  readonly options: Required<LmTrainerOptions>;
  /** AdamW over the weight matrices and embedding tables (every parameter with ndim ≥ 2), with weightDecay. */
  readonly decayed: AdamW;
  /** AdamW over biases and LayerNorm parameters (ndim < 2), without weight decay. */
  readonly undecayed: AdamW;
  private readonly names: { decayed: string[]; undecayed: string[] };
  /** Where training stands (saved by saveState, restored by loadState). */
  position: LmTrainerPosition;

  constructor(
    /** The model being trained, in place. */
    readonly model: GPT,
    /** The training corpus as one stream of token ids (encodeLines). */
    readonly data: Int32Array,
    options: Partial<LmTrainerOptions> = {},
  ) {
    const o = { ...LM_RECIPE, ...options };
    const seqLen = o.seqLen ?? model.config.blockSize;
    this.options = { ...o, seqLen };
    const name = 'LmTrainer';
    if (!Number.isInteger(seqLen) || seqLen < 1 || seqLen > model.config.blockSize) {
      throw new Error(`${name}: seqLen must be an integer in [1, blockSize ${model.config.blockSize}], got ${seqLen}`);
    }
    if (!Number.isInteger(o.batchSize) || o.batchSize < 1)
      throw new Error(`${name}: batchSize must be a positive integer, got ${o.batchSize}`);
    if (data.length < seqLen + 1)
      throw new Error(
        `${name}: the corpus has ${data.length} tokens, fewer than one window of seqLen + 1 = ${seqLen + 1}`,
      );
    const named = model.namedParameters();
    const dec = named.filter(([, p]) => p.ndim >= 2);
    const undec = named.filter(([, p]) => p.ndim < 2);
    this.names = { decayed: dec.map(([n]) => n), undecayed: undec.map(([n]) => n) };
    const common = { lr: 0, betas: o.betas, eps: o.eps };
    this.decayed = new AdamW(
      dec.map(([, p]) => p),
      { ...common, weightDecay: o.weightDecay },
    );
    this.undecayed = new AdamW(
      undec.map(([, p]) => p),
      { ...common, weightDecay: 0 },
    );
    defaultGenerator.manualSeed(o.seed);
    this.position = { step: 0, rng: defaultGenerator.getState() };
  }

  /** The learning rate of step `step` (1-based): warmup, then cosine decay to minLr at decaySteps. */
  lrAt(step: number): number {
    const o = this.options;
    return cosineLr(step - 1, o.lr, o.warmup, o.decaySteps, o.minLr);
  }

  /** Inputs x and targets y (batchSize, seqLen) of step `step`: windows at random offsets drawn from (seed, step). */
  batch(step: number): {
    /** Inputs (batchSize, seqLen), int32 ids. */
    x: Tensor;
    /** Next-token targets (batchSize, seqLen): x shifted left by one. */
    y: Tensor;
  } {
    const { batchSize: B, seqLen: T, seed } = this.options;
    const g = new Generator((Math.imul(seed, 0x9e3779b1) + step) >>> 0);
    const x = new Int32Array(B * T);
    const y = new Int32Array(B * T);
    const starts = this.data.length - T; // offsets 0 .. N − T − 1
    for (let b = 0; b < B; b++) {
      const s = g.int(starts);
      x.set(this.data.subarray(s, s + T), b * T);
      y.set(this.data.subarray(s + 1, s + T + 1), b * T);
    }
    return { x: new Tensor(x, [B, T], 'int32'), y: new Tensor(y, [B, T], 'int32') };
  }

  /** One optimisation step: forward, next-token cross-entropy, backward, clip, AdamW. */
  step(): LmStepResult {
    // Activations live in the backend's memory for the step and are freed when it ends.
    return memoryScope(() => {
      this.model.train();
      const step = this.position.step + 1;
      const { x, y } = this.batch(step);
      const loss = F.crossEntropy(this.model.forward(x), y);
      this.decayed.zeroGrad(false);
      this.undecayed.zeroGrad(false);
      loss.backward();
      if (this.options.clipNorm > 0)
        clipGradNorm([...this.decayed.params, ...this.undecayed.params], this.options.clipNorm);
      const lr = this.lrAt(step);
      this.decayed.lr = lr;
      this.undecayed.lr = lr;
      this.decayed.step();
      this.undecayed.step();
      this.position = { step, rng: defaultGenerator.getState() };
      faultPoint('step', { step }); // crash tests: QKV_FAULT=step:step=N
      return { step, loss: loss.item(), lr, tokens: y.size };
    });
  }

  /**
   * step() for a model on a device that reads back only asynchronously (a GPU; any device works): the same
   * batch, loss, clipping and update, the loss read back after the update is recorded.
   */
  async stepAsync(): Promise<LmStepResult> {
    this.model.train();
    const step = this.position.step + 1;
    const { loss, tokens } = memoryScope(() => {
      const { x, y } = this.batch(step);
      const loss = F.crossEntropy(this.model.forward(x), y);
      this.decayed.zeroGrad(false);
      this.undecayed.zeroGrad(false);
      loss.backward();
      return { loss: loss.detach(), tokens: y.size };
    });
    if (this.options.clipNorm > 0)
      await clipGradNormAsync([...this.decayed.params, ...this.undecayed.params], this.options.clipNorm);
    const lr = memoryScope(() => {
      const lr = this.lrAt(step);
      this.decayed.lr = lr;
      this.undecayed.lr = lr;
      this.decayed.step();
      this.undecayed.step();
      this.position = { step, rng: defaultGenerator.getState() };
      return lr;
    });
    faultPoint('step', { step });
    return { step, loss: await loss.itemAsync(), lr, tokens };
  }

  /** Weights, AdamW moments and position in one safetensors file (write it atomically). */
  saveState(extra: Record<string, string> = {}): Uint8Array {
    const tensors: Record<string, Tensor> = {};
    for (const [opt, names] of [
      [this.decayed, this.names.decayed],
      [this.undecayed, this.names.undecayed],
    ] as const) {
      names.forEach((n, i) => {
        const p = opt.params[i];
        tensors[`model.${n}`] = p;
        tensors[`adam.m.${n}`] = opt.state.m[i];
        tensors[`adam.v.${n}`] = opt.state.v[i];
      });
    }
    const meta = {
      position: this.position,
      adamStep: this.decayed.state.step,
      options: this.options,
      corpusTokens: this.data.length,
    };
    return writeSafetensors(tensors, { metadata: { ...extra, lmTrainer: JSON.stringify(meta) } });
  }

  /** Continue exactly where saveState() left off (same model shape, corpus, seed and batch shape). */
  loadState(bytes: Uint8Array): Record<string, string> {
    const { tensors, metadata } = readSafetensors(bytes);
    if (!metadata.lmTrainer)
      throw new Error('LmTrainer.loadState: file has no lmTrainer metadata (not a language-model training state)');
    const meta = JSON.parse(metadata.lmTrainer) as {
      position: LmTrainerPosition;
      adamStep: number;
      options: Required<LmTrainerOptions>;
      corpusTokens: number;
    };
    const o = this.options;
    if (meta.corpusTokens !== this.data.length) {
      throw new Error(
        `LmTrainer.loadState: the run was trained on a corpus of ` +
          `${meta.corpusTokens} tokens, this one has ${this.data.length} (same ` +
          `--data and tokenizer?)`,
      );
    }
    for (const k of ['seed', 'batchSize', 'seqLen'] as const) {
      if (meta.options[k] !== o[k])
        throw new Error(`LmTrainer.loadState: saved ${k} ${meta.options[k]} differs from ${o[k]}`);
    }
    const weights: Record<string, Tensor> = {};
    for (const n of [...this.names.decayed, ...this.names.undecayed]) weights[n] = tensors[`model.${n}`];
    this.model.loadStateDict(weights, { strict: true });
    for (const [opt, names] of [
      [this.decayed, this.names.decayed],
      [this.undecayed, this.names.undecayed],
    ] as const) {
      names.forEach((n, i) => {
        const m = tensors[`adam.m.${n}`];
        const v = tensors[`adam.v.${n}`];
        if (!m || !v) throw new Error(`LmTrainer.loadState: missing AdamW state for '${n}'`);
        opt.state.m[i].write(m.dataSync<Float32Array>());
        opt.state.v[i].write(v.dataSync<Float32Array>());
      });
      opt.state.step = meta.adamStep;
    }
    // The schedule is the saved one (a resumed run keeps its warmup and decay).
    Object.assign(this.options, {
      lr: meta.options.lr,
      minLr: meta.options.minLr,
      warmup: meta.options.warmup,
      decaySteps: meta.options.decaySteps,
    });
    this.position = meta.position;
    defaultGenerator.setState(meta.position.rng);
    return metadata;
  }
}

/**
 * Mean next-token cross-entropy (nats per token) over consecutive windows of `seqLen` + 1 tokens of
 * `data` (at most `maxTokens` targets; default all), in eval mode without gradients (the model's mode
 * is restored after). evaluateSeq2Seq is its translation twin.
 */
export function evaluateLm(
  model: GPT,
  data: Int32Array,
  options: { seqLen?: number; batchSize?: number; maxTokens?: number } = {},
): number {
  let total = 0;
  let count = 0;
  withEvalMode(model, () =>
    noGrad(() => {
      for (const { x, y } of evalBatches(model, data, options)) {
        total += F.crossEntropy(model.forward(x), y, { reduction: 'sum' }).item();
        count += y.size;
      }
    }),
  );
  return total / count;
}

/**
 * {@link evaluateLm} for a model on a device that reads back only asynchronously (a GPU; any device works): the
 * same windows and sums, each batch's sum read back asynchronously.
 */
export async function evaluateLmAsync(
  model: GPT,
  data: Int32Array,
  options: { seqLen?: number; batchSize?: number; maxTokens?: number } = {},
): Promise<number> {
  let total = 0;
  let count = 0;
  for (const { x, y } of evalBatches(model, data, options)) {
    const sum = withEvalMode(model, () => noGrad(() => F.crossEntropy(model.forward(x), y, { reduction: 'sum' })));
    total += await sum.itemAsync();
    count += y.size;
  }
  return total / count;
}

/** evaluateLm's batches: consecutive windows of seqLen + 1 tokens, at most maxTokens targets, batchSize a batch. */
function* evalBatches(
  model: GPT,
  data: Int32Array,
  options: { seqLen?: number; batchSize?: number; maxTokens?: number },
): IterableIterator<{ x: Tensor; y: Tensor }> {
  const T = Math.min(options.seqLen ?? model.config.blockSize, data.length - 1);
  if (T < 1) throw new Error(`evaluateLm: need at least 2 tokens, got ${data.length}`);
  const B = options.batchSize ?? 16;
  const limit = Math.min(options.maxTokens ?? Infinity, data.length - 1);
  const starts: number[] = [];
  for (let s = 0; s + T < data.length && starts.length * T < limit; s += T) starts.push(s);
  for (let i = 0; i < starts.length; i += B) {
    const rows = starts.slice(i, i + B);
    const x = new Int32Array(rows.length * T);
    const y = new Int32Array(rows.length * T);
    rows.forEach((s, b) => {
      x.set(data.subarray(s, s + T), b * T);
      y.set(data.subarray(s + 1, s + T + 1), b * T);
    });
    yield { x: new Tensor(x, [rows.length, T], 'int32'), y: new Tensor(y, [rows.length, T], 'int32') };
  }
}
