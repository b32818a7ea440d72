/**
 * Hugging Face GPT-2 folders on disk (config.json with model_type 'gpt2', tokenizer.json or
 * vocab.json + merges.txt, model.safetensors, as the Hub serves gpt2, distilgpt2, gpt2-medium):
 * recognised by config.json and loaded as a qkv language model (src/folder/), so `qkv
 * generate/attention/explore --model DIR` take them as they take a `qkv train-lm` folder.
 */
import type { LoadedLm } from '../folder/gpt.ts';
import { folderKindOf, readHfGpt2Dir } from '../folder/node.ts';
import { asUserError } from './files.ts';

/**
 * Whether dir is a Hugging Face GPT-2 folder (folder/ `folderKindOf`); false when it cannot be read (its loader names
 * why).
 */
export function isHfModelDir(dir: string): boolean {
  try {
    return folderKindOf(dir) === 'hf-gpt2';
  } catch {
    return false;
  }
}

/** A Hugging Face GPT-2 folder as a language model (eval mode); errors name the file. */
export function loadHfLmDir(dir: string): LoadedLm {
  return asUserError(() => readHfGpt2Dir(dir));
}
