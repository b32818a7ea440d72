/**
 * A Hugging Face encoder folder (config.json model_type 'bert', 'roberta', 'xlm-roberta' or 'distilbert', as
 * the Hub serves it) from its files' contents: config.json; tokenizer.json, else vocab.txt (a BERT folder of
 * the slow tokenizer's time) with tokenizer_config.json; a sentence-transformers layout where there is one
 * (modules.json, 1_Pooling/config.json, sentence_bert_config.json), which says how sentence embeddings are
 * pooled; and the weights, model.safetensors or else pytorch_model.bin. Browser-safe. The tokenizer is checked
 * before any weight is read; errors name the file and what was expected.
 */
import { readPytorch } from '../io/pytorch.ts';
import { readSafetensors } from '../io/safetensors.ts';
import { Encoder } from '../models/encoder.ts';
import {
  encoderConfigFromHf,
  encoderStateDict,
  hasPooler,
  type HeadKind,
  type HfEncoderConfig,
} from '../models/hf/bert.ts';
import { withoutInit } from '../nn/init.ts';
import { HfTokenizer } from '../text/hf-tokenizer.ts';
import { notFound } from './seq2seq.ts';
import { readBytes, readJson, readText, type FolderSource, type Steps } from './source.ts';
import { bareNames, FILES, FolderError, type FileNamer } from './spec.ts';

/** The files of an encoder folder beyond config.json and the weights. */
export const ENCODER_FILES = {
  /** BERT's vocabulary, one token a line (read where tokenizer.json is absent). */
  vocabTxt: 'vocab.txt',
  /** The tokenizer's options (do_lower_case, special tokens, model_max_length). */
  tokenizerConfig: 'tokenizer_config.json',
  /** sentence-transformers: the modules a sentence goes through (Transformer, Pooling, Normalize). */
  modules: 'modules.json',
  /** sentence-transformers: the Pooling module's config (its usual path). */
  pooling: '1_Pooling/config.json',
  /** sentence-transformers: the Transformer module's max_seq_length. */
  sentenceBert: 'sentence_bert_config.json',
} as const;

/** How a sentence embedding is pooled from the token states. */
export type Pooling = 'mean' | 'cls' | 'none';

/** What a folder says about sentence embeddings (sentence-transformers' modules), else transformers.js's defaults. */
export interface EmbeddingDefaults {
  /** 1_Pooling/config.json's mode ('mean' or 'cls'); 'none' without modules.json. */
  pooling: Pooling;
  /** modules.json holds a Normalize module. */
  normalize: boolean;
  /** Where these came from, for `qkv info` and messages. */
  from: 'modules.json' | 'default';
}

/** An encoder folder's files but the weights: JSON parsed, text as text; undefined where the folder lacks one. */
export interface EncoderFiles {
  config: unknown;
  tokenizer?: unknown;
  vocabTxt?: string;
  tokenizerConfig?: unknown;
  modules?: unknown;
  pooling?: unknown;
  sentenceBert?: unknown;
}

/** What {@link encoderShape} checks before any weight is read. */
export interface EncoderShape {
  /** config.json in qkv's terms, with the head asked for. */
  hf: HfEncoderConfig;
  /** The folder's tokenizer. */
  tokenizer: HfTokenizer;
  /** The longest input in tokens, special tokens included: the least of the model's positions, */
  /** sentence_bert_config.json's max_seq_length and tokenizer_config.json's model_max_length. */
  maxTokens: number;
  /** How sentence embeddings are pooled by default. */
  embedding: EmbeddingDefaults;
  /** config.json as read. */
  config: Record<string, unknown>;
}

/** An encoder folder as loaded: the model (eval mode) and what its shape says. */
export interface LoadedEncoder extends EncoderShape {
  /** qkv's Encoder with the family's switches, weights loaded, eval mode. */
  model: Encoder;
  /** The weights file read (model.safetensors or pytorch_model.bin). */
  weightsFile: string;
}

function poolingDefaults(files: EncoderFiles, name: FileNamer): EmbeddingDefaults {
  if (files.modules === undefined) return { pooling: 'none', normalize: false, from: 'default' };
  const mods = files.modules;
  const bad = (why: string) => new FolderError(ENCODER_FILES.modules, `${name(ENCODER_FILES.modules)}: ${why}`);
  if (!Array.isArray(mods)) throw bad('expected a list of modules');
  const types = mods.map((m) => (m !== null && typeof m === 'object' ? String((m as { type?: unknown }).type) : ''));
  const normalize = types.some((t) => t.endsWith('.Normalize'));
  const poolingModule = mods.find((_m, i) => types[i].endsWith('.Pooling')) as { path?: unknown } | undefined;
  if (!poolingModule) return { pooling: 'none', normalize, from: 'modules.json' };
  if (poolingModule.path !== '1_Pooling')
    throw bad(`the Pooling module's path ${JSON.stringify(poolingModule.path)} is not 1_Pooling (qkv reads that one)`);
  const p = files.pooling as Record<string, unknown> | undefined;
  if (p === undefined || p === null || typeof p !== 'object') throw notFound(ENCODER_FILES.pooling, name);
  const modes = Object.entries(p)
    .filter(([k, v]) => k.startsWith('pooling_mode_') && v === true)
    .map(([k]) => k.slice('pooling_mode_'.length));
  const pooling =
    modes.length === 1 && modes[0] === 'mean_tokens'
      ? 'mean'
      : modes.length === 1 && modes[0] === 'cls_token'
        ? 'cls'
        : null;
  if (!pooling)
    throw new FolderError(
      ENCODER_FILES.pooling,
      `${name(ENCODER_FILES.pooling)}: pooling ${modes.join(' + ') || 'none'} is not supported ` +
        '(qkv pools mean_tokens or cls_token)',
    );
  return { pooling, normalize, from: 'modules.json' };
}

/** A positive integer below 1e9 (tokenizer_config.json's "no limit" is 1e30), else undefined. */
function sane(v: unknown): number | undefined {
  return Number.isInteger(v) && (v as number) > 0 && (v as number) < 1e9 ? (v as number) : undefined;
}

/** The tokenizer and config of an encoder folder, checked against each other (no weights read). */
export function encoderShape(files: EncoderFiles, name: FileNamer = bareNames, head: HeadKind = 'auto'): EncoderShape {
  const cname = name(FILES.config);
  if (files.config === undefined) throw notFound(FILES.config, name);
  let hf: HfEncoderConfig;
  try {
    hf = encoderConfigFromHf(files.config, head);
  } catch (e) {
    throw new FolderError(FILES.config, `${cname}: ${(e as Error).message.replace(/^config\.json: /, '')}`);
  }
  let tokenizer: HfTokenizer;
  const file = files.tokenizer !== undefined ? FILES.tokenizer : ENCODER_FILES.vocabTxt;
  if (files.tokenizer === undefined && files.vocabTxt === undefined)
    throw new FolderError(
      FILES.tokenizer,
      `tokenizer not found: ${name(FILES.tokenizer)} (nor ${ENCODER_FILES.vocabTxt}: an encoder folder holds one)`,
    );
  try {
    tokenizer =
      files.tokenizer !== undefined
        ? HfTokenizer.fromJSON(files.tokenizer)
        : HfTokenizer.fromVocabTxt(files.vocabTxt!, files.tokenizerConfig ?? null);
  } catch (e) {
    throw new FolderError(
      file,
      `${name(file)}: ${(e as Error).message.replace(/^(tokenizer\.json|vocab\.txt): /, '')}`,
    );
  }
  if (tokenizer.vocabSize > hf.model.vocabSize)
    throw new FolderError(
      FILES.config,
      `${cname}: vocab_size is ${hf.model.vocabSize}, but the tokenizer's (${name(file)}) has ` +
        `${tokenizer.vocabSize} ids`,
    );
  const tc = (files.tokenizerConfig ?? {}) as Record<string, unknown>;
  const sb = (files.sentenceBert ?? {}) as Record<string, unknown>;
  const limits = [hf.maxTokens, sane(sb.max_seq_length), sane(tc.model_max_length)].filter((x) => x !== undefined);
  return {
    hf,
    tokenizer,
    maxTokens: Math.min(...limits),
    embedding: poolingDefaults(files, name),
    config: files.config as Record<string, unknown>,
  };
}

/** An encoder folder's weights file: its name and bytes. */
export interface EncoderWeights {
  file: string;
  bytes: Uint8Array;
}

/** The model of a checked shape with its weights (undefined: the folder has neither weights file), eval mode. */
export function loadEncoder(
  shape: EncoderShape,
  w: EncoderWeights | undefined,
  name: FileNamer = bareNames,
): LoadedEncoder {
  if (w === undefined)
    throw notFound(FILES.weights, name, ` (nor ${FILES.pytorchWeights}: an encoder folder holds one of them)`);
  let model: Encoder;
  try {
    const { tensors } = w.file === FILES.pytorchWeights ? readPytorch(w.bytes, name(w.file)) : readSafetensors(w.bytes);
    const config = structuredClone(shape.hf.model);
    if (config.head.kind === 'none') config.head.pooler = hasPooler(Object.keys(tensors), shape.hf.family);
    model = withoutInit(() => new Encoder(config)); // loaded next: no random initialisation
    model.loadStateDict(encoderStateDict(tensors, shape.hf.family, config));
  } catch (e) {
    const msg = (e as Error).message;
    throw new FolderError(w.file, msg.startsWith(name(w.file)) ? msg : `${name(w.file)}: ${msg}`);
  }
  model.eval();
  return { ...shape, model, weightsFile: w.file };
}

/** An encoder folder's shape read through `src` (config.json given): tokenizer, pooling, no weight. */
export function* encoderShapeSteps(src: FolderSource, config: unknown, head: HeadKind): Steps<EncoderShape> {
  const tokenizer = yield* readJson(src, FILES.tokenizer);
  const modules = yield* readJson(src, ENCODER_FILES.modules);
  return encoderShape(
    {
      config,
      tokenizer,
      vocabTxt: tokenizer === undefined ? yield* readText(src, ENCODER_FILES.vocabTxt) : undefined,
      tokenizerConfig: yield* readJson(src, ENCODER_FILES.tokenizerConfig),
      modules,
      pooling: modules === undefined ? undefined : yield* readJson(src, ENCODER_FILES.pooling),
      sentenceBert: yield* readJson(src, ENCODER_FILES.sentenceBert),
    },
    src.name,
    head,
  );
}

/** An encoder folder: its tokenizer checked, then model.safetensors, else pytorch_model.bin. */
export function* encoderSteps(src: FolderSource, config: unknown, head: HeadKind): Steps<LoadedEncoder> {
  const shape = yield* encoderShapeSteps(src, config, head);
  let weights: EncoderWeights | undefined;
  for (const file of [FILES.weights, FILES.pytorchWeights]) {
    const bytes = yield* readBytes(src, file);
    if (bytes !== undefined) {
      weights = { file, bytes };
      break;
    }
  }
  return loadEncoder(shape, weights, src.name);
}
