/**
 * `qkv export --format onnx`: a self-contained folder for ONNX Runtime: the graphs, onnx.json (which
 * graph is which), and the model's config.json and tokenizer.json. The folder is written beside
 * its destination under a temporary name and renamed into place, so a failed or killed export
 * leaves nothing half-written; an existing non-empty destination is refused unless --force.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { nodeWriteFs } from '../io/atomic.ts';
import { faultPoint } from '../util/fault.ts';
import {
  exportEncoderOnnx,
  exportGptOnnx,
  exportSeq2SeqOnnx,
  exportT5Onnx,
  MANIFEST,
  type OnnxExport,
} from '../io/onnx/export.ts';
import type { WeightDType } from '../io/onnx/builder.ts';
import type { Module } from '../nn/module.ts';
import { heldDType } from '../pipelines/options.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { MARIAN_FILES } from '../folder/marian.ts';
import { ENCODER_FILES } from '../folder/encoder.ts';
import { readEncoderDir, readFileIn, readM2M100Dir, readMarianDir, readT5Dir } from '../folder/node.ts';
import { FILES } from '../folder/spec.ts';
import {
  asUserError,
  atomicWrite,
  copyFolderFiles,
  folderKindOfDir,
  loadLmDir,
  loadModelDir,
  UserError,
  type ModelConfigFile,
} from './files.ts';

export interface OnnxExportArgs {
  model: string;
  out: string;
  /** f32 (default), f16, int8 or q4 (a quantized folder: its own dtype by default). */
  dtype?: string;
  withAttention?: boolean;
  force?: boolean;
  log: (s: string) => void;
}

export function parseOnnxDType(d: string | undefined): WeightDType {
  const s = (d ?? 'f32').toLowerCase();
  if (s === 'f32' || s === 'fp32' || s === 'float32') return 'fp32';
  if (s === 'f16' || s === 'fp16' || s === 'float16') return 'fp16';
  if (s === 'int8' || s === 'q8') return 'int8';
  if (s === 'q4') return 'q4';
  throw new UserError(`--dtype must be f16, f32, int8 or q4 for --format onnx, got '${d}'`);
}

/**
 * The model's state dict for graphs of `dtype`: int8/q4 quantize a float model as module.quantize does (tables
 * int8); a quantized folder's model is exported as it is stored, in its own dtype (the default when --dtype is
 * not given), and refused with another.
 */
function weightsFor(model: Module, a: OnnxExportArgs): { dtype: WeightDType; weights: Record<string, Tensor> } {
  const held = heldDType(model);
  const dtype = a.dtype === undefined && held ? held : parseOnnxDType(a.dtype);
  if (held && dtype !== held)
    throw new UserError(
      `--dtype ${a.dtype}: ${a.model} holds ${held} weights, exported as they are stored: drop --dtype, ` +
        'or export the float folder',
    );
  // Tables int8 whatever the model's own choice (GPT.defaultTables): the graphs gather int8 tables only.
  if (!held && (dtype === 'int8' || dtype === 'q4')) asUserError(() => model.quantize({ dtype, tables: 'int8' }));
  return { dtype, weights: model.stateDict() };
}

/** A Hugging Face decoder folder's files that the export keeps beside its graph (those present). */
const HF_LM_FILES = [
  FILES.tokenizer,
  FILES.tokenizerConfig,
  FILES.generationConfig,
  FILES.vocab,
  FILES.merges,
  'special_tokens_map.json',
  'chat_template.jinja',
];

/** A Hugging Face M2M100 / NLLB or T5 folder's files that the export keeps beside its graphs (those present). */
const HF_SEQ2SEQ_FILES = [FILES.generationConfig, FILES.tokenizer, FILES.tokenizerConfig, 'special_tokens_map.json'];

export function exportOnnx(
  a: OnnxExportArgs,
  kind: 'seq2seq' | 'gpt' | 'marian' | 'm2m100' | 't5' | 'hf-encoder',
): void {
  parseOnnxDType(a.dtype); // before any folder is read
  const out = resolve(a.out);
  if (existsSync(out)) {
    if (!statSync(out).isDirectory()) throw new UserError(`--out ${a.out} exists and is not a folder`);
    if (readdirSync(out).length > 0 && !a.force)
      throw new UserError(`--out ${a.out} already exists and is not empty: pass --force to replace it`);
  }
  const withAttention = a.withAttention ?? false;
  let dtype: WeightDType;
  let exp: OnnxExport;
  let params: number;
  // A folder that names an ensemble: its config.json without the list (the graphs hold its own model alone).
  let ownConfig: ModelConfigFile | undefined;
  if (kind === 'gpt') {
    const { model } = loadLmDir(a.model);
    params = model.numParameters();
    const w = weightsFor(model, a);
    dtype = w.dtype;
    exp = exportGptOnnx(model.config, w.weights, { dtype, withAttention });
  } else if (kind === 'hf-encoder') {
    // qkv's Encoder with the family's switches and the head config.json's architectures names.
    const { model } = asUserError(() => readEncoderDir(a.model));
    params = model.numParameters();
    const w = weightsFor(model, a);
    dtype = w.dtype;
    exp = exportEncoderOnnx(model.config, w.weights, { dtype, withAttention });
  } else if (kind === 't5') {
    // T5's own graphs (io/onnx/t5.ts), in float weights only.
    const { model } = asUserError(() => readT5Dir(a.model));
    params = model.numParameters();
    dtype = parseOnnxDType(a.dtype);
    if (dtype !== 'fp32' && dtype !== 'fp16')
      throw new UserError(
        `--dtype ${a.dtype}: a T5 folder is exported with f32 or f16 weights (no int8 or q4 T5 graphs)`,
      );
    exp = exportT5Onnx(model.config, model.stateDict(), { dtype, withAttention });
  } else if (kind === 'marian' || kind === 'm2m100') {
    // qkv's Seq2Seq with Marian's (or M2M100's) switches, as the graphs compute it; the folder's own files go beside.
    const { model } = asUserError(() => (kind === 'marian' ? readMarianDir(a.model) : readM2M100Dir(a.model)));
    params = model.numParameters();
    const w = weightsFor(model, a);
    dtype = w.dtype;
    exp = exportSeq2SeqOnnx(model.config, w.weights, { dtype, withAttention });
  } else {
    const { model, config } = loadModelDir(a.model);
    if (config.decoding?.ensemble) {
      const { ensemble, ...decoding } = config.decoding;
      a.log(
        `${a.model}: its config.json names an ensemble ` +
          `(${ensemble.join(', ')}); the ONNX graphs hold ${a.model}'s own model ` +
          `alone`,
      );
      ownConfig = { ...config, decoding };
    }
    params = model.numParameters();
    const w = weightsFor(model, a);
    dtype = w.dtype;
    exp = exportSeq2SeqOnnx(model.config, w.weights, { dtype, withAttention });
  }
  // What killed exports left beside the destination (a folder being written, an old one set aside).
  const stale = new RegExp(`^\\.${basename(out).replace(/[^\w-]/g, '\\$&')}\\.(tmp|old)-\\d+$`);
  if (existsSync(dirname(out)))
    for (const f of readdirSync(dirname(out)))
      if (stale.test(f)) rmSync(join(dirname(out), f), { recursive: true, force: true });
  const tmp = join(dirname(out), `.${basename(out)}.tmp-${process.pid}`);
  const old = join(dirname(out), `.${basename(out)}.old-${process.pid}`);
  mkdirSync(tmp, { recursive: true });
  try {
    for (const [name, bytes] of Object.entries(exp.files)) atomicWrite(join(tmp, name), bytes);
    atomicWrite(join(tmp, MANIFEST), `${JSON.stringify(exp.manifest, null, 2)}\n`);
    const hfLm = kind === 'gpt' && folderKindOfDir(a.model) === 'hf-gpt2';
    if (kind === 'marian' || kind === 'm2m100' || kind === 't5' || kind === 'hf-encoder' || hfLm) {
      // The folder's own files beside the graphs (a sentence-transformers folder keeps its pooling; a Hugging Face
      // decoder its tokenizer, special tokens, chat template and generation defaults).
      const files =
        kind === 'marian'
          ? Object.values(MARIAN_FILES)
          : kind === 'm2m100' || kind === 't5'
            ? HF_SEQ2SEQ_FILES
            : hfLm
              ? HF_LM_FILES
              : [FILES.tokenizer, ...Object.values(ENCODER_FILES)];
      for (const f of [FILES.config, ...files]) {
        const bytes = readFileIn(a.model, f);
        if (bytes !== undefined) atomicWrite(join(tmp, f), bytes);
      }
    } else asUserError(() => copyFolderFiles(a.model, tmp, { ...(ownConfig && { config: ownConfig }) }));
    // A folder cannot be renamed over a full one: the old one is renamed aside first, so that a
    // kill leaves under --out the old export whole, nothing (the old one beside it), or the new
    // one whole; never a folder half removed (crash-writes.once.test.ts kills at each point).
    if (existsSync(out)) renameSync(out, old);
    faultPoint('export-swap', { file: out, at: 'aside' });
    renameSync(tmp, out);
    faultPoint('export-swap', { file: out, at: 'renamed' });
    try {
      nodeWriteFs.syncDir(dirname(out));
    } catch {
      // Some systems cannot fsync a folder (Windows).
    }
    rmSync(old, { recursive: true, force: true });
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    if (existsSync(old) && !existsSync(out)) renameSync(old, out);
    throw e;
  }
  const graphs = Object.keys(exp.files).join(', ');
  a.log(
    `wrote ${a.out}: ${graphs} (opset ${exp.manifest.opset}, ` +
      `${params.toLocaleString('en-US')} parameters, ${dtype} ` +
      `weights${withAttention ? ', attention outputs' : ''})`,
  );
}
