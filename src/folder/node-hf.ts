/**
 * What fine-tuning writes on disk (Node only; the bytes come from ./adapter.ts): a PEFT adapter folder, and a
 * Hugging Face folder made from a base one (its config, tokenizer and generation files copied, its weights under
 * the family's Hugging Face names). Every file is written atomically (io/atomic.ts), so a killed run leaves either
 * the old file or the new one.
 */
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { atomicWrite } from '../io/atomic.ts';
import type { AttachedLora } from '../models/hf/peft.ts';
import { ADAPTER_FILES, adapterFiles, hfWeightsFile } from './adapter.ts';
import { FILES } from './spec.ts';
import type { Tunable } from './tunable.ts';

/** An attached adapter as a PEFT folder in `dir`: adapter_config.json and adapter_model.safetensors. */
export function saveAdapterDir(dir: string, a: AttachedLora): void {
  mkdirSync(dir, { recursive: true });
  const files = adapterFiles(a);
  atomicWrite(join(dir, ADAPTER_FILES.config), files.config);
  atomicWrite(join(dir, ADAPTER_FILES.weights), files.weights);
}

/** Weights files and a training run's files: what copyHfFiles leaves behind. */
const NOT_COPIED =
  /\.(safetensors|bin|h5|msgpack|ot|pt|pth|ckpt|onnx)$|^model\.safetensors\.index\.json$|^history\.json$/;

/**
 * Every file of the Hugging Face folder `from` but its weights (config.json, tokenizer files,
 * generation_config.json, ...) into `to`, each written atomically.
 */
export function copyHfFiles(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const f of readdirSync(from)) {
    if (NOT_COPIED.test(f) || !statSync(join(from, f)).isFile()) continue;
    atomicWrite(join(to, f), readFileSync(join(from, f)));
  }
}

/** The model's weights as `dir`/model.safetensors under its family's Hugging Face names. */
export function saveHfWeights(dir: string, t: Tunable): void {
  atomicWrite(join(dir, FILES.weights), hfWeightsFile(t));
}
