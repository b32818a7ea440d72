/** `qkv train`: learn BPE, build the model from a preset, train with the paper's recipe, checkpoint. */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Pair } from '../data/batching.ts';
import { readSafetensors } from '../io/safetensors.ts';
import { Seq2Seq } from '../models/seq2seq.ts';
import { manualSeed } from '../tensor/random.ts';
import { BpeTokenizer } from '../text/bpe.ts';
import { PRESETS } from '../train/presets.ts';
import { Trainer, averageWeights, evaluateLoss } from '../train/trainer.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { readParallel } from './corpus.ts';
import { atomicWrite, loadModelShape, removeStaleTemps, saveModelDir, saveWeights, UserError } from './files.ts';
import { progressBar } from './progress.ts';
import { validationBleu } from './evaluate.ts';

export interface TrainArgs {
  preset: string;
  out: string;
  resume: boolean;
  data: string;
  src: string;
  tgt: string;
  maxSteps?: number;
  maxTokens?: number;
  warmup?: number;
  lrFactor?: number;
  evalEvery?: number;
  saveEvery?: number;
  bleuSentences: number;
  seed?: number;
  log: (line: string) => void;
}

const STATE = 'train-state.safetensors';

function encodePairs(tok: BpeTokenizer, src: string[], tgt: string[], maxLen: number): Pair[] {
  // Keep room for BOS/EOS; Multi30K never comes near the limit, other corpora may.
  return src.map((s, i) => ({ src: tok.encode(s).slice(0, maxLen), tgt: tok.encode(tgt[i]).slice(0, maxLen - 1) }));
}

export async function train(a: TrainArgs): Promise<void> {
  const preset = PRESETS[a.preset];
  if (!preset) throw new UserError(`unknown preset '${a.preset}', expected one of: ${Object.keys(PRESETS).join(', ')}`);
  const statePath = join(a.out, STATE);
  if (!a.resume && existsSync(statePath)) {
    throw new UserError(`${a.out} already holds a training run; pass --resume to continue it, or choose another --out`);
  }
  if (a.resume && !existsSync(statePath)) throw new UserError(`--resume: no training state in ${a.out} (${STATE} not found)`);

  const trainText = readParallel(a.data, 'train', a.src, a.tgt);
  const valText = readParallel(a.data, 'val', a.src, a.tgt);
  let tokenizer: BpeTokenizer;
  let model: Seq2Seq;
  if (a.resume) {
    ({ tokenizer, model } = loadModelShape(a.out)); // weights come from the training state below
  } else {
    a.log(`learning a joint BPE vocabulary of ${preset.vocabSize} on ${trainText.src.length} sentence pairs`);
    tokenizer = BpeTokenizer.learn([...trainText.src, ...trainText.tgt], { vocabSize: preset.vocabSize });
    manualSeed(a.seed ?? preset.recipe.seed ?? 1);
    model = new Seq2Seq({ ...preset.model, vocabSize: tokenizer.vocabSize, padId: tokenizer.padId });
  }
  const recipe = {
    ...preset.recipe,
    ...(a.maxTokens !== undefined && { maxTokens: a.maxTokens }),
    ...(a.warmup !== undefined && { warmup: a.warmup }),
    ...(a.lrFactor !== undefined && { lrFactor: a.lrFactor }),
    ...(a.seed !== undefined && { seed: a.seed }),
  };
  const maxSteps = a.maxSteps ?? preset.maxSteps;
  const evalEvery = a.evalEvery ?? preset.evalEvery;
  const saveEvery = a.saveEvery ?? preset.saveEvery;
  const ids = { padId: tokenizer.padId, bosId: tokenizer.bosId, eosId: tokenizer.eosId };
  const trainPairs = encodePairs(tokenizer, trainText.src, trainText.tgt, model.config.maxLen);
  const valPairs = encodePairs(tokenizer, valText.src, valText.tgt, model.config.maxLen);
  const trainer = new Trainer(model, trainPairs, ids, recipe);
  const training = { preset: a.preset, recipe: trainer.options, maxSteps, data: a.data, direction: `${a.src}-${a.tgt}` };
  removeStaleTemps(a.out); // left by a process killed mid-write
  let ema = Number.NaN;
  if (a.resume) {
    const meta = trainer.loadState(readFileSync(statePath));
    ema = meta.trainLossEma === undefined ? Number.NaN : Number(JSON.parse(meta.trainLossEma));
    a.log(`resumed at step ${trainer.position.step} (epoch ${trainer.position.epoch})`);
  } else {
    saveModelDir(a.out, model, tokenizer, training);
  }
  a.log(`${model.numParameters().toLocaleString('en-US')} parameters, vocabulary ${tokenizer.vocabSize}, ${trainer.stepsPerEpoch} batches per epoch`);

  // Entries written after the state being resumed (a run killed between an evaluation and its
  // state) are redone, as is the final averaging; a fresh start keeps none.
  const history = readHistory(a.out).filter((h) => h.step <= trainer.position.step && h.averaged === undefined);
  const bar = progressBar('train |{bar}| {value}/{total} | loss {loss} | lr {lr} | {tps} tok/s | epoch {epoch} | ETA {eta_formatted}');
  bar.start(maxSteps, trainer.position.step, { loss: '-', lr: '-', tps: '-', epoch: trainer.position.epoch });
  let tokens = 0;
  let t0 = performance.now();
  while (trainer.position.step < maxSteps) {
    // Yield to the event loop between steps: the progress bar redraws on timers (also when stderr
    // is a log file), and Ctrl-C is handled.
    await new Promise((resolve) => setImmediate(resolve));
    const r = trainer.step();
    ema = Number.isNaN(ema) ? r.loss : 0.98 * ema + 0.02 * r.loss;
    tokens += r.targetTokens;
    const dt = (performance.now() - t0) / 1000;
    bar.update(r.step, { loss: ema.toFixed(3), lr: r.lr.toExponential(2), tps: (tokens / dt).toFixed(0), epoch: r.epoch });
    // The training state is written last: it is the commit point. A run killed before it resumes
    // from the previous state and redoes these steps, rewriting the same checkpoint and history.
    const save = r.step % saveEvery === 0 || r.step === maxSteps;
    if (save) saveWeights(checkpointPath(a.out, r.step), model.stateDict());
    if (r.step % evalEvery === 0 || r.step === maxSteps) {
      const valLoss = evaluateLoss(model, valPairs, ids, trainer.options.maxTokens);
      const bleu = validationBleu(model, tokenizer, valText.src.slice(0, a.bleuSentences), valText.tgt.slice(0, a.bleuSentences));
      const best = history.reduce((m, h) => Math.max(m, h.bleu), -1);
      history.push({ step: r.step, epoch: r.epoch, trainLoss: ema, valLoss, bleu, seconds: dt });
      if (bleu > best) saveWeights(join(a.out, 'model.safetensors'), model.stateDict());
      atomicWrite(join(a.out, 'history.json'), `${JSON.stringify(history, null, 1)}\n`);
      bar.stop();
      a.log(`step ${r.step}: train loss ${ema.toFixed(3)}, val loss ${valLoss.toFixed(3)}, val BLEU ${bleu.toFixed(2)} on ${Math.min(a.bleuSentences, valText.src.length)} sentences${bleu > best ? ' (best, saved)' : ''}`);
      if (r.step < maxSteps) bar.start(maxSteps, r.step, { loss: ema.toFixed(3), lr: r.lr.toExponential(2), tps: '-', epoch: r.epoch });
      tokens = 0;
      t0 = performance.now();
    }
    if (save) {
      atomicWrite(statePath, trainer.saveState({ trainLossEma: JSON.stringify(ema) }));
      pruneCheckpoints(a.out, preset.keep);
    }
  }
  bar.stop();
  // §6.1: the final model averages the last checkpoints; keep it if it scores at least as well.
  const ckpts = pruneCheckpoints(a.out, preset.keep);
  if (ckpts.length > 1) {
    const avg = averageWeights(ckpts.map((f) => readSafetensors(readFileSync(f)).tensors));
    const current = model.stateDict();
    const saved = Object.fromEntries(Object.entries(current).map(([k, v]) => [k, v.clone()])) as Record<string, Tensor>;
    model.loadStateDict(avg);
    const bleu = validationBleu(model, tokenizer, valText.src.slice(0, a.bleuSentences), valText.tgt.slice(0, a.bleuSentences));
    const best = history.reduce((m, h) => Math.max(m, h.bleu), -1);
    a.log(`average of the last ${ckpts.length} checkpoints: val BLEU ${bleu.toFixed(2)} (best single: ${best.toFixed(2)})`);
    if (bleu >= best) {
      saveWeights(join(a.out, 'model.safetensors'), model.stateDict());
      history.push({ step: trainer.position.step, epoch: trainer.position.epoch, trainLoss: ema, valLoss: Number.NaN, bleu, seconds: 0, averaged: ckpts.length });
      atomicWrite(join(a.out, 'history.json'), `${JSON.stringify(history, null, 1)}\n`);
    }
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
  seconds: number;
  averaged?: number;
}

function readHistory(dir: string): HistoryEntry[] {
  const p = join(dir, 'history.json');
  return existsSync(p) ? (JSON.parse(readFileSync(p, 'utf8')) as HistoryEntry[]) : [];
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
