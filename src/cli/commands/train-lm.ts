/**
 * `qkv train-lm`: its flags. The training itself is cli/lm.ts's `trainLm` (being moved to
 * src/train/), which receives the options inferred from these declarations.
 */
import { Command } from '@commander-js/extra-typings';
import { int, num } from '../args.ts';
import { DEFAULT_LM_DATA, trainLm, type TrainLmArgs } from '../lm.ts';
import { handledBy, log, requireDefaultCorpus } from '../options.ts';

export function trainLmCommand() {
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
    .option('--seed <n>', 'random seed', int('--seed'))
    .action(async (o) => {
      // Without --data the text is Multi30K's English side: say what that is when it is not here.
      if (o.data === undefined)
        requireDefaultCorpus(o.val === undefined ? ['train.en.gz', 'val.en.gz'] : ['train.en.gz']);
      await trainLm({ ...handledBy<TrainLmArgs>()(o), log });
    });
}
