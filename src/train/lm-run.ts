/**
 * A language model's training run (`qkv train-lm`): a GPT on lines of text (one line = one document),
 * character-level or BPE, trained by ./loop.ts with validation loss as its metric. The folder it writes
 * holds config.json (format 'qkv-gpt'), tokenizer.json, model.safetensors (the weights of the best
 * validation loss so far), train-state.safetensors (for resuming) and history.json. The command
 * (src/cli/commands/train-lm.ts) checks its flags and reads the text; this file knows no flags.
 */
import { lineSeparatorId } from '../folder/gpt.ts';
import { readGptShape, saveLmDir } from '../folder/node.ts';
import { GPT } from '../models/gpt.ts';
import { manualSeed } from '../tensor/random.ts';
import { BpeTokenizer } from '../text/bpe.ts';
import { CharTokenizer } from '../text/chars.ts';
import { LM_SMOOTHING, LmTrainer, VAL_LOSS, evaluateLm, type LmHistoryEntry, type LmStepResult } from './lm.ts';
import { encodeLines, type LmTokenizer } from '../text/lines.ts';
import { FRESH, resumeState, trainLoop, type ProgressBar } from './loop.ts';
import type { LmPreset } from './presets.ts';

export type LmTokenizerKind = 'char' | 'bpe';

/** Training and validation lines, and where the validation lines are from (saved in config.json `training`). */
export interface LmCorpus {
  train: string[];
  val: string[];
  valFrom: string;
}

export interface LmRun {
  /** The run folder (checked beforehand with ./loop.ts `checkRunFolder`). */
  out: string;
  /** Continue the run in `out` from its training state (its model and tokenizer from the folder). */
  resume: boolean;
  /** The preset's name (saved in config.json) and the preset. */
  presetName: string;
  preset: LmPreset;
  /** A new run's tokenizer, learned on the training lines. */
  tokenizer: LmTokenizerKind;
  /** A BPE tokenizer's vocabulary size (default: the preset's). */
  vocabSize?: number;
  corpus: LmCorpus;
  /** The training text's path, saved in config.json `training`. */
  data: string;
  /** The run's length and cadences (default: the preset's). */
  maxSteps?: number;
  evalEvery?: number;
  saveEvery?: number;
  /** Validation tokens scored at each evaluation. */
  evalTokens: number;
  /** The preset's recipe fields overridden (the peak learning rate also sets the end of the decay, a tenth of it). */
  batchSize?: number;
  lr?: number;
  warmup?: number;
  seed?: number;
  bar: ProgressBar;
  log: (line: string) => void;
}

/** Train to maxSteps: history.json, model.safetensors and the training state in `out`. */
export async function runLm(a: LmRun): Promise<void> {
  const { preset, corpus } = a;
  let lm: { model: GPT; tokenizer: LmTokenizer; kind: LmTokenizerKind };
  if (a.resume) {
    const loaded = readGptShape(a.out); // the weights come from the training state below
    lm = { model: loaded.model, tokenizer: loaded.tokenizer, kind: loaded.config.tokenizer as LmTokenizerKind };
  } else {
    const kind = a.tokenizer;
    let tokenizer: LmTokenizer;
    if (kind === 'char') {
      tokenizer = CharTokenizer.learn(corpus.train);
    } else {
      const vocabSize = a.vocabSize ?? preset.bpeVocabSize;
      a.log(`learning a BPE vocabulary of ${vocabSize} on ${corpus.train.length} lines`);
      tokenizer = BpeTokenizer.learn(corpus.train, { vocabSize });
    }
    manualSeed(a.seed ?? preset.recipe.seed ?? 1);
    lm = { model: new GPT({ ...preset.model, vocabSize: tokenizer.vocabSize }), tokenizer, kind };
  }
  const { model, tokenizer } = lm;
  const sep = lineSeparatorId(tokenizer);
  const trainIds = encodeLines(tokenizer, corpus.train, sep);
  const valIds = encodeLines(tokenizer, corpus.val, sep);
  const maxSteps = a.maxSteps ?? preset.maxSteps;
  const recipe = {
    ...preset.recipe,
    decaySteps: maxSteps,
    ...(a.batchSize !== undefined && { batchSize: a.batchSize }),
    ...(a.lr !== undefined && { lr: a.lr, minLr: a.lr / 10 }),
    ...(a.warmup !== undefined && { warmup: a.warmup }),
    ...(a.seed !== undefined && { seed: a.seed }),
  };
  if (recipe.warmup !== undefined && recipe.warmup > maxSteps) recipe.warmup = maxSteps;
  const trainer = new LmTrainer(model, trainIds, recipe);
  const training = {
    preset: a.presetName,
    recipe: trainer.options,
    maxSteps,
    data: a.data,
    validation: corpus.valFrom,
  };
  let resumed = FRESH;
  if (a.resume) {
    resumed = resumeState(trainer, a.out);
    a.log(`resumed at step ${trainer.position.step}`);
  } else {
    saveLmDir(a.out, model, tokenizer, lm.kind, training);
  }
  const perStep = trainer.options.batchSize * trainer.options.seqLen;
  a.log(
    `${model.numParameters().toLocaleString('en-US')} parameters, ${lm.kind} vocabulary of ${tokenizer.vocabSize}, ` +
      `${trainIds.length.toLocaleString('en-US')} training tokens ` +
      `(${(trainIds.length / perStep).toFixed(0)} steps per epoch), ` +
      `${valIds.length.toLocaleString('en-US')} validation tokens`,
  );

  const history = await trainLoop<LmStepResult, LmHistoryEntry>({
    out: a.out,
    command: 'qkv train-lm',
    trainer,
    maxSteps,
    evalEvery: a.evalEvery ?? preset.evalEvery,
    saveEvery: a.saveEvery ?? preset.saveEvery,
    smoothing: LM_SMOOTHING,
    resumed,
    metric: VAL_LOSS,
    patience: 0,
    checkpoints: null,
    countMinutes: false,
    evaluate: (r, ema, time) => {
      const valLoss = evaluateLm(model, valIds, { batchSize: trainer.options.batchSize, maxTokens: a.evalTokens });
      return { entry: { step: r.step, trainLoss: ema, valLoss, seconds: time.sinceStart() }, detail: '' };
    },
    bar: a.bar,
    barFields: () => ({}),
    log: a.log,
  });
  const best = history.reduce((m, h) => Math.min(m, h.valLoss), Infinity);
  a.log(`done: ${a.out} (${trainer.position.step} steps; best val loss ${best.toFixed(3)})`);
}
