/**
 * Pipelines, the library's front door (the shape of transformers.js and HF transformers):
 *
 *   const translate = await pipeline('translation', 'models/multi30k-en-de');
 *   await translate('A man rides a bike.');            // the translation, as `qkv translate` gives it
 *   const generate = await pipeline('text-generation', 'models/gpt-multi30k-char');
 *   await generate('A dog', { maxNewTokens: 40, seed: 1 });   // the continuation, as `qkv generate`
 *
 * The folder (docs/model-folder.md) is a path in Node; in a browser a base URL, the File objects
 * of a folder picker, or a map of file contents.
 */
import { backendNames, setBackend } from '../backend/backend.ts';
import { applyAdapter } from '../folder/adapter.ts';
import type { FolderInput, OpenedFolder } from '../folder/open.ts';
import { featureExtractionPipeline, type FeatureExtractionPipeline } from './feature-extraction.ts';
import { fillMaskPipeline, type FillMaskPipeline } from './fill-mask.ts';
import { openEncoder, openLanguageModel, openT5, openTranslation, readAdapterFolder } from './load.ts';
import { textClassificationPipeline, type TextClassificationPipeline } from './text-classification.ts';
import { applyDType, checkOptions, describeValue, didYouMean, type PipelineDType } from './options.ts';
import { textGenerationPipeline, type TextGenerationPipeline } from './text-generation.ts';
import { translationPipeline, type TranslationPipeline } from './translation.ts';
import {
  isT5TranslationTask,
  text2textPipeline,
  type SummarizationPipeline,
  type T5TranslationPipeline,
  type Text2TextPipeline,
} from './text2text.ts';

export type { PipelineWarning } from './options.ts';
export type { ChatGenerated, GenerationOptions, TextGenerationPipeline } from './text-generation.ts';
export type { ChatMessage, ChatRenderOptions } from '../text/chat-template.ts';
export type { TranslationOptions, TranslationPipeline } from './translation.ts';
export type {
  SummarizationPipeline,
  T5Task,
  T5TaskPipeline,
  T5TranslationPipeline,
  Text2TextOptions,
  Text2TextPipeline,
  Text2TextResult,
} from './text2text.ts';
export type { FeatureExtractionOptions, FeatureExtractionPipeline } from './feature-extraction.ts';
export type { FillMaskOptions, FillMaskPipeline, FillMaskResult } from './fill-mask.ts';
export type {
  ClassificationResult,
  TextClassificationOptions,
  TextClassificationPipeline,
} from './text-classification.ts';
export { decodingFor } from './translation.ts';

/**
 * The tasks {@link pipeline} knows: 'translation' (a qkv-seq2seq, Marian or M2M100 / NLLB folder), 'text-generation'
 * (a qkv-gpt or Hugging Face GPT-2 folder), over a T5 folder 'text2text-generation', 'summarization' and
 * transformers' 'translation_XX_to_YY', and over a Hugging Face encoder folder (BERT, RoBERTa, XLM-R,
 * DistilBERT) 'feature-extraction', 'fill-mask' and 'text-classification'. Another name is an error naming it.
 */
export type Task =
  | 'translation'
  | 'text-generation'
  | 'text2text-generation'
  | 'summarization'
  | `translation_${string}_to_${string}`
  | EncoderTask;

/** The tasks of an encoder folder, with the head each reads. */
const ENCODER_TASKS = {
  'feature-extraction': 'none',
  'fill-mask': 'masked-lm',
  'text-classification': 'classification',
} as const;

type EncoderTask = keyof typeof ENCODER_TASKS;

/**
 * How {@link pipeline} opens the folder. An unknown name, or a value of the wrong kind, is an Error
 * naming it (and the nearest known name: `unknown option 'ensembl' (did you mean 'ensemble'?)`).
 */
export interface PipelineOptions {
  /**
   * Translation: decode with the ensemble members the folder's config.json names (default true;
   * false: the folder's own model alone, as `qkv translate --no-ensemble`).
   */
  ensemble?: boolean;
  /**
   * Where the model runs, as transformers.js users write it: 'webgpu' (the GPU, where WebGPU is available),
   * 'wasm', 'js', or 'cpu' (wasm where its module loads, else js). qkv runs ops on one backend at a time:
   * this makes it the current backend (`await setBackend(...)`) before the model is made, so later
   * pipelines and ops run there too until another is chosen. Default: the current backend.
   */
  device?: 'webgpu' | 'wasm' | 'cpu' | 'js';
  /**
   * What the model computes in, transformers.js's names: 'fp32'; 'q8' (or 'int8'): int8 weights (a scale per row)
   * and int8 activations; 'q4': 4-bit weights in blocks of 32 (embedding and output tables int8). A float folder is
   * quantized at load; an int8 or q4 folder (`qkv export --dtype int8|q4`) runs as it is stored, never
   * dequantized, and is refused with another dtype. Default: as the folder stores it.
   */
  dtype?: PipelineDType;
  /**
   * Translation with a multilingual folder (NLLB / M2M100): the source language code (`'eng_Latn'`; default the
   * tokenizer's src_lang) and the target's (`'deu_Latn'`; no default unless tokenizer_config.json sets tgt_lang),
   * the defaults of every call (a call's `srcLang`/`tgtLang` override them). Refused for other folders.
   */
  srcLang?: string;
  /** A multilingual folder's (NLLB / M2M100) target language code, e.g. 'deu_Latn' (see srcLang). */
  tgtLang?: string;
  /**
   * A LoRA adapter in Hugging Face PEFT's format (adapter_config.json + adapter_model.safetensors, e.g. from
   * `qkv finetune --lora` or PEFT's save_pretrained) for a Hugging Face folder (GPT-2, Marian): a path, a URL,
   * File objects or contents, as the folder. It is merged into the weights at load (no cost per token), before
   * `dtype` quantizes them. The adapter's base_model_name_or_path is not read: the folder given is the base.
   */
  adapter?: FolderInput;
}

/** A pipeline for `task` over the model folder `folder`. */
export function pipeline(
  task: 'translation',
  folder: FolderInput,
  options?: PipelineOptions,
): Promise<TranslationPipeline>;
export function pipeline(
  task: 'text-generation',
  folder: FolderInput,
  options?: PipelineOptions,
): Promise<TextGenerationPipeline>;
export function pipeline(
  task: 'feature-extraction',
  folder: FolderInput,
  options?: PipelineOptions,
): Promise<FeatureExtractionPipeline>;
export function pipeline(task: 'fill-mask', folder: FolderInput, options?: PipelineOptions): Promise<FillMaskPipeline>;
export function pipeline(
  task: 'text2text-generation',
  folder: FolderInput,
  options?: PipelineOptions,
): Promise<Text2TextPipeline>;
export function pipeline(
  task: 'text-classification',
  folder: FolderInput,
  options?: PipelineOptions,
): Promise<TextClassificationPipeline>;
export function pipeline(
  task: 'summarization',
  folder: FolderInput,
  options?: PipelineOptions,
): Promise<SummarizationPipeline>;
export function pipeline(
  task: `translation_${string}_to_${string}`,
  folder: FolderInput,
  options?: PipelineOptions,
): Promise<T5TranslationPipeline>;
export async function pipeline(
  task: Task,
  folder: FolderInput,
  options: PipelineOptions = {},
): Promise<
  | TranslationPipeline
  | TextGenerationPipeline
  | FeatureExtractionPipeline
  | FillMaskPipeline
  | TextClassificationPipeline
  | Text2TextPipeline
  | SummarizationPipeline
  | T5TranslationPipeline
> {
  if (!TASKS.includes(task) && !(typeof task === 'string' && isT5TranslationTask(task))) {
    const near = typeof task === 'string' ? didYouMean(task, TASKS) : undefined;
    throw new Error(
      `pipeline: unknown task ${typeof task === 'string' ? `'${task}'` : describeValue(task)}` +
        `${near ? ` (did you mean '${near}'?)` : ''} (expected ${TASKS.map((t) => `'${t}'`).join(', ')}, ` +
        "or a T5 folder's 'translation_XX_to_YY')",
    );
  }
  checkFolder(task, folder);
  checkOptions(`pipeline('${task}')`, options, PIPELINE_OPTIONS);
  const where = `pipeline('${task}')`;
  if (options.device !== undefined) await useDevice(where, options.device);
  const adapter = options.adapter === undefined ? null : await readAdapterFolder(options.adapter);
  const merge = (opened: OpenedFolder): void => {
    if (!adapter) return;
    if (opened.kind !== 'hf-gpt2' && opened.kind !== 'marian' && opened.kind !== 'hf-encoder')
      throw new Error(
        `${where}: adapter takes a Hugging Face folder (GPT-2, Llama-family, Marian, a BERT-style classifier); ` +
          `this is qkv's ${opened.kind}`,
      );
    applyAdapter(opened, adapter, true);
  };
  // The dtype is applied where the folder is read (on the CPU: quantizing reads the weights), before the
  // models move to a GPU device.
  if (Object.hasOwn(ENCODER_TASKS, task)) {
    const t = task as EncoderTask;
    if (adapter && t !== 'text-classification')
      throw new Error(
        `${where}: adapter takes a classifier's folder among the encoders (text-classification), not ${t}`,
      );
    const opened = await openEncoder(folder, t, ENCODER_TASKS[t], (o) => {
      merge(o);
      applyDType([o.model], options.dtype, where);
    });
    if (t === 'feature-extraction') return featureExtractionPipeline(opened);
    return t === 'fill-mask' ? fillMaskPipeline(opened) : textClassificationPipeline(opened);
  }
  if (task === 'text2text-generation' || task === 'summarization' || isT5TranslationTask(task)) {
    if (adapter || (options.dtype !== undefined && options.dtype !== 'fp32'))
      throw new Error(`${where}: adapter and dtype are not supported for a T5 folder yet`);
    if (options.srcLang !== undefined || options.tgtLang !== undefined)
      throw new Error(
        `${where}: srcLang and tgtLang choose an NLLB / M2M100 folder's languages; a T5 folder's task does`,
      );
    if (options.ensemble !== undefined)
      throw new Error(`${where}: ensemble takes qkv translation folders, not a T5 folder`);
    const opened = await openT5(folder, task);
    try {
      return text2textPipeline(opened, task);
    } catch (e) {
      throw new Error(`${where}: ${(e as Error).message}`);
    }
  }
  if (task === 'translation') {
    const languages = { srcLang: options.srcLang, tgtLang: options.tgtLang };
    return translationPipeline(
      await openTranslation(folder, options.ensemble ?? true, (opened) => {
        merge(opened);
        applyDType(opened.kind === 'seq2seq' ? opened.members : [opened.model], options.dtype, where);
      }),
      undefined,
      undefined,
      languages,
    );
  }
  if (options.srcLang !== undefined || options.tgtLang !== undefined)
    throw new Error(`${where}: srcLang and tgtLang are translation options`);
  return textGenerationPipeline(
    await openLanguageModel(folder, (lm) => {
      merge(lm);
      applyDType([lm.model], options.dtype, where);
    }),
  );
}

const TASKS: readonly Task[] = [
  'translation',
  'text-generation',
  'text2text-generation',
  'summarization',
  'feature-extraction',
  'fill-mask',
  'text-classification',
];

const PIPELINE_OPTIONS = {
  ensemble: 'boolean',
  dtype: 'dtype',
  device: 'device',
  adapter: 'folder',
  srcLang: 'languageCode',
  tgtLang: 'languageCode',
} as const;

/** Make `device`'s backend the current one ('cpu': wasm where it loads, else js); one line if it cannot load. */
async function useDevice(where: string, device: 'webgpu' | 'wasm' | 'cpu' | 'js'): Promise<void> {
  const name = device === 'cpu' ? (backendNames().includes('wasm') ? 'wasm' : 'js') : device;
  try {
    await setBackend(name);
  } catch (e) {
    throw new Error(`${where}: device '${device}' is not available here: ${(e as Error).message}`);
  }
}

/** The folder argument is one of the kinds openFolder takes, or an Error naming what came. */
function checkFolder(task: Task, folder: unknown): void {
  const ok =
    (typeof folder === 'string' && folder !== '') ||
    folder instanceof URL ||
    (typeof folder === 'object' && folder !== null && !Array.isArray(folder)) ||
    (Array.isArray(folder) && folder.length > 0);
  if (ok) return;
  const came = folder === '' ? 'an empty string' : Array.isArray(folder) ? 'an empty array' : describeValue(folder);
  throw new Error(
    `pipeline('${task}'): folder: expected a model folder (a path, a URL, File objects or a map of ` +
      `file contents), got ${came}`,
  );
}
