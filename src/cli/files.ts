/**
 * Model folders for the CLI: the loaders' names the commands call, each delegating to the folder
 * module (src/folder/, docs/model-folder.md), whose errors become the CLI's UserError.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { applyAdapter, readAdapterSync } from '../folder/adapter.ts';
import type { LoadedLm } from '../folder/gpt.ts';
import type { OpenedFolder } from '../folder/open.ts';
import type { LoadedModel } from '../folder/seq2seq.ts';
import { atomicWrite, removeStaleTemps, removeStaleTempsOf } from '../io/atomic.ts';
import {
  dirSource,
  folderKindOf,
  readEnsemble,
  readLmShape,
  readLm,
  readSeq2Seq,
  readSeq2SeqShape,
  type LoadedEnsemble,
} from '../folder/node.ts';
import { FILES, FolderError, type FolderKind } from '../folder/spec.ts';
import { readForCurrentDevice } from '../pipelines/load.ts';

export class UserError extends Error {}

// Atomic writes live in io/atomic.ts, which the training loop (src/train) and the folder module use.
export { atomicWrite, removeStaleTemps, removeStaleTempsOf };

export type { Decoding, ModelConfigFile } from '../folder/spec.ts';
export { DEFAULT_DECODING, TARGET_TOKENIZER } from '../folder/spec.ts';
export type { LoadedModel } from '../folder/seq2seq.ts';
export type { LoadedEnsemble, WeightsDType } from '../folder/node.ts';
export { copyFolderFiles, saveFolderWeights, saveModelDir, saveWeights, writeModelConfig } from '../folder/node.ts';

/**
 * Refuses an output file whose folder is missing (`--output out/de.txt` without out/), before any
 * work: the folder is not made on the user's behalf, where a typo would put it anywhere.
 */
export function checkOutputFolder(path: string, flag = '--output'): void {
  const dir = dirname(path);
  if (!existsSync(dir)) throw new UserError(`${flag}: folder not found: ${dir} (create it first)`);
  if (!statSync(dir).isDirectory()) throw new UserError(`${flag}: not a folder: ${dir}`);
}

/** A JSON file's contents, or a UserError naming `what` and the path (missing, or not JSON). */
export function readJson(path: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new UserError(`${what} not found: ${path}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UserError(`${what} is not valid JSON: ${path} (${(e as Error).message})`);
  }
}

/** A FolderError (folder/) as the CLI's UserError: one line on stderr, the same message. */
export function asUserError<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw e instanceof FolderError ? new UserError(e.message) : e;
  }
}

/** The kind of folder `dir` is (folder/ `folderKindOf`: from its config.json), errors as UserError. */
export function folderKindOfDir(dir: string): FolderKind {
  return asUserError(() => folderKindOf(dir));
}

/**
 * The kind of model in a folder: a translation model, a Hugging Face Marian translation model, or a
 * language model (qkv GPT or Hugging Face GPT-2).
 */
export function modelDirKind(dir: string): 'seq2seq' | 'marian' | 'gpt' {
  const kind = folderKindOfDir(dir);
  if (kind === 'm2m100' || kind === 't5')
    throw new UserError(
      `${dir}: ${kind === 't5' ? 'a T5' : 'an M2M100 / NLLB'} folder, which this command does not draw yet (its ` +
        'pipeline runs it)',
    );
  return kind === 'seq2seq' || kind === 'marian' ? kind : 'gpt';
}

/** The model (randomly initialised) and tokenizer described by a folder's config.json and tokenizer.json. */
export function loadModelShape(dir: string): LoadedModel {
  return asUserError(() => readSeq2SeqShape(dir));
}

/** Load a model folder written by `qkv train` (or by hand: the three files). */
export function loadModelDir(dir: string, weightsFile: string = FILES.weights): LoadedModel {
  return asUserError(() => readForCurrentDevice(() => readSeq2Seq(dir, weightsFile)));
}

/** The model (random weights) and tokenizer of a language-model folder. */
export function loadLmShape(dir: string): LoadedLm {
  return asUserError(() => readLmShape(dir));
}

/**
 * Load a folder written by `qkv train-lm` (or a Hugging Face GPT-2 folder), weights included, in eval mode; with
 * `adapter`, a PEFT LoRA adapter folder merged into it (`--adapter`).
 */
export function loadLmDir(dir: string, adapter?: string): LoadedLm {
  return asUserError(() =>
    readForCurrentDevice(() => {
      const lm = readLm(dir);
      if (adapter !== undefined) mergeAdapter({ kind: folderKindOfDir(dir), ...lm } as OpenedFolder, adapter);
      return lm;
    }),
  );
}

/**
 * `--adapter DIR`: the PEFT adapter folder read and merged into the opened Hugging Face folder's model (before
 * any --dtype quantizes it); errors name the adapter's files.
 */
export function mergeAdapter(opened: OpenedFolder, adapter: string): void {
  if (opened.kind !== 'hf-gpt2' && opened.kind !== 'marian')
    throw new UserError(
      `--adapter takes a Hugging Face folder's adapter (GPT-2, Marian); --model is a qkv ${opened.kind} folder`,
    );
  asUserError(() => applyAdapter(opened, readAdapterSync(dirSource(adapter)), true));
}

/**
 * `dir`'s model and its ensemble: the members its config.json names (`decoding.ensemble`, subfolders
 * of `dir`; left out with `own: false`, i.e. --no-ensemble), then the folders in `others`
 * (--ensemble). Each is checked to tokenize as `dir` does (identical tokenizer.json, and
 * target_tokenizer.json if any): an ensemble averages next-token probabilities over one target
 * vocabulary, fed the same source ids. Decoding defaults and tokenizers are `dir`'s.
 */
export function loadEnsemble(
  dir: string,
  others: readonly string[] = [],
  opts: { own?: boolean } = {},
): LoadedEnsemble {
  return asUserError(() => readForCurrentDevice(() => readEnsemble(dir, others, opts)));
}

/** The lines of `input` (else stdin), a last empty line (the final newline's) dropped. */
export async function readInputLines(input: string | undefined): Promise<string[]> {
  let text: string;
  if (input !== undefined) {
    try {
      text = readFileSync(input, 'utf8');
    } catch {
      throw new UserError(`input file not found: ${input}`);
    }
  } else {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    text = Buffer.concat(chunks).toString('utf8');
  }
  const lines = text.split(/\r?\n/);
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}
