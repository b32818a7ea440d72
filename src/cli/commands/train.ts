/**
 * `qkv train`: its flags, and the flags into a run plan (new, --resume, --init-from) for the training
 * run of src/train/seq2seq-run.ts (the BPE vocabulary and model the plan names, then the training loop
 * with val BLEU as its metric).
 */
import { join, resolve } from 'node:path';
import { Command } from '@commander-js/extra-typings';
import type { Seq2SeqConfig } from '../../models/seq2seq.ts';
import type { BpeTokenizer } from '../../text/bpe.ts';
import { checkRunFolder } from '../../train/loop.ts';
import { PRESETS, type Seq2SeqPreset } from '../../train/presets.ts';
import { runSeq2Seq, savedPlan, type RunPlan } from '../../train/seq2seq-run.ts';
import { FILES } from '../../folder/spec.ts';
import { choice, int, nonNegativeInt, nonNegativeNumber, num, rate } from '../args.ts';
import { readParallel } from '../corpus.ts';
import { asUserError, loadModelDir, UserError } from '../files.ts';
import { dataOption, directionOption, log, type FlagsOf } from '../options.ts';
import { progressBar } from '../progress.ts';

function flags() {
  const cmd = new Command('train')
    .description('train a translation model (BPE, Adam with warmup, label smoothing), with checkpoints')
    .option(
      '--preset <name>',
      `${Object.keys(PRESETS.seq2seq).join(' | ')}; the flags below override ` +
        `single fields (default: multi30k-small; with --init-from, the ` +
        `folder's own recipe)`,
    )
    .requiredOption('--out <dir>', 'folder for the model, checkpoints and history')
    .option('--resume', 'continue the run in --out from its last checkpoint (its saved recipe; no flags needed)', false)
    .option(
      '--init-from <dir>',
      "start a new run from a model folder's weights, shape and tokenizers, " +
        'with a fresh optimiser (fine-tuning, or training a shipped model on)',
    )
    .option(
      '--init-step <n>',
      'with --init-from: the step its weights are from; the learning rate ' +
        'and data order go on from there, and its history up to there is kept ' +
        '(default 0)',
      nonNegativeInt('--init-step'),
    );
  // --resume reads the corpus its run was started with (config.json), not --data.
  const corpus = dataOption(cmd, 'corpus folder with train/val SPLIT.LANG[.gz] files', (o) => {
    if (o.resume) return null;
    const d = (o.direction as { src: string; tgt: string } | undefined) ?? {
      src: o.src as string,
      tgt: o.tgt as string,
    };
    return ['train', 'val'].flatMap((split) => [`${split}.${d.src}.gz`, `${split}.${d.tgt}.gz`]);
  })
    .option('--src <lang>', 'source language', 'en')
    .option('--tgt <lang>', 'target language', 'de');
  return directionOption(corpus)
    .option('--max-steps <n>', 'stop after this many steps', int('--max-steps'))
    .option('--eval-every <n>', 'validation loss and greedy BLEU every n steps', int('--eval-every'))
    .option('--save-every <n>', 'checkpoint every n steps', int('--save-every'))
    .option(
      '--bleu-sentences <n>',
      'validation sentences decoded for BLEU (default: all 1,014)',
      int('--bleu-sentences'),
    )
    .option('--seed <n>', 'random seed', int('--seed'))
    .optionsGroup('Model:')
    .option('--d-model <n>', 'model width dModel', int('--d-model'))
    .option('--heads <n>', 'attention heads', int('--heads'))
    .option('--layers <n>', 'encoder and decoder layers', int('--layers'))
    .option('--encoder-layers <n>', 'encoder layers', int('--encoder-layers'))
    .option('--decoder-layers <n>', 'decoder layers', int('--decoder-layers'))
    .option('--ffn <n>', 'feed-forward inner width dFf', int('--ffn'))
    .option(
      '--dropout <p>',
      'dropout on sub-layer outputs and embeddings (and the two below unless given)',
      rate('--dropout'),
    )
    .option(
      '--attention-dropout <p>',
      'dropout on attention weights (0: the fused attention kernel trains)',
      rate('--attention-dropout'),
    )
    .option('--activation-dropout <p>', 'dropout after the feed-forward activation', rate('--activation-dropout'))
    .option('--pre-norm', 'pre-norm layers (the paper is post-norm)')
    .optionsGroup('Recipe:')
    .option('--max-tokens <n>', 'padded tokens per batch', int('--max-tokens'))
    .option('--accum <k>', 'batches per optimiser step (gradient accumulation)', int('--accum'))
    .option('--warmup <n>', 'warmup steps of the learning-rate schedule', int('--warmup'))
    .option('--lr-factor <x>', 'scale of the learning-rate curve', num('--lr-factor'))
    .option('--label-smoothing <e>', 'label smoothing ε', rate('--label-smoothing'))
    .option(
      '--weight-decay <x>',
      'decoupled weight decay (AdamW) on every parameter',
      nonNegativeNumber('--weight-decay'),
    )
    .option('--clip-norm <x>', 'clip the gradient norm (0 = off)', nonNegativeNumber('--clip-norm'))
    .optionsGroup('Vocabulary:')
    .option('--bpe-size <n>', 'BPE vocabulary size (joint; with --separate-vocab, of each language)', int('--bpe-size'))
    .option(
      '--separate-vocab',
      'one BPE vocabulary and embedding table per language ' +
        '(target_tokenizer.json beside tokenizer.json) instead of a joint one',
    )
    .option('--split-punctuation', 'split punctuation from words before BPE (saved in tokenizer.json)')
    .optionsGroup('Stopping and averaging:')
    .option(
      '--patience <n>',
      'stop after n evaluations without a better val BLEU (0 = never)',
      nonNegativeInt('--patience'),
    )
    .option(
      '--average <which>',
      "average the 'last' checkpoints (§6.1) or the 'best' by val BLEU",
      choice('--average', ['last', 'best']),
    )
    .option('--keep <n>', 'checkpoints averaged at the end', int('--keep'));
}

export function trainCommand() {
  return flags().action(async (o) => train({ ...o, log }));
}

/** `qkv train`'s options (as the flags give them). */
export type TrainArgs = FlagsOf<typeof flags> & { log: (line: string) => void };

const DEFAULT_PRESET = 'multi30k-small';

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
  const saved = asUserError(() => savedPlan(dir));
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

/** `qkv train`: the run plan from the flags (or the folder's, for --resume), the corpus it names, then the run. */
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
  const corpus = {
    train: readParallel(plan.data, 'train', srcLang, tgtLang),
    val: readParallel(plan.data, 'val', srcLang, tgtLang),
  };
  await runSeq2Seq({
    out: a.out,
    plan,
    resume: a.resume,
    init,
    shape,
    corpus,
    bar: progressBar(
      'train |{bar}| {value}/{total} | loss {loss} | lr {lr} | {tps} tok/s | epoch {epoch} | ETA {eta_formatted}',
    ),
    log: a.log,
  });
}
