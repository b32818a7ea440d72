/**
 * A Hugging Face Marian folder (Helsinki-NLP opus-mt-*, config.json model_type 'marian') from its
 * files' contents: config.json, generation_config.json (optional), source.spm, target.spm, vocab.json,
 * tokenizer_config.json (optional), and the weights, model.safetensors or else pytorch_model.bin (read
 * by io/pytorch.ts's restricted unpickler). Browser-safe. The tokenizer is checked before any weight is
 * read; errors name the file and what was expected.
 */
import { readPytorch } from '../io/pytorch.ts';
import { readSafetensors } from '../io/safetensors.ts';
import {
  checkGenerationIds,
  hfGeneration,
  marianConfigFromHf,
  marianStateDict,
  type HfGeneration,
  type MarianIds,
} from '../models/hf/marian.ts';
import { Seq2Seq, type Seq2SeqConfig } from '../models/seq2seq.ts';
import { withoutInit } from '../nn/init.ts';
import { MarianTokenizer } from '../text/marian-tokenizer.ts';
import { notFound } from './seq2seq.ts';
import { bareNames, FILES, FolderError, type FileNamer } from './spec.ts';

/** The files of a Marian folder beyond config.json. */
export const MARIAN_FILES = {
  /** Hugging Face's decoding defaults (optional; config.json's keys where absent). */
  generationConfig: 'generation_config.json',
  /** The source side's SentencePiece model. */
  sourceSpm: 'source.spm',
  /** The target side's SentencePiece model. */
  targetSpm: 'target.spm',
  /** Piece → id, one table for both sides. */
  vocab: 'vocab.json',
  /** The target side's own table (tokenizer_config.json `separate_vocabs` only). */
  targetVocab: 'target_vocab.json',
  /** The tokenizer's options (special tokens, languages, separate_vocabs). */
  tokenizerConfig: 'tokenizer_config.json',
} as const;

/** A Marian folder's files but the weights: JSON parsed, the rest as bytes; undefined where the folder lacks one. */
export interface MarianFiles {
  /** config.json, parsed. */
  config: unknown;
  /** generation_config.json, parsed (HF's defaults; config.json's keys where absent). */
  generationConfig?: unknown;
  /** tokenizer_config.json, parsed. */
  tokenizerConfig?: unknown;
  /** vocab.json, parsed. */
  vocab: unknown;
  /** target_vocab.json, parsed (separate_vocabs only). */
  targetVocab?: unknown;
  /** source.spm's bytes. */
  sourceSpm: Uint8Array | undefined;
  /** target.spm's bytes. */
  targetSpm: Uint8Array | undefined;
}

/** A Marian folder's weights file: its name (model.safetensors or pytorch_model.bin) and bytes. */
export interface MarianWeights {
  /** model.safetensors or pytorch_model.bin. */
  file: string;
  /** The file's bytes. */
  bytes: Uint8Array;
}

/** What {@link marianShape} checks and builds before any weight is read. */
export type MarianShape = Omit<LoadedMarian, 'model' | 'weightsFile'> & {
  /** The Seq2Seq config the model is built from. */
  modelConfig: Seq2SeqConfig;
};

/** A Marian folder as loaded: the model (eval mode), its tokenizer, ids and generation defaults. */
export interface LoadedMarian {
  /** qkv's Seq2Seq with Marian's switches, weights loaded, eval mode. */
  model: Seq2Seq;
  /** HF's MarianTokenizer (source.spm, target.spm, vocab.json). */
  tokenizer: MarianTokenizer;
  /** config.json as read. */
  config: Record<string, unknown>;
  /** The padding, EOS and decoder start ids. */
  ids: MarianIds;
  /** How HF's generate() decodes it by default (generation_config.json, else config.json). */
  generation: HfGeneration;
  /** The weights file read (model.safetensors or pytorch_model.bin). */
  weightsFile: string;
}

/** The tokenizer and config of a Marian folder, checked against each other (no weights read). */
export function marianShape(files: MarianFiles, name: FileNamer = bareNames): MarianShape {
  const cname = name(FILES.config);
  if (files.config === undefined) throw notFound(FILES.config, name);
  let parsed: ReturnType<typeof marianConfigFromHf>;
  try {
    parsed = marianConfigFromHf(files.config);
  } catch (e) {
    throw new FolderError(FILES.config, `${cname}: ${(e as Error).message.replace(/^config\.json: /, '')}`);
  }
  let generation: HfGeneration;
  try {
    generation = hfGeneration(files.config, files.generationConfig, FILES.config);
    checkGenerationIds(generation, parsed.ids, FILES.config);
  } catch (e) {
    const file = files.generationConfig !== undefined ? MARIAN_FILES.generationConfig : FILES.config;
    throw new FolderError(file, `${name(file)}: ${(e as Error).message.replace(/^[a-z_]+\.json: /, '')}`);
  }
  for (const f of [MARIAN_FILES.sourceSpm, MARIAN_FILES.targetSpm] as const) {
    if ((f === MARIAN_FILES.sourceSpm ? files.sourceSpm : files.targetSpm) === undefined)
      throw new FolderError(
        f,
        `SentencePiece model not found: ${name(f)} (a Marian folder holds source.spm and target.spm)`,
      );
  }
  if (files.vocab === undefined) throw notFound(MARIAN_FILES.vocab, name);
  let tokenizer: MarianTokenizer;
  try {
    tokenizer = MarianTokenizer.fromFiles({
      sourceSpm: files.sourceSpm!,
      targetSpm: files.targetSpm!,
      vocab: files.vocab as Record<string, number>,
      targetVocab: files.targetVocab as Record<string, number> | undefined,
      tokenizerConfig: (files.tokenizerConfig ?? null) as Record<string, unknown> | null,
    });
  } catch (e) {
    throw new FolderError(MARIAN_FILES.vocab, `${name(MARIAN_FILES.vocab)}: ${(e as Error).message}`);
  }
  const { model, ids } = parsed;
  const disagree = (what: string, a: number, b: number): FolderError =>
    new FolderError(FILES.config, `${cname}: ${what} ${a}, but the tokenizer's (${name(MARIAN_FILES.vocab)}) is ${b}`);
  if (tokenizer.vocabSize > model.vocabSize) throw disagree('vocab_size is', model.vocabSize, tokenizer.vocabSize);
  if (tokenizer.padId !== ids.padId) throw disagree('pad_token_id is', ids.padId, tokenizer.padId);
  if (tokenizer.eosId !== ids.eosId) throw disagree('eos_token_id is', ids.eosId, tokenizer.eosId);
  return { tokenizer, config: files.config as Record<string, unknown>, ids, generation, modelConfig: model };
}

/** The model of a checked shape with its weights (undefined: the folder has neither weights file), eval mode. */
export function loadMarian(
  shape: MarianShape,
  w: MarianWeights | undefined,
  name: FileNamer = bareNames,
): LoadedMarian {
  if (w === undefined)
    throw notFound(FILES.weights, name, ` (nor ${FILES.pytorchWeights}: a Marian folder holds one of them)`);
  const model = withoutInit(() => new Seq2Seq(shape.modelConfig)); // loaded next: no random initialisation
  try {
    const { tensors } = w.file === FILES.pytorchWeights ? readPytorch(w.bytes, name(w.file)) : readSafetensors(w.bytes);
    model.loadStateDict(marianStateDict(tensors, shape.modelConfig));
  } catch (e) {
    const msg = (e as Error).message;
    throw new FolderError(w.file, msg.startsWith(name(w.file)) ? msg : `${name(w.file)}: ${msg}`);
  }
  model.eval();
  const { modelConfig: _, ...rest } = shape;
  return { ...rest, model, weightsFile: w.file };
}
