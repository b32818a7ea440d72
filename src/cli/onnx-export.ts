/**
 * `qkv export --format onnx`: a self-contained folder for ONNX Runtime: the graphs, onnx.json (which
 * graph is which), and the model's config.json and tokenizer.json. The folder is written beside
 * its destination under a temporary name and renamed into place, so a failed export leaves nothing
 * half-written; an existing non-empty destination is refused unless --force.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { exportGptOnnx, exportSeq2SeqOnnx, MANIFEST, type OnnxExport } from '../io/onnx/export.ts';
import type { WeightDType } from '../io/onnx/builder.ts';
import {
  asUserError,
  atomicWrite,
  copyFolderFiles,
  loadLmDir,
  loadModelDir,
  UserError,
  type ModelConfigFile,
} from './files.ts';

export interface OnnxExportArgs {
  model: string;
  out: string;
  /** f32 (default) or f16. */
  dtype?: string;
  withAttention?: boolean;
  force?: boolean;
  log: (s: string) => void;
}

export function parseOnnxDType(d: string | undefined): WeightDType {
  const s = (d ?? 'f32').toLowerCase();
  if (s === 'f32' || s === 'fp32' || s === 'float32') return 'fp32';
  if (s === 'f16' || s === 'fp16' || s === 'float16') return 'fp16';
  throw new UserError(`--dtype must be f16 or f32 for --format onnx, got '${d}'`);
}

export function exportOnnx(a: OnnxExportArgs, kind: 'seq2seq' | 'gpt'): void {
  const dtype = parseOnnxDType(a.dtype);
  const out = resolve(a.out);
  if (existsSync(out)) {
    if (!statSync(out).isDirectory()) throw new UserError(`--out ${a.out} exists and is not a folder`);
    if (readdirSync(out).length > 0 && !a.force)
      throw new UserError(`--out ${a.out} already exists and is not empty: pass --force to replace it`);
  }
  const o = { dtype, withAttention: a.withAttention ?? false };
  let exp: OnnxExport;
  let params: number;
  // A folder that names an ensemble: its config.json without the list (the graphs hold its own model alone).
  let ownConfig: ModelConfigFile | undefined;
  if (kind === 'gpt') {
    const { model } = loadLmDir(a.model);
    exp = exportGptOnnx(model.config, model.stateDict(), o);
    params = model.numParameters();
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
    exp = exportSeq2SeqOnnx(model.config, model.stateDict(), o);
    params = model.numParameters();
  }
  const tmp = join(dirname(out), `.${basename(out)}.tmp-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    for (const [name, bytes] of Object.entries(exp.files)) atomicWrite(join(tmp, name), bytes);
    atomicWrite(join(tmp, MANIFEST), `${JSON.stringify(exp.manifest, null, 2)}\n`);
    asUserError(() => copyFolderFiles(a.model, tmp, { ...(ownConfig && { config: ownConfig }) }));
    if (existsSync(out)) rmSync(out, { recursive: true });
    renameSync(tmp, out);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  const graphs = Object.keys(exp.files).join(', ');
  a.log(
    `wrote ${a.out}: ${graphs} (opset ${exp.manifest.opset}, ` +
      `${params.toLocaleString('en-US')} parameters, ${dtype} ` +
      `weights${o.withAttention ? ', attention outputs' : ''})`,
  );
}
