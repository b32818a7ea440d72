/** `qkv export`: a model folder ready to ship — config, tokenizer and weights (fp16 halves them). */
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadModelDir, saveWeights, UserError } from './files.ts';

export function exportModel(o: { model: string; out: string; dtype: string; log: (s: string) => void }): void {
  const dtype = o.dtype.toUpperCase();
  if (dtype !== 'F16' && dtype !== 'F32') throw new UserError(`--dtype must be f16 or f32, got '${o.dtype}'`);
  const { model } = loadModelDir(o.model); // validates the folder and the weights
  mkdirSync(o.out, { recursive: true });
  for (const f of ['config.json', 'tokenizer.json', 'history.json']) {
    if (existsSync(join(o.model, f))) copyFileSync(join(o.model, f), join(o.out, f));
  }
  saveWeights(join(o.out, 'model.safetensors'), model.stateDict(), dtype);
  o.log(`wrote ${o.out} (${model.numParameters().toLocaleString('en-US')} parameters, ${dtype})`);
}
