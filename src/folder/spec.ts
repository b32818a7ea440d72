/**
 * What a model folder is (docs/model-folder.md is the prose of this file): the file names, the
 * config.json of each kind, and which kind a config.json describes. Browser-safe: no Node APIs.
 *
 * Four kinds of folder:
 *  - 'seq2seq': a translation model from `qkv train` (config.json format 'qkv-seq2seq');
 *  - 'gpt': a language model from `qkv train-lm` (config.json format 'qkv-gpt');
 *  - 'hf-gpt2': a Hugging Face GPT-2 checkpoint (config.json model_type 'gpt2', as the Hub serves it);
 *  - 'marian': a Hugging Face Marian translation model (model_type 'marian': Helsinki-NLP opus-mt-*);
 *  - 'm2m100': a Hugging Face M2M100 / NLLB translation model (model_type 'm2m_100': facebook/nllb-200-*).
 *  - 'hf-encoder': a Hugging Face encoder (model_type 'bert', 'roberta', 'xlm-roberta', 'distilbert').
 */
import type { GPTConfig } from '../models/gpt-config.ts';
import { isHfConfig } from '../models/hf/gpt2.ts';
import type { Seq2SeqConfig } from '../models/seq2seq.ts';

/**
 * Which kind a folder is, as its config.json says (docs/model-folder.md, "Kinds"): 'seq2seq' (format
 * 'qkv-seq2seq', a translation model from `qkv train`), 'gpt' (format 'qkv-gpt', a language model from
 * `qkv train-lm`), 'hf-gpt2' (model_type 'gpt2' and no format, a Hugging Face GPT-2 checkpoint),
 * 'marian' (model_type 'marian', a Hugging Face Marian / opus-mt translation model), 'hf-encoder' (model_type
 * 'bert', 'roberta', 'xlm-roberta' or 'distilbert': embeddings, fill-mask, classification), 'm2m100' (model_type
 * 'm2m_100', a Hugging Face M2M100 / NLLB-200 translation model).
 * {@link folderKind} tells them apart.
 */
export type FolderKind = 'seq2seq' | 'gpt' | 'hf-gpt2' | 'marian' | 'hf-encoder' | 'm2m100' | 't5';

/** The Hugging Face model_types qkv runs, and their kinds. */
export const HF_MODEL_TYPES: Record<string, 'hf-gpt2' | 'marian' | 'hf-encoder' | 'm2m100' | 't5'> = {
  gpt2: 'hf-gpt2',
  // Today's decoders ride the same kind (a Hugging Face decoder-only language model): models/hf/llama.ts.
  llama: 'hf-gpt2',
  qwen2: 'hf-gpt2',
  mistral: 'hf-gpt2',
  marian: 'marian',
  m2m_100: 'm2m100',
  t5: 't5',
  bert: 'hf-encoder',
  roberta: 'hf-encoder',
  'xlm-roberta': 'hf-encoder',
  distilbert: 'hf-encoder',
};

/** The files a folder may hold, by role. */
export const FILES = {
  /** Every kind: the configuration, whose `format` (or Hugging Face `model_type`) says the folder's kind. */
  config: 'config.json',
  /**
   * The tokenizer, as JSON (every kind; an hf-gpt2 folder may hold vocab.json + merges.txt instead);
   * with separate vocabularies, the source language's.
   */
  tokenizer: 'tokenizer.json',
  /** A translation model with separate vocabularies: the target side's (tokenizer.json is then the source's). */
  targetTokenizer: 'target_tokenizer.json',
  /** Every kind: the weights, state-dict names as PyTorch's (fp32, fp16, bf16 or int8; all load as float32). */
  weights: 'model.safetensors',
  /** Hugging Face GPT-2 without tokenizer.json: the slow tokenizer's two files. */
  vocab: 'vocab.json',
  /** With vocab.json: an optional `#version` line, then one `a b` merge per line. */
  merges: 'merges.txt',
  /** A PyTorch pickle, which qkv does not read (refused with a way to get model.safetensors). */
  pytorchWeights: 'pytorch_model.bin',
  /** A Hugging Face folder's generation defaults (what generate() does with no options); optional. */
  generationConfig: 'generation_config.json',
  /** A Hugging Face folder's tokenizer settings (`add_bos_token`, the special tokens); optional. */
  tokenizerConfig: 'tokenizer_config.json',
  /** A Hugging Face folder's chat template as transformers 5 saves it (over tokenizer_config.json's); optional. */
  chatTemplate: 'chat_template.jinja',
} as const;

/** The target side's tokenizer file of a model with separate vocabularies. */
export const TARGET_TOKENIZER = FILES.targetTokenizer;

/** config.json of a translation model (format 'qkv-seq2seq'). */
export interface ModelConfigFile {
  /** Required: always 'qkv-seq2seq' (any other format is refused, naming it). */
  format: 'qkv-seq2seq';
  /** The file format's version, 1; written by qkv, not checked on reading. */
  version: 1;
  /**
   * Required: the architecture (vocabSize, tgtVocabSize for separate vocabularies, dModel, nhead,
   * layer counts, dimFeedforward, dropouts, activation, normFirst, maxLen, padId; docs/model-folder.md
   * gives each field). Checked before anything is allocated; unknown fields are left alone.
   */
  model: Seq2SeqConfig;
  /** How it was trained (preset and recipe), for `qkv info`. */
  training?: Record<string, unknown>;
  /**
   * The model's decoding defaults, used by translate and eval when --beam/--alpha are not given
   * (else beam 4, α 0.6, the paper's). `qkv eval --split val --tune-alpha …` writes them: the
   * paper chose its α on the development set too.
   */
  decoding?: Decoding;
}

/**
 * A translation model's decoding defaults: config.json's `decoding` section, also what
 * {@link DEFAULT_DECODING} and the pipeline's `decodingFor` give. {@link checkDecoding} checks it.
 */
export interface Decoding {
  /** Beam size, a positive integer (1 = greedy). Required when `decoding` is present. */
  beam: number;
  /** Length penalty α, a finite number ≥ 0 (the paper's 0.6). Required when `decoding` is present. */
  alpha: number;
  /** Minimum Bayes risk among the beam pool instead of its best (`qkv translate --mbr`); absent: off. */
  mbr?: boolean;
  /** How it was chosen, e.g. "val BLEU 33.40 with α 0.6 (tried 0.6, 1, 1.4; α 1.4 scored 33.61, but p 0.2408 …)". */
  chosen?: string;
  /**
   * More models decoded with this one as an ensemble by default (translate and eval; --no-ensemble
   * decodes this one alone): subfolders of this folder, each a model folder with the same tokenizers.
   * `qkv export --ensemble` writes them.
   */
  ensemble?: string[];
}

/** The paper's beam search (§6.1): beam 4, length penalty α 0.6; no MBR. */
export const DEFAULT_DECODING: Decoding = { beam: 4, alpha: 0.6 };

/** config.json of a language model (format 'qkv-gpt'). */
export interface LmConfigFile {
  /** Required: always 'qkv-gpt' (any other format is refused, naming it). */
  format: 'qkv-gpt';
  /** The file format's version, 1; written by qkv, not checked on reading. */
  version: 1;
  /**
   * Required: the architecture (vocabSize, which must equal the tokenizer's, blockSize, nLayer, nHead,
   * nEmbd, dropout, positions; optional activation, default 'gelu', and layerNormEps, default 1e-5).
   */
  model: GPTConfig;
  /** 'char' or 'bpe' as written by train-lm; 'bytelevel': a Hugging Face GPT-2 folder read as one, never written. */
  tokenizer: 'char' | 'bpe' | 'bytelevel';
  /** How it was trained (preset, recipe, data), for reference. */
  training?: Record<string, unknown>;
}

/** The qkv formats and their kinds. */
export const MODEL_FORMATS: Record<string, 'seq2seq' | 'gpt'> = { 'qkv-seq2seq': 'seq2seq', 'qkv-gpt': 'gpt' };

/** The kind of folder a config.json describes; a clear error naming `file` when it is none. */
export function folderKind(configJson: unknown, file: string = FILES.config): FolderKind {
  if (isHfConfig(configJson)) {
    // A Hugging Face folder: GPT-2 (models/hf/gpt2.ts) and Marian (models/hf/marian.ts) are read,
    // other architectures are named before any other file is read.
    const type = (configJson as { model_type: unknown }).model_type;
    if (typeof type === 'string' && Object.hasOwn(HF_MODEL_TYPES, type)) return HF_MODEL_TYPES[type];
    throw new FolderError(
      file,
      `${file}: Hugging Face model_type '${String(type)}' is not supported (qkv reads model_type ` +
        `'gpt2': gpt2, distilgpt2, gpt2-medium, ...; 'llama', 'qwen2', 'mistral'; 'marian': Helsinki-NLP ` +
        `opus-mt-*; 'm2m_100': facebook/nllb-200-*, m2m100_*; 't5': t5-*, flan-t5-*; 'bert', 'roberta', ` +
        `'xlm-roberta', 'distilbert': encoders; and its own ` +
        `formats 'qkv-seq2seq' and 'qkv-gpt')`,
    );
  }
  const format =
    configJson !== null && typeof configJson === 'object' ? (configJson as { format?: unknown }).format : undefined;
  const kind = typeof format === 'string' && Object.hasOwn(MODEL_FORMATS, format) ? MODEL_FORMATS[format] : undefined;
  if (!kind) {
    const got =
      configJson === null || typeof configJson !== 'object'
        ? `not a JSON object (${configJson === null ? 'null' : typeof configJson})`
        : `format '${String(format)}'`;
    throw new FolderError(
      file,
      `${file}: expected format 'qkv-seq2seq' (a translation model from qkv ` +
        `train) or 'qkv-gpt' (a language model from qkv train-lm), got ${got}`,
    );
  }
  return kind;
}

/** Each kind in words, for messages: a folder of one kind given where another is wanted. */
export const KIND_NAMES: Record<FolderKind, string> = {
  seq2seq: "a translation model (format 'qkv-seq2seq')",
  gpt: "a qkv language model (format 'qkv-gpt')",
  'hf-gpt2': "a Hugging Face GPT-2 model (model_type 'gpt2')",
  marian: "a Hugging Face Marian translation model (model_type 'marian')",
  m2m100: "a Hugging Face M2M100 / NLLB translation model (model_type 'm2m_100')",
  t5: "a Hugging Face T5 / Flan-T5 model (model_type 't5')",
  'hf-encoder': "a Hugging Face encoder (model_type 'bert', 'roberta', 'xlm-roberta' or 'distilbert')",
};

/** The format a qkv kind's config.json names. */
export const KIND_FORMATS = {
  /** A translation model's. */
  seq2seq: 'qkv-seq2seq',
  /** A language model's. */
  gpt: 'qkv-gpt',
} as const;

/**
 * Check that a config.json names `format` and has a 'model' section; `cname` is how config.json is named in messages.
 */
export function checkFormat(config: unknown, format: 'qkv-seq2seq' | 'qkv-gpt', cname: string): void {
  const c = config as { format?: unknown; model?: unknown } | null;
  if (c === null || typeof c !== 'object' || c.format !== format || !c.model)
    throw new FolderError(
      FILES.config,
      `${cname}: expected format '${format}' with a 'model' section, got format '${String(c?.format)}'`,
    );
}

/** A folder that cannot be opened as it is; `file` names the file at fault (as the message does). */
export class FolderError extends Error {
  /**
   * The file at fault: mostly its name in the folder ('config.json', 'model.safetensors'); from
   * {@link folderKind} and {@link checkDecoding}, the `file` they were given (the loaders pass
   * config.json as the source names it: its path, URL or bare name; folderKind's default is 'config.json').
   */
  readonly file: string;
  constructor(file: string, message: string) {
    super(message);
    this.file = file;
  }
}

/**
 * How a file is named in messages: its path on disk (Node), its URL (fetched), or its name
 * (picked files, contents in memory).
 */
export type FileNamer = (file: string) => string;

/**
 * The default {@link FileNamer}: a file is named by its bare name in the folder ('config.json'), as for contents in
 * memory.
 */
export const bareNames: FileNamer = (file) => file;

/** What each JSON file holds, for messages: `model config not found: runs/x/config.json`. */
export const JSON_ROLES: Record<string, string> = {
  'config.json': 'model config',
  'tokenizer.json': 'tokenizer',
  'target_tokenizer.json': 'target tokenizer',
  'vocab.json': 'vocabulary',
};

/** A JSON file's contents; `label` is how the file is named (its path), a FolderError when it is not JSON. */
export function parseJsonText(text: string, file: string, label: string = file): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new FolderError(file, `${JSON_ROLES[file] ?? file} is not valid JSON: ${label} (${(e as Error).message})`);
  }
}

/** A relative path that stays inside the folder: no absolute path, no '..', no empty or '.' part. */
export function isSubfolder(p: unknown): p is string {
  if (typeof p !== 'string' || p === '' || p.startsWith('/') || /^[A-Za-z]:/.test(p) || p.includes('\\')) return false;
  return p.split('/').every((part) => part !== '' && part !== '.' && part !== '..');
}

function isMemberList(x: unknown): x is string[] {
  return Array.isArray(x) && x.length > 0 && x.every(isSubfolder) && new Set(x).size === x.length;
}

/** Check a translation config.json's `decoding` section (absent is fine); `file` names config.json. */
export function checkDecoding(d: unknown, file: string): void {
  if (d === undefined) return;
  const o = d as Decoding | null;
  if (
    o === null ||
    typeof o !== 'object' ||
    !Number.isInteger(o.beam) ||
    o.beam < 1 ||
    typeof o.alpha !== 'number' ||
    !Number.isFinite(o.alpha) ||
    o.alpha < 0
  ) {
    throw new FolderError(
      file,
      `${file}: 'decoding' must be {"beam": a positive integer, "alpha": a number >= 0}, got ${JSON.stringify(d)}`,
    );
  }
  if (o.mbr !== undefined && typeof o.mbr !== 'boolean') {
    throw new FolderError(file, `${file}: 'decoding.mbr' must be true or false, got ${JSON.stringify(o.mbr)}`);
  }
  if (o.ensemble !== undefined && !isMemberList(o.ensemble)) {
    throw new FolderError(
      file,
      `${file}: 'decoding.ensemble' must be a non-empty list of distinct ` +
        `subfolders of the model folder (e.g. ["member-2"]), got ` +
        `${JSON.stringify(o.ensemble)}`,
    );
  }
}
