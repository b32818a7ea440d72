/**
 * Training in the model worker, for the Train view: a character GPT learned on a text the page
 * sends, by the library's trainer (`LmTrainer`, src/train/lm.ts: nanoGPT's recipe, AdamW with
 * warmup, cosine decay and clipping) as `qkv train-lm` trains one: the text's last tenth of lines
 * held out for the validation loss, the characters of the rest as the vocabulary. The page drives it
 * a slice at a time (`trainSteps`: steps for a few hundred milliseconds, then the validation loss and
 * a sample with its attention), so pausing is not asking for the next slice, resuming is asking
 * again, and other requests (a translation) run between slices. A run's batches are a function of
 * (seed, step), so a paused and resumed run has the losses of one that never paused.
 *
 * On a GPU (the webgpu backend) the model is made on the CPU backend (the same initial weights as there) and
 * moved to the GPU; each step is `LmTrainer.stepAsync` (the loss read back after the update is recorded,
 * gradients clipped on the device), the validation loss `evaluateLmAsync`, the sample read back
 * asynchronously. On the CPU backends `step()`, as `qkv train-lm` runs it.
 *
 * `trainSave` writes the model as the folder `qkv train-lm` writes (config.json, tokenizer.json,
 * model.safetensors; FILES of src/folder), in one zip of stored entries under a folder of the run's
 * name: `unzip` it and `qkv generate --model NAME` reads it.
 */
import { FILES, type LmConfigFile } from '../../src/folder/spec.ts';
import { writeSafetensors } from '../../src/io/safetensors.ts';
import { GPT } from '../../src/models/gpt.ts';
import { enterEvalMode } from '../../src/nn/module.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { CharTokenizer } from '../../src/text/chars.ts';
import { encodeLines } from '../../src/text/lines.ts';
import { evaluateLmAsync, LM_SMOOTHING, LmTrainer, type LmStepResult } from '../../src/train/lm.ts';
import { generateWithAttentionAsync, lineSeparatorId, type GptAttention } from '../../src/viz/gpt-attention.ts';
import type { Tensor } from '../../src/tensor/tensor.ts';
import { getBackend, setBackend } from '../../src/backend/backend.ts';
import { onGpu } from './backend.ts';
import { zipStored } from './zip.ts';

/** What the Train view asks for: the text, the model's shape and the recipe. */
export interface TrainSettings {
  /** One document per line; the last tenth of the lines (at least one) is held out. */
  text: string;
  nLayer: number;
  nHead: number;
  nEmbd: number;
  /** Context (tokens): also each training window's length. */
  blockSize: number;
  batchSize: number;
  /** Peak learning rate (the decay ends at a tenth of it). */
  lr: number;
  /** The run's planned length: the cosine decay ends here, and training stops. */
  steps: number;
  warmup: number;
  seed: number;
}

/** A new run, as the view describes it. */
export interface TrainSetup {
  parameters: number;
  vocabSize: number;
  trainLines: number;
  valLines: number;
  trainTokens: number;
  valTokens: number;
}

/** One slice of training and where it leaves the model. */
export interface TrainSlice {
  /** Steps done so far. */
  step: number;
  /** The slice's steps, in order: each step's batch loss (nats per token) and learning rate. */
  steps: { step: number; loss: number; lr: number }[];
  /** The moving average of the loss, as `qkv train-lm` reports it (LM_SMOOTHING). */
  smoothed: number;
  /** Validation loss (nats per token) after the slice. */
  valLoss: number;
  /** The planned steps are done. */
  done: boolean;
  /** Milliseconds of training in this slice (the validation and the sample not included). */
  ms: number;
  /** The sample after the slice: the prompt continued greedily, and its attention. */
  sample: GptAttention;
}

export interface TrainRequests {
  /** A new run (the previous one, if any, is dropped). */
  trainStart: { args: TrainSettings; value: TrainSetup };
  /** Train for about `ms` milliseconds (at least one step; none when ms ≤ 0), then score and sample `prompt`. */
  trainSteps: { args: { ms: number; prompt: string; maxTokens: number }; value: TrainSlice };
  /** The model as it is now, as a zipped model folder named `name`. */
  trainSave: { args: { name: string }; value: { fileName: string; bytes: Uint8Array; step: number } };
}

interface Run {
  settings: TrainSettings;
  model: GPT;
  tokenizer: CharTokenizer;
  separatorId: number;
  trainer: LmTrainer;
  valIds: Int32Array;
  valLines: number;
  smoothed: number;
}

let run: Run | null = null;

const positiveInt = (name: string, v: number, max = Infinity) => {
  if (!Number.isInteger(v) || v < 1 || v > max)
    throw new Error(`${name} must be a whole number from 1${max < Infinity ? ` to ${max}` : ''}, got ${v}`);
};

function needRun(): Run {
  if (!run) throw new Error('no training run: press Start');
  return run;
}

/** The CPU backend a GPU run makes its model on (the model worker's; set by setTrainCpu). */
let cpu = 'js';

/** The CPU backend a model is made on before it moves to the GPU (the model worker's choice). */
export function setTrainCpu(name: string): void {
  cpu = name;
}

/** `make()` on the CPU backend, its model moved to the current backend's GPU after (on a CPU backend: as it is). */
async function madeOnCpu<T extends { model: GPT }>(make: () => T): Promise<T> {
  const target = getBackend().name;
  if (!onGpu()) return make();
  await setBackend(cpu);
  let made: T;
  try {
    made = make();
  } finally {
    await setBackend(target);
  }
  made.model.to(target);
  return made;
}

export const trainHandlers: {
  [K in keyof TrainRequests]: (a: TrainRequests[K]['args'], progress: (s: string) => void) => unknown;
} = {
  async trainStart(s) {
    positiveInt('layers', s.nLayer, 12);
    positiveInt('heads', s.nHead, 16);
    positiveInt('width', s.nEmbd, 1024);
    if (s.nEmbd % s.nHead !== 0) throw new Error(`width ${s.nEmbd} must be a multiple of heads ${s.nHead}`);
    positiveInt('context', s.blockSize, 1024);
    positiveInt('batch', s.batchSize, 512);
    positiveInt('steps', s.steps);
    if (!Number.isInteger(s.warmup) || s.warmup < 0)
      throw new Error(`warmup must be a whole number >= 0, got ${s.warmup}`);
    if (!(s.lr > 0 && s.lr < 1)) throw new Error(`the learning rate must be a number in (0, 1), got ${s.lr}`);
    if (!Number.isInteger(s.seed) || s.seed < 0) throw new Error(`the seed must be a whole number >= 0, got ${s.seed}`);
    const lines = s.text.split(/\r?\n/);
    if (lines.at(-1) === '') lines.pop();
    if (lines.length < 2)
      throw new Error(`the text has ${lines.length} line(s); give at least 2 (a tenth is held out)`);
    const nVal = Math.max(1, Math.floor(lines.length / 10));
    const train = lines.slice(0, -nVal);
    const val = lines.slice(-nVal);
    run = null; // the previous run's model can go
    const tokenizer = CharTokenizer.learn(train);
    const separatorId = lineSeparatorId(tokenizer);
    const trainIds = encodeLines(tokenizer, train, separatorId);
    const valIds = encodeLines(tokenizer, val, separatorId);
    if (trainIds.length < s.blockSize + 1)
      throw new Error(
        `the text's training lines are ${trainIds.length} characters, fewer than one window of context + 1 = ` +
          `${s.blockSize + 1}: give more text or a shorter context`,
      );
    const { model } = await madeOnCpu(() => {
      manualSeed(s.seed);
      return {
        model: new GPT({
          vocabSize: tokenizer.vocabSize,
          blockSize: s.blockSize,
          nLayer: s.nLayer,
          nHead: s.nHead,
          nEmbd: s.nEmbd,
          dropout: 0,
          positions: 'learned',
        }),
      };
    });
    const trainer = new LmTrainer(model, trainIds, {
      batchSize: s.batchSize,
      lr: s.lr,
      minLr: s.lr / 10,
      warmup: Math.min(s.warmup, s.steps),
      decaySteps: s.steps,
      seed: s.seed,
    });
    run = { settings: s, model, tokenizer, separatorId, trainer, valIds, valLines: nVal, smoothed: Number.NaN };
    return {
      parameters: model.numParameters(),
      vocabSize: tokenizer.vocabSize,
      trainLines: train.length,
      valLines: nVal,
      trainTokens: trainIds.length,
      valTokens: valIds.length,
    } satisfies TrainSetup;
  },

  async trainSteps({ ms, prompt, maxTokens }) {
    const r = needRun();
    const { trainer, model } = r;
    const steps: TrainSlice['steps'] = [];
    const gpu = onGpu();
    const t0 = performance.now();
    while (ms > 0 && trainer.position.step < r.settings.steps) {
      // A GPU's loss reads back only asynchronously; on the CPU the step qkv train-lm takes.
      const s: LmStepResult = gpu ? await trainer.stepAsync() : trainer.step();
      steps.push({ step: s.step, loss: s.loss, lr: s.lr });
      // The training loop's moving average (src/train/loop.ts), started at the first loss.
      r.smoothed = Number.isNaN(r.smoothed) ? s.loss : LM_SMOOTHING[0] * r.smoothed + LM_SMOOTHING[1] * s.loss;
      if (performance.now() - t0 >= ms) break;
    }
    const trained = performance.now() - t0;
    const valLoss = await evaluateLmAsync(model, r.valIds, { batchSize: trainer.options.batchSize });
    const restore = enterEvalMode(model);
    let sample: GptAttention;
    try {
      const lm = { model, tokenizer: r.tokenizer, separatorId: r.separatorId };
      sample = await generateWithAttentionAsync(lm, prompt, { maxTokens });
    } finally {
      restore();
    }
    return {
      step: trainer.position.step,
      steps,
      smoothed: r.smoothed,
      valLoss,
      done: trainer.position.step >= r.settings.steps,
      ms: trained,
      sample,
    } satisfies TrainSlice;
  },

  async trainSave({ name }) {
    const r = needRun();
    if (!/^[\w.-]+$/.test(name) || name === '.' || name === '..')
      throw new Error(`the folder name must be letters, digits, '.', '-' or '_', got '${name}'`);
    const { model, tokenizer, trainer } = r;
    const config: LmConfigFile = {
      format: 'qkv-gpt',
      version: 1,
      model: model.config,
      tokenizer: 'char',
      training: {
        preset: 'explorer',
        recipe: trainer.options,
        steps: trainer.position.step,
        maxSteps: r.settings.steps,
        data: "the explorer's Train view",
        validation: `last ${r.valLines} lines of the text`,
      },
    };
    const enc = new TextEncoder();
    const bytes = zipStored([
      { name: `${name}/${FILES.config}`, data: enc.encode(`${JSON.stringify(config, null, 2)}\n`) },
      { name: `${name}/${FILES.tokenizer}`, data: enc.encode(JSON.stringify(tokenizer.toJSON())) },
      { name: `${name}/${FILES.weights}`, data: writeSafetensors(await onHost(model.stateDict())) },
    ]);
    return { fileName: `${name}.zip`, bytes, step: trainer.position.step };
  },
};

/** The tensors' values on the host (the cpu device), read back asynchronously from a GPU; CPU tensors as they are. */
async function onHost(tensors: Record<string, Tensor>): Promise<Record<string, Tensor>> {
  const entries = Object.entries(tensors);
  const moved = await Promise.all(entries.map(([, t]) => t.toAsync(cpu)));
  return Object.fromEntries(entries.map(([k], i) => [k, moved[i]]));
}
