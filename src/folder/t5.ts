/**
 * A Hugging Face T5 / Flan-T5 folder (config.json model_type 't5') from its files' contents: config.json,
 * generation_config.json (optional), tokenizer.json (T5's Unigram SentencePiece with its `<extra_id_N>` sentinels,
 * read by text/hf-tokenizer.ts; `spiece.model` alone is not read), and model.safetensors or else pytorch_model.bin.
 * Browser-safe. The tokenizer is checked before any weight is read; errors name the file and what was expected.
 */
import { readPytorch } from '../io/pytorch.ts';
import { readSafetensors } from '../io/safetensors.ts';
import { checkGenerationIds, hfSeq2SeqGeneration, type HfGeneration } from '../models/hf/seq2seq-generation.ts';
import { T5, t5ConfigFromHf, t5StateDict, type T5Config } from '../models/hf/t5.ts';
import { withoutInit } from '../nn/init.ts';
import { HfTokenizer } from '../text/hf-tokenizer.ts';
import type { MarianIds } from '../models/hf/marian.ts';
import { notFound } from './seq2seq.ts';
import { readBytes, readJson, type FolderSource, type Steps } from './source.ts';
import { FILES, FolderError, type FileNamer } from './spec.ts';

/** A T5 folder as loaded: the model (eval mode), its tokenizer, ids and generation defaults. */
export interface LoadedT5 {
  /** The T5 or Flan-T5 model (models/hf/t5.ts), weights loaded, eval mode. */
  model: T5;
  /** T5's tokenizer (tokenizer.json): `encodeInput(text).ids` ends with `</s>`. */
  tokenizer: HfTokenizer;
  /** config.json as read (`task_specific_params` holds the prefixes of the original T5's tasks). */
  config: Record<string, unknown>;
  /** The padding, EOS and decoder start ids (0, 1, 0 in T5). */
  ids: MarianIds;
  /** How generate() decodes it by default (generation_config.json, else config.json). */
  generation: HfGeneration;
  /** generation_config.json as read (undefined where the folder has none): what a task's params are set over. */
  generationConfig: unknown;
  /** The weights file read. */
  weightsFile: string;
}

/** A T5 folder's shape: its tokenizer and config checked, no weight read. */
export type T5Shape = Omit<LoadedT5, 'model' | 'weightsFile'> & { modelConfig: T5Config };

/** The tokenizer and config of a T5 folder, checked against each other. */
export function* t5ShapeSteps(src: FolderSource, config: unknown): Steps<T5Shape> {
  const name: FileNamer = src.name;
  const c = config as Record<string, unknown>;
  let modelConfig: T5Config;
  try {
    // A head of its own where config.json unties it; the weights file decides at load.
    modelConfig = t5ConfigFromHf(c, c.tie_word_embeddings === false);
  } catch (e) {
    throw new FolderError(
      FILES.config,
      `${name(FILES.config)}: ${(e as Error).message.replace(/^config\.json: /, '')}`,
    );
  }
  const id = (k: string, fallback: number) => (Number.isInteger(c[k]) ? (c[k] as number) : fallback);
  const ids = {
    padId: id('pad_token_id', 0),
    eosId: id('eos_token_id', 1),
    decoderStartId: id('decoder_start_token_id', 0),
  };
  const generationConfig = yield* readJson(src, FILES.generationConfig);
  let generation: HfGeneration;
  try {
    generation = hfSeq2SeqGeneration(c, generationConfig, FILES.config);
    checkGenerationIds(generation, ids, FILES.config);
  } catch (e) {
    const file = generationConfig !== undefined ? FILES.generationConfig : FILES.config;
    throw new FolderError(file, `${name(file)}: ${(e as Error).message.replace(/^[a-z_]+\.json: /, '')}`);
  }
  const json = yield* readJson(src, FILES.tokenizer);
  if (json === undefined)
    throw notFound(FILES.tokenizer, name, ' (a T5 folder holds tokenizer.json; spiece.model alone is not read)');
  let tokenizer: HfTokenizer;
  try {
    tokenizer = HfTokenizer.fromJSON(json);
  } catch (e) {
    throw new FolderError(
      FILES.tokenizer,
      `${name(FILES.tokenizer)}: ${(e as Error).message.replace(/^tokenizer\.json[^:]*: /, '')}`,
    );
  }
  if (tokenizer.vocabSize > modelConfig.vocabSize)
    throw new FolderError(
      FILES.config,
      `${name(FILES.config)}: vocab_size is ${modelConfig.vocabSize}, but the tokenizer's ` +
        `(${name(FILES.tokenizer)}) is ${tokenizer.vocabSize}`,
    );
  return { tokenizer, config: c, ids, generation, generationConfig, modelConfig };
}

/** A T5 folder: its shape checked, then its weights (model.safetensors, else pytorch_model.bin), eval mode. */
export function* t5Steps(src: FolderSource, config: unknown): Steps<LoadedT5> {
  const shape = yield* t5ShapeSteps(src, config);
  for (const file of [FILES.weights, FILES.pytorchWeights]) {
    const bytes = yield* readBytes(src, file);
    if (bytes === undefined) continue;
    try {
      const { tensors } = file === FILES.pytorchWeights ? readPytorch(bytes, src.name(file)) : readSafetensors(bytes);
      const c = { ...shape.modelConfig, separateHead: 'lm_head.weight' in tensors };
      const model = withoutInit(() => new T5(c));
      model.loadStateDict(t5StateDict(tensors, c));
      model.eval();
      const { modelConfig: _, ...rest } = shape;
      return { ...rest, model, weightsFile: file };
    } catch (e) {
      const msg = (e as Error).message;
      throw new FolderError(file, msg.startsWith(src.name(file)) ? msg : `${src.name(file)}: ${msg}`);
    }
  }
  throw notFound(FILES.weights, src.name, ` (nor ${FILES.pytorchWeights}: a T5 folder holds one of them)`);
}
