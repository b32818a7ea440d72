/**
 * Hugging Face GPT-2 folders on disk (config.json with model_type 'gpt2', tokenizer.json,
 * model.safetensors, as the Hub serves gpt2, distilgpt2, gpt2-medium): recognised by config.json
 * and loaded as a qkv language model, so `qkv generate/attention/explore --model DIR` take them
 * as they take a `qkv train-lm` folder.
 */
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { readHfGpt2Sync } from '../io/hf.ts';
import type { GPT } from '../models/gpt.ts';
import { isHfConfig } from '../models/hf/gpt2.ts';
import { checkedHf, hfTokenizer, type LoadedGpt } from '../viz/gpt-attention.ts';
import { readJson, UserError } from './files.ts';

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
export function loadHfLmDir(dir: string): Required<LoadedGpt> {
  const config = readJson(join(dir, 'config.json'), 'model config');
  const tokenizerJson = readJson(join(dir, 'tokenizer.json'), 'tokenizer');
  const wpath = join(dir, 'model.safetensors');
  if (!existsSync(wpath)) throw new UserError(`model weights not found: ${wpath}`);
  try {
    const tokenizer = hfTokenizer(tokenizerJson); // a bad tokenizer is named before 500 MB of weights are read
    let model: GPT;
    const fd = openSync(wpath, 'r');
    try {
      // One tensor (or 16 MiB of one) at a time: the file is never held whole beside the weights.
      model = readHfGpt2Sync(config, fstatSync(fd).size, (begin, end) => {
        const buf = Buffer.allocUnsafe(end - begin);
        let got = 0;
        while (got < buf.length) {
          const n = readSync(fd, buf, got, buf.length - got, begin + got);
          if (n === 0) break;
          got += n;
        }
        return buf.subarray(0, got);
      });
    } catch (e) {
      const m = (e as Error).message;
      throw new Error(/^(config\.json|model\.safetensors)/.test(m) ? m : `model.safetensors: ${m}`);
    } finally {
      closeSync(fd);
    }
    const lm = checkedHf(model, tokenizer);
    return {
      ...lm,
      config: { format: 'qkv-gpt', version: 1, model: lm.model.config, tokenizer: 'bytelevel', training: { from: `Hugging Face folder ${dir}` } },
    };
  } catch (e) {
    throw new UserError(`${dir}/${(e as Error).message}`);
  }
}
