/** `qkv train`: learn BPE, build the model from a preset, train with the paper's recipe, checkpoint. */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Pair } from '../data/batching.ts';
import { readSafetensors } from '../io/safetensors.ts';
import { Seq2Seq } from '../models/seq2seq.ts';
import { manualSeed } from '../tensor/random.ts';
import { BpeTokenizer } from '../text/bpe.ts';
import { PRESETS, type Preset } from '../train/presets.ts';
import type { Seq2SeqConfig } from '../models/seq2seq.ts';
import { Trainer, averageWeights, evaluateLoss } from '../train/trainer.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { readParallel } from './corpus.ts';
import { atomicWrite, loadModelDir, loadModelShape, readJson, removeStaleTemps, saveModelDir, saveWeights, UserError, vocabularyConfig } from './files.ts';
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
const STATE = 'train-state.safetensors';

/** Token ids of sentence pairs; `target` encodes the target side (a separate vocabulary's tokenizer). */
export function encodePairs(tok: BpeTokenizer, src: string[], tgt: string[], maxLen: number, target: BpeTokenizer = tok): Pair[] {
  // Keep room for BOS/EOS; Multi30K never comes near the limit, other corpora may.
  return src.map((s, i) => ({ src: tok.encode(s).slice(0, maxLen), tgt: target.encode(tgt[i]).slice(0, maxLen - 1) }));
}

/** Flags of the model's shape and vocabulary: an --init-from folder fixes them. */
const SHAPE_FLAGS = [
  'dModel', 'heads', 'layers', 'encoderLayers', 'decoderLayers', 'ffn', 'dropout', 'attentionDropout', 'activationDropout', 'preNorm',
  'bpeSize', 'splitPunctuation', 'separateVocab',
] as const;
/** Flags of the model (saved in config.json) or of the vocabulary cannot change on --resume. */
const FIXED_FLAGS = [...SHAPE_FLAGS, 'direction', 'average', 'keep'] as const;

const flagName = (k: string): string => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

function modelFromFlags(preset: Preset, a: TrainArgs): Seq2SeqConfig {
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
  return { maxTokens: a.maxTokens, warmup: a.warmup, lrFactor: a.lrFactor, seed: a.seed, labelSmoothing: a.labelSmoothing, weightDecay: a.weightDecay, accum: a.accum, clipNorm: a.clipNorm };
}

type RunFields = Pick<RunPlan, 'maxSteps' | 'evalEvery' | 'saveEvery' | 'patience' | 'average' | 'keep' | 'bleuSentences'>;

/** A new run's length, evaluation, stopping and averaging: the flag, else `saved` (an --init-from folder's plan), else the preset. */
function runFields(a: TrainArgs, saved: Partial<RunPlan>, preset: Preset): RunFields {
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

function planFromFlags(preset: Preset, a: TrainArgs, src: string, tgt: string): RunPlan {
  return {
    preset: a.preset ?? DEFAULT_PRESET,
    recipe: recipeOf(preset.recipe, a),
    ...runFields(a, {}, preset),
    bpe: { vocabSize: a.bpeSize ?? preset.vocabSize, splitPunctuation: a.splitPunctuation ?? preset.splitPunctuation ?? false, ...(a.separateVocab ? { separate: true } : {}) },
    data: a.data,
    direction: `${src}-${tgt}`,
  };
}

/**
 * The plan of a run being resumed: the saved one, with only --max-steps, --eval-every, --save-every,
 * --patience and --bleu-sentences allowed to change; other recipe flags must agree with it.
 */
function resumedPlan(dir: string, a: TrainArgs): RunPlan {
  const saved = (readJson(join(dir, 'config.json'), 'model config') as { training?: Partial<RunPlan> & { recipe?: Record<string, unknown> } }).training;
  if (!saved || !saved.recipe) throw new UserError(`--resume: ${join(dir, 'config.json')} has no 'training' section`);
  for (const k of FIXED_FLAGS) {
    if (a[k] !== undefined) throw new UserError(`--resume: ${flagName(k)} is fixed when a run starts (it is in ${join(dir, 'config.json')}); leave it out to continue the run`);
  }
  const preset = PRESETS[saved.preset ?? a.preset ?? DEFAULT_PRESET];
  const recipe = { ...saved.recipe };
  for (const [k, v] of Object.entries(recipeFlags(a))) {
    if (v !== undefined && v !== recipe[k]) throw new UserError(`--resume: the run was started with ${k} ${String(recipe[k])}, the flag says ${v}; leave it out to continue the run`);
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
function initPlan(a: TrainArgs, dir: string, config: { training?: Partial<RunPlan> }, tokenizer: BpeTokenizer, targetTokenizer: BpeTokenizer): RunPlan {
  for (const k of SHAPE_FLAGS) {
    if (a[k] !== undefined) throw new UserError(`--init-from: ${flagName(k)} comes from ${join(dir, 'config.json')} (the model's shape and vocabulary); leave it out`);
  }
  const saved = a.preset === undefined && config.training?.recipe ? config.training : {};
  const presetName = saved.preset !== undefined && PRESETS[saved.preset] ? saved.preset : a.preset ?? DEFAULT_PRESET;
  const preset = PRESETS[presetName];
  const trained = config.training?.direction;
  const asked = a.direction ? `${a.direction.src}-${a.direction.tgt}` : undefined;
  if (trained !== undefined && asked !== undefined && asked !== trained) {
    throw new UserError(`--init-from: ${dir} translates ${trained} (its config.json), --direction says ${asked}`);
  }
  const step = a.initStep ?? 0;
  const fields = runFields(a, saved, preset);
  if (fields.maxSteps <= step) throw new UserError(`--max-steps ${fields.maxSteps} must be above --init-step ${step} (the step the run starts at)`);
  const separate = targetTokenizer !== tokenizer;
  return {
    preset: presetName,
    recipe: recipeOf(saved.recipe ?? preset.recipe, a),
    ...fields,
    bpe: config.training?.bpe ?? { vocabSize: tokenizer.vocabSize, splitPunctuation: tokenizer.splitPunctuation, ...(separate && { separate: true }) },
    data: a.data,
    direction: trained ?? asked ?? `${a.src}-${a.tgt}`,
    init: { from: dir, step },
  };
}

export async function train(a: TrainArgs): Promise<void> {
  const preset = PRESETS[a.preset ?? DEFAULT_PRESET];
  if (!preset) throw new UserError(`unknown preset '${a.preset}', expected one of: ${Object.keys(PRESETS).join(', ')}`);
  if (a.initFrom !== undefined && a.resume) throw new UserError('--init-from starts a new run from a model folder and --resume continues the run in --out: pass one');
  if (a.initStep !== undefined && a.initFrom === undefined) throw new UserError('--init-step needs --init-from (the model folder whose weights are from that step)');
  if (a.initFrom !== undefined && resolve(a.initFrom) === resolve(a.out)) throw new UserError(`--init-from and --out are the same folder (${a.out}): the run writes to --out, choose another`);
  const statePath = join(a.out, STATE);
  if (!a.resume && existsSync(statePath)) {
    throw new UserError(`${a.out} already holds a training run; pass --resume to continue it, or choose another --out`);
  }
  if (a.resume && !existsSync(statePath)) throw new UserError(`--resume: no training state in ${a.out} (${STATE} not found)`);

  const init = a.initFrom === undefined ? null : loadModelDir(a.initFrom); // its weights, shape and tokenizers
  const plan = a.resume ? resumedPlan(a.out, a)
    : init ? initPlan(a, a.initFrom!, init.config as { training?: Partial<RunPlan> }, init.tokenizer, init.targetTokenizer)
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
    const how = `${splitPunctuation ? ' (punctuation split from words)' : ''} on ${trainText.src.length} sentence pairs`;
    if (separate) {
      a.log(`learning separate ${srcLang.toUpperCase()} and ${tgtLang.toUpperCase()} BPE vocabularies of ${vocabSize} each${how}`);
      tokenizer = BpeTokenizer.learn(trainText.src, { vocabSize, splitPunctuation });
      targetTokenizer = BpeTokenizer.learn(trainText.tgt, { vocabSize, splitPunctuation });
    } else {
      a.log(`learning a joint ${srcLang.toUpperCase()}+${tgtLang.toUpperCase()} BPE vocabulary of ${vocabSize}${how}`);
      tokenizer = targetTokenizer = BpeTokenizer.learn([...trainText.src, ...trainText.tgt], { vocabSize, splitPunctuation });
    }
    manualSeed((plan.recipe.seed as number | undefined) ?? 1);
    model = new Seq2Seq({ ...shape!, ...vocabularyConfig(tokenizer, targetTokenizer) });
  }
  const { maxSteps, evalEvery, saveEvery } = plan;
  const ids = { padId: tokenizer.padId, bosId: targetTokenizer.bosId, eosId: targetTokenizer.eosId };
  const tokenizers = { source: tokenizer, target: targetTokenizer };
  const trainPairs = encodePairs(tokenizer, trainText.src, trainText.tgt, model.config.maxLen, targetTokenizer);
  const valPairs = encodePairs(tokenizer, valText.src, valText.tgt, model.config.maxLen, targetTokenizer);
  let trainer: Trainer;
  try {
    trainer = new Trainer(model, trainPairs, ids, plan.recipe);
  } catch (e) {
    throw new UserError((e as Error).message);
  }
  const training = { ...plan, recipe: trainer.options };
  removeStaleTemps(a.out); // left by a process killed mid-write
  let ema = Number.NaN;
  // The resumed state's own count of training minutes, so the steps between the last evaluation and
  // that state keep their time (older states have none: the last evaluation's minutes then).
  let stateMinutes: number | undefined;
  if (a.resume) {
    const meta = trainer.loadState(readFileSync(statePath));
    ema = meta.trainLossEma === undefined ? Number.NaN : Number(JSON.parse(meta.trainLossEma));
    if (meta.trainingMinutes !== undefined) stateMinutes = Number(JSON.parse(meta.trainingMinutes));
    a.log(`resumed at step ${trainer.position.step} (epoch ${trainer.position.epoch})`);
  } else {
    saveModelDir(a.out, model, tokenizer, training, targetTokenizer);
  }
  if (!a.resume && plan.init) {
    // The run goes on from the folder's step: its learning rate and data order, and its history up
    // to there (so val BLEU and minutes continue); its weights are the run's best until beaten.
    const { from, step } = plan.init;
    trainer.startAt(step);
    const carried = readHistory(from, step);
    atomicWrite(join(a.out, 'history.json'), `${JSON.stringify(carried, null, 1)}\n`);
    saveWeights(join(a.out, 'model.safetensors'), model.stateDict());
    if (plan.average === 'best' && carried.at(-1)?.step === step) keepBest(a.out, model.stateDict(), carried, plan.keep);
    a.log(`starting from ${from} at step ${step} (its weights, shape and tokenizers; a fresh optimiser)${carried.length ? `, with its ${carried.length} evaluations to there` : ''}`);
  }
  const vocabulary = targetTokenizer === tokenizer ? `vocabulary ${tokenizer.vocabSize}` : `vocabularies ${tokenizer.vocabSize} (${srcLang}) and ${targetTokenizer.vocabSize} (${tgtLang})`;
  a.log(`${model.numParameters().toLocaleString('en-US')} parameters, ${vocabulary}, ${trainer.stepsPerEpoch} batches per epoch${trainer.options.accum > 1 ? `, ${trainer.options.accum} batches per step` : ''}`);

  // Entries written after the state being resumed (a run killed between an evaluation and its
  // state) are redone, as is the final averaging; a fresh start keeps none.
  const history = readHistory(a.out, trainer.position.step);
  let minutesAtT0 = stateMinutes ?? priorMinutes(history); // training minutes when t0 was last set
  const bar = progressBar('train |{bar}| {value}/{total} | loss {loss} | lr {lr} | {tps} tok/s | epoch {epoch} | ETA {eta_formatted}');
  bar.start(maxSteps, trainer.position.step, { loss: '-', lr: '-', tps: '-', epoch: trainer.position.epoch });
  let tokens = 0;
  let t0 = performance.now();
  const stopped = () => plan.patience > 0 && evalsSinceBest(history) >= plan.patience;
  if (stopped()) a.log(`early stop: val BLEU has not improved for ${plan.patience} evaluations`);
  while (trainer.position.step < maxSteps && !stopped()) {
    // Yield to the event loop between steps: the progress bar redraws on timers (also when stderr
    // is a log file), and Ctrl-C is handled.
    await new Promise((resolve) => setImmediate(resolve));
    const r = trainer.step();
    ema = Number.isNaN(ema) ? r.loss : 0.98 * ema + 0.02 * r.loss;
    tokens += r.targetTokens;
    const dt = (performance.now() - t0) / 1000;
    bar.update(r.step, { loss: ema.toFixed(3), lr: r.lr.toExponential(2), tps: (tokens / dt).toFixed(0), epoch: r.epoch });
    // The training state is written last: it is the commit point. A run killed before it resumes
    // from the previous state and redoes these steps, rewriting the same checkpoints and history.
    const save = r.step % saveEvery === 0 || r.step === maxSteps;
    if (save) saveWeights(checkpointPath(a.out, r.step), model.stateDict());
    const evalNow = r.step % evalEvery === 0 || r.step === maxSteps;
    if (evalNow) {
      const valLoss = evaluateLoss(model, valPairs, ids, trainer.options.maxTokens);
      const bleu = validationBleu(model, tokenizers, valText.src.slice(0, plan.bleuSentences), valText.tgt.slice(0, plan.bleuSentences));
      const best = history.reduce((m, h) => Math.max(m, h.bleu), -1);
      const minutes = minutesAtT0 + dt / 60;
      const entry: HistoryEntry = { step: r.step, epoch: r.epoch, trainLoss: ema, valLoss, bleu, seconds: dt, minutes };
      history.push(entry);
      if (bleu > best) saveWeights(join(a.out, 'model.safetensors'), model.stateDict());
      if (plan.average === 'best') keepBest(a.out, model.stateDict(), history, plan.keep);
      atomicWrite(join(a.out, 'history.json'), `${JSON.stringify(history, null, 1)}\n`);
      bar.stop();
      a.log(`step ${r.step}: train loss ${ema.toFixed(3)}, val loss ${valLoss.toFixed(3)}, val BLEU ${bleu.toFixed(2)} on ${Math.min(plan.bleuSentences, valText.src.length)} sentences${bleu > best ? ' (best, saved)' : ''}`);
      if (stopped()) a.log(`early stop at step ${r.step}: val BLEU has not improved for ${plan.patience} evaluations (best ${Math.max(best, bleu).toFixed(2)})`);
      else if (r.step < maxSteps) bar.start(maxSteps, r.step, { loss: ema.toFixed(3), lr: r.lr.toExponential(2), tps: '-', epoch: r.epoch });
      tokens = 0;
      t0 = performance.now();
      minutesAtT0 = minutes;
    }
    // An early stop between checkpoints commits too, so a resumed run knows it stopped.
    const stop = evalNow && stopped();
    if (stop && !save) saveWeights(checkpointPath(a.out, r.step), model.stateDict());
    if (save || stop) {
      const trainingMinutes = minutesAtT0 + (performance.now() - t0) / 60000;
      atomicWrite(statePath, trainer.saveState({ trainLossEma: JSON.stringify(ema), trainingMinutes: JSON.stringify(trainingMinutes) }));
      // Averaging the best evaluations keeps only the latest periodic checkpoint (the best are kept apart).
      pruneCheckpoints(a.out, plan.average === 'best' ? 1 : plan.keep);
    }
  }
  bar.stop();
  // §6.1: the final model averages the last (or the best) checkpoints; keep it if it scores at least as well.
  const ckpts = plan.average === 'best' ? listBest(a.out) : pruneCheckpoints(a.out, plan.keep);
  if (ckpts.length > 1) {
    const avg = averageWeights(ckpts.map((f) => readSafetensors(readFileSync(f)).tensors));
    const current = model.stateDict();
    const saved = Object.fromEntries(Object.entries(current).map(([k, v]) => [k, v.clone()])) as Record<string, Tensor>;
    model.loadStateDict(avg);
    const bleu = validationBleu(model, tokenizers, valText.src.slice(0, plan.bleuSentences), valText.tgt.slice(0, plan.bleuSentences));
    const best = history.reduce((m, h) => (h.averaged === undefined ? Math.max(m, h.bleu) : m), -1);
    a.log(`average of the ${plan.average} ${ckpts.length} checkpoints: val BLEU ${bleu.toFixed(2)} (best single: ${best.toFixed(2)})`);
    history.push({ step: trainer.position.step, epoch: trainer.position.epoch, trainLoss: ema, valLoss: Number.NaN, bleu, seconds: 0, averaged: ckpts.length, kept: bleu >= best });
    if (bleu >= best) saveWeights(join(a.out, 'model.safetensors'), model.stateDict());
    atomicWrite(join(a.out, 'history.json'), `${JSON.stringify(history, null, 1)}\n`);
    model.loadStateDict(saved);
  }
  a.log(`done: ${a.out}`);
}

interface HistoryEntry {
  step: number;
  epoch: number;
  trainLoss: number;
  valLoss: number;
  bleu: number;
  /** Seconds since the previous evaluation (or the start of this session). */
  seconds: number;
  /** Training minutes from the start of the run to this evaluation, over all sessions. */
  minutes?: number;
  /** Set on the entry of a checkpoint average: how many were averaged, and whether it was kept. */
  averaged?: number;
  kept?: boolean;
}

function priorMinutes(history: HistoryEntry[]): number {
  const last = [...history].reverse().find((h) => h.averaged === undefined);
  return last?.minutes ?? history.reduce((s, h) => s + (h.averaged === undefined ? h.seconds / 60 : 0), 0);
}

/** Evaluations since the best val BLEU so far (0 when the last one is the best). */
function evalsSinceBest(history: HistoryEntry[]): number {
  const evals = history.filter((h) => h.averaged === undefined);
  let bestAt = -1;
  evals.forEach((h, i) => {
    if (bestAt < 0 || h.bleu > evals[bestAt].bleu) bestAt = i;
  });
  return bestAt < 0 ? 0 : evals.length - 1 - bestAt;
}

/** Keep the weights of the `keep` best evaluations by val BLEU in checkpoints/best-STEP.safetensors. */
function keepBest(dir: string, weights: Record<string, Tensor>, history: HistoryEntry[], keep: number): void {
  const evals = history.filter((h) => h.averaged === undefined);
  const ranked = [...evals].sort((x, y) => y.bleu - x.bleu || y.step - x.step).slice(0, keep).map((h) => h.step);
  const cur = evals[evals.length - 1];
  if (ranked.includes(cur.step)) saveWeights(join(dir, 'checkpoints', `best-${String(cur.step).padStart(7, '0')}.safetensors`), weights);
  for (const f of listBest(dir)) {
    const step = Number(/best-(\d+)/.exec(f)![1]);
    if (!ranked.includes(step)) rmSync(f);
  }
}

function listBest(dir: string): string[] {
  const d = join(dir, 'checkpoints');
  if (!existsSync(d)) return [];
  return readdirSync(d).filter((f) => /^best-\d+\.safetensors$/.test(f)).sort().map((f) => join(d, f));
}

/** A run's evaluations up to `step` (without its final averaging): what a resumed or --init-from run goes on from. */
function readHistory(dir: string, step: number): HistoryEntry[] {
  const p = join(dir, 'history.json');
  if (!existsSync(p)) return [];
  const h = readJson(p, 'training history');
  if (!Array.isArray(h) || h.some((e) => e === null || typeof e !== 'object' || !Number.isInteger(e.step) || typeof e.bleu !== 'number')) {
    throw new UserError(`${p}: expected a list of evaluations ({"step": ..., "bleu": ...}), as qkv train writes`);
  }
  return (h as HistoryEntry[]).filter((e) => e.step <= step && e.averaged === undefined);
}

function listCheckpoints(dir: string): string[] {
  const d = join(dir, 'checkpoints');
  if (!existsSync(d)) return [];
  return readdirSync(d).filter((f) => /^step-\d+\.safetensors$/.test(f)).sort().map((f) => join(d, f));
}

function checkpointPath(dir: string, step: number): string {
  return join(dir, 'checkpoints', `step-${String(step).padStart(7, '0')}.safetensors`);
}

/** Keep the last `keep` checkpoints; returns them. */
function pruneCheckpoints(dir: string, keep: number): string[] {
  const all = listCheckpoints(dir);
  for (const f of all.slice(0, Math.max(0, all.length - keep))) rmSync(f);
  return all.slice(-keep);
}
