/**
 * `qkv train-lm`: its flags, their checks and the text they name, for the training run of
 * src/train/lm-run.ts (a GPT on a text file, one line = one document, character-level or BPE).
 */
import { Command } from '@commander-js/extra-typings';
import { checkRunFolder } from '../../train/loop.ts';
import { runLm, type LmCorpus } from '../../train/lm-run.ts';
import { PRESETS } from '../../train/presets.ts';
import { int, num } from '../args.ts';
import { readLines } from '../corpus.ts';
import { UserError } from '../files.ts';
import { log, requireDefaultCorpus, type FlagsOf } from '../options.ts';
import { progressBar } from '../progress.ts';

export const DEFAULT_LM_DATA = 'data/multi30k/train.en.gz';
export const DEFAULT_LM_VAL = 'data/multi30k/val.en.gz';

function flags() {
  return new Command('train-lm')
    .description('train a GPT language model on a text file (one line = one document), with checkpoints')
    .requiredOption('--out <dir>', 'folder for the model, training state and history')
    .option('--data <file>', `training text, plain or .gz (default: ${DEFAULT_LM_DATA}, validated on val.en.gz)`)
    .option('--val <file>', 'validation text (default: the last 10% of the lines of --data)')
    .option('--tokenizer <kind>', 'char | bpe', 'char')
    .option('--vocab-size <n>', "BPE vocabulary size (default: the preset's)", int('--vocab-size'))
    .option('--preset <name>', 'small | tiny', 'small')
    .option('--resume', 'continue the run in --out from its last checkpoint', false)
    .option('--max-steps <n>', 'stop after this many steps (the cosine decay ends there)', int('--max-steps'))
    .option('--batch-size <n>', 'windows of blockSize tokens per step', int('--batch-size'))
    .option('--lr <x>', 'peak learning rate (the decay ends at a tenth of it)', num('--lr'))
    .option('--warmup <n>', 'warmup steps', int('--warmup'))
    .option('--eval-every <n>', 'validation loss every n steps', int('--eval-every'))
    .option('--save-every <n>', 'training state every n steps', int('--save-every'))
    .option('--eval-tokens <n>', 'validation tokens scored at each evaluation', int('--eval-tokens'), 65536)
    .option('--seed <n>', 'random seed', int('--seed'));
}

export function trainLmCommand() {
  return flags().action(async (o) => {
    // Without --data the text is Multi30K's English side: say what that is when it is not here.
    if (o.data === undefined)
      requireDefaultCorpus(o.val === undefined ? ['train.en.gz', 'val.en.gz'] : ['train.en.gz']);
    await trainLm({ ...o, log });
  });
}

/** `qkv train-lm`'s options (as the flags give them). */
export type TrainLmArgs = FlagsOf<typeof flags> & { log: (line: string) => void };

/** Training and validation lines: --val, the Multi30K val split for the default data, else the last 10% of --data. */
function readCorpus(a: TrainLmArgs): LmCorpus {
  const dataPath = a.data ?? DEFAULT_LM_DATA;
  const lines = readLines(dataPath);
  const valPath = a.val ?? (a.data === undefined ? DEFAULT_LM_VAL : undefined);
  if (valPath) return { train: lines, val: readLines(valPath), valFrom: valPath };
  if (lines.length < 2)
    throw new UserError(
      `${dataPath} has ${lines.length} line(s); give at least 2 (10% are held out for validation) or pass --val FILE`,
    );
  const nVal = Math.max(1, Math.floor(lines.length / 10));
  return { train: lines.slice(0, -nVal), val: lines.slice(-nVal), valFrom: `last ${nVal} lines of ${dataPath}` };
}

export async function trainLm(a: TrainLmArgs): Promise<void> {
  const preset = PRESETS.lm[a.preset];
  if (!preset)
    throw new UserError(`unknown preset '${a.preset}', expected one of: ${Object.keys(PRESETS.lm).join(', ')}`);
  if (a.tokenizer !== 'char' && a.tokenizer !== 'bpe')
    throw new UserError(`unknown tokenizer '${a.tokenizer}', expected char or bpe`);
  checkRunFolder(a.out, a.resume);
  await runLm({
    out: a.out,
    resume: a.resume,
    presetName: a.preset,
    preset,
    tokenizer: a.tokenizer,
    vocabSize: a.vocabSize,
    corpus: readCorpus(a),
    data: a.data ?? DEFAULT_LM_DATA,
    maxSteps: a.maxSteps,
    evalEvery: a.evalEvery,
    saveEvery: a.saveEvery,
    evalTokens: a.evalTokens,
    batchSize: a.batchSize,
    lr: a.lr,
    warmup: a.warmup,
    seed: a.seed,
    bar: progressBar('train-lm |{bar}| {value}/{total} | loss {loss} | lr {lr} | {tps} tok/s | ETA {eta_formatted}'),
    log: a.log,
  });
}
