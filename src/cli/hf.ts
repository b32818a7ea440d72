/**
 * Hugging Face GPT-2 folders on disk (config.json with model_type 'gpt2', tokenizer.json,
 * model.safetensors, as the Hub serves gpt2, distilgpt2, gpt2-medium): recognised by config.json
 * and loaded as a qkv language model, so `qkv generate/attention/explore --model DIR` take them
 * as they take a `qkv train-lm` folder.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isHfConfig } from '../models/hf/gpt2.ts';
import { checkedHf, hfTokenizer, loadGptFromFiles } from '../viz/gpt-attention.ts';
import { readJson, UserError } from './files.ts';
import type { LoadedLm } from './lm.ts';

/** Whether dir's config.json is a Hugging Face one (model_type, no qkv format). */
export function isHfModelDir(dir: string): boolean {
  const path = join(dir, 'config.json');
  if (!existsSync(path)) return false;
  try {
    return isHfConfig(JSON.parse(readFileSync(path, 'utf8')));
  } catch {
    return false; // the usual loader reports the bad JSON
  }
}

/** A Hugging Face GPT-2 folder as a language model (eval mode); errors name the file. */
export function loadHfLmDir(dir: string): LoadedLm {
  const config = readJson(join(dir, 'config.json'), 'model config');
  const tokenizerJson = readJson(join(dir, 'tokenizer.json'), 'tokenizer');
  const wpath = join(dir, 'model.safetensors');
  if (!existsSync(wpath)) throw new UserError(`model weights not found: ${wpath}`);
  try {
    hfTokenizer(tokenizerJson); // a bad tokenizer is named before 500 MB of weights are read
    const lm = loadGptFromFiles(config, tokenizerJson, readFileSync(wpath));
    checkedHf(lm.model, lm.tokenizer);
    return {
      ...lm,
      config: { format: 'qkv-gpt', version: 1, model: lm.model.config, tokenizer: 'bytelevel', training: { from: `Hugging Face folder ${dir}` } },
    };
  } catch (e) {
    throw new UserError(`${dir}/${(e as Error).message}`);
  }
}
