/** `qkv generate`: its flags. The sampling loop is cli/lm.ts's `generateText`. */
import { Command } from '@commander-js/extra-typings';
import { int, nonNegativeInt, nonNegativeNumber, probability } from '../args.ts';
import { generateText, type GenerateArgs } from '../lm.ts';
import { engineOption, handledBy, log, modelOption } from '../options.ts';

export function generateCommand() {
  const cmd = new Command('generate').description(
    'continue a prompt with a language model from train-lm, streaming to stdout',
  );
  const options = modelOption(cmd)
    .requiredOption('--prompt <text>', 'text to continue')
    .option('--max-tokens <n>', 'tokens to generate', int('--max-tokens'), 200)
    .option('--temperature <t>', 'softmax temperature (0 = greedy)', nonNegativeNumber('--temperature'), 0.8)
    .option('--top-k <k>', 'sample among the k most probable tokens', int('--top-k'))
    .option('--top-p <p>', 'sample among the most probable tokens that make up probability p', probability('--top-p'))
    .option('--seed <n>', 'random seed (default: random, printed)', nonNegativeInt('--seed'))
    .option('--no-cache', 'recompute the whole context at every step instead of using the KV cache');
  return engineOption(options).action(async (o) => generateText({ ...handledBy<GenerateArgs>()(o), log }));
}
