/**
 * The training loop both trainers share (`qkv train` with Seq2SeqTrainer, `qkv train-lm` with
 * LmTrainer): a run folder, resumed from its state, stepped to `maxSteps` with a smoothed loss on a
 * progress bar, evaluated every `evalEvery` steps (the best weights kept in model.safetensors, every
 * evaluation in history.json), its state committed atomically every `saveEvery` steps, stopped early
 * after `patience` evaluations without a better score, and, when it keeps checkpoints, ended with
 * their average (§6.1) if that scores at least as well.
 *
 * A trainer supplies only what differs: its steps (the trainer), its evaluation (the metric and the
 * history entry), what its progress bar shows. Crash safety is the order of the writes: the training
 * state is written last in a step, so a run killed anywhere before it resumes from the previous state
 * and redoes the same steps, rewriting the same checkpoints and history (test/cli/crash-train).
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { atomicWrite, removeStaleTemps } from '../io/atomic.ts';
import { readSafetensors, writeSafetensors } from '../io/safetensors.ts';
import type { Module } from '../nn/module.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { saveFolderWeights } from '../folder/node.ts';
import { FILES } from '../folder/spec.ts';
import { averageWeights } from './average.ts';

/** The training state of a run folder (weights, optimiser moments, position): the commit point. */
export const STATE_FILE = 'train-state.safetensors';

/** What the loop needs of a trainer (Seq2SeqTrainer and LmTrainer both fit). */
export interface LoopTrainer<R extends LoopStepResult> {
  readonly model: Module;
  readonly position: { step: number };
  step(): R;
  saveState(extra?: Record<string, string>): Uint8Array;
  loadState(bytes: Uint8Array): Record<string, string>;
}

export interface LoopStepResult {
  /** The step just taken (1-based). */
  step: number;
  /** The step's mean training loss. */
  loss: number;
  lr: number;
  /** Target tokens the step trained on. */
  tokens: number;
}

/** One evaluation in history.json (each trainer adds its own fields). */
export interface HistoryEntry {
  step: number;
  /** The smoothed training loss at this step. */
  trainLoss: number;
  valLoss: number;
  seconds: number;
  /** Training minutes from the start of the run to this evaluation, over all sessions. */
  minutes?: number;
  /** Set on the entry of a checkpoint average: how many were averaged, and whether it was kept. */
  averaged?: number;
  kept?: boolean;
}

/** The score that picks the best weights, stops early and ranks checkpoints. */
export interface Metric<H extends HistoryEntry> {
  /** Its field in history.json. */
  key: keyof H & string;
  /** Its name in messages ('val BLEU'). */
  name: string;
  higherIsBetter: boolean;
  /** Decimals it is printed with. */
  digits: number;
}

/** Checkpoints of a run: `keep` are kept, and at the end the `last` ones or the `best` by the metric are averaged. */
export interface Checkpoints {
  keep: number;
  average: 'last' | 'best';
}

/** The progress bar the loop drives (cli-progress's SingleBar fits). */
export interface ProgressBar {
  start(total: number, value: number, payload: Record<string, unknown>): void;
  update(value: number, payload: Record<string, unknown>): void;
  stop(): void;
}

/** Time passed, for a history entry. */
export interface EvalTime {
  /** Seconds since the previous evaluation (or the start of this session). */
  sinceEval: number;
  /**
   * Seconds since the start of this session, read when called (after the evaluation, as the LM history counts them).
   */
  sinceStart(): number;
  /** Training minutes from the start of the run, over all sessions. */
  minutes: number;
}

/** A run: the trainer, the folder, the cadences, and what the trainer's evaluation is. */
export interface TrainingRun<R extends LoopStepResult, H extends HistoryEntry> {
  /** The run folder (config.json and tokenizers are written by the caller before the loop). */
  out: string;
  /** 'qkv train' or 'qkv train-lm': named in errors about a history.json. */
  command: string;
  trainer: LoopTrainer<R>;
  maxSteps: number;
  evalEvery: number;
  saveEvery: number;
  /**
   * The weights of the previous value and of the new loss in the moving average of the loss shown
   * and saved in history.json (`ema = w₀·ema + w₁·loss`). Each trainer keeps its own ([0.98, 0.02]
   * and [0.95, 0.05]): the average is saved in the state and in every history entry, so changing it
   * would change the files of every run. Both weights are given because 1 − 0.95 is not 0.05 in
   * floating point.
   */
  smoothing: readonly [previous: number, current: number];
  /**
   * The smoothed loss and training minutes where the run resumes (resumeState's answer; NaN and undefined for a new
   * run).
   */
  resumed: ResumedState;
  metric: Metric<H>;
  /** Stop after this many evaluations without a better score (0: never). */
  patience: number;
  /** Checkpoints to keep and average (null: none are written). */
  checkpoints: Checkpoints | null;
  /** Whether the state carries the run's training minutes (so history's `minutes` go on over sessions). */
  countMinutes: boolean;
  /** Evaluate the model now: the history entry, and what the log line says after the val loss. */
  evaluate(r: R, ema: number, time: EvalTime): { entry: H; detail: string };
  /** The metric of the model's current weights alone (scores a checkpoint average). */
  score?(): number;
  /** The history entry of a checkpoint average. */
  averagedEntry?(score: number, averaged: number, kept: boolean, ema: number): H;
  /**
   * Write the run's model (its best weights so far) into `out`; default: model.safetensors with qkv's names. A
   * fine-tuning run writes its adapter, or its weights under Hugging Face's names.
   */
  saveModel?(): void;
  /** The file saveModel writes (a run that ends without one writes it then); default model.safetensors. */
  modelFile?: string;
  bar: ProgressBar;
  /** The bar's fields besides loss, lr and tok/s (e.g. the epoch). */
  barFields(): Record<string, unknown>;
  log(line: string): void;
}

export interface ResumedState {
  ema: number;
  minutes?: number;
}

/** The state file of `out`, checked against `resume`: a new run needs a folder without one, --resume one with it. */
export function checkRunFolder(out: string, resume: boolean): string {
  const statePath = join(out, STATE_FILE);
  if (!resume && existsSync(statePath)) {
    throw new Error(`${out} already holds a training run; pass --resume to continue it, or choose another --out`);
  }
  if (resume && !existsSync(statePath))
    throw new Error(`--resume: no training state in ${out} (${STATE_FILE} not found)`);
  removeStaleTemps(out); // left by a process killed mid-write
  return statePath;
}

/** Load the training state of `out` into the trainer: the smoothed loss and minutes it had. */
export function resumeState(trainer: LoopTrainer<LoopStepResult>, out: string): ResumedState {
  const statePath = join(out, STATE_FILE);
  let meta: Record<string, string>;
  try {
    meta = trainer.loadState(readFileSync(statePath));
  } catch (e) {
    throw new Error(`${statePath}: ${(e as Error).message}`);
  }
  return {
    ema: meta.trainLossEma === undefined ? Number.NaN : Number(JSON.parse(meta.trainLossEma)),
    ...(meta.trainingMinutes !== undefined && { minutes: Number(JSON.parse(meta.trainingMinutes)) }),
  };
}

/** A new run's state: nothing smoothed yet, no minutes. */
export const FRESH: ResumedState = { ema: Number.NaN };

/**
 * Train to `maxSteps` (or an early stop), then average the checkpoints. Returns the history (with
 * the average's entry, if any). Entries written after the state being resumed (a run killed between
 * an evaluation and its state) are redone, as is the final averaging.
 */
export async function trainLoop<R extends LoopStepResult, H extends HistoryEntry>(
  run: TrainingRun<R, H>,
): Promise<H[]> {
  const { out, trainer, maxSteps, evalEvery, saveEvery, metric, patience, checkpoints, bar } = run;
  const model = trainer.model;
  const statePath = join(out, STATE_FILE);
  const history = readHistory<H>(out, trainer.position.step, metric, run.command);
  let ema = run.resumed.ema;
  // The resumed state's own count of training minutes, so the steps between the last evaluation and
  // that state keep their time (older states have none: the last evaluation's minutes then).
  let minutesAtT0 = run.resumed.minutes ?? priorMinutes(history); // training minutes when t0 was last set
  const saveModel = run.saveModel ?? (() => saveFolderWeights(out, model));
  const stopped = () => patience > 0 && evalsSinceBest(history, metric) >= patience;
  if (stopped()) run.log(`early stop: ${metric.name} has not improved for ${patience} evaluations`);
  else if (trainer.position.step < maxSteps)
    bar.start(maxSteps, trainer.position.step, { loss: '-', lr: '-', tps: '-', ...run.barFields() });
  let tokens = 0;
  let t0 = performance.now();
  const started = t0;
  while (trainer.position.step < maxSteps && !stopped()) {
    // Yield to the event loop between steps: the progress bar redraws on timers (also when stderr
    // is a log file), and Ctrl-C is handled.
    await new Promise((resolve) => setImmediate(resolve));
    const r = trainer.step();
    ema = Number.isNaN(ema) ? r.loss : run.smoothing[0] * ema + run.smoothing[1] * r.loss;
    tokens += r.tokens;
    const dt = (performance.now() - t0) / 1000;
    bar.update(r.step, {
      loss: ema.toFixed(3),
      lr: r.lr.toExponential(2),
      tps: (tokens / dt).toFixed(0),
      ...run.barFields(),
    });
    // The training state is written last: it is the commit point. A run killed before it resumes
    // from the previous state and redoes these steps, rewriting the same checkpoints and history.
    const last = r.step === maxSteps;
    const save = r.step % saveEvery === 0 || last;
    if (save && checkpoints) saveWeights(checkpointPath(out, r.step), model.stateDict());
    const evalNow = r.step % evalEvery === 0 || last;
    if (evalNow) {
      const best = bestScore(history, metric);
      const minutes = minutesAtT0 + dt / 60;
      const { entry, detail } = run.evaluate(r, ema, {
        sinceEval: dt,
        sinceStart: () => (performance.now() - started) / 1000,
        minutes,
      });
      history.push(entry);
      const score = entry[metric.key] as number;
      const improved = better(score, best, metric);
      if (improved) saveModel();
      if (checkpoints?.average === 'best') keepBest(out, model.stateDict(), history, checkpoints.keep, metric);
      writeHistory(out, history);
      bar.stop();
      run.log(
        `step ${r.step}: train loss ${ema.toFixed(3)}, val loss ` +
          `${entry.valLoss.toFixed(3)}${detail}${improved ? ' (best, saved)' : ''}`,
      );
      if (stopped()) {
        const top = metric.higherIsBetter ? Math.max(best, score) : Math.min(best, score);
        run.log(
          `early stop at step ${r.step}: ${metric.name} has not improved for ` +
            `${patience} evaluations (best ${top.toFixed(metric.digits)})`,
        );
      } else if (!last) {
        bar.start(maxSteps, r.step, { loss: ema.toFixed(3), lr: r.lr.toExponential(2), tps: '-', ...run.barFields() });
      }
      tokens = 0;
      t0 = performance.now();
      minutesAtT0 = minutes;
    }
    // An early stop between checkpoints commits too, so a resumed run knows it stopped.
    const stop = evalNow && stopped();
    if (stop && !save && checkpoints) saveWeights(checkpointPath(out, r.step), model.stateDict());
    if (save || stop) {
      const extra: Record<string, string> = { trainLossEma: JSON.stringify(ema) };
      if (run.countMinutes) extra.trainingMinutes = JSON.stringify(minutesAtT0 + (performance.now() - t0) / 60000);
      atomicWrite(statePath, trainer.saveState(extra));
      // Averaging the best evaluations keeps only the latest periodic checkpoint (the best are kept apart).
      if (checkpoints) pruneCheckpoints(out, checkpoints.average === 'best' ? 1 : checkpoints.keep);
    }
  }
  bar.stop();
  if (checkpoints) averageCheckpoints(run, history, ema);
  // A run that never evaluated (resumed past its end) still leaves weights to load.
  if (!existsSync(join(out, run.modelFile ?? FILES.weights))) saveModel();
  return history;
}

/** §6.1: the final model averages the last (or the best) checkpoints; keep it if it scores at least as well. */
function averageCheckpoints<R extends LoopStepResult, H extends HistoryEntry>(
  run: TrainingRun<R, H>,
  history: H[],
  ema: number,
): void {
  const { out, metric, checkpoints } = run;
  const ckpts = checkpoints!.average === 'best' ? listBest(out) : pruneCheckpoints(out, checkpoints!.keep);
  if (ckpts.length <= 1) return;
  if (!run.score || !run.averagedEntry)
    throw new Error('trainLoop: a run that keeps checkpoints needs score() and averagedEntry()');
  const model = run.trainer.model;
  const avg = averageWeights(ckpts.map((f) => readSafetensors(readFileSync(f)).tensors));
  const current = model.stateDict();
  const saved = Object.fromEntries(Object.entries(current).map(([k, v]) => [k, v.clone()])) as Record<string, Tensor>;
  model.loadStateDict(avg);
  const score = run.score();
  const best = bestScore(
    history.filter((h) => h.averaged === undefined),
    metric,
  );
  run.log(
    `average of the ${checkpoints!.average} ${ckpts.length} checkpoints: ` +
      `${metric.name} ${score.toFixed(metric.digits)} (best single: ` +
      `${best.toFixed(metric.digits)})`,
  );
  const kept = !better(best, score, metric); // at least as good
  history.push(run.averagedEntry(score, ckpts.length, kept, ema));
  if (kept) saveFolderWeights(out, model);
  writeHistory(out, history);
  model.loadStateDict(saved);
}

// ---- The run folder: weights, history, checkpoints ---------------------------------------------

/** Weights as float32 safetensors, written atomically. */
function saveWeights(path: string, weights: Record<string, Tensor>): void {
  atomicWrite(path, writeSafetensors(weights));
}

/** Write a run's history.json (also a run started from another's weights: it carries that run's history). */
export function writeHistory(dir: string, history: readonly HistoryEntry[]): void {
  atomicWrite(join(dir, 'history.json'), `${JSON.stringify(history, null, 1)}\n`);
}

/** A run's evaluations up to `step` (without its final averaging): what a resumed or --init-from run goes on from. */
export function readHistory<H extends HistoryEntry>(
  dir: string,
  step: number,
  metric: Metric<H>,
  command: string,
): H[] {
  const p = join(dir, 'history.json');
  if (!existsSync(p)) return [];
  let h: unknown;
  try {
    h = JSON.parse(readFileSync(p, 'utf8'));
  } catch (e) {
    throw new Error(`training history is not valid JSON: ${p} (${(e as Error).message})`);
  }
  if (
    !Array.isArray(h) ||
    h.some((e) => e === null || typeof e !== 'object' || !Number.isInteger(e.step) || typeof e[metric.key] !== 'number')
  ) {
    throw new Error(`${p}: expected a list of evaluations ({"step": ..., "${metric.key}": ...}), as ${command} writes`);
  }
  return (h as H[]).filter((e) => e.step <= step && e.averaged === undefined);
}

const better = (a: number, b: number, m: { higherIsBetter: boolean }): boolean => (m.higherIsBetter ? a > b : a < b);

/** The best score of the history's evaluations (-1 or Infinity when there are none). */
function bestScore<H extends HistoryEntry>(history: readonly H[], metric: Metric<H>): number {
  const init = metric.higherIsBetter ? -1 : Infinity;
  return history.reduce((m, h) => (better(h[metric.key] as number, m, metric) ? (h[metric.key] as number) : m), init);
}

/** Training minutes of the history's last evaluation (older histories: the sum of their seconds). */
export function priorMinutes(history: readonly HistoryEntry[]): number {
  const last = [...history].reverse().find((h) => h.averaged === undefined);
  return last?.minutes ?? history.reduce((s, h) => s + (h.averaged === undefined ? h.seconds / 60 : 0), 0);
}

/** Evaluations since the best score so far (0 when the last one is the best). */
function evalsSinceBest<H extends HistoryEntry>(history: readonly H[], metric: Metric<H>): number {
  const evals = history.filter((h) => h.averaged === undefined);
  let bestAt = -1;
  evals.forEach((h, i) => {
    if (bestAt < 0 || better(h[metric.key] as number, evals[bestAt][metric.key] as number, metric)) bestAt = i;
  });
  return bestAt < 0 ? 0 : evals.length - 1 - bestAt;
}

/** Keep the weights of the `keep` best evaluations by the metric in checkpoints/best-STEP.safetensors. */
export function keepBest<H extends HistoryEntry>(
  dir: string,
  weights: Record<string, Tensor>,
  history: readonly H[],
  keep: number,
  metric: Metric<H>,
): void {
  const evals = history.filter((h) => h.averaged === undefined);
  const sign = metric.higherIsBetter ? 1 : -1;
  const ranked = [...evals]
    .sort((x, y) => sign * ((y[metric.key] as number) - (x[metric.key] as number)) || y.step - x.step)
    .slice(0, keep)
    .map((h) => h.step);
  const cur = evals[evals.length - 1];
  if (ranked.includes(cur.step))
    saveWeights(join(dir, 'checkpoints', `best-${String(cur.step).padStart(7, '0')}.safetensors`), weights);
  for (const f of listBest(dir)) {
    const step = Number(/best-(\d+)/.exec(f)![1]);
    if (!ranked.includes(step)) rmSync(f);
  }
}

function listBest(dir: string): string[] {
  const d = join(dir, 'checkpoints');
  if (!existsSync(d)) return [];
  return readdirSync(d)
    .filter((f) => /^best-\d+\.safetensors$/.test(f))
    .sort()
    .map((f) => join(d, f));
}

function listCheckpoints(dir: string): string[] {
  const d = join(dir, 'checkpoints');
  if (!existsSync(d)) return [];
  return readdirSync(d)
    .filter((f) => /^step-\d+\.safetensors$/.test(f))
    .sort()
    .map((f) => join(d, f));
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
