/**
 * `qkv train`: the flags into a run plan (new, --resume, --init-from), the BPE vocabulary and model it
 * names, then the training loop of src/train/loop.ts with val BLEU as its metric.
 */
import { join, resolve } from 'node:path';
import type { Pair } from '../data/batching.ts';
import { Seq2Seq } from '../models/seq2seq.ts';
import { manualSeed } from '../tensor/random.ts';
import { BpeTokenizer } from '../text/bpe.ts';
import { PRESETS, type Seq2SeqPreset } from '../train/presets.ts';
import type { Seq2SeqConfig } from '../models/seq2seq.ts';
import { checkRunFolder, FRESH, keepBest, readHistory, resumeState, trainLoop, writeHistory } from '../train/loop.ts';
import {
  SEQ2SEQ_SMOOTHING,
  Seq2SeqTrainer,
  VAL_BLEU,
  evaluateSeq2Seq,
  type Seq2SeqHistoryEntry,
  type Seq2SeqStepResult,
} from '../train/trainer.ts';
import { readParallel } from './corpus.ts';
import { notFound } from '../folder/seq2seq.ts';
import { pathNamer, readJsonIn, saveFolderWeights } from '../folder/node.ts';
import { FILES } from '../folder/spec.ts';
import { asUserError, loadModelDir, loadModelShape, saveModelDir, UserError, vocabularyConfig } from './files.ts';
import { progressBar } from './progress.ts';
import { validationBleu } from './evaluate.ts';

export interface TrainArgs {
  /** Default: DEFAULT_PRESET, or with --init-from the folder's saved recipe. */
  preset?: string;
  out: string;
  resume: boolean;
  /** `--init-from DIR`: a new run from a model folder's weights, shape and tokenizers, with a fresh optimiser. */
  initFrom?: string;
  /** `--init-step N`: the schedule step the --init-from weights are from (default 0). */
  initStep?: number;
  data: string;
  src: string;
  tgt: string;
  /** `--direction en-fr`: overrides src and tgt. */
  direction?: { src: string; tgt: string };
  maxSteps?: number;
  maxTokens?: number;
  warmup?: number;
  lrFactor?: number;
  evalEvery?: number;
  saveEvery?: number;
  bleuSentences?: number;
  seed?: number;
  // Model shape (override the preset's).
  dModel?: number;
  heads?: number;
  layers?: number;
  encoderLayers?: number;
  decoderLayers?: number;
  ffn?: number;
  dropout?: number;
  attentionDropout?: number;
  activationDropout?: number;
  preNorm?: boolean;
  // Recipe.
  labelSmoothing?: number;
  weightDecay?: number;
  accum?: number;
  clipNorm?: number;
  // Vocabulary.
  bpeSize?: number;
  splitPunctuation?: boolean;
  /** One BPE vocabulary (and embedding table) per language, each of bpeSize, instead of a joint one. */
  separateVocab?: boolean;
  // Stopping and averaging.
  patience?: number;
  average?: 'last' | 'best';
  keep?: number;
  log: (line: string) => void;
}

/** What a run was started with, saved in config.json `training`, so --resume needs no flags again. */
interface RunPlan {
  preset: string;
  recipe: Record<string, unknown>;
  maxSteps: number;
  evalEvery: number;
  saveEvery: number;
  patience: number;
  average: 'last' | 'best';
  keep: number;
  bleuSentences: number;
  /** `separate`: one vocabulary of vocabSize per language (absent in runs from before it existed: joint). */
  bpe: { vocabSize: number; splitPunctuation: boolean; separate?: boolean };
  data: string;
  direction: string;
  /** Set by --init-from: the folder the run started from and the step of the schedule it started at. */
  init?: { from: string; step: number };
}

const DEFAULT_PRESET = 'multi30k-small';

/** Token ids of sentence pairs; `target` encodes the target side (a separate vocabulary's tokenizer). */
export function encodePairs(
  tok: BpeTokenizer,
  src: string[],
  tgt: string[],
  maxLen: number,
  target: BpeTokenizer = tok,
): Pair[] {
  // Keep room for BOS/EOS; Multi30K never comes near the limit, other corpora may.
  return src.map((s, i) => ({ src: tok.encode(s).slice(0, maxLen), tgt: target.encode(tgt[i]).slice(0, maxLen - 1) }));
}

/** Flags of the model's shape and vocabulary: an --init-from folder fixes them. */
const SHAPE_FLAGS = [
  'dModel',
  'heads',
  'layers',
  'encoderLayers',
  'decoderLayers',
  'ffn',
  'dropout',
  'attentionDropout',
  'activationDropout',
  'preNorm',
  'bpeSize',
  'splitPunctuation',
  'separateVocab',
] as const;
/** Flags of the model (saved in config.json) or of the vocabulary cannot change on --resume. */
const FIXED_FLAGS = [...SHAPE_FLAGS, 'direction', 'average', 'keep'] as const;

const flagName = (k: string): string => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

function modelFromFlags(preset: Seq2SeqPreset, a: TrainArgs): Seq2SeqConfig {
  const m: Seq2SeqConfig = { ...preset.model };
  if (a.dModel !== undefined) m.dModel = a.dModel;
  if (a.heads !== undefined) m.nhead = a.heads;
  if (a.layers !== undefined) m.numEncoderLayers = m.numDecoderLayers = a.layers;
  if (a.encoderLayers !== undefined) m.numEncoderLayers = a.encoderLayers;
  if (a.decoderLayers !== undefined) m.numDecoderLayers = a.decoderLayers;
  if (a.ffn !== undefined) m.dimFeedforward = a.ffn;
  if (a.dropout !== undefined) m.dropout = a.dropout;
  if (a.attentionDropout !== undefined) m.attentionDropout = a.attentionDropout;
  if (a.activationDropout !== undefined) m.activationDropout = a.activationDropout;
  if (a.preNorm !== undefined) m.normFirst = a.preNorm;
  if (m.dModel % m.nhead !== 0) throw new UserError(`--d-model ${m.dModel} is not divisible by --heads ${m.nhead}`);
  return m;
}

/** The recipe fields the flags set (undefined where not given). */
function recipeFlags(a: TrainArgs): Record<string, number | undefined> {
  return {
    maxTokens: a.maxTokens,
    warmup: a.warmup,
    lrFactor: a.lrFactor,
    seed: a.seed,
    labelSmoothing: a.labelSmoothing,
    weightDecay: a.weightDecay,
    accum: a.accum,
    clipNorm: a.clipNorm,
  };
}

type RunFields = Pick<
  RunPlan,
  'maxSteps' | 'evalEvery' | 'saveEvery' | 'patience' | 'average' | 'keep' | 'bleuSentences'
>;

/**
 * A new run's length, evaluation, stopping and averaging: the flag, else `saved` (an --init-from folder's plan), else
 * the preset.
 */
function runFields(a: TrainArgs, saved: Partial<RunPlan>, preset: Seq2SeqPreset): RunFields {
  return {
    maxSteps: a.maxSteps ?? saved.maxSteps ?? preset.maxSteps,
    evalEvery: a.evalEvery ?? saved.evalEvery ?? preset.evalEvery,
    saveEvery: a.saveEvery ?? saved.saveEvery ?? preset.saveEvery,
    patience: a.patience ?? saved.patience ?? preset.patience ?? 0,
    average: a.average ?? saved.average ?? preset.average ?? 'last',
    keep: a.keep ?? saved.keep ?? preset.keep,
    bleuSentences: a.bleuSentences ?? saved.bleuSentences ?? 1014,
  };
}

/** The recipe: `base` with the recipe flags given. */
function recipeOf(base: object, a: TrainArgs): Record<string, unknown> {
  const recipe: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(recipeFlags(a))) if (v !== undefined) recipe[k] = v;
  return recipe;
}

function planFromFlags(preset: Seq2SeqPreset, a: TrainArgs, src: string, tgt: string): RunPlan {
  return {
    preset: a.preset ?? DEFAULT_PRESET,
    recipe: recipeOf(preset.recipe, a),
    ...runFields(a, {}, preset),
    bpe: {
      vocabSize: a.bpeSize ?? preset.vocabSize,
      splitPunctuation: a.splitPunctuation ?? preset.splitPunctuation ?? false,
      ...(a.separateVocab ? { separate: true } : {}),
    },
    data: a.data,
    direction: `${src}-${tgt}`,
  };
}

/**
 * The plan of a run being resumed: the saved one, with only --max-steps, --eval-every, --save-every,
 * --patience and --bleu-sentences allowed to change; other recipe flags must agree with it.
 */
function resumedPlan(dir: string, a: TrainArgs): RunPlan {
  const config = asUserError(() => {
    const c = readJsonIn(dir, FILES.config);
    if (c === undefined) throw notFound(FILES.config, pathNamer(dir));
    return c;
  });
  const saved = (config as { training?: Partial<RunPlan> & { recipe?: Record<string, unknown> } }).training;
  if (!saved?.recipe) throw new UserError(`--resume: ${join(dir, FILES.config)} has no 'training' section`);
  for (const k of FIXED_FLAGS) {
    if (a[k] !== undefined)
      throw new UserError(
        `--resume: ${flagName(k)} is fixed when a run starts (it is in ` +
          `${join(dir, FILES.config)}); leave it out to continue the run`,
      );
  }
  const preset = PRESETS.seq2seq[saved.preset ?? a.preset ?? DEFAULT_PRESET];
  const recipe = { ...saved.recipe };
  for (const [k, v] of Object.entries(recipeFlags(a))) {
    if (v !== undefined && v !== recipe[k])
      throw new UserError(
        `--resume: the run was started with ${k} ${String(recipe[k])}, the ` +
          `flag says ${v}; leave it out to continue the run`,
      );
  }
  return {
    preset: saved.preset ?? a.preset ?? DEFAULT_PRESET,
    recipe,
    maxSteps: a.maxSteps ?? saved.maxSteps ?? preset?.maxSteps ?? 0,
    evalEvery: a.evalEvery ?? saved.evalEvery ?? preset?.evalEvery ?? 250,
    saveEvery: a.saveEvery ?? saved.saveEvery ?? preset?.saveEvery ?? 125,
    patience: a.patience ?? saved.patience ?? 0,
    average: saved.average ?? 'last',
    keep: saved.keep ?? preset?.keep ?? 5,
    bleuSentences: a.bleuSentences ?? saved.bleuSentences ?? 1014,
    bpe: saved.bpe ?? { vocabSize: preset?.vocabSize ?? 0, splitPunctuation: false },
    data: saved.data ?? a.data,
    direction: saved.direction ?? `${a.src}-${a.tgt}`,
    ...(saved.init && { init: saved.init }),
  };
}

/**
 * The plan of a run started with --init-from: the folder fixes the model and vocabulary; the recipe is
 * the folder's own (config.json `training`), or --preset's when given or when the folder has none,
 * and recipe flags override either.
 */
function initPlan(
  a: TrainArgs,
  dir: string,
  config: { training?: Partial<RunPlan> },
  tokenizer: BpeTokenizer,
  targetTokenizer: BpeTokenizer,
): RunPlan {
  for (const k of SHAPE_FLAGS) {
    if (a[k] !== undefined)
      throw new UserError(
        `--init-from: ${flagName(k)} comes from ${join(dir, FILES.config)} ` +
          `(the model's shape and vocabulary); leave it out`,
      );
  }
  const saved = a.preset === undefined && config.training?.recipe ? config.training : {};
  const presetName =
    saved.preset !== undefined && PRESETS.seq2seq[saved.preset] ? saved.preset : (a.preset ?? DEFAULT_PRESET);
  const preset = PRESETS.seq2seq[presetName];
  const trained = config.training?.direction;
  const asked = a.direction ? `${a.direction.src}-${a.direction.tgt}` : undefined;
  if (trained !== undefined && asked !== undefined && asked !== trained) {
    throw new UserError(`--init-from: ${dir} translates ${trained} (its config.json), --direction says ${asked}`);
  }
  const step = a.initStep ?? 0;
  const fields = runFields(a, saved, preset);
  if (fields.maxSteps <= step)
    throw new UserError(
      `--max-steps ${fields.maxSteps} must be above --init-step ${step} (the step the run starts at)`,
    );
  const separate = targetTokenizer !== tokenizer;
  return {
    preset: presetName,
    recipe: recipeOf(saved.recipe ?? preset.recipe, a),
    ...fields,
    bpe: config.training?.bpe ?? {
      vocabSize: tokenizer.vocabSize,
      splitPunctuation: tokenizer.splitPunctuation,
      ...(separate && { separate: true }),
    },
    data: a.data,
    direction: trained ?? asked ?? `${a.src}-${a.tgt}`,
    init: { from: dir, step },
  };
}

export async function train(a: TrainArgs): Promise<void> {
  const preset = PRESETS.seq2seq[a.preset ?? DEFAULT_PRESET];
  if (!preset)
    throw new UserError(`unknown preset '${a.preset}', expected one of: ${Object.keys(PRESETS.seq2seq).join(', ')}`);
  if (a.initFrom !== undefined && a.resume)
    throw new UserError(
      '--init-from starts a new run from a model folder and --resume continues the run in --out: pass one',
    );
  if (a.initStep !== undefined && a.initFrom === undefined)
    throw new UserError('--init-step needs --init-from (the model folder whose weights are from that step)');
  if (a.initFrom !== undefined && resolve(a.initFrom) === resolve(a.out))
    throw new UserError(
      `--init-from and --out are the same folder (${a.out}): the run writes to --out, choose another`,
    );
  checkRunFolder(a.out, a.resume);

  const init = a.initFrom === undefined ? null : loadModelDir(a.initFrom); // its weights, shape and tokenizers
  const plan = a.resume
    ? resumedPlan(a.out, a)
    : init
      ? initPlan(a, a.initFrom!, init.config as { training?: Partial<RunPlan> }, init.tokenizer, init.targetTokenizer)
      : planFromFlags(preset, a, a.direction?.src ?? a.src, a.direction?.tgt ?? a.tgt);
  const shape = a.resume || init ? null : modelFromFlags(preset, a); // checked before any work
  const [srcLang, tgtLang] = plan.direction.split('-');
  const trainText = readParallel(plan.data, 'train', srcLang, tgtLang);
  const valText = readParallel(plan.data, 'val', srcLang, tgtLang);
  let tokenizer: BpeTokenizer;
  let targetTokenizer: BpeTokenizer;
  let model: Seq2Seq;
  if (a.resume) {
    ({ tokenizer, targetTokenizer, model } = loadModelShape(a.out)); // weights come from the training state below
  } else if (init) {
    ({ tokenizer, targetTokenizer, model } = init);
  } else {
    const { vocabSize, splitPunctuation, separate } = plan.bpe;
    const how =
      `${splitPunctuation ? ' (punctuation split from words)' : ''} on ` + `${trainText.src.length} sentence pairs`;
    if (separate) {
      a.log(
        `learning separate ${srcLang.toUpperCase()} and ` +
          `${tgtLang.toUpperCase()} BPE vocabularies of ${vocabSize} each${how}`,
      );
      tokenizer = BpeTokenizer.learn(trainText.src, { vocabSize, splitPunctuation });
      targetTokenizer = BpeTokenizer.learn(trainText.tgt, { vocabSize, splitPunctuation });
    } else {
      a.log(`learning a joint ${srcLang.toUpperCase()}+${tgtLang.toUpperCase()} BPE vocabulary of ${vocabSize}${how}`);
      tokenizer = targetTokenizer = BpeTokenizer.learn([...trainText.src, ...trainText.tgt], {
        vocabSize,
        splitPunctuation,
      });
    }
    manualSeed((plan.recipe.seed as number | undefined) ?? 1);
    model = new Seq2Seq({ ...shape!, ...vocabularyConfig(tokenizer, targetTokenizer) });
  }
  const ids = { padId: tokenizer.padId, bosId: targetTokenizer.bosId, eosId: targetTokenizer.eosId };
  const tokenizers = { source: tokenizer, target: targetTokenizer };
  const trainPairs = encodePairs(tokenizer, trainText.src, trainText.tgt, model.config.maxLen, targetTokenizer);
  const valPairs = encodePairs(tokenizer, valText.src, valText.tgt, model.config.maxLen, targetTokenizer);
  let trainer: Seq2SeqTrainer;
  try {
    trainer = new Seq2SeqTrainer(model, trainPairs, ids, plan.recipe);
  } catch (e) {
    throw new UserError((e as Error).message);
  }
  const training = { ...plan, recipe: trainer.options };
  let resumed = FRESH;
  if (a.resume) {
    resumed = resumeState(trainer, a.out);
    a.log(`resumed at step ${trainer.position.step} (epoch ${trainer.position.epoch})`);
  } else {
    saveModelDir(a.out, model, tokenizer, training, targetTokenizer);
  }
  if (!a.resume && plan.init) {
    // The run goes on from the folder's step: its learning rate and data order, and its history up
    // to there (so val BLEU and minutes continue); its weights are the run's best until beaten.
    const { from, step } = plan.init;
    trainer.startAt(step);
    const carried = readHistory(from, step, VAL_BLEU, 'qkv train');
    writeHistory(a.out, carried);
    saveFolderWeights(a.out, model);
    if (plan.average === 'best' && carried.at(-1)?.step === step)
      keepBest(a.out, model.stateDict(), carried, plan.keep, VAL_BLEU);
    a.log(
      `starting from ${from} at step ${step} (its weights, shape and ` +
        `tokenizers; a fresh ` +
        `optimiser)${carried.length ? `, with its ${carried.length} evaluations to there` : ''}`,
    );
  }
  const vocabulary =
    targetTokenizer === tokenizer
      ? `vocabulary ${tokenizer.vocabSize}`
      : `vocabularies ${tokenizer.vocabSize} (${srcLang}) and ${targetTokenizer.vocabSize} (${tgtLang})`;
  a.log(
    `${model.numParameters().toLocaleString('en-US')} parameters, ` +
      `${vocabulary}, ${trainer.stepsPerEpoch} batches per ` +
      `epoch${trainer.options.accum > 1 ? `, ${trainer.options.accum} batches per step` : ''}`,
  );

  const bleuSrc = valText.src.slice(0, plan.bleuSentences);
  const bleuRef = valText.tgt.slice(0, plan.bleuSentences);
  const bleuOn = `on ${Math.min(plan.bleuSentences, valText.src.length)} sentences`;
  await trainLoop<Seq2SeqStepResult, Seq2SeqHistoryEntry>({
    out: a.out,
    command: 'qkv train',
    trainer,
    maxSteps: plan.maxSteps,
    evalEvery: plan.evalEvery,
    saveEvery: plan.saveEvery,
    smoothing: SEQ2SEQ_SMOOTHING,
    resumed,
    metric: VAL_BLEU,
    patience: plan.patience,
    checkpoints: { keep: plan.keep, average: plan.average },
    countMinutes: true,
    evaluate: (r, ema, time) => {
      const valLoss = evaluateSeq2Seq(model, valPairs, ids, trainer.options.maxTokens);
      const bleu = validationBleu(model, tokenizers, bleuSrc, bleuRef);
      const entry = {
        step: r.step,
        epoch: r.epoch,
        trainLoss: ema,
        valLoss,
        bleu,
        seconds: time.sinceEval,
        minutes: time.minutes,
      };
      return { entry, detail: `, val BLEU ${bleu.toFixed(2)} ${bleuOn}` };
    },
    score: () => validationBleu(model, tokenizers, bleuSrc, bleuRef),
    averagedEntry: (bleu, averaged, kept, ema) => ({
      step: trainer.position.step,
      epoch: trainer.position.epoch,
      trainLoss: ema,
      valLoss: Number.NaN,
      bleu,
      seconds: 0,
      averaged,
      kept,
    }),
    bar: progressBar(
      'train |{bar}| {value}/{total} | loss {loss} | lr {lr} | {tps} tok/s | epoch {epoch} | ETA {eta_formatted}',
    ),
    barFields: () => ({ epoch: trainer.position.epoch }),
    log: a.log,
  });
  a.log(`done: ${a.out}`);
}
