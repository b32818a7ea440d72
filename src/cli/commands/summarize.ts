/**
 * `qkv summarize --model DIR`: one text per line, stdin to stdout (or --input/--output), through the summarization
 * pipeline of a Hugging Face T5 folder (its config.json's `task_specific_params.summarization`: the "summarize: "
 * prefix and the generation keys, as transformers' pipelines apply them). `qkv translate --model DIR` of a T5 folder
 * runs the same lines through a `translation_XX_to_YY` task (runT5Lines). One output line per input line; an empty
 * (or blank) line gives an empty line without running the model, as translate's rule is. With `--engine onnxruntime`
 * the folder is a `qkv export --format onnx` of a T5 folder (its config and tokenizer beside the graphs), decoded by
 * the same pipeline on ONNX Runtime.
 *
 * A command of its own rather than an option of translate: translate's flags (α, MBR, ensembles, languages) do not
 * apply, and transformers and transformers.js name it a task of its own.
 */
import { Command } from '@commander-js/extra-typings';
import type { OpenedT5 } from '../../folder/open.ts';
import { readT5Shape } from '../../folder/node.ts';
import { MANIFEST } from '../../io/onnx/export.ts';
import { T5 } from '../../models/hf/t5.ts';
import { withoutInit } from '../../nn/init.ts';
import { openT5 } from '../../pipelines/load.ts';
import { t5TranslationTasks, text2textPipeline, type T5Engine, type T5Task } from '../../pipelines/text2text.ts';
import { openOnnxSeq2Seq, parseEngine, t5OnnxEngine } from '../onnxruntime.ts';
import { int } from '../args.ts';
import { asUserError, atomicWrite, checkOutputFolder, readInputLines, UserError } from '../files.ts';
import { engineOption, log, modelOption, type FlagsOf, type Optional } from '../options.ts';

function flags() {
  const cmd = new Command('summarize').description(
    "summarize one text per line with a T5 folder's summarization task (stdin to stdout, or --input/--output)",
  );
  return engineOption(modelOption(cmd))
    .option('--beam <n>', "beams, 1 = greedy (default: the task's num_beams)", int('--beam'))
    .option(
      '--max-new-tokens <n>',
      "most tokens generated per line (default: the task's max_length)",
      int('--max-new-tokens'),
    )
    .option('--input <file>', 'read texts from a file instead of stdin')
    .option('--output <file>', 'write the summaries to a file instead of stdout (in a folder that exists)');
}

export function summarizeCommand() {
  return flags().action(async (o) => summarize({ ...o, log }));
}

export type SummarizeArgs = Optional<FlagsOf<typeof flags>, 'engine'> & { log: (line: string) => void };

export async function summarize(o: SummarizeArgs): Promise<void> {
  await runT5Lines(o, 'summarize', () => 'summarization');
}

/** What runT5Lines reads of translate's or summarize's flags. */
export interface T5LinesArgs {
  model: string;
  beam?: number;
  maxNewTokens?: number;
  input?: string;
  output?: string;
  /** qkv (default) or onnxruntime: --model is then a T5 folder's `qkv export --format onnx`. */
  engine?: string;
}

/**
 * The lines of --input (else stdin) through a T5 folder's `task` (chosen once the folder is open), one output line
 * each, to --output (written atomically) or stdout.
 */
export async function runT5Lines(
  o: T5LinesArgs,
  command: 'summarize' | 'translate',
  task: (opened: OpenedT5) => T5Task,
): Promise<void> {
  if (o.output !== undefined) checkOutputFolder(o.output);
  let opened: OpenedT5;
  let engine: T5Engine | undefined;
  if (parseEngine(o.engine) === 'onnxruntime') {
    // The export's config and tokenizer; the weights are in the graphs (a model of the same shape for the pipeline).
    const { modelConfig, ...shape } = asUserError(() => readT5Shape(o.model));
    opened = { kind: 't5', ...shape, model: withoutInit(() => new T5(modelConfig)), weightsFile: MANIFEST };
    engine = t5OnnxEngine(await openOnnxSeq2Seq(o.model));
  } else {
    try {
      opened = await openT5(o.model, command);
    } catch (e) {
      throw new UserError((e as Error).message.replace(`pipeline('${command}'): `, ''));
    }
  }
  let run: ReturnType<typeof text2textPipeline<T5Task>>;
  try {
    run = text2textPipeline(opened, task(opened), engine);
  } catch (e) {
    throw new UserError((e as Error).message);
  }
  const lines = await readInputLines(o.input);
  const options = {
    ...(o.beam !== undefined && { beam: o.beam }),
    ...(o.maxNewTokens !== undefined && { maxNewTokens: o.maxNewTokens }),
  };
  const out: string[] = [];
  for (const line of lines) {
    if (line.trim() === '') {
      out.push('');
      continue;
    }
    const [r] = await run(line, options);
    out.push(Object.values(r)[0] as string);
  }
  const result = out.map((l) => `${l}\n`).join('');
  if (o.output) atomicWrite(o.output, result);
  else process.stdout.write(result);
}

/** translate's task for a T5 folder: --task, else the folder's first translation_* task, else an error naming both. */
export function t5TranslationTask(opened: OpenedT5, model: string, task: string | undefined): T5Task {
  const known = t5TranslationTasks(opened.config);
  if (task !== undefined) {
    if (!/^translation_[^_]+_to_[^_]+$/.test(task))
      throw new UserError(
        `--task must be a translation task, translation_XX_to_YY (${model}'s config.json names ` +
          `${known.length > 0 ? known.join(', ') : 'none'}), got '${task}'`,
      );
    return task as T5Task;
  }
  if (known.length === 0)
    throw new UserError(
      `${model} is a T5 folder whose config.json's task_specific_params names no translation task: ` +
        'pass --task translation_XX_to_YY (it then runs with no prefix, as transformers does)',
    );
  return known[0] as T5Task;
}
