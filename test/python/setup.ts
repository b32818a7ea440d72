/**
 * Shared setup of the Python bridge tests: a small real corpus, a tiny qkv run folder at step 0
 * (dropout 0, so qkv and PyTorch can agree to rounding), encoded splits, and ways to run
 * python/qkv_torch under /usr/bin/python3 and torchrun.
 */
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeSplit } from '../../src/cli/commands/data.ts';
import { atomicWrite, saveModelDir, saveWeights } from '../../src/cli/files.ts';
import { encodePairs, vocabularyConfig } from '../../src/train/seq2seq-run.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { Seq2Seq, type Seq2SeqConfig } from '../../src/models/seq2seq.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import type { Tensor } from '../../src/tensor/tensor.ts';
import { BpeTokenizer } from '../../src/text/bpe.ts';
import { Trainer, type TrainerOptions } from '../../src/train/trainer.ts';
import { PYTHON } from '../helpers/tools.ts';
import { root, writeCorpus } from '../helpers/cli.ts';

export { root, qkv as qkvCli } from '../helpers/cli.ts';

/** Environment of every Python process: the package on the path, one thread per rank. */
export const pyEnv = { ...process.env, PYTHONPATH: join(root, 'python'), OMP_NUM_THREADS: '1', MKL_NUM_THREADS: '1' };

/**
 * The longest any one Python or torchrun run of these tests may take (they take seconds): past it the
 * process is killed and the test fails with its stderr, rather than hanging the whole suite.
 */
export const RUN_LIMIT_S = 300;

/** spawnSync with the limit: throws, naming the command and the tail of its stderr, when it is hit. */
function bounded(cmd: string, args: string[]): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, {
    encoding: 'utf8',
    cwd: root,
    env: pyEnv,
    timeout: RUN_LIMIT_S * 1000,
    killSignal: 'SIGKILL',
  });
  if (r.error) {
    // spawnSync reports its time limit as an ETIMEDOUT error; anything else (ENOENT: no such
    // program) is not about time.
    const timedOut = (r.error as NodeJS.ErrnoException).code === 'ETIMEDOUT';
    const why = timedOut ? `killed after the ${RUN_LIMIT_S} s limit` : r.error.message;
    throw new Error(`${[cmd, ...args].join(' ')}: ${why}; its stderr ends:\n${(r.stderr ?? '').slice(-3000)}`);
  }
  return r;
}

export function python(args: string[]): SpawnSyncReturns<string> {
  return bounded(PYTHON, args);
}

/** torchrun (Debian ships /usr/bin/torchrun; else the module), standalone rendezvous on this machine. */
// `--redirects 9:1 --tee 9:1` (local rank 9, which never exists) works around torch 1.13's launcher
// under Python 3.11, whose enum iteration skips Std.NONE, so the default '0' crashes torchrun.
export function torchrunArgs(nproc: number, script: string[]): [string, string[]] {
  const launcher = existsSync('/usr/bin/torchrun') ? ['/usr/bin/torchrun'] : [PYTHON, '-m', 'torch.distributed.run'];
  // The agent checks its workers every monitor_interval seconds (default 5): 0.2 ends a finished run sooner.
  const args = [
    '--standalone',
    '--nproc_per_node',
    String(nproc),
    '--monitor_interval',
    '0.2',
    '--redirects',
    '9:1',
    '--tee',
    '9:1',
  ];
  return [launcher[0], [...launcher.slice(1), ...args, join(root, 'python/qkv_torch/train.py'), ...script]];
}

/** A torchrun run; killed (its workers die with it: train.py's die_with_parent) past RUN_LIMIT_S. */
export function torchrun(nproc: number, script: string[]): SpawnSyncReturns<string> {
  return bounded(...torchrunArgs(nproc, script));
}

export { spawn };

/** n training pairs and 20 validation pairs of real Multi30K text in `dir`. */
export function makeCorpus(dir: string, n = 160): string {
  writeCorpus(dir, [
    ['train', 0, n],
    ['val', n, n + 20],
  ]);
  return dir;
}

export const TINY: Omit<Seq2SeqConfig, 'vocabSize' | 'padId'> = {
  dModel: 32,
  nhead: 2,
  numEncoderLayers: 1,
  numDecoderLayers: 1,
  dimFeedforward: 64,
  dropout: 0,
  activation: 'relu',
  normFirst: false,
  maxLen: 64,
};

/** The tiny preset's recipe, so that `qkv train --preset tiny --resume` continues these runs. */
export const RECIPE: Partial<TrainerOptions> = {
  maxTokens: 1024,
  warmup: 20,
  lrFactor: 1,
  labelSmoothing: 0.1,
  seed: 1,
};

export interface Fixture {
  run: string;
  trainer: Trainer;
  model: Seq2Seq;
  tokenizer: BpeTokenizer;
  /** The target side's: `tokenizer` unless the run has separate vocabularies. */
  targetTokenizer: BpeTokenizer;
  trainIds: string;
  valIds: string;
}

/**
 * A qkv run folder at step 0 (config.json, tokenizer.json, model.safetensors, train-state.safetensors
 * as `qkv train` writes them) and the encoded train/val splits, plus the in-process Trainer.
 */
export function makeRun(
  dir: string,
  corpus: string,
  model: Partial<Seq2SeqConfig> = {},
  recipe: Partial<TrainerOptions> = RECIPE,
  o: { separate?: boolean } = {},
): Fixture {
  const text = (split: string, lang: string) =>
    readFileSync(join(corpus, `${split}.${lang}`), 'utf8')
      .trimEnd()
      .split('\n');
  const [en, de] = [text('train', 'en'), text('train', 'de')];
  // Separate vocabularies (qkv train --separate-vocab): one BPE per language, as train.ts learns them.
  const tokenizer = BpeTokenizer.learn(o.separate ? en : [...en, ...de], { vocabSize: 300 });
  const targetTokenizer = o.separate ? BpeTokenizer.learn(de, { vocabSize: 250 }) : tokenizer;
  manualSeed(7);
  const m = new Seq2Seq({ ...TINY, ...model, ...vocabularyConfig(tokenizer, targetTokenizer) });
  const ids = { padId: tokenizer.padId, bosId: tokenizer.bosId, eosId: tokenizer.eosId };
  const trainer = new Trainer(m, encodePairs(tokenizer, en, de, m.config.maxLen, targetTokenizer), ids, recipe);
  const run = join(dir, 'qkv-run');
  saveModelDir(run, m, tokenizer, { preset: 'tiny', recipe: trainer.options, maxSteps: 5 }, targetTokenizer);
  saveWeights(join(run, 'model.safetensors'), m.stateDict());
  atomicWrite(join(run, 'train-state.safetensors'), trainer.saveState());
  const log = () => {};
  const trainIds = join(dir, 'train.ids');
  const valIds = join(dir, 'val.ids');
  encodeSplit({ model: run, data: corpus, split: 'train', src: 'en', tgt: 'de', out: trainIds, log });
  encodeSplit({ model: run, data: corpus, split: 'val', src: 'en', tgt: 'de', out: valIds, log });
  return { run, trainer, model: m, tokenizer, targetTokenizer, trainIds, valIds };
}

export function readTensors(path: string): Record<string, Tensor> {
  return readSafetensors(readFileSync(path)).tensors;
}

export interface LogEntry {
  step: number;
  loss: number;
  lr: number;
  targetTokens: number;
}

/** The per-step lines of a train.py run's train-log.jsonl. */
export function readLog(run: string): LogEntry[] {
  return readFileSync(join(run, 'train-log.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as LogEntry)
    .filter((e) => 'loss' in e);
}

/**
 * The key part of an attention's in_proj_bias (rows dModel..2·dModel): it adds q·b_k to every score
 * of a query alike, which softmax cancels, so its gradient is zero up to rounding, and Adam (ε 1e-9)
 * turns that rounding noise into full-size steps of either sign. Its values are arbitrary on both
 * sides and change no output; comparisons skip it and compare the models' logits instead.
 */
export function isKeyBias(name: string, i: number, dModel: number): boolean {
  return name.endsWith('in_proj_bias') && i >= dModel && i < 2 * dModel;
}

/** Largest |a − b| − (atol + rtol·|b|) over every tensor of two weight sets (≤ 0: within tolerance), and where. */
export function worstExcess(
  a: Record<string, Tensor>,
  b: Record<string, Tensor>,
  atol: number,
  rtol: number,
  skip: (name: string, i: number) => boolean = () => false,
): { excess: number; where: string } {
  let excess = -Infinity;
  let where = '';
  for (const name of Object.keys(b)) {
    if (!a[name]) throw new Error(`missing ${name}`);
    const x = a[name].dataSync<Float32Array>();
    const y = b[name].dataSync<Float32Array>();
    if (x.length !== y.length) throw new Error(`${name}: ${x.length} vs ${y.length} elements`);
    for (let i = 0; i < y.length; i++) {
      if (skip(name, i)) continue;
      const e = Math.abs(x[i] - y[i]) - (atol + rtol * Math.abs(y[i]));
      if (!(e <= excess) && (e > excess || Number.isNaN(e))) {
        excess = Number.isNaN(e) ? Infinity : e;
        where = `${name}[${i}]: ${x[i]} vs ${y[i]}`;
      }
    }
  }
  return { excess, where };
}
