#!/usr/bin/env node
/**
 * The `qkv` command. Parsing is commander's; each command is a function in its own file.
 * Errors a user can fix (bad flags, missing folders, bad input lines) print one line and exit 1,
 * without a stack trace (set QKV_DEBUG=1 to see one).
 */
import { Command, InvalidArgumentError } from 'commander';
import { UserError } from './files.ts';
import { info } from './info.ts';
import { train } from './train.ts';
import { evaluate, translate } from './translate.ts';

function int(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(`${name} must be a positive integer, got '${v}'`);
    return n;
  };
}

function num(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`${name} must be a positive number, got '${v}'`);
    return n;
  };
}

const log = (line: string) => process.stderr.write(`${line}\n`);

const program = new Command()
  .name('qkv')
  .description('The Transformer of "Attention Is All You Need": train, translate, evaluate, inspect.')
  .showHelpAfterError('(run with --help for usage)');

program.command('train')
  .description('train a translation model (BPE, Adam with warmup, label smoothing), with checkpoints')
  .option('--preset <name>', 'multi30k-small | paper-base | tiny', 'multi30k-small')
  .requiredOption('--out <dir>', 'folder for the model, checkpoints and history')
  .option('--resume', 'continue the run in --out from its last checkpoint', false)
  .option('--data <dir>', 'corpus folder with train/val SPLIT.LANG[.gz] files', 'data/multi30k')
  .option('--src <lang>', 'source language', 'en')
  .option('--tgt <lang>', 'target language', 'de')
  .option('--max-steps <n>', 'stop after this many steps', int('--max-steps'))
  .option('--max-tokens <n>', 'padded tokens per batch', int('--max-tokens'))
  .option('--warmup <n>', 'warmup steps of the learning-rate schedule', int('--warmup'))
  .option('--lr-factor <x>', 'scale of the learning-rate curve', num('--lr-factor'))
  .option('--eval-every <n>', 'validation loss and BLEU every n steps', int('--eval-every'))
  .option('--save-every <n>', 'checkpoint every n steps', int('--save-every'))
  .option('--bleu-sentences <n>', 'validation sentences decoded for BLEU', int('--bleu-sentences'), 1014)
  .option('--seed <n>', 'random seed', int('--seed'))
  .action(async (o) => train({ ...o, log }));

program.command('translate')
  .description('translate one sentence per line (stdin to stdout, or --input/--output)')
  .requiredOption('--model <dir>', 'model folder')
  .option('--beam <n>', 'beam size (1 = greedy)', int('--beam'), 4)
  .option('--alpha <x>', 'length penalty α', Number, 0.6)
  .option('--input <file>', 'read sentences from a file instead of stdin')
  .option('--output <file>', 'write translations to a file instead of stdout')
  .action(async (o) => translate({ ...o, log }));

program.command('eval')
  .description('translate a split and score it with BLEU (sacreBLEU-compatible)')
  .requiredOption('--model <dir>', 'model folder')
  .option('--split <name>', 'val | test_2016_flickr', 'test_2016_flickr')
  .option('--data <dir>', 'corpus folder', 'data/multi30k')
  .option('--src <lang>', 'source language', 'en')
  .option('--tgt <lang>', 'target language', 'de')
  .option('--beam <n>', 'beam size (1 = greedy)', int('--beam'), 4)
  .option('--alpha <x>', 'length penalty α', Number, 0.6)
  .option('--output <file>', 'also write the translations here')
  .action((o) => evaluate({ ...o, log }));

program.command('info')
  .description('print a model\'s configuration and parameter count')
  .option('--model <dir>', 'model folder')
  .option('--preset <name>', 'a preset instead of a folder (e.g. paper-base)')
  .action((o) => info({ ...o, log }));

try {
  await program.parseAsync(process.argv);
} catch (e) {
  if (process.env.QKV_DEBUG) throw e;
  process.stderr.write(`qkv: ${(e as Error).message}\n`);
  process.exit(1);
}
