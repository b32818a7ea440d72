/**
 * `qkv train`: its flags. The training itself is cli/train.ts's `train` (being moved to src/train/),
 * which receives the options inferred from these declarations.
 */
import { Command } from '@commander-js/extra-typings';
import { PRESETS } from '../../train/presets.ts';
import { choice, int, nonNegativeInt, nonNegativeNumber, num, rate } from '../args.ts';
import { dataOption, directionOption, handledBy, log } from '../options.ts';
import { train, type TrainArgs } from '../train.ts';

export function trainCommand() {
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
    .option('--keep <n>', 'checkpoints averaged at the end', int('--keep'))
    .action(async (o) => train({ ...handledBy<TrainArgs>()(o), log }));
}
