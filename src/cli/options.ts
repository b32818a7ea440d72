/**
 * Flag groups that several commands share, each declared once: the model folder, the ensemble, the
 * decoding settings, the engine and the corpus. Each takes a command (typed by
 * @commander-js/extra-typings) and returns it with the group's flags added, so the option types the
 * handlers receive are inferred from these declarations.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command, OptionValues } from '@commander-js/extra-typings';
import { dirList, direction, int, nonNegativeNumber } from './args.ts';
import { DEFAULT_DATA, missingCorpus } from './corpus.ts';
import { UserError } from './files.ts';
import { DTYPES, type PipelineDType } from '../pipelines/options.ts';

/** --dtype's value as the pipelines' `dtype` (undefined when not given), or a UserError naming the flag. */
export function pipelineDType(dtype: string | undefined): PipelineDType | undefined {
  if (dtype === undefined) return undefined;
  const d = dtype.toLowerCase();
  if (!Object.hasOwn(DTYPES, d)) throw new UserError(`--dtype must be fp32, q8 (int8) or q4, got '${dtype}'`);
  return d as PipelineDType;
}

/** The parsed options of the command a function builds: what its action receives. */
export type FlagsOf<B extends () => { opts(): unknown }> = ReturnType<ReturnType<B>['opts']>;

/** `T` with the keys `K` optional: a handler called from code need not pass what commander defaults. */
export type Optional<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;

/** Where the commands' progress and notes go: stderr, one line each (stdout holds their results). */
export const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** --model DIR, required. */
export function modelOption<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
  help = 'model folder',
) {
  return cmd.requiredOption('--model <dir>', help);
}

/** --adapter DIR: a PEFT LoRA adapter folder merged into a Hugging Face --model as it is read. */
export function adapterOption<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
) {
  return cmd.option(
    '--adapter <dir>',
    'a LoRA adapter (PEFT format: adapter_config.json, adapter_model.safetensors) merged into --model',
  );
}

const ENSEMBLE_HELP = {
  ensemble:
    'more model folders (comma-separated) decoded with --model as one, ' +
    'their next-token probabilities averaged; they must share its ' +
    "tokenizers (added to the members --model's config.json names, if any)",
  noEnsemble: 'decode with --model alone, without the ensemble members its config.json names (decoding.ensemble)',
};

/**
 * --ensemble DIRS and --no-ensemble (one option: commander keeps the last, so both given is refused
 * before the action runs).
 */
export function ensembleOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
  help = ENSEMBLE_HELP,
) {
  const given = new Set<string>();
  cmd.on('option:ensemble', () => given.add('on')).on('option:no-ensemble', () => given.add('off'));
  return cmd
    .option('--ensemble <dirs>', help.ensemble, dirList('--ensemble'))
    .option('--no-ensemble', help.noEnsemble)
    .hook('preAction', () => {
      if (given.size === 2) throw new UserError('--ensemble and --no-ensemble both given: pass one');
    });
}

/** Beam, α and MBR of translate and eval (each defaulting to the model's config.json decoding). */
export function decodingOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
) {
  return cmd
    .option('--beam <n>', "beam size, 1 = greedy (default: the model's config.json decoding, else 4)", int('--beam'))
    .option(
      '--alpha <x>',
      "length penalty α (default: the model's config.json decoding, else 0.6)",
      nonNegativeNumber('--alpha'),
    )
    .option(
      '--mbr',
      "minimum Bayes risk: of each sentence's beam pool, output the " +
        'hypothesis with the highest mean sentence BLEU against the others ' +
        "(needs --beam 2 or more; default: the model's config.json decoding, " +
        'else off)',
    )
    .option('--no-mbr', "output beam search's best hypothesis even where the model's config.json decodes with MBR");
}

/** --src-lang / --tgt-lang of translate and eval: a multilingual folder's (NLLB / M2M100) languages. */
export function languageOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
) {
  return cmd
    .option(
      '--src-lang <code>',
      "a multilingual folder's (NLLB / M2M100) source language code, e.g. eng_Latn (default: its tokenizer's src_lang)",
    )
    .option('--tgt-lang <code>', "a multilingual folder's (NLLB / M2M100) target language code, e.g. deu_Latn");
}

/**
 * --dtype fp32 | q8 | q4: what the qkv engine computes in (the pipelines' `dtype`, mapped by pipelineDType): a
 * float folder quantized at load, an int8/q4 folder run as stored.
 */
export function dtypeOption<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
) {
  return cmd
    .option(
      '--dtype <type>',
      'fp32 | q8 (int8) | q4: compute in int8 (weights and activations) or 4-bit weights, a float ' +
        'folder quantized at load (default: as the folder stores it; an int8/q4 folder runs as stored)',
    )
    .hook('preAction', (c) => {
      pipelineDType((c.opts() as { dtype?: string }).dtype); // refused before any model is read
    });
}

/** --engine qkv | onnxruntime (checked by parseEngine, which names the flag). */
export function engineOption<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
) {
  return cmd.option(
    '--engine <name>',
    'qkv | onnxruntime (--model is then a folder from qkv export --format onnx)',
    'qkv',
  );
}

/** --direction SRC-TGT. */
export function directionOption<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
  help = 'source and target at once, e.g. en-fr',
) {
  return cmd.option('--direction <src-tgt>', help, direction('--direction'));
}

/**
 * --data DIR (default data/multi30k). When the default is used, `files(opts)` lists the corpus files
 * the command will read (null: it reads none this time) and the folder is missing, the command stops
 * before it starts with what the data is and where to get it, instead of a missing-file error.
 */
export function dataOption<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
  help: string,
  files: (opts: OptionValues) => string[] | null,
) {
  return cmd.option('--data <dir>', help, DEFAULT_DATA).hook('preAction', (c) => {
    if (c.getOptionValueSource('data') !== 'default') return;
    requireDefaultCorpus(files(c.opts()));
  });
}

/** Throws missingCorpus's explanation when `files` are to be read from data/multi30k/ and it is not here. */
export function requireDefaultCorpus(files: string[] | null): void {
  if (files && !existsSync(resolve(DEFAULT_DATA))) throw new UserError(missingCorpus(files));
}
