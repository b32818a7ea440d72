#!/usr/bin/env node
/**
 * The `qkv` command. Parsing is commander's; each command is a function in its own file.
 * Errors a user can fix (bad flags, missing folders, bad model files) print one line and exit 1,
 * without a stack trace (set QKV_DEBUG=1 to see one). Bad input lines are not errors: translate and
 * eval write one output line per input line, report each degraded line and exit 2.
 */
import { Command } from 'commander';
import { attention } from './attention.ts';
import { bleu } from './bleu.ts';
import { encodeSplit } from './data.ts';
import { explore } from './explore.ts';
import { exportModel } from './export.ts';
import { UserError } from './files.ts';
import { info } from './info.ts';
import { choice, direction, dirList, int, nonNegativeInt, nonNegativeNumber, num, numList, port, probability, rate } from './args.ts';
import { PRESETS } from '../train/presets.ts';
import { DEFAULT_LM_DATA, generateText, trainLm } from './lm.ts';
import { train } from './train.ts';
import { evaluate, translate } from './translate.ts';
import { EXIT_DEGRADED } from './evaluate.ts';

const log = (line: string) => process.stderr.write(`${line}\n`);

const LINES_HELP = `
One output line per input line, always. An empty line gives an empty line; a line longer than the
model reads (its maxLen tokens) is truncated to that length, or with --skip-long left untranslated
(an empty line). Each such line is reported on stderr with its number.
Exit status: 0 every line translated as given, ${EXIT_DEGRADED} all lines written but some degraded (empty,
truncated or skipped), 1 an error (nothing written).`;

const program = new Command()
  .name('qkv')
  .description('The Transformer of "Attention Is All You Need": train, translate, evaluate, inspect.')
  .showHelpAfterError('(run with --help for usage)');

program.command('train')
  .description('train a translation model (BPE, Adam with warmup, label smoothing), with checkpoints')
  .option('--preset <name>', `${Object.keys(PRESETS.seq2seq).join(' | ')}; the flags below override single fields (default: multi30k-small; with --init-from, the folder's own recipe)`)
  .requiredOption('--out <dir>', 'folder for the model, checkpoints and history')
  .option('--resume', 'continue the run in --out from its last checkpoint (its saved recipe; no flags needed)', false)
  .option('--init-from <dir>', "start a new run from a model folder's weights, shape and tokenizers, with a fresh optimiser (fine-tuning, or training a shipped model on)")
  .option('--init-step <n>', "with --init-from: the step its weights are from; the learning rate and data order go on from there, and its history up to there is kept (default 0)", nonNegativeInt('--init-step'))
  .option('--data <dir>', 'corpus folder with train/val SPLIT.LANG[.gz] files', 'data/multi30k')
  .option('--src <lang>', 'source language', 'en')
  .option('--tgt <lang>', 'target language', 'de')
  .option('--direction <src-tgt>', 'source and target at once, e.g. en-fr', direction('--direction'))
  .option('--max-steps <n>', 'stop after this many steps', int('--max-steps'))
  .option('--eval-every <n>', 'validation loss and greedy BLEU every n steps', int('--eval-every'))
  .option('--save-every <n>', 'checkpoint every n steps', int('--save-every'))
  .option('--bleu-sentences <n>', 'validation sentences decoded for BLEU (default: all 1,014)', int('--bleu-sentences'))
  .option('--seed <n>', 'random seed', int('--seed'))
  .optionsGroup('Model:')
  .option('--d-model <n>', 'model width dModel', int('--d-model'))
  .option('--heads <n>', 'attention heads', int('--heads'))
  .option('--layers <n>', 'encoder and decoder layers', int('--layers'))
  .option('--encoder-layers <n>', 'encoder layers', int('--encoder-layers'))
  .option('--decoder-layers <n>', 'decoder layers', int('--decoder-layers'))
  .option('--ffn <n>', 'feed-forward inner width dFf', int('--ffn'))
  .option('--dropout <p>', 'dropout on sub-layer outputs and embeddings (and the two below unless given)', rate('--dropout'))
  .option('--attention-dropout <p>', 'dropout on attention weights (0: the fused attention kernel trains)', rate('--attention-dropout'))
  .option('--activation-dropout <p>', 'dropout after the feed-forward activation', rate('--activation-dropout'))
  .option('--pre-norm', 'pre-norm layers (the paper is post-norm)')
  .optionsGroup('Recipe:')
  .option('--max-tokens <n>', 'padded tokens per batch', int('--max-tokens'))
  .option('--accum <k>', 'batches per optimiser step (gradient accumulation)', int('--accum'))
  .option('--warmup <n>', 'warmup steps of the learning-rate schedule', int('--warmup'))
  .option('--lr-factor <x>', 'scale of the learning-rate curve', num('--lr-factor'))
  .option('--label-smoothing <e>', 'label smoothing ε', rate('--label-smoothing'))
  .option('--weight-decay <x>', 'decoupled weight decay (AdamW) on every parameter', nonNegativeNumber('--weight-decay'))
  .option('--clip-norm <x>', 'clip the gradient norm (0 = off)', nonNegativeNumber('--clip-norm'))
  .optionsGroup('Vocabulary:')
  .option('--bpe-size <n>', 'BPE vocabulary size (joint; with --separate-vocab, of each language)', int('--bpe-size'))
  .option('--separate-vocab', 'one BPE vocabulary and embedding table per language (target_tokenizer.json beside tokenizer.json) instead of a joint one')
  .option('--split-punctuation', 'split punctuation from words before BPE (saved in tokenizer.json)')
  .optionsGroup('Stopping and averaging:')
  .option('--patience <n>', 'stop after n evaluations without a better val BLEU (0 = never)', nonNegativeInt('--patience'))
  .option('--average <which>', "average the 'last' checkpoints (§6.1) or the 'best' by val BLEU", choice('--average', ['last', 'best']))
  .option('--keep <n>', 'checkpoints averaged at the end', int('--keep'))
  .action(async (o) => train({ ...o, log }));

const data = program.command('data').description('prepare data for other trainers (python/qkv_torch/train.py)');
data.command('encode')
  .description("write a split's token ids (qkv train's encoding) to a flat file for python/qkv_torch/train.py")
  .requiredOption('--model <dir>', 'model or run folder whose tokenizer.json encodes the text')
  .requiredOption('--out <file>', 'file to write (safetensors: src.ids, src.offsets, tgt.ids, tgt.offsets)')
  .option('--split <name>', 'train | val | test_2016_flickr', 'train')
  .option('--data <dir>', 'corpus folder with SPLIT.LANG[.gz] files', 'data/multi30k')
  .option('--src <lang>', 'source language', 'en')
  .option('--tgt <lang>', 'target language', 'de')
  .action((o) => encodeSplit({ ...o, log }));

/** --ensemble DIRS and --no-ensemble set one option (commander keeps the last): refuse both. */
function oneEnsembleFlag<T extends { ensemble?: string[] | false }>(o: T): T {
  if (o.ensemble === false && process.argv.slice(2).some((a) => a === '--ensemble' || a.startsWith('--ensemble='))) {
    throw new UserError('--ensemble and --no-ensemble both given: pass one');
  }
  return o;
}

program.command('translate')
  .description('translate one sentence per line (stdin to stdout, or --input/--output)')
  .requiredOption('--model <dir>', 'model folder')
  .option('--ensemble <dirs>', "more model folders (comma-separated) decoded with --model as one, their next-token probabilities averaged; they must share its tokenizers (added to the members --model's config.json names, if any)", dirList('--ensemble'))
  .option('--no-ensemble', "decode with --model alone, without the ensemble members its config.json names (decoding.ensemble)")
  .option('--beam <n>', "beam size, 1 = greedy (default: the model's config.json decoding, else 4)", int('--beam'))
  .option('--alpha <x>', "length penalty α (default: the model's config.json decoding, else 0.6)", nonNegativeNumber('--alpha'))
  .option('--mbr', "minimum Bayes risk: of each sentence's beam pool, output the hypothesis with the highest mean sentence BLEU against the others (needs --beam 2 or more; default: the model's config.json decoding, else off)")
  .option('--no-mbr', "output beam search's best hypothesis even where the model's config.json decodes with MBR")
  .option('--input <file>', 'read sentences from a file instead of stdin')
  .option('--output <file>', 'write translations to a file instead of stdout')
  .option('--engine <name>', 'qkv | onnxruntime (--model is then a folder from qkv export --format onnx)', 'qkv')
  .option('--skip-long', "leave lines longer than the model reads untranslated (an empty output line) instead of truncating them")
  .addHelpText('after', LINES_HELP)
  .action(async (o) => translate({ ...oneEnsembleFlag(o), log }));

program.command('eval')
  .description('translate a split and score it with BLEU (sacreBLEU-compatible)')
  .requiredOption('--model <dir>', 'model folder')
  .option('--ensemble <dirs>', "more model folders (comma-separated) decoded with --model as one, their next-token probabilities averaged; they must share its tokenizers (added to the members --model's config.json names, if any)", dirList('--ensemble'))
  .option('--no-ensemble', "decode with --model alone, without the ensemble members its config.json names (decoding.ensemble)")
  .option('--split <name>', 'val | test_2016_flickr', 'test_2016_flickr')
  .option('--data <dir>', 'corpus folder', 'data/multi30k')
  .option('--src <lang>', "source language (default: the model's training direction, else en)")
  .option('--tgt <lang>', "target language (default: the model's training direction, else de)")
  .option('--direction <src-tgt>', 'source and target at once, e.g. en-fr', direction('--direction'))
  .option('--beam <n>', "beam size, 1 = greedy (default: the model's config.json decoding, else 4)", int('--beam'))
  .option('--alpha <x>', "length penalty α (default: the model's config.json decoding, else 0.6)", nonNegativeNumber('--alpha'))
  .option('--mbr', "minimum Bayes risk: of each sentence's beam pool, output the hypothesis with the highest mean sentence BLEU against the others (needs --beam 2 or more; default: the model's config.json decoding, else off)")
  .option('--no-mbr', "output beam search's best hypothesis even where the model's config.json decodes with MBR")
  .option('--tune-alpha <list>', "with --split val: also try these α (comma-separated); the best replaces the paper's 0.6 in the model's config.json only if it wins a paired bootstrap (p < 0.05, Bonferroni)", numList('--tune-alpha'))
  .option('--output <file>', 'also write the translations here')
  .option('--skip-long', 'leave source lines longer than the model reads untranslated instead of truncating them')
  .option('--lowercase', "score case-insensitively (sacreBLEU's -lc, signature case:lc), as much of the Multi30K literature reports", false)
  .option('--chrf', "also chrF2, the character n-gram F-score (sacreBLEU's -m chrf)", false)
  .option('--engine <name>', 'qkv | onnxruntime (--model is then a folder from qkv export --format onnx)', 'qkv')
  .addHelpText('after', LINES_HELP)
  .action(async (o) => evaluate({ ...oneEnsembleFlag(o), log }));

program.command('bleu')
  .description('score translation files against references with BLEU (and chrF; sacreBLEU-compatible), and compare them with a paired bootstrap; no decoding')
  .argument('<files...>', 'translations, one sentence a line (e.g. from qkv eval --output); with --paired-bs the first is the baseline')
  .option('--ref <file>', 'reference translations, one sentence a line (plain or .gz)')
  .option('--split <name>', 'or the references of a corpus split: DATA/SPLIT.TGT (e.g. val)')
  .option('--data <dir>', 'corpus folder, with --split', 'data/multi30k')
  .option('--tgt <lang>', 'target language, with --split (default: de)')
  .option('--direction <src-tgt>', 'or the target language as a direction, e.g. en-fr', direction('--direction'))
  .option('--paired-bs', "compare each file with the first by paired bootstrap resampling (Koehn 2004; sacreBLEU's --paired-bs)", false)
  .option('--samples <n>', 'bootstrap resamples, with --paired-bs (default: 1000)', int('--samples'))
  .option('--chrf', "also chrF2, the character n-gram F-score (sacreBLEU's -m chrf), of each file", false)
  .option('--lowercase', "score case-insensitively (sacreBLEU's -lc, signature case:lc)", false)
  .addHelpText('after', `
Prints sacreBLEU's line (BLEU = score, 1- to 4-gram precisions, brevity penalty, lengths) for each
file and its signature; with --chrf then each file's chrF2 and its signature. The paired bootstrap's p is Koehn's one-sided count: the share of resamples
(plus one) in which a file does not score above the first; small means its lead holds.`)
  .action((files: string[], o) => bleu({ ...o, files }));

program.command('info')
  .description('print a model\'s configuration and parameter count')
  .option('--model <dir>', 'model folder')
  .option('--preset <name>', 'a preset instead of a folder (e.g. paper-base)')
  .action((o) => info({ ...o, log }));

program.command('export')
  .description('copy a trained model (translation, or language model from train-lm) into a folder to ship (weights as fp16 by default), or export it to ONNX (--format onnx)')
  .requiredOption('--model <dir>', 'trained model folder (e.g. runs/NAME)')
  .requiredOption('--out <dir>', 'destination folder (e.g. models/multi30k-en-de)')
  .option('--format <name>', 'safetensors (a qkv model folder) | onnx (graphs for ONNX Runtime)', 'safetensors')
  .option('--dtype <type>', 'f16 | f32 | int8 (int8: safetensors only, each weight row as int8 times a scale; default: f16 for safetensors, f32 for onnx)')
  .option('--with-attention', 'onnx: also output every layer\'s attention weights (for viewers)', false)
  .option('--force', 'onnx: replace an existing --out folder', false)
  .option('--ensemble <dirs>', 'more model folders (comma-separated) shipped with --model as its ensemble, in subfolders member-2, member-3, ... that its config.json names (qkv translate and eval decode with them all)', dirList('--ensemble'))
  .option('--no-ensemble', "ship --model alone, without the ensemble members its config.json names")
  .action((o) => exportModel({ ...oneEnsembleFlag(o), log }));

program.command('train-lm')
  .description('train a GPT language model on a text file (one line = one document), with checkpoints')
  .requiredOption('--out <dir>', 'folder for the model, training state and history')
  .option('--data <file>', `training text, plain or .gz (default: ${DEFAULT_LM_DATA}, validated on val.en.gz)`)
  .option('--val <file>', 'validation text (default: the last 10% of the lines of --data)')
  .option('--tokenizer <kind>', 'char | bpe', 'char')
  .option('--vocab-size <n>', 'BPE vocabulary size (default: the preset\'s)', int('--vocab-size'))
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
  .action(async (o) => trainLm({ ...o, log }));

program.command('generate')
  .description('continue a prompt with a language model from train-lm, streaming to stdout')
  .requiredOption('--model <dir>', 'model folder')
  .requiredOption('--prompt <text>', 'text to continue')
  .option('--max-tokens <n>', 'tokens to generate', int('--max-tokens'), 200)
  .option('--temperature <t>', 'softmax temperature (0 = greedy)', nonNegativeNumber('--temperature'), 0.8)
  .option('--top-k <k>', 'sample among the k most probable tokens', int('--top-k'))
  .option('--top-p <p>', 'sample among the most probable tokens that make up probability p', probability('--top-p'))
  .option('--seed <n>', 'random seed (default: random, printed)', nonNegativeInt('--seed'))
  .option('--no-cache', 'recompute the whole context at every step instead of using the KV cache')
  .option('--engine <name>', 'qkv | onnxruntime (--model is then a folder from qkv export --format onnx)', 'qkv')
  .action(async (o) => generateText({ ...o, log }));

program.command('attention')
  .description('translate a sentence (or continue a prompt, with a language model) and draw its attention heatmaps as SVG (no browser needed)')
  .argument('<sentence>', 'the sentence to translate (a language model: the prompt)')
  .requiredOption('--model <dir>', 'model folder')
  .requiredOption('--out <file>', 'SVG file to write (or .html: a page holding the SVG)')
  .option('--kind <kind>', 'enc (encoder self-attention) | dec (decoder masked self-attention) | cross (decoder to encoder)', 'cross')
  .option('--layer <n>', 'layer, counted from 1 (default: every layer)', int('--layer'))
  .option('--head <n>', 'head, counted from 1 (default: every head)', int('--head'))
  .option('--beam <n>', 'beam size (1 = greedy)', int('--beam'), 1)
  .option('--alpha <x>', 'length penalty α of beam search', nonNegativeNumber('--alpha'), 0.6)
  .option('--max-tokens <n>', 'language models: tokens to generate after the prompt', int('--max-tokens'), 20)
  .action((sentence: string, o) => attention({ ...o, sentence, log }));

program.command('explore')
  .description('open the attention explorer: a local page that runs the model in the browser')
  .option('--model <dir>', 'model folder (default: models/multi30k-en-de, else the newest runs/*/ with a model.safetensors)')
  .option('--port <n>', 'port (0 = any free port)', port('--port'), 8080)
  .option('--host <addr>', 'address to listen on (anything but 127.0.0.1 / localhost exposes the model to the network)', '127.0.0.1')
  .action(async (o) => {
    await explore({ ...o, log });
  });

try {
  await program.parseAsync(process.argv);
} catch (e) {
  if (process.env.QKV_DEBUG) throw e;
  process.stderr.write(`qkv: ${(e as Error).message}\n`);
  process.exit(1);
}
