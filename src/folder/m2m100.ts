/**
 * A Hugging Face M2M100 / NLLB folder (config.json model_type 'm2m_100': facebook/nllb-200-*) from its files'
 * contents: config.json, generation_config.json (optional), tokenizer.json with tokenizer_config.json (NLLB's
 * tokenizer: text/nllb-tokenizer.ts), and the weights, model.safetensors or else pytorch_model.bin. Browser-safe.
 * The tokenizer is checked before any weight is read; errors name the file and what was expected.
 */
import { readPytorch } from '../io/pytorch.ts';
import { readSafetensors } from '../io/safetensors.ts';
import { m2m100ConfigFromHf, m2m100StateDict } from '../models/hf/m2m100.ts';
import type { MarianIds } from '../models/hf/marian.ts';
import { checkGenerationIds, hfSeq2SeqGeneration, type HfGeneration } from '../models/hf/seq2seq-generation.ts';
import { Seq2Seq, type Seq2SeqConfig } from '../models/seq2seq.ts';
import { withoutInit } from '../nn/init.ts';
import { NllbTokenizer } from '../text/nllb-tokenizer.ts';
import type { MarianWeights } from './marian.ts';
import { notFound } from './seq2seq.ts';
import { readBytes, readJson, type FolderSource, type Steps } from './source.ts';
import { bareNames, FILES, FolderError, type FileNamer } from './spec.ts';

/** An M2M100 folder's files but the weights, parsed; undefined where the folder lacks one. */
export interface M2M100Files {
  config: unknown;
  generationConfig?: unknown;
  tokenizer: unknown;
  tokenizerConfig?: unknown;
}

/** What {@link m2m100Shape} checks and builds before any weight is read. */
export type M2M100Shape = Omit<LoadedM2M100, 'model' | 'weightsFile'> & {
  /** The Seq2Seq config the model is built from. */
  modelConfig: Seq2SeqConfig;
};

/** An M2M100 / NLLB folder as loaded: the model (eval mode), its tokenizer, ids and generation defaults. */
export interface LoadedM2M100 {
  /** qkv's Seq2Seq with M2M100's switches, weights loaded, eval mode. */
  model: Seq2Seq;
  /** NLLB's tokenizer (tokenizer.json, tokenizer_config.json). */
  tokenizer: NllbTokenizer;
  /** config.json as read. */
  config: Record<string, unknown>;
  /** The padding, EOS and decoder start ids. */
  ids: MarianIds;
  /** How HF's generate() decodes it by default (generation_config.json, else config.json). */
  generation: HfGeneration;
  /** The weights file read. */
  weightsFile: string;
}

/** The tokenizer and config of an M2M100 folder, checked against each other (no weights read). */
export function m2m100Shape(files: M2M100Files, name: FileNamer = bareNames): M2M100Shape {
  const cname = name(FILES.config);
  if (files.config === undefined) throw notFound(FILES.config, name);
  let parsed: ReturnType<typeof m2m100ConfigFromHf>;
  try {
    parsed = m2m100ConfigFromHf(files.config);
  } catch (e) {
    throw new FolderError(FILES.config, `${cname}: ${(e as Error).message.replace(/^config\.json: /, '')}`);
  }
  let generation: HfGeneration;
  try {
    generation = hfSeq2SeqGeneration(files.config, files.generationConfig, FILES.config);
    checkGenerationIds(generation, parsed.ids, FILES.config);
  } catch (e) {
    const file = files.generationConfig !== undefined ? FILES.generationConfig : FILES.config;
    throw new FolderError(file, `${name(file)}: ${(e as Error).message.replace(/^[a-z_]+\.json: /, '')}`);
  }
  if (files.tokenizer === undefined)
    throw notFound(
      FILES.tokenizer,
      name,
      ' (an NLLB / M2M100 folder holds tokenizer.json; sentencepiece.bpe.model alone is not read)',
    );
  let tokenizer: NllbTokenizer;
  try {
    tokenizer = new NllbTokenizer(files.tokenizer, (files.tokenizerConfig ?? null) as Record<string, unknown> | null);
  } catch (e) {
    throw new FolderError(
      FILES.tokenizer,
      `${name(FILES.tokenizer)}: ${(e as Error).message.replace(/^the tokenizer JSON: /, '')}`,
    );
  }
  const { model, ids } = parsed;
  const disagree = (what: string, a: number, b: number): FolderError =>
    new FolderError(FILES.config, `${cname}: ${what} ${a}, but the tokenizer's (${name(FILES.tokenizer)}) is ${b}`);
  if (tokenizer.vocabSize > model.vocabSize) throw disagree('vocab_size is', model.vocabSize, tokenizer.vocabSize);
  if (tokenizer.padId !== ids.padId) throw disagree('pad_token_id is', ids.padId, tokenizer.padId);
  if (tokenizer.eosId !== ids.eosId) throw disagree('eos_token_id is', ids.eosId, tokenizer.eosId);
  return { tokenizer, config: files.config as Record<string, unknown>, ids, generation, modelConfig: model };
}

/** The model of a checked shape with its weights (undefined: the folder has neither weights file), eval mode. */
export function loadM2M100(
  shape: M2M100Shape,
  w: MarianWeights | undefined,
  name: FileNamer = bareNames,
): LoadedM2M100 {
  if (w === undefined)
    throw notFound(FILES.weights, name, ` (nor ${FILES.pytorchWeights}: an M2M100 folder holds one of them)`);
  const model = withoutInit(() => new Seq2Seq(shape.modelConfig));
  try {
    const { tensors } = w.file === FILES.pytorchWeights ? readPytorch(w.bytes, name(w.file)) : readSafetensors(w.bytes);
    model.loadStateDict(m2m100StateDict(tensors, shape.modelConfig));
  } catch (e) {
    const msg = (e as Error).message;
    throw new FolderError(w.file, msg.startsWith(name(w.file)) ? msg : `${name(w.file)}: ${msg}`);
  }
  model.eval();
  const { modelConfig: _, ...rest } = shape;
  return { ...rest, model, weightsFile: w.file };
}

/** An M2M100 folder's shape read through `src` (config, generation config, tokenizer; no weight). */
export function* m2m100ShapeSteps(src: FolderSource, config: unknown): Steps<M2M100Shape> {
  return m2m100Shape(
    {
      config,
      generationConfig: yield* readJson(src, FILES.generationConfig),
      tokenizerConfig: yield* readJson(src, FILES.tokenizerConfig),
      tokenizer: yield* readJson(src, FILES.tokenizer),
    },
    src.name,
  );
}

/** An M2M100 / NLLB folder: its tokenizer and generation config checked, then its weights. */
export function* m2m100Steps(src: FolderSource, config: unknown): Steps<LoadedM2M100> {
  const shape = yield* m2m100ShapeSteps(src, config);
  let weights: MarianWeights | undefined;
  for (const file of [FILES.weights, FILES.pytorchWeights]) {
    const bytes = yield* readBytes(src, file);
    if (bytes !== undefined) {
      weights = { file, bytes };
      break;
    }
  }
  return loadM2M100(shape, weights, src.name);
}
