/**
 * Model folders on disk (Node only): a folder by its path as a source of the one door (`dirSource`;
 * the readers `readSeq2Seq`, `readLm`, ... are the door over it, driven synchronously: ./open.ts),
 * and writing folders atomically. Every
 * write goes to a temporary file in the same folder, is flushed, then renamed over the target, so
 * a killed process leaves either the old file or the new one.
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { atomicWrite } from '../io/atomic.ts';
import { QUANTIZED_METADATA, quantizedForFile, quantizeInt8 } from '../tensor/quantize.ts';
import { writeSafetensors } from '../io/safetensors.ts';
import type { GPT } from '../models/gpt.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import type { Module } from '../nn/module.ts';
import type { BpeTokenizer } from '../text/bpe.ts';
import type { LmTokenizer } from '../text/lines.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { LoadedLm } from './gpt.ts';
import type { LoadedEncoder } from './encoder.ts';
import type { LoadedMarian, MarianShape } from './marian.ts';
import type { LoadedM2M100, M2M100Shape } from './m2m100.ts';
import type { LoadedT5, T5Shape } from './t5.ts';
import {
  folderShapeSync,
  hfLmWithoutWeightsSync,
  ofKind,
  openFolderSync,
  readKindSteps,
  type FolderShape,
} from './open.ts';
import { notFound, type LoadedModel } from './seq2seq.ts';
import { runSync, type FolderSource } from './source.ts';
import {
  FILES,
  FolderError,
  parseJsonText,
  type FileNamer,
  type FolderKind,
  type LmConfigFile,
  type ModelConfigFile,
} from './spec.ts';

// Writes are atomic (temp file, fsync, rename): the one implementation is io/atomic.ts.
export { atomicWrite };

/**
 * The on-disk precisions of saveWeights: fp32, fp16 (half the size), or int8 per row with fp16 for the rest (a quarter;
 * tensor/quantize.ts).
 */
export type WeightsDType = 'F32' | 'F16' | 'I8';

/** Write weights atomically in `dtype`. */
export function saveWeights(path: string, weights: Record<string, Tensor>, dtype: WeightsDType = 'F32'): void {
  // A quantized model's own int8/q4 weights, written as they are held (tensor/quantize.ts), the rest in dtype.
  if (dtype !== 'I8' && Object.values(weights).some((t) => t.dtype === 'int8' || t.dtype === 'q4')) {
    const q = quantizedForFile(weights, { rest: dtype });
    atomicWrite(path, writeSafetensors(q.tensors, { dtype: q.dtype, metadata: { quantization: QUANTIZED_METADATA } }));
    return;
  }
  if (dtype === 'I8') {
    const q = quantizeInt8(weights);
    atomicWrite(
      path,
      writeSafetensors(q.tensors, {
        dtype: q.dtype,
        metadata: { quantization: 'int8: each 2-D NAME is int8 rows times NAME_scale [rows, 1]' },
      }),
    );
    return;
  }
  atomicWrite(path, writeSafetensors(weights, dtype === 'F16' ? { dtype: 'F16' } : {}));
}

/** A translation model folder's config.json, written atomically. */
export function writeModelConfig(dir: string, config: ModelConfigFile): void {
  atomicWrite(join(dir, FILES.config), `${JSON.stringify(config, null, 2)}\n`);
}

/** A folder's weights file (model.safetensors), written atomically in `dtype`. */
export function saveFolderWeights(dir: string, model: Module, dtype: WeightsDType = 'F32'): void {
  saveWeights(join(dir, FILES.weights), model.stateDict(), dtype);
}

/**
 * A translation model folder's config.json and tokenizer.json, and target_tokenizer.json when the
 * vocabularies are separate (the weights are written apart: saveFolderWeights).
 */
export function saveModelDir(
  dir: string,
  model: Seq2Seq,
  tokenizer: BpeTokenizer,
  training?: Record<string, unknown>,
  targetTokenizer: BpeTokenizer = tokenizer,
): void {
  const separate = model.config.tgtVocabSize !== undefined;
  if (separate === (targetTokenizer === tokenizer))
    throw new Error(
      'saveModelDir: ' +
        (separate
          ? 'a model with separate vocabularies needs its target tokenizer'
          : 'a shared-vocabulary model takes one tokenizer'),
    );
  writeModelConfig(dir, { format: 'qkv-seq2seq', version: 1, model: model.config, training });
  atomicWrite(join(dir, FILES.tokenizer), JSON.stringify(tokenizer.toJSON()));
  if (separate) atomicWrite(join(dir, FILES.targetTokenizer), JSON.stringify(targetTokenizer.toJSON()));
}

/** A language-model folder's config.json and tokenizer.json (the weights are written apart: saveFolderWeights). */
export function saveLmDir(
  dir: string,
  model: GPT,
  tokenizer: LmTokenizer,
  kind: 'char' | 'bpe',
  training: Record<string, unknown>,
): void {
  const config: LmConfigFile = { format: 'qkv-gpt', version: 1, model: model.config, tokenizer: kind, training };
  atomicWrite(join(dir, FILES.config), `${JSON.stringify(config, null, 2)}\n`);
  atomicWrite(join(dir, FILES.tokenizer), JSON.stringify(tokenizer.toJSON()));
}

/**
 * Copy a folder's config.json (unless `config` is given: written instead), its tokenizers and,
 * with `extra`, other files it holds (e.g. history.json) into `to`; the weights are not copied.
 * A file `from` lacks is skipped, except config.json and tokenizer.json (a FolderError naming it).
 * Each file is written with atomicWrite.
 */
export function copyFolderFiles(
  from: string,
  to: string,
  opts: { config?: ModelConfigFile; extra?: readonly string[] } = {},
): void {
  mkdirSync(to, { recursive: true });
  const required = opts.config ? [FILES.tokenizer] : [FILES.config, FILES.tokenizer];
  if (opts.config) writeModelConfig(to, opts.config);
  for (const f of [...required, FILES.targetTokenizer, ...(opts.extra ?? [])]) {
    const path = join(from, f);
    if (!existsSync(path)) {
      if ((required as string[]).includes(f)) throw notFound(f, pathNamer(from));
      continue;
    }
    atomicWrite(join(to, f), readFileSync(path)); // not copyFileSync: a kill mid-copy would leave half a file
  }
}

// ---- Reading ----------------------------------------------------------------------------------

/** Files named by their path in `dir`. */
export const pathNamer =
  (dir: string): FileNamer =>
  (file) =>
    join(dir, file);

/** A file's bytes, or undefined when it does not exist. */
export function readFileIn(dir: string, file: string): Uint8Array | undefined {
  const path = join(dir, file);
  try {
    return readFileSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new FolderError(file, `${path}: ${(e as Error).message}`);
  }
}

/** A JSON file's contents, or undefined when it does not exist (not JSON: a FolderError naming it). */
export function readJsonIn(dir: string, file: string): unknown {
  const bytes = readFileIn(dir, file);
  return bytes === undefined ? undefined : parseJsonText(Buffer.from(bytes).toString('utf8'), file, join(dir, file));
}

/** A folder on disk as a FolderSource: it answers at once, so the door reads it synchronously or not. */
export function dirSource(dir: string): FolderSource {
  return {
    label: dir,
    name: pathNamer(dir),
    read: (f) => readFileIn(dir, f),
    exists: () => existsSync(dir),
    sub: (p) => dirSource(join(dir, p)),
    range: (f) => {
      const path = join(dir, f);
      if (!existsSync(path)) return undefined;
      return {
        size: statSync(path).size,
        read: (begin, end) => {
          const fd = openSync(path, 'r');
          try {
            return readRange(fd, begin, end);
          } finally {
            closeSync(fd);
          }
        },
      };
    },
  };
}

/** Bytes [begin, end) of an open file (fewer where the file ends first). */
function readRange(fd: number, begin: number, end: number): Buffer {
  const buf = Buffer.allocUnsafe(end - begin);
  let got = 0;
  while (got < buf.length) {
    const n = readSync(fd, buf, got, buf.length - got, begin + got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

// The readers below are the one door (./open.ts) over dirSource, driven synchronously: the same
// checks, in the same order, as openFolder over a URL, picked files or contents.

/** The kind of folder `dir` is, from its config.json. */
export function folderKindOf(dir: string): FolderKind {
  return runSync(readKindSteps(dirSource(dir))).kind;
}

/** A folder's shape of any kind (config.json and the tokenizers checked, a Hugging Face one's weights present). */
export function readShapeDir(dir: string): FolderShape {
  return folderShapeSync(dirSource(dir));
}

/** A translation folder's model (random weights) and tokenizers. */
export function readSeq2SeqShape(dir: string): LoadedModel {
  return ofKind(folderShapeSync(dirSource(dir), { kinds: ['seq2seq'] }), 'seq2seq');
}

/** A translation folder, weights loaded (`weightsFile`, default model.safetensors), eval mode; no ensemble. */
export function readSeq2Seq(dir: string, weightsFile: string = FILES.weights): LoadedModel {
  return ofKind(openFolderSync(dirSource(dir), { kinds: ['seq2seq'], ensemble: false, weightsFile }), 'seq2seq');
}

/** A translation folder and the folders decoded with it as an ensemble. */
export interface LoadedEnsemble extends LoadedModel {
  /** The model itself first, then the ensemble's other members. */
  members: LoadedModel['model'][];
  /** The members' folders, in the same order (the first is the model folder itself). */
  memberDirs: string[];
}

/**
 * `dir`'s model and its ensemble: the members its config.json names (`decoding.ensemble`, subfolders
 * of `dir`; left out with `own: false`, i.e. --no-ensemble), then the folders in `others`
 * (--ensemble), each checked to tokenize as `dir` does.
 */
export function readEnsemble(
  dir: string,
  others: readonly string[] = [],
  opts: { own?: boolean } = {},
): LoadedEnsemble {
  return ofKind(
    openFolderSync(dirSource(dir), { kinds: ['seq2seq'], ensemble: opts.own ?? true, members: others.map(dirSource) }),
    'seq2seq',
  );
}

/** A qkv GPT folder's model (random weights) and tokenizer. */
export function readGptShape(dir: string): LoadedLm {
  return ofKind(folderShapeSync(dirSource(dir), { kinds: ['gpt'] }), 'gpt');
}

/**
 * A language-model folder's tokenizer and a model of its shape with random weights (a qkv GPT folder, or a Hugging
 * Face decoder folder with or without its weights: what `qkv export --format onnx` writes beside its graph).
 */
export function readLmShape(dir: string): LoadedLm {
  const { kind } = runSync(readKindSteps(dirSource(dir), { kinds: ['gpt', 'hf-gpt2'] }));
  return kind === 'gpt' ? readGptShape(dir) : hfLmWithoutWeightsSync(dirSource(dir));
}

/** A language-model folder of either kind (qkv GPT, Hugging Face GPT-2), weights loaded, eval mode. */
export function readLm(dir: string): LoadedLm {
  return ofKind(openFolderSync(dirSource(dir), { kinds: ['gpt', 'hf-gpt2'] }), 'gpt', 'hf-gpt2');
}

/**
 * A Hugging Face GPT-2 folder, its model.safetensors read one tensor (or 16 MiB of one) at a time:
 * the file is never held whole beside the weights.
 */
export function readHfGpt2Dir(dir: string): LoadedLm {
  return ofKind(openFolderSync(dirSource(dir), { kinds: ['hf-gpt2'] }), 'hf-gpt2');
}

/**
 * A Hugging Face Marian folder (opus-mt-*) on disk, weights loaded (model.safetensors, else
 * pytorch_model.bin), eval mode; config.json and the tokenizer's files are checked before the weights are read.
 */
export function readMarianDir(dir: string): LoadedMarian {
  return ofKind(openFolderSync(dirSource(dir), { kinds: ['marian'] }), 'marian');
}

/** A Hugging Face M2M100 / NLLB folder on disk, weights loaded, eval mode (tokenizer and config checked first). */
export function readM2M100Dir(dir: string): LoadedM2M100 {
  return ofKind(openFolderSync(dirSource(dir), { kinds: ['m2m100'] }), 'm2m100');
}

/** A Hugging Face encoder folder (BERT family) with the head its config.json's architectures names. */
export function readEncoderDir(dir: string): LoadedEncoder {
  return ofKind(openFolderSync(dirSource(dir), { kinds: ['hf-encoder'], head: 'auto' }), 'hf-encoder');
}

/** A Marian folder's config.json, tokenizer files and generation config checked, no weight read (its tokenizer). */
export function readMarianShape(dir: string): MarianShape {
  return ofKind(folderShapeSync(dirSource(dir), { kinds: ['marian'] }), 'marian');
}

/** An M2M100 / NLLB folder's config.json, tokenizer files and generation config checked, no weight read. */
export function readM2M100Shape(dir: string): M2M100Shape {
  return ofKind(folderShapeSync(dirSource(dir), { kinds: ['m2m100'] }), 'm2m100');
}

/** A Hugging Face T5 / Flan-T5 folder on disk, weights loaded, eval mode (tokenizer and config checked first). */
export function readT5Dir(dir: string): LoadedT5 {
  return ofKind(openFolderSync(dirSource(dir), { kinds: ['t5'] }), 't5');
}

/** A T5 folder's config.json, tokenizer and generation config checked, no weight read. */
export function readT5Shape(dir: string): T5Shape {
  return ofKind(folderShapeSync(dirSource(dir), { kinds: ['t5'] }), 't5');
}
