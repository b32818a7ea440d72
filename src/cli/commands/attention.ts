/** `qkv attention`: its flags. The drawing is cli/attention.ts's `attention` (tests call it directly). */
import { Command } from '@commander-js/extra-typings';
import { int, nonNegativeNumber } from '../args.ts';
import { attention, type AttentionCommandOptions } from '../attention.ts';
import { handledBy, log, modelOption } from '../options.ts';

export function attentionCommand() {
  const cmd = new Command('attention')
    .description('translate a sentence (or continue a prompt, with a language model) and draw its attention heatmaps as SVG (no browser needed)')
    .argument('<sentence>', 'the sentence to translate (a language model: the prompt)');
  return modelOption(cmd)
    .requiredOption('--out <file>', 'SVG file to write (or .html: a page holding the SVG)')
    .option('--kind <kind>', 'enc (encoder self-attention) | dec (decoder masked self-attention) | cross (decoder to encoder)', 'cross')
    .option('--layer <n>', 'layer, counted from 1 (default: every layer)', int('--layer'))
    .option('--head <n>', 'head, counted from 1 (default: every head)', int('--head'))
    .option('--beam <n>', 'beam size (1 = greedy)', int('--beam'), 1)
    .option('--alpha <x>', 'length penalty α of beam search', nonNegativeNumber('--alpha'), 0.6)
    .option('--max-tokens <n>', 'language models: tokens to generate after the prompt', int('--max-tokens'), 20)
    .action((sentence, o) => attention({ ...handledBy<AttentionCommandOptions>()(o), sentence, log }));
}
