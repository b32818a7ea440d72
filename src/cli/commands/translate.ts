/**
 * `qkv translate`: one sentence per line, stdin to stdout (or --input/--output).
 *
 * From a pipe or a file it reads everything, then translates in batches of similar length (fast);
 * from a terminal, or with --stream, it translates each line as it arrives and writes its translation
 * at once (a line typed, a line back). Either way one output line per input line, and an empty line
 * is an empty line, not an error; an over-long line is reported and makes the exit status 2. The
 * lines go through the translation pipeline (src/pipelines/), the object library users call.
 */
import { closeSync, createReadStream, existsSync, openSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Command } from '@commander-js/extra-typings';
import { degradedSummary, EXIT_DEGRADED, type DegradedLine } from '../../decode/batch.ts';
import type { TranslationOptions, TranslationPipeline } from '../../pipelines/translation.ts';
import { atomicWrite, checkOutputFolder, folderKindOfDir, readInputLines, UserError } from '../files.ts';
import { runT5Lines, t5TranslationTask } from './summarize.ts';
import { asDegraded, collect, enginePipeline, openEngine, reportDegraded, translationOptions } from '../decoding.ts';
import { progressBar } from '../progress.ts';
import {
  adapterOption,
  decodingOptions,
  languageOptions,
  dtypeOption,
  engineOption,
  ensembleOptions,
  log,
  modelOption,
} from '../options.ts';
import type { FlagsOf, Optional } from '../options.ts';

/** What eval says about bad source lines in --help. */
export const LINES_HELP = `
One output line per input line, always. An empty line gives an empty line; a line longer than the
model reads (its maxLen tokens) is truncated to that length, or with --skip-long left untranslated
(an empty line). Each such line is reported on stderr with its number.
Exit status: 0 every line translated as given, ${EXIT_DEGRADED} all lines written but some degraded (empty,
truncated or skipped), 1 an error (nothing written).`;

/** What translate says about its lines in --help: an empty line is no error there (issue 39). */
const TRANSLATE_LINES_HELP = `
One output line per input line, always. An empty (or blank) line gives an empty line: it is not an
error and is not reported. A line longer than the model reads (its maxLen tokens) is truncated to
that length, or with --skip-long left untranslated (an empty line), and reported on stderr with its number.
Exit status: 0 every line translated as given, ${EXIT_DEGRADED} all lines written but some degraded (truncated
or skipped), 1 an error (nothing written).

From a terminal, or with --stream, each line is translated as it arrives, and with --output the
file is written line by line; otherwise, when stderr is a terminal, a progress bar is drawn there.`;

function flags() {
  const cmd = new Command('translate').description(
    'translate one sentence per line (stdin to stdout, or --input/--output)',
  );
  const files = adapterOption(dtypeOption(languageOptions(decodingOptions(ensembleOptions(modelOption(cmd))))))
    .option('--input <file>', 'read sentences from a file instead of stdin')
    .option('--output <file>', 'write translations to a file instead of stdout (in a folder that exists)')
    .option(
      '--task <name>',
      "a T5 folder's translation task, transformers' name in its config.json's task_specific_params " +
        '(e.g. translation_en_to_de: its prefix and generation keys; default: the first translation_* task)',
    );
  return engineOption(files)
    .option(
      '--skip-long',
      'leave lines longer than the model reads untranslated (an empty output line) instead of truncating them',
    )
    .option(
      '--stream',
      'translate each line as it arrives (the default when stdin is a ' +
        'terminal) instead of reading all lines first and batching them by ' +
        'length',
    )
    .option(
      '--compiled',
      'a qkv folder: decode over a static KV cache with captured, replayed steps instead of the dynamic cache ' +
        'op by op (the same output; off by default: slower on the shipped models for now, docs/compiled.md)',
    )
    .addHelpText('after', TRANSLATE_LINES_HELP);
}

export type TranslateFlags = FlagsOf<typeof flags>;

export function translateCommand() {
  return flags().action(async (o) => translate({ ...o, log }));
}

/** `qkv translate`'s options; engine defaults to qkv when called from code. */
export type TranslateArgs = Optional<TranslateFlags, 'engine' | 'compiled'> & { log: (line: string) => void };

export async function translate(o: TranslateArgs): Promise<void> {
  if (folderKindOfDir(o.model) === 't5') return translateT5(o);
  if (o.task !== undefined) throw new UserError(`--task chooses a T5 folder's task; ${o.model} is not a T5 folder`);
  if (o.output !== undefined) checkOutputFolder(o.output);
  const engine = await openEngine(o);
  const translator = enginePipeline(engine);
  const options = translationOptions(o);
  translator.decoding(options); // the flags' errors before any input is read
  if (o.stream || (o.input === undefined && process.stdin.isTTY)) return translateStream(o, translator, options);
  const lines = await readInputLines(o.input);
  const degraded: DegradedLine[] = [];
  // A bar on a terminal only: stderr that goes to a file or a pipe holds the reports alone.
  const bar = process.stderr.isTTY
    ? progressBar('translate |{bar}| {value}/{total} sentences | ETA {eta_formatted}')
    : null;
  bar?.start(lines.length, 0);
  const out = await translator(lines, {
    ...options,
    onWarning: collect(degraded),
    ...(bar && { onProgress: (done: number) => bar.update(done) }),
  });
  bar?.stop();
  const result = out.map((l) => `${l}\n`).join('');
  if (o.output) atomicWrite(o.output, result);
  else process.stdout.write(result);
  reportDegraded(o, degraded, lines.length);
}

/**
 * Each line translated alone as soon as it is read, its translation written at once. An empty (or
 * blank) line gives an empty line and is not reported; an over-long one is reported when it comes,
 * and the summary and exit status at the end are as in batch mode.
 */
async function translateStream(
  o: TranslateArgs,
  translator: TranslationPipeline,
  options: TranslationOptions,
): Promise<void> {
  if (o.input !== undefined && !existsSync(o.input)) throw new UserError(`input file not found: ${o.input}`);
  const input = o.input !== undefined ? createReadStream(o.input) : process.stdin;
  const fd = o.output !== undefined ? openSync(o.output, 'w') : null;
  const write = (s: string) => (fd === null ? process.stdout.write(s) : writeSync(fd, s));
  const degraded: DegradedLine[] = [];
  let n = 0;
  try {
    for await (const line of createInterface({ input, crlfDelay: Infinity, terminal: false })) {
      n++;
      if (line.trim() === '') {
        write('\n');
        continue;
      }
      const text = await translator(line, {
        ...options,
        onWarning: (w) => {
          // The pipeline numbers its one line 1: give it its place in the input.
          const at = { ...asDegraded(w), line: n, message: w.message.replace(/^line 1:/, `line ${n}:`) };
          degraded.push(at);
          o.log(`qkv: ${at.message}`);
        },
      });
      write(`${text}\n`);
    }
  } finally {
    if (fd !== null) closeSync(fd);
  }
  if (degraded.length > 0) {
    o.log(`qkv: ${degradedSummary(degraded, n)}`);
    process.exitCode = EXIT_DEGRADED;
  }
}

/**
 * A T5 folder (or, with --engine onnxruntime, its ONNX export): its translation task (--task, else its first
 * translation_* one) through the T5 pipeline, line by line (--beam is num_beams); the flags of qkv's and Marian's
 * searches are refused by name.
 */
async function translateT5(o: TranslateArgs): Promise<void> {
  const refused = [
    ['--alpha', o.alpha],
    ['--mbr', o.mbr],
    ['--ensemble', Array.isArray(o.ensemble) && o.ensemble.length > 0 ? o.ensemble : undefined],
    ['--skip-long', o.skipLong],
    ['--stream', o.stream],
    ['--src-lang', o.srcLang],
    ['--tgt-lang', o.tgtLang],
    ['--dtype', o.dtype],
    ['--adapter', o.adapter],
  ] as const;
  for (const [flag, v] of refused)
    if (v !== undefined && v !== false)
      throw new UserError(`${flag} is not available for a T5 folder (${o.model}): its task's settings decide`);
  await runT5Lines(o, 'translate', (opened) => t5TranslationTask(opened, o.model, o.task));
}
