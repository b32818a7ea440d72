/**
 * `qkv export`: a model folder ready to ship — config, tokenizer and weights (fp16 halves them).
 * Translation models (format 'qkv-seq2seq', from qkv train) and language models ('qkv-gpt', from
 * qkv train-lm) alike; the training state is left behind.
 */
import { isHfModelDir } from './hf.ts';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { modelKind, type ModelKind } from '../viz/attention-data.ts';
import { loadModelDir, saveWeights, TARGET_TOKENIZER, UserError } from './files.ts';
import { loadLmDir } from './lm.ts';
import { exportOnnx } from './onnx-export.ts';

/** The kind of model in a folder, from its config.json's format (a UserError naming the file when it is neither kind). */
export function modelDirKind(dir: string): ModelKind {
  if (!existsSync(dir)) throw new UserError(`model folder not found: ${dir}`);
  const path = join(dir, 'config.json');
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new UserError(existsSync(path) ? `model config is not valid JSON: ${path} (${(e as Error).message})` : `model config not found: ${path}`);
  }
  try {
    return modelKind(json, path);
  } catch (e) {
    throw new UserError((e as Error).message);
  }
}

export function exportModel(o: { model: string; out: string; dtype?: string; format?: string; withAttention?: boolean; force?: boolean; log: (s: string) => void }): void {
  const format = o.format ?? 'safetensors';
  if (format !== 'safetensors' && format !== 'onnx') throw new UserError(`--format must be safetensors or onnx, got '${format}'`);
  if (format === 'onnx') return exportOnnx(o, modelDirKind(o.model));
  if (o.withAttention) throw new UserError('--with-attention is for --format onnx');
  const dtype = (o.dtype ?? 'f16').toUpperCase();
  if (dtype !== 'F16' && dtype !== 'F32') throw new UserError(`--dtype must be f16 or f32, got '${o.dtype}'`);
  if (isHfModelDir(o.model)) throw new UserError(`${o.model} is a Hugging Face folder: qkv reads it as it is (--model ${o.model}); export takes a qkv run folder`);
  // Loading validates the folder and the weights.
  const { model } = modelDirKind(o.model) === 'gpt' ? loadLmDir(o.model) : loadModelDir(o.model);
  mkdirSync(o.out, { recursive: true });
  for (const f of ['config.json', 'tokenizer.json', TARGET_TOKENIZER, 'history.json']) {
    if (existsSync(join(o.model, f))) copyFileSync(join(o.model, f), join(o.out, f));
  }
  saveWeights(join(o.out, 'model.safetensors'), model.stateDict(), dtype);
  o.log(`wrote ${o.out} (${model.numParameters().toLocaleString('en-US')} parameters, ${dtype})`);
}
