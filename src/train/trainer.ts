/**
 * The paper's training recipe (§5) for a translation model as a resumable step machine. It holds no
 * files: the training loop (loop.ts) decides when to evaluate and where to save. Everything random is either derived
 * from (seed, epoch) —
 * the batch order — or saved — the dropout stream — so a resumed run continues with exactly the
 * losses the uninterrupted run would have had.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import { epochOrder, makeBatch, planBatches, type Batch, type Pair, type SpecialIds } from '../data/batching.ts';
import { readSafetensors, writeSafetensors } from '../io/safetensors.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import { withEvalMode } from '../nn/module.ts';
import * as F from '../ops/index.ts';
import { Adam, AdamW } from '../optim/adam.ts';
import { clipGradNorm, clipGradNormAsync } from '../optim/clip.ts';
import { memoryScope } from '../tensor/storage.ts';
import { noamLr } from '../optim/schedule.ts';
import { defaultGenerator } from '../tensor/random.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { HistoryEntry, Metric } from './loop.ts';
import type { CommonTrainerOptions } from './options.ts';
import { faultPoint } from '../util/fault.ts';

/**
 * The paper's Adam has β1, β2, ε = 0.9, 0.98, 1e-9 (§5.3), no clipping (clipNorm 0) and no weight
 * decay; weightDecay > 0 makes it AdamW on every parameter. The seed orders the batches of each epoch.
 */
export interface Seq2SeqTrainerOptions extends CommonTrainerOptions {
  /** Padded tokens per batch (B·max length). */
  maxTokens: number;
  /** Warmup steps of the schedule (4000 in the paper; scale down with the data). */
  warmup: number;
  /** Multiplies the paper's learning-rate curve. */
  lrFactor: number;
  /** ε_ls (0.1 in the paper, §5.4). */
  labelSmoothing: number;
  /**
   * Gradient accumulation: batches per optimiser step (1 in the paper, which had 8 GPUs). The
   * step's gradient is the mean of the K batches' mean-loss gradients, as DistributedDataParallel
   * averages over ranks, so K batches here equal K ranks of one batch each.
   */
  accum: number;
}

/**
 * Seq2SeqTrainer's defaults: the paper's optimiser and schedule (§5.3: Adam β 0.9, 0.98, ε 1e-9,
 * warmup 4000, lrFactor 1) and label smoothing 0.1 (§5.4); batches of 4,096 padded tokens (the
 * paper's held ~25,000 source and ~25,000 target tokens), seed 1, and no accumulation, clipping
 * or weight decay.
 */
export const PAPER_RECIPE: Seq2SeqTrainerOptions = {
  maxTokens: 4096,
  warmup: 4000,
  lrFactor: 1,
  labelSmoothing: 0.1,
  seed: 1,
  clipNorm: 0,
  betas: [0.9, 0.98],
  eps: 1e-9,
  accum: 1,
  weightDecay: 0,
};

/**
 * The training loop's moving average of the loss (weights of the previous value and the new loss):
 * 0.98 as it has always been for `qkv train`. history.json files and resumable states hold that
 * average, so another weight would change every run's files (LM_SMOOTHING keeps train-lm's 0.95).
 */
export const SEQ2SEQ_SMOOTHING = [0.98, 0.02] as const;

/** One evaluation of a translation run in history.json (with `averaged`: the final checkpoint average). */
export interface Seq2SeqHistoryEntry extends HistoryEntry {
  epoch: number;
  bleu: number;
}

/** Val BLEU picks a translation run's best weights, stops it early and ranks its checkpoints. */
export const VAL_BLEU: Metric<Seq2SeqHistoryEntry> = { key: 'bleu', name: 'val BLEU', higherIsBetter: true, digits: 2 };

/** What one Seq2SeqTrainer.step reports. */
export interface Seq2SeqStepResult {
  /** Optimiser steps done, this one included (1 after the first). */
  step: number;
  /** Epoch of the last batch of the step, counting from 0. */
  epoch: number;
  /** Mean label-smoothed cross-entropy per target token, averaged over the step's `accum` batches. */
  loss: number;
  /** Learning rate this step used (the paper's schedule, eq. 3, times lrFactor). */
  lr: number;
  /** Target tokens (not padding) of the step's batches. */
  tokens: number;
}

/** Where training stands; saved with every checkpoint. */
export interface Seq2SeqTrainerPosition {
  /** Optimiser steps done. */
  step: number;
  /** Current epoch, counting from 0. */
  epoch: number;
  /** Index into the epoch's batch order of the next batch. */
  batchInEpoch: number;
  /** Dropout's random stream. */
  rng: number[];
}

/**
 * Trains a Seq2Seq translation model on token-id pairs with the paper's recipe (§5): token-bucketed
 * batches in a new order each epoch, label-smoothed cross-entropy, Adam with the warmup/inverse-sqrt
 * schedule. Throws at construction on no pairs, an `accum` that is not a positive integer or a
 * negative `weightDecay`.
 */
export class Seq2SeqTrainer {
  /** PAPER_RECIPE with the caller's options over it. */
  readonly options: Seq2SeqTrainerOptions;
  /** The batches as indices into `pairs` (planBatches over maxTokens), fixed for the whole run. */
  readonly batches: number[][];
  /** Adam, or AdamW when weightDecay > 0 (AdamW with decay 0 is Adam, bit for bit). */
  readonly optimizer: Adam;
  private readonly names: string[];
  private order: number[];
  /** Where training stands (saved by saveState, restored by loadState). */
  position: Seq2SeqTrainerPosition;

  constructor(
    /** The model being trained, in place. */
    readonly model: Seq2Seq,
    /** The training pairs, token ids; batches add BOS and EOS to the target. */
    readonly pairs: readonly Pair[],
    /** Padding, BOS and EOS ids used to build batches (padding is ignored by the loss). */
    readonly ids: SpecialIds,
    options: Partial<Seq2SeqTrainerOptions> = {},
  ) {
    this.options = { ...PAPER_RECIPE, ...options };
    if (pairs.length === 0) throw new Error('Seq2SeqTrainer: no training pairs');
    const { accum, weightDecay } = this.options;
    if (!Number.isInteger(accum) || accum < 1)
      throw new Error(`Seq2SeqTrainer: accum must be a positive integer, got ${accum}`);
    if (!(weightDecay >= 0)) throw new Error(`Seq2SeqTrainer: weightDecay must be >= 0, got ${weightDecay}`);
    this.batches = planBatches(pairs, this.options.maxTokens);
    const named = model.namedParameters();
    this.names = named.map(([n]) => n);
    const params = named.map(([, p]) => p);
    const adam = { lr: 0, betas: this.options.betas, eps: this.options.eps };
    this.optimizer = weightDecay > 0 ? new AdamW(params, { ...adam, weightDecay }) : new Adam(params, adam);
    defaultGenerator.manualSeed(this.options.seed);
    this.position = { step: 0, epoch: 0, batchInEpoch: 0, rng: defaultGenerator.getState() };
    this.order = epochOrder(this.batches.length, this.options.seed, 0);
  }

  /** Batches per epoch (an optimiser step takes `accum` of them). */
  get stepsPerEpoch(): number {
    return this.batches.length;
  }

  private nextBatch(): Batch {
    const pos = this.position;
    if (pos.batchInEpoch >= this.order.length) {
      pos.epoch++;
      pos.batchInEpoch = 0;
      this.order = epochOrder(this.batches.length, this.options.seed, pos.epoch);
    }
    return makeBatch(this.pairs, this.batches[this.order[pos.batchInEpoch++]], this.ids);
  }

  /**
   * One optimisation step: for each of `accum` batches, forward, label-smoothed loss, backward
   * (gradients add up, each loss scaled by 1/accum); then Adam. The loss reported is the mean of
   * the batches' mean losses.
   */
  step(): Seq2SeqStepResult {
    const K = this.options.accum;
    this.model.train();
    this.optimizer.zeroGrad(false);
    let loss = 0;
    let tokens = 0;
    for (let k = 0; k < K; k++) {
      // Activations live in the backend's memory for one batch and are freed when it ends.
      memoryScope(() => {
        const batch = this.nextBatch();
        const logits = this.model.forward(batch.src, batch.tgtIn); // (B, T, vocab)
        const l = F.crossEntropy(logits, batch.tgtOut, {
          ignoreIndex: this.ids.padId,
          labelSmoothing: this.options.labelSmoothing,
        });
        (K === 1 ? l : F.mul(l, 1 / K)).backward();
        loss += l.item() / K;
        tokens += batch.targetTokens;
      });
    }
    if (this.options.clipNorm > 0) memoryScope(() => clipGradNorm(this.optimizer.params, this.options.clipNorm));
    return this.update(loss, tokens);
  }

  /**
   * step() for a model on a device that reads back only asynchronously (a GPU; any device works): the same
   * batches, losses, clipping and update, with the batches' losses read back after the update is recorded.
   */
  async stepAsync(): Promise<Seq2SeqStepResult> {
    const K = this.options.accum;
    this.model.train();
    this.optimizer.zeroGrad(false);
    const losses: Tensor[] = [];
    let tokens = 0;
    for (let k = 0; k < K; k++) {
      const l = memoryScope(() => {
        const batch = this.nextBatch();
        const logits = this.model.forward(batch.src, batch.tgtIn); // (B, T, vocab)
        const l = F.crossEntropy(logits, batch.tgtOut, {
          ignoreIndex: this.ids.padId,
          labelSmoothing: this.options.labelSmoothing,
        });
        (K === 1 ? l : F.mul(l, 1 / K)).backward();
        tokens += batch.targetTokens;
        return l.detach(); // kept by the scope: read after the update
      });
      losses.push(l);
    }
    if (this.options.clipNorm > 0) await clipGradNormAsync(this.optimizer.params, this.options.clipNorm);
    const r = this.update(0, tokens);
    let loss = 0;
    for (const l of losses) loss += (await l.itemAsync()) / K;
    return { ...r, loss };
  }

  /** The optimiser step of step() and stepAsync(), after the gradients are in (and clipped). */
  private update(loss: number, tokens: number): Seq2SeqStepResult {
    return memoryScope(() => {
      this.position.step++;
      const lr = noamLr(this.position.step, this.model.config.dModel, this.options.warmup, this.options.lrFactor);
      this.optimizer.lr = lr;
      this.optimizer.step();
      this.position.rng = defaultGenerator.getState();
      faultPoint('step', { step: this.position.step }); // crash tests: QKV_FAULT=step:step=N
      return { step: this.position.step, epoch: this.position.epoch, loss, lr, tokens };
    });
  }

  /**
   * Start a new run at `step` of the schedule (for a model that has already trained that long: its
   * learning rate and its place in the data order), with the optimiser's moments still empty.
   */
  startAt(step: number): void {
    if (!Number.isInteger(step) || step < 0)
      throw new Error(`Seq2SeqTrainer.startAt: step must be an integer >= 0, got ${step}`);
    if (this.position.step !== 0)
      throw new Error(`Seq2SeqTrainer.startAt: the run is already at step ${this.position.step}`);
    const consumed = step * this.options.accum;
    const epoch = Math.floor(consumed / this.batches.length);
    this.position = { ...this.position, step, epoch, batchInEpoch: consumed % this.batches.length };
    this.order = epochOrder(this.batches.length, this.options.seed, epoch);
  }

  /**
   * Weights, Adam moments and position in one safetensors file (write it atomically); `extra`: the caller's own
   * metadata.
   */
  saveState(extra: Record<string, string> = {}): Uint8Array {
    const tensors: Record<string, Tensor> = {};
    const params = this.optimizer.params;
    this.names.forEach((n, i) => {
      tensors[`model.${n}`] = params[i];
      tensors[`adam.m.${n}`] = this.optimizer.state.m[i];
      tensors[`adam.v.${n}`] = this.optimizer.state.v[i];
    });
    const meta = { position: this.position, adamStep: this.optimizer.state.step, options: this.options };
    return writeSafetensors(tensors, { metadata: { ...extra, trainer: JSON.stringify(meta) } });
  }

  /** Continue exactly where saveState() left off; returns the file's metadata (with the caller's `extra`). */
  loadState(bytes: Uint8Array): Record<string, string> {
    const { tensors, metadata } = readSafetensors(bytes);
    if (!metadata.trainer)
      throw new Error('Seq2SeqTrainer.loadState: file has no trainer metadata (not a training state)');
    const meta = JSON.parse(metadata.trainer) as {
      position: Seq2SeqTrainerPosition;
      adamStep: number;
      options: Seq2SeqTrainerOptions;
    };
    for (const k of ['seed', 'maxTokens', 'accum', 'weightDecay'] as const) {
      // Files from before accum/weightDecay existed were written with 1 and 0.
      const saved = meta.options[k] ?? PAPER_RECIPE[k];
      if (saved !== this.options[k])
        throw new Error(`Seq2SeqTrainer.loadState: saved ${k} ${saved} differs from ${this.options[k]}`);
    }
    const weights: Record<string, Tensor> = {};
    for (const n of this.names) weights[n] = tensors[`model.${n}`];
    this.model.loadStateDict(weights, { strict: true });
    this.names.forEach((n, i) => {
      const m = tensors[`adam.m.${n}`];
      const v = tensors[`adam.v.${n}`];
      if (!m || !v) throw new Error(`Seq2SeqTrainer.loadState: missing Adam state for '${n}'`);
      this.optimizer.state.m[i].write(m.dataSync<Float32Array>());
      this.optimizer.state.v[i].write(v.dataSync<Float32Array>());
    });
    this.optimizer.state.step = meta.adamStep;
    this.position = meta.position;
    defaultGenerator.setState(meta.position.rng);
    this.order = epochOrder(this.batches.length, this.options.seed, this.position.epoch);
    return metadata;
  }
}

/**
 * Mean label-smoothed loss per target token over `pairs`, in eval mode without gradients (the
 * model's mode is restored after). evaluateLm is its language-model twin.
 */
export function evaluateSeq2Seq(
  model: Seq2Seq,
  pairs: readonly Pair[],
  ids: SpecialIds,
  maxTokens: number,
  labelSmoothing = 0,
): number {
  let total = 0;
  let count = 0;
  withEvalMode(model, () =>
    noGrad(() => {
      for (const idx of planBatches(pairs, maxTokens)) {
        const b = makeBatch(pairs, idx, ids);
        total += memoryScope(() =>
          F.crossEntropy(model.forward(b.src, b.tgtIn), b.tgtOut, {
            ignoreIndex: ids.padId,
            labelSmoothing,
            reduction: 'sum',
          }).item(),
        );
        count += b.targetTokens;
      }
    }),
  );
  return total / count;
}

// The names before Seq2SeqTrainer/LmTrainer and evaluateSeq2Seq/evaluateLm paired; test/python still imports them.
export {
  /** @deprecated Seq2SeqTrainer */
  Seq2SeqTrainer as Trainer,
  /** @deprecated Seq2SeqTrainerOptions */
  type Seq2SeqTrainerOptions as TrainerOptions,
  /** @deprecated evaluateSeq2Seq */
  evaluateSeq2Seq as evaluateLoss,
};
