/**
 * A translation model folder (format 'qkv-seq2seq') from its files' contents: config.json,
 * tokenizer.json, target_tokenizer.json (separate vocabularies only) and model.safetensors.
 * Browser-safe. Errors name the file (as `name` spells it: a path, a URL, a bare name) and what
 * was expected.
 */
import { readSafetensors } from '../io/safetensors.ts';
import { checkSeq2SeqConfig, checkVocabularies } from '../models/config-check.ts';
import { loadWeights, SEQ2SEQ_FIELDS } from '../models/load-weights.ts';
import { Seq2Seq } from '../models/seq2seq.ts';
import { BpeTokenizer } from '../text/bpe.ts';
import {
  bareNames,
  checkDecoding,
  FILES,
  FolderError,
  JSON_ROLES,
  type FileNamer,
  type ModelConfigFile,
} from './spec.ts';

/** A translation folder's files: parsed JSON, weights as bytes; undefined where the folder lacks the file. */
export interface Seq2SeqFiles {
  /** config.json, parsed (a {@link ModelConfigFile} once checked); undefined: `model config not found`. */
  config: unknown;
  /**
   * tokenizer.json, parsed: a BPE tokenizer.json (the shared vocabulary, or the source's); undefined: `tokenizer not
   * found`.
   */
  tokenizer: unknown;
  /**
   * target_tokenizer.json, parsed: required when config.json has `model.tgtVocabSize` (separate
   * vocabularies), refused (a FolderError naming it) when it has not; leave it undefined then.
   */
  targetTokenizer?: unknown;
  /**
   * The bytes of model.safetensors, or a function that reads them (called after the config and tokenizers are checked).
   */
  weights?: Weights;
}

/** Weights as bytes, or read on demand: undefined when the folder lacks the file. */
export type Weights = Uint8Array | (() => Uint8Array | undefined);

/** The bytes of `w`: `w` itself, or what calling it reads (undefined when the folder lacks the file). */
export function weightsOf(w: Weights | undefined): Uint8Array | undefined {
  return typeof w === 'function' ? w() : w;
}

/** A translation folder as loaded: the model, its tokenizers and its config.json. */
export interface LoadedModel {
  /**
   * The encoder-decoder Transformer config.json's `model` describes: weights loaded and in eval mode
   * from {@link seq2seqFromFiles}, randomly initialised and in training mode from {@link seq2seqShape}.
   */
  model: Seq2Seq;
  /** Encodes the source: the shared tokenizer, or with separate vocabularies the source's. */
  tokenizer: BpeTokenizer;
  /** Decodes (and encodes) the target: the same object as `tokenizer` unless the vocabularies are separate. */
  targetTokenizer: BpeTokenizer;
  /** The folder's config.json as read (checked: format, model, decoding), the object it parsed to. */
  config: ModelConfigFile;
}

/** `file` is missing: `tokenizer not found: runs/x/tokenizer.json`. */
export function notFound(file: string, name: FileNamer, why = ''): FolderError {
  const role = file === FILES.weights ? 'model weights' : (JSON_ROLES[file] ?? 'file');
  return new FolderError(file, `${role} not found: ${name(file)}${why}`);
}

function bpe(json: unknown, file: string, name: FileNamer): BpeTokenizer {
  if (json === undefined) throw notFound(file, name);
  try {
    return BpeTokenizer.fromJSON(json);
  } catch (e) {
    throw new FolderError(file, `${name(file)}: ${(e as Error).message}`);
  }
}

/** The model (randomly initialised, training mode) and tokenizers a translation folder describes. */
export function seq2seqShape(files: Omit<Seq2SeqFiles, 'weights'>, name: FileNamer = bareNames): LoadedModel {
  const cname = name(FILES.config);
  if (files.config === undefined) throw notFound(FILES.config, name);
  const config = files.config as ModelConfigFile;
  if (config === null || typeof config !== 'object' || config.format !== 'qkv-seq2seq' || !config.model) {
    throw new FolderError(
      FILES.config,
      `${cname}: expected format 'qkv-seq2seq' with a 'model' section, got format '${String(config?.format)}'`,
    );
  }
  checkDecoding(config.decoding, cname);
  const tokenizer = bpe(files.tokenizer, FILES.tokenizer, name);
  try {
    checkSeq2SeqConfig(config.model);
  } catch (e) {
    throw new FolderError(FILES.config, `${cname}: ${(e as Error).message}`);
  }
  const separate = config.model.tgtVocabSize !== undefined;
  const tname = name(FILES.targetTokenizer);
  if (!separate && files.targetTokenizer !== undefined) {
    throw new FolderError(
      FILES.targetTokenizer,
      `${tname}: a target tokenizer, but ${cname} describes a model with one shared vocabulary (no model.tgtVocabSize)`,
    );
  }
  if (separate && files.targetTokenizer === undefined) {
    throw notFound(
      FILES.targetTokenizer,
      name,
      ` (${cname} describes a model with separate source and target vocabularies: model.tgtVocabSize)`,
    );
  }
  const targetTokenizer = separate ? bpe(files.targetTokenizer, FILES.targetTokenizer, name) : tokenizer;
  const disagree = checkVocabularies(config.model, tokenizer, targetTokenizer, {
    src: name(FILES.tokenizer),
    tgt: tname,
    config: FILES.config,
  });
  if (disagree) throw new FolderError(FILES.config, disagree);
  return { model: new Seq2Seq(config.model), tokenizer, targetTokenizer, config };
}

/** A translation folder's model, weights loaded (fp32, fp16 or int8 safetensors), in eval mode. */
export function seq2seqFromFiles(
  files: Seq2SeqFiles,
  name: FileNamer = bareNames,
  weightsFile: string = FILES.weights,
): LoadedModel {
  const loaded = seq2seqShape(files, name);
  const weights = weightsOf(files.weights);
  if (weights === undefined) throw notFound(weightsFile, name);
  loadInto(loaded.model, weights, loaded.config.model, SEQ2SEQ_FIELDS, name(weightsFile), weightsFile);
  loaded.model.eval();
  return loaded;
}

/** Read safetensors bytes into a model built from `config`, errors naming the weights file. */
export function loadInto(
  model: Parameters<typeof loadWeights>[0],
  bytes: Uint8Array,
  config: object,
  rules: Parameters<typeof loadWeights>[3],
  label: string,
  file: string,
): void {
  try {
    // Bytes kept as bytes: quantized weights load as they are stored (models/load-weights.ts).
    loadWeights(model, readSafetensors(bytes, { bytes: true }).tensors, config, rules);
  } catch (e) {
    throw new FolderError(file, `${label}: ${(e as Error).message}`);
  }
}
