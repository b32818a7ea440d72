/**
 * A translation model folder (format 'qkv-seq2seq') from its files' contents: config.json,
 * tokenizer.json, target_tokenizer.json (separate vocabularies only) and model.safetensors, checked
 * (the door, ./open.ts, reads them); an ensemble's members checked to share the tokenizers.
 * Browser-safe. Errors name the file (as `name` spells it: a path, a URL, a bare name) and what
 * was expected.
 */
import { readSafetensors } from '../io/safetensors.ts';
import { checkSeq2SeqConfig, checkVocabularies } from '../models/config-check.ts';
import { loadWeights } from '../models/load-weights.ts';
import { Seq2Seq } from '../models/seq2seq.ts';
import { withoutInit } from '../nn/init.ts';
import { BpeTokenizer } from '../text/bpe.ts';
import {
  bareNames,
  checkDecoding,
  checkFormat,
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
  /** The bytes of model.safetensors (read after the config and tokenizers are checked). */
  weights?: Uint8Array;
}

/** A translation folder as loaded: the model, its tokenizers and its config.json. */
export interface LoadedModel {
  /**
   * The encoder-decoder Transformer config.json's `model` describes: weights loaded and in eval mode
   * from the folder door (./open.ts), randomly initialised and in training mode from {@link seq2seqShape}.
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
  checkFormat(files.config, 'qkv-seq2seq', cname);
  const config = files.config as ModelConfigFile;
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
  // Built without random initialisation: its weights are loaded next (loadInto), and so never written twice.
  return { model: withoutInit(() => new Seq2Seq(config.model)), tokenizer, targetTokenizer, config };
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

/** One ensemble member as loaded, and how messages name it. */
export interface MemberCheck {
  /** How messages name the member, e.g. `runs/x/config.json decoding.ensemble member member-2` or `--ensemble DIR`. */
  what: string;
  /** The member's folder, loaded. */
  loaded: LoadedModel;
}

function sameTokenizer(a: BpeTokenizer, b: BpeTokenizer): boolean {
  return JSON.stringify(a.toJSON()) === JSON.stringify(b.toJSON());
}

/**
 * The ensemble's models, the folder's own first, after checking each member tokenizes as the
 * folder does (identical tokenizer.json, and target_tokenizer.json if any): an ensemble averages
 * next-token probabilities over one target vocabulary, fed the same source ids.
 */
export function checkEnsemble(first: LoadedModel, members: readonly MemberCheck[], dir: string): Seq2Seq[] {
  const out = [first.model];
  const sharedFirst = first.targetTokenizer === first.tokenizer;
  for (const { what, loaded: m } of members) {
    if (m.config.decoding?.ensemble)
      throw new FolderError(
        FILES.config,
        `${what}: its config.json names an ensemble of its own (decoding.ensemble); members must be single models`,
      );
    const shared = m.targetTokenizer === m.tokenizer;
    if (shared !== sharedFirst) {
      throw new FolderError(
        FILES.config,
        `${what}: ` +
          `${shared ? 'one shared vocabulary' : 'separate vocabularies'}, but ` +
          `--model ${dir} has ` +
          `${sharedFirst ? 'one shared vocabulary' : 'separate vocabularies'}: ` +
          `ensemble members must share their tokenizers`,
      );
    }
    if (!sameTokenizer(m.tokenizer, first.tokenizer))
      throw new FolderError(
        FILES.tokenizer,
        `${what}: its tokenizer.json differs from --model ${dir}'s: ensemble members must share their tokenizers`,
      );
    if (!sameTokenizer(m.targetTokenizer, first.targetTokenizer))
      throw new FolderError(
        FILES.targetTokenizer,
        `${what}: its ${FILES.targetTokenizer} differs from --model ${dir}'s: ` +
          `ensemble members must share their tokenizers`,
      );
    out.push(m.model);
  }
  return out;
}
