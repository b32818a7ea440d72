/**
 * The pipelines of a Hugging Face T5 / Flan-T5 folder, with transformers.js's result shapes:
 * `pipeline('text2text-generation')` → `[{ generated_text }]`, `pipeline('summarization')` → `[{ summary_text }]`,
 * and transformers' task names `pipeline('translation_en_to_de')` (any `translation_XX_to_YY`) →
 * `[{ translation_text }]`. Each text is encoded by the folder's tokenizer (`</s>` appended) and decoded by
 * transformers' generate() rules (decode/hf-search.ts over decode/t5-stepper.ts), the output's special tokens dropped.
 *
 * A task named in config.json's `task_specific_params` (the original T5's `summarization`, `translation_en_to_de`,
 * …) is run as transformers' pipelines run it (`Pipeline.__init__` in transformers 5.18, which keeps the lookup
 * although 5.x no longer ships these three pipelines; their 4.x `_parse_and_tokenize` added the prefix): its
 * `prefix` is put before each text, and its other keys are set over the folder's generation config
 * (`generation_config.update(**params)`). A task the folder does not name runs with no prefix, by the folder's
 * generation config, as in transformers. Unlike the translation pipeline, an empty string is given to the model as
 * transformers gives it (`</s>` alone, after any prefix).
 */
import { FILES } from '../folder/spec.ts';
import { noGrad } from '../autograd/grad-mode.ts';
import { generateHfSteps, hfRules, type HfSearchOptions } from '../decode/hf-search.ts';
import type { BeamSearchResult } from '../decode/search.ts';
import { t5Stepper } from '../decode/t5-stepper.ts';
import type { OpenedT5 } from '../folder/open.ts';
import { checkGenerationIds, hfSeq2SeqGeneration, type HfGeneration } from '../models/hf/seq2seq-generation.ts';
import type { T5 } from '../models/hf/t5.ts';
import * as F from '../ops/index.ts';
import { Tensor } from '../tensor/tensor.ts';
import type { HfTokenizer } from '../text/hf-tokenizer.ts';
import { checkOptions, describeValue, type OptionSpec } from './options.ts';

/** Per-call options of a T5 pipeline (each defaults to the task's generation settings). */
export interface Text2TextOptions {
  /** Beams, 1 = greedy (num_beams). */
  beam?: number;
  /** Most ids generated, EOS included (max_new_tokens). */
  maxNewTokens?: number;
}

const TEXT2TEXT_OPTIONS: OptionSpec = { beam: 'positiveInt', maxNewTokens: 'positiveInt' };

/** A T5 folder's tasks: transformers' names (`translation_XX_to_YY` as in `task_specific_params`). */
export type T5Task = 'text2text-generation' | 'summarization' | `translation_${string}_to_${string}`;

/** The result key of each task, transformers.js's. */
type ResultKey<T extends T5Task> = T extends 'summarization'
  ? 'summary_text'
  : T extends 'text2text-generation'
    ? 'generated_text'
    : 'translation_text';

/** One result, transformers.js's shape. */
export interface Text2TextResult {
  generated_text: string;
}

/** A T5 pipeline: `[{ <key> }]` for one text, one entry per text for several. */
export interface T5TaskPipeline<T extends T5Task> {
  (input: string | readonly string[], options?: Text2TextOptions): Promise<Record<ResultKey<T>, string>[]>;
  readonly task: T;
  readonly model: T5;
  readonly tokenizer: HfTokenizer;
  /** config.json as read. */
  readonly config: Record<string, unknown>;
  /** What is put before each text: the task's `prefix` in `task_specific_params` ('' where none). */
  readonly prefix: string;
  /** The generation settings the task decodes with (the folder's, the task's params set over them). */
  readonly generation: HfGeneration;
}

/** What `pipeline('text2text-generation', folder)` gives. */
export type Text2TextPipeline = T5TaskPipeline<'text2text-generation'>;
/** What `pipeline('summarization', folder)` gives. */
export type SummarizationPipeline = T5TaskPipeline<'summarization'>;
/** What `pipeline('translation_en_to_de', folder)` (any `translation_XX_to_YY`) gives. */
export type T5TranslationPipeline = T5TaskPipeline<`translation_${string}_to_${string}`>;

/** `translation_XX_to_YY`, transformers' name of a translation task. */
export function isT5TranslationTask(task: string): task is `translation_${string}_to_${string}` {
  return /^translation_[^_]+_to_[^_]+$/.test(task);
}

/** The `translation_*` tasks config.json's task_specific_params names, in file order. */
export function t5TranslationTasks(config: Record<string, unknown>): string[] {
  const tsp = config.task_specific_params;
  if (tsp === null || typeof tsp !== 'object') return [];
  return Object.keys(tsp).filter(isT5TranslationTask);
}

/**
 * A task's prefix and generation settings: config.json's `task_specific_params[task]` (prefix put before each text,
 * the rest set over the folder's generation config), or none; errors name the key.
 */
export function t5TaskSettings(opened: OpenedT5, task: string): { prefix: string; generation: HfGeneration } {
  const tsp = opened.config.task_specific_params;
  const where = `config.json's task_specific_params.${task}`;
  const params = tsp !== null && typeof tsp === 'object' ? (tsp as Record<string, unknown>)[task] : undefined;
  if (params === undefined || params === null) return { prefix: '', generation: opened.generation };
  if (typeof params !== 'object' || Array.isArray(params))
    throw new Error(`${where}: expected a JSON object, got ${describeValue(params)}`);
  const { prefix = '', ...values } = params as Record<string, unknown>;
  if (typeof prefix !== 'string') throw new Error(`${where}.prefix: expected a string, got ${describeValue(prefix)}`);
  const generation = hfSeq2SeqGeneration(opened.config, opened.generationConfig, FILES.config, {
    values,
    name: where,
  });
  checkGenerationIds(generation, opened.ids, FILES.config);
  return { prefix, generation };
}

const RESULT_KEYS = { 'text2text-generation': 'generated_text', summarization: 'summary_text' } as const;

/**
 * Another engine for a T5 pipeline's generation (the CLI's ONNX Runtime over a T5 export): one source's ids, the
 * search's options → generate()'s result, as qkv's own steps give it.
 */
export interface T5Engine {
  generate(src: readonly number[], options: HfSearchOptions & { padId: number }): Promise<BeamSearchResult>;
}

/** The pipeline of an opened T5 folder for `task` (default 'text2text-generation'), on qkv or on `engine`. */
export function text2textPipeline<T extends T5Task = 'text2text-generation'>(
  opened: OpenedT5,
  task: T = 'text2text-generation' as T,
  engine?: T5Engine,
): T5TaskPipeline<T> {
  const { model, tokenizer, config, ids } = opened;
  const { prefix, generation } = t5TaskSettings(opened, task);
  const key = (RESULT_KEYS as Record<string, string>)[task] ?? 'translation_text';
  const run = async (input: string | readonly string[], options: Text2TextOptions = {}) => {
    checkOptions(task, options, TEXT2TEXT_OPTIONS);
    const texts = typeof input === 'string' ? [input] : input;
    if (!Array.isArray(texts) && typeof input !== 'string')
      throw new Error(`${task}: expected a string or an array of strings, got ${describeValue(input)}`);
    texts.forEach((t, i) => {
      if (typeof t !== 'string') throw new Error(`${task}: input ${i}: expected a string, got ${describeValue(t)}`);
    });
    const out: Record<string, string>[] = [];
    for (const text of texts) {
      const src = tokenizer.encodeInput(prefix + text).ids;
      const search = {
        ...hfRules(ids, generation),
        numBeams: options.beam ?? generation.numBeams,
        lengthPenalty: generation.lengthPenalty,
        encoderIds: [src],
        ...(options.maxNewTokens !== undefined && { maxLength: options.maxNewTokens + 1 }),
        padId: ids.padId,
      };
      const res = engine
        ? await engine.generate(src, search)
        : noGrad(() => {
            const srcT = new Tensor(Int32Array.from(src), [1, src.length], 'int32');
            const memory = model.encode(srcT);
            return generateHfSteps(t5Stepper(model, memory, F.eq(srcT, ids.padId)), 1, search);
          });
      out.push({ [key]: tokenizer.decode(res.tokens[0], { skipSpecialTokens: true }) });
    }
    return out as Record<ResultKey<T>, string>[];
  };
  return Object.assign(run, { task, model, tokenizer, config, prefix, generation }) as T5TaskPipeline<T>;
}
