/**
 * Model folders on disk (Node only): config.json, model.safetensors, tokenizer.json — plain files
 * other tools read — and, for a model with separate source and target vocabularies,
 * target_tokenizer.json (tokenizer.json is then the source language's). Every write goes to a
 * temporary file in the same folder, is flushed, then renamed over the target, so a killed
 * process leaves either the old file or the new one.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { quantizeInt8 } from '../io/quantize.ts';
import { readSafetensors, writeSafetensors } from '../io/safetensors.ts';
import { checkSeq2SeqConfig, checkVocabularies } from '../models/config-check.ts';
import { loadWeights, SEQ2SEQ_FIELDS } from '../models/load-weights.ts';
import { Seq2Seq, type Seq2SeqConfig } from '../models/seq2seq.ts';
import { BpeTokenizer } from '../text/bpe.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { faultPoint } from '../util/fault.ts';

export class UserError extends Error {}

export function atomicWrite(path: string, data: Uint8Array | string): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w');
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  faultPoint('after-tmp-write', { file: path }); // crash tests: die with the temporary file written, not renamed
  renameSync(tmp, path);
  // The rename itself lives in the folder: flush it too, or a power cut may forget it.
  try {
    const dfd = openSync(dirname(path), 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    // Some systems cannot fsync a folder (Windows); the rename is still atomic.
  }
}

/** Remove the temporary files of atomicWrite that a killed process left in `dir` and `dir`/checkpoints. */
export function removeStaleTemps(dir: string): void {
  for (const d of [dir, join(dir, 'checkpoints')]) {
    if (!existsSync(d)) continue;
    for (const f of readdirSync(d)) if (/\.tmp-\d+$/.test(f)) rmSync(join(d, f), { force: true });
  }
}

export interface ModelConfigFile {
  format: 'qkv-seq2seq';
  version: 1;
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

export interface Decoding {
  beam: number;
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

export const DEFAULT_DECODING: Decoding = { beam: 4, alpha: 0.6 };

export interface LoadedModel {
  model: Seq2Seq;
  /** Encodes the source: the shared tokenizer, or with separate vocabularies the source's. */
  tokenizer: BpeTokenizer;
  /** Decodes (and encodes) the target: the same object as `tokenizer` unless the vocabularies are separate. */
  targetTokenizer: BpeTokenizer;
  config: ModelConfigFile;
}

/** The target side's tokenizer file of a model with separate vocabularies. */
export const TARGET_TOKENIZER = 'target_tokenizer.json';

function readTokenizer(path: string): BpeTokenizer {
  try {
    return BpeTokenizer.fromJSON(readJson(path, 'tokenizer') as object);
  } catch (e) {
    throw e instanceof UserError ? e : new UserError(`${path}: ${(e as Error).message}`);
  }
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

/** The model (randomly initialised) and tokenizer described by a folder's config.json and tokenizer.json. */
export function loadModelShape(dir: string): LoadedModel {
  if (!existsSync(dir)) throw new UserError(`model folder not found: ${dir}`);
  const config = readJson(join(dir, 'config.json'), 'model config') as ModelConfigFile;
  if (config === null || typeof config !== 'object' || config.format !== 'qkv-seq2seq' || !config.model) {
    throw new UserError(`${join(dir, 'config.json')}: expected format 'qkv-seq2seq' with a 'model' section, got format '${String(config?.format)}'`);
  }
  const d = config.decoding;
  if (d !== undefined && (d === null || typeof d !== 'object' || !Number.isInteger(d.beam) || d.beam < 1 || typeof d.alpha !== 'number' || !Number.isFinite(d.alpha) || d.alpha < 0)) {
    throw new UserError(`${join(dir, 'config.json')}: 'decoding' must be {"beam": a positive integer, "alpha": a number >= 0}, got ${JSON.stringify(d)}`);
  }
  if (d?.mbr !== undefined && typeof d.mbr !== 'boolean') {
    throw new UserError(`${join(dir, 'config.json')}: 'decoding.mbr' must be true or false, got ${JSON.stringify(d.mbr)}`);
  }
  if (d?.ensemble !== undefined && !isMemberList(d.ensemble)) {
    throw new UserError(`${join(dir, 'config.json')}: 'decoding.ensemble' must be a non-empty list of distinct subfolders of the model folder (e.g. ["member-2"]), got ${JSON.stringify(d.ensemble)}`);
  }
  const tokenizer = readTokenizer(join(dir, 'tokenizer.json'));
  try {
    checkSeq2SeqConfig(config.model);
  } catch (e) {
    throw new UserError(`${join(dir, 'config.json')}: ${(e as Error).message}`);
  }
  const separate = config.model.tgtVocabSize !== undefined;
  const targetPath = join(dir, TARGET_TOKENIZER);
  if (!separate && existsSync(targetPath)) {
    throw new UserError(`${targetPath}: a target tokenizer, but ${join(dir, 'config.json')} describes a model with one shared vocabulary (no model.tgtVocabSize)`);
  }
  const targetTokenizer = separate ? readTokenizer(targetPath) : tokenizer;
  const disagree = checkVocabularies(config.model, tokenizer, targetTokenizer, { src: join(dir, 'tokenizer.json'), tgt: targetPath, config: 'config.json' });
  if (disagree) throw new UserError(disagree);
  return { model: new Seq2Seq(config.model), tokenizer, targetTokenizer, config };
}

/** Load a model folder written by `qkv train` (or by hand: the three files). */
export function loadModelDir(dir: string, weightsFile = 'model.safetensors'): LoadedModel {
  const { model, tokenizer, targetTokenizer, config } = loadModelShape(dir);
  const wpath = join(dir, weightsFile);
  if (!existsSync(wpath)) throw new UserError(`model weights not found: ${wpath}`);
  let tensors: Record<string, Tensor>;
  try {
    tensors = readSafetensors(readFileSync(wpath)).tensors;
  } catch (e) {
    throw new UserError(`${wpath}: ${(e as Error).message}`);
  }
  try {
    loadWeights(model, tensors, config.model, SEQ2SEQ_FIELDS);
  } catch (e) {
    throw new UserError(`${wpath}: ${(e as Error).message}`);
  }
  model.eval();
  return { model, tokenizer, targetTokenizer, config };
}

/** The on-disk precisions of saveWeights: fp32, fp16 (half the size), or int8 per row with fp16 for the rest (a quarter; io/quantize.ts). */
export type WeightsDType = 'F32' | 'F16' | 'I8';

/** Write weights atomically in `dtype`. */
export function saveWeights(path: string, weights: Record<string, Tensor>, dtype: WeightsDType = 'F32'): void {
  if (dtype === 'I8') {
    const q = quantizeInt8(weights);
    atomicWrite(path, writeSafetensors(q.tensors, { dtype: q.dtype, metadata: { quantization: 'int8: each 2-D NAME is int8 rows times NAME_scale [rows, 1]' } }));
    return;
  }
  atomicWrite(path, writeSafetensors(weights, dtype === 'F16' ? { dtype: 'F16' } : {}));
}

/**
 * A Seq2Seq config's vocabulary fields for its tokenizers: the source's size and padding id, and
 * tgtVocabSize only when the target has a tokenizer of its own (separate vocabularies).
 */
export function vocabularyConfig(tokenizer: BpeTokenizer, targetTokenizer: BpeTokenizer = tokenizer): Pick<Seq2SeqConfig, 'vocabSize' | 'padId' | 'tgtVocabSize'> {
  return { vocabSize: tokenizer.vocabSize, padId: tokenizer.padId, ...(targetTokenizer !== tokenizer && { tgtVocabSize: targetTokenizer.vocabSize }) };
}

/** A translation model folder's config.json, written atomically (what loadModelShape reads). */
export function writeModelConfig(dir: string, config: ModelConfigFile): void {
  atomicWrite(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
}

/** config.json and tokenizer.json, and target_tokenizer.json when the vocabularies are separate. */
export function saveModelDir(dir: string, model: Seq2Seq, tokenizer: BpeTokenizer, training?: Record<string, unknown>, targetTokenizer: BpeTokenizer = tokenizer): void {
  const separate = model.config.tgtVocabSize !== undefined;
  if (separate === (targetTokenizer === tokenizer)) throw new Error(`saveModelDir: ${separate ? 'a model with separate vocabularies needs its target tokenizer' : 'a shared-vocabulary model takes one tokenizer'}`);
  writeModelConfig(dir, { format: 'qkv-seq2seq', version: 1, model: model.config, training });
  atomicWrite(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer.toJSON()));
  if (separate) atomicWrite(join(dir, TARGET_TOKENIZER), JSON.stringify(targetTokenizer.toJSON()));
}

/** A relative path that stays inside the folder: no absolute path, no '..', no empty or '.' part. */
function isSubfolder(p: unknown): p is string {
  if (typeof p !== 'string' || p === '' || isAbsolute(p) || p.includes('\\')) return false;
  return p.split('/').every((part) => part !== '' && part !== '.' && part !== '..');
}

function isMemberList(x: unknown): x is string[] {
  return Array.isArray(x) && x.length > 0 && x.every(isSubfolder) && new Set(x).size === x.length;
}

/** A model folder and the folders decoded with it as an ensemble: all must share its tokenizers. */
export interface LoadedEnsemble extends LoadedModel {
  /** The model itself first, then the ensemble's other members. */
  members: Seq2Seq[];
  /** The members' folders, in the same order (the first is the model folder itself). */
  memberDirs: string[];
}

/**
 * `dir`'s model and its ensemble: the members its config.json names (`decoding.ensemble`, subfolders
 * of `dir`; left out with `own: false`, i.e. --no-ensemble), then the folders in `others`
 * (--ensemble). Each is checked to tokenize as `dir` does (identical tokenizer.json, and
 * target_tokenizer.json if any): an ensemble averages next-token probabilities over one target
 * vocabulary, fed the same source ids. Decoding defaults and tokenizers are `dir`'s.
 */
export function loadEnsemble(dir: string, others: readonly string[] = [], opts: { own?: boolean } = {}): LoadedEnsemble {
  const first = loadModelDir(dir);
  const members = [first.model];
  const memberDirs = [dir];
  const same = (a: BpeTokenizer, b: BpeTokenizer) => JSON.stringify(a.toJSON()) === JSON.stringify(b.toJSON());
  const declared = (opts.own ?? true) ? (first.config.decoding?.ensemble ?? []) : [];
  const named = [
    ...declared.map((p) => ({ path: join(dir, p), what: `${join(dir, 'config.json')} decoding.ensemble member ${p}` })),
    ...others.map((p) => ({ path: p, what: `--ensemble ${p}` })),
  ];
  for (const { path, what } of named) {
    if (!existsSync(path)) throw new UserError(`${what}: model folder not found: ${path}`);
    const m = loadModelDir(path);
    if (m.config.decoding?.ensemble) throw new UserError(`${what}: its config.json names an ensemble of its own (decoding.ensemble); members must be single models`);
    if ((m.targetTokenizer === m.tokenizer) !== (first.targetTokenizer === first.tokenizer)) {
      throw new UserError(`${what}: ${m.targetTokenizer === m.tokenizer ? 'one shared vocabulary' : 'separate vocabularies'}, but --model ${dir} has ${first.targetTokenizer === first.tokenizer ? 'one shared vocabulary' : 'separate vocabularies'}: ensemble members must share their tokenizers`);
    }
    if (!same(m.tokenizer, first.tokenizer)) throw new UserError(`${what}: its tokenizer.json differs from --model ${dir}'s: ensemble members must share their tokenizers`);
    if (!same(m.targetTokenizer, first.targetTokenizer)) throw new UserError(`${what}: its ${TARGET_TOKENIZER} differs from --model ${dir}'s: ensemble members must share their tokenizers`);
    members.push(m.model);
    memberDirs.push(path);
  }
  return { ...first, members, memberDirs };
}
