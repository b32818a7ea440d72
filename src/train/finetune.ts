/**
 * Fine-tuning a pretrained model, full or with LoRA, as a resumable step machine for the training loop (loop.ts):
 * the recipe of Hugging Face's Trainer (AdamW, β 0.9/0.999, ε 1e-8, weight decay on matrices and tables only,
 * gradient clipping at 1, a linear warmup then linear decay to 0), on whichever parameters require gradients (a
 * LoRA model: only the adapter's pairs; the frozen base takes no gradient and no optimizer state).
 *
 * The data is a task (./finetune-data.ts): translation pairs in token-budget batches, or a text stream in windows.
 * Resuming is exact, as for `qkv train`: the batches of a step are a function of (seed, position), dropout's
 * stream is saved, and the state holds the trained weights (a LoRA state: the pairs only; the base is reread from
 * its folder) with AdamW's moments.
 */
import { readSafetensors, writeSafetensors } from '../io/safetensors.ts';
import { trainableParameters } from '../nn/lora.ts';
import type { Module } from '../nn/module.ts';
import { AdamW } from '../optim/adam.ts';
import { clipGradNorm } from '../optim/clip.ts';
import { defaultGenerator } from '../tensor/random.ts';
import { memoryScope } from '../tensor/storage.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { faultPoint } from '../util/fault.ts';
import type { FineTuneData, DataPosition } from './finetune-data.ts';
import type { CommonTrainerOptions } from './options.ts';

/** The recipe: Hugging Face Trainer's names and defaults where it has them. */
export interface FineTuneOptions extends CommonTrainerOptions {
  /** Peak learning rate (Trainer's learning_rate, 5e-5; LoRA usually takes more, ~2e-4). */
  lr: number;
  /** Steps of linear warmup from 0 (Trainer's warmup_steps, 0). */
  warmup: number;
  /** 'linear': decay to 0 at `totalSteps` (Trainer's default); 'constant': the peak after warmup. */
  schedule: 'linear' | 'constant';
  /** The run's planned length: where the linear decay reaches 0. */
  totalSteps: number;
}

/** Trainer's defaults (transformers TrainingArguments): lr 5e-5, AdamW 0.9/0.999/1e-8, no decay, clip 1, linear. */
export const FINETUNE_RECIPE: FineTuneOptions = {
  lr: 5e-5,
  warmup: 0,
  schedule: 'linear',
  totalSteps: 1000,
  betas: [0.9, 0.999],
  eps: 1e-8,
  weightDecay: 0,
  clipNorm: 1,
  seed: 1,
};

/**
 * The multiplier of the peak learning rate at 0-based optimizer step `i` (Trainer's schedulers:
 * get_linear_schedule_with_warmup and get_constant_schedule_with_warmup, whose first step is i = 0).
 */
export function fineTuneLrFactor(i: number, warmup: number, total: number, schedule: 'linear' | 'constant'): number {
  if (i < warmup) return i / Math.max(1, warmup);
  if (schedule === 'constant') return 1;
  return Math.max(0, (total - i) / Math.max(1, total - warmup));
}

/** What one step reports (the loop's LoopStepResult). */
export interface FineTuneStepResult {
  step: number;
  /** The batch's mean loss per target token, before the update. */
  loss: number;
  lr: number;
  /** Target tokens of the batch. */
  tokens: number;
  /** The gradient's global norm before clipping. */
  gradNorm: number;
}

/** Where a run stands: steps done, the data's place, dropout's stream. */
export interface FineTunePosition {
  step: number;
  data: DataPosition;
  rng: number[];
}

/**
 * Trains `model`'s parameters that require gradients on `data` with FINETUNE_RECIPE and the caller's options.
 * Throws at construction when nothing requires a gradient or weightDecay is negative.
 */
export class FineTuner<B> {
  readonly options: FineTuneOptions;
  /** AdamW over the trainable matrices and tables (ndim ≥ 2), with weightDecay (Trainer's decay group). */
  readonly decayed: AdamW;
  /** AdamW over trainable biases and LayerNorm parameters, without decay. */
  readonly undecayed: AdamW;
  private readonly names: { decayed: string[]; undecayed: string[] };
  position: FineTunePosition;

  constructor(
    /** The model, trained in place (its frozen parameters untouched). */
    readonly model: Module,
    /** The batches and the loss. */
    readonly data: FineTuneData<B>,
    options: Partial<FineTuneOptions> = {},
  ) {
    this.options = { ...FINETUNE_RECIPE, ...options };
    const o = this.options;
    if (!(o.weightDecay >= 0)) throw new Error(`FineTuner: weightDecay must be >= 0, got ${o.weightDecay}`);
    if (!(o.lr >= 0)) throw new Error(`FineTuner: lr must be >= 0, got ${o.lr}`);
    if (!Number.isInteger(o.warmup) || o.warmup < 0)
      throw new Error(`FineTuner: warmup must be an integer >= 0, got ${o.warmup}`);
    if (o.schedule !== 'linear' && o.schedule !== 'constant')
      throw new Error(`FineTuner: schedule must be 'linear' or 'constant', got ${String(o.schedule)}`);
    const named = trainableParameters(model);
    if (named.length === 0) throw new Error('FineTuner: the model has no parameter that requires a gradient');
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
    this.position = { step: 0, data: data.start(o.seed), rng: defaultGenerator.getState() };
  }

  /** The learning rate of step `step` (1-based). */
  lrAt(step: number): number {
    const o = this.options;
    return o.lr * fineTuneLrFactor(step - 1, o.warmup, o.totalSteps, o.schedule);
  }

  /** One step on the data's next batch. */
  step(): FineTuneStepResult {
    const { batch, next } = this.data.next(this.position.data);
    const r = this.stepOn(batch);
    this.position.data = next;
    return r;
  }

  /**
   * One step on `batch`: forward, the task's loss, backward, clipping, AdamW (both groups at lrAt(step)).
   * step() is this on the data's next batch.
   */
  stepOn(batch: B): FineTuneStepResult {
    return memoryScope(() => {
      this.model.train();
      const step = this.position.step + 1;
      const { loss, tokens } = this.data.loss(this.model, batch);
      this.decayed.zeroGrad(false);
      this.undecayed.zeroGrad(false);
      loss.backward();
      const params = [...this.decayed.params, ...this.undecayed.params];
      const gradNorm = this.options.clipNorm > 0 ? clipGradNorm(params, this.options.clipNorm) : Number.NaN;
      const lr = this.lrAt(step);
      for (const opt of [this.decayed, this.undecayed]) {
        opt.lr = lr;
        opt.step();
      }
      this.position = { ...this.position, step, rng: defaultGenerator.getState() };
      faultPoint('step', { step }); // crash tests: QKV_FAULT=step:step=N
      return { step, loss: loss.item(), lr, tokens, gradNorm };
    });
  }

  /** The trained weights, AdamW's moments and the position in one safetensors file (write it atomically). */
  saveState(extra: Record<string, string> = {}): Uint8Array {
    const tensors: Record<string, Tensor> = {};
    for (const [opt, names] of this.groups()) {
      names.forEach((n, i) => {
        tensors[`model.${n}`] = opt.params[i];
        tensors[`adam.m.${n}`] = opt.state.m[i];
        tensors[`adam.v.${n}`] = opt.state.v[i];
      });
    }
    const meta = {
      position: this.position,
      adamStep: this.decayed.state.step,
      options: this.options,
      data: this.data.describe(),
    };
    return writeSafetensors(tensors, { metadata: { ...extra, fineTuner: JSON.stringify(meta) } });
  }

  /** Continue exactly where saveState() left off (the same model, adapter, data and seed). */
  loadState(bytes: Uint8Array): Record<string, string> {
    const { tensors, metadata } = readSafetensors(bytes);
    if (!metadata.fineTuner)
      throw new Error('FineTuner.loadState: file has no fineTuner metadata (not a fine-tuning state)');
    const meta = JSON.parse(metadata.fineTuner) as {
      position: FineTunePosition;
      adamStep: number;
      options: FineTuneOptions;
      data: string;
    };
    if (meta.data !== this.data.describe())
      throw new Error(
        `FineTuner.loadState: the run was trained on ${meta.data}, this data is ${this.data.describe()} ` +
          '(same --data and model?)',
      );
    if (meta.options.seed !== this.options.seed)
      throw new Error(`FineTuner.loadState: saved seed ${meta.options.seed} differs from ${this.options.seed}`);
    for (const [opt, names] of this.groups()) {
      names.forEach((n, i) => {
        const w = tensors[`model.${n}`];
        const m = tensors[`adam.m.${n}`];
        const v = tensors[`adam.v.${n}`];
        if (!w || !m || !v)
          throw new Error(`FineTuner.loadState: no saved weights or AdamW state for '${n}' (another adapter?)`);
        opt.params[i].write(w.dataSync<Float32Array>());
        opt.state.m[i].write(m.dataSync<Float32Array>());
        opt.state.v[i].write(v.dataSync<Float32Array>());
      });
      opt.state.step = meta.adamStep;
    }
    const saved = new Set(Object.keys(tensors).filter((k) => k.startsWith('model.')));
    const own = new Set([...this.names.decayed, ...this.names.undecayed].map((n) => `model.${n}`));
    const extraKeys = [...saved].filter((k) => !own.has(k));
    if (extraKeys.length)
      throw new Error(`FineTuner.loadState: the state trains ${extraKeys[0].slice(6)}, which this model does not`);
    // The schedule is the saved one: a resumed run keeps its warmup and decay.
    Object.assign(this.options, {
      lr: meta.options.lr,
      warmup: meta.options.warmup,
      schedule: meta.options.schedule,
      totalSteps: meta.options.totalSteps,
    });
    this.position = meta.position;
    defaultGenerator.setState(meta.position.rng);
    return metadata;
  }

  private groups(): [AdamW, string[]][] {
    return [
      [this.decayed, this.names.decayed],
      [this.undecayed, this.names.undecayed],
    ];
  }
}
