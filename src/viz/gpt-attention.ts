/**
 * A GPT's causal self-attention over a prompt and what it generates: the continuation is drawn
 * (greedy or seeded sampling), then one pass over the whole sequence reads every block's attention
 * weights, per head, as plain arrays ([layer][head][query][key]) for the drawing functions. Row i
 * is the position fed token i; it attends to tokens 0..i only, so everything above the diagonal is
 * exactly 0. Runs anywhere qkv runs (no Node APIs): the explorer uses it in the browser.
 *
 * A language-model folder (from `qkv train-lm`) holds config.json (format 'qkv-gpt'),
 * tokenizer.json (a qkv-chars tokenizer, or a BPE tokenizer.json) and model.safetensors. A Hugging
 * Face GPT-2 folder holds the same three names (config.json with model_type 'gpt2', a byte-level
 * BPE tokenizer.json, HF's model.safetensors) and is read through models/hf/gpt2.ts.
 *
 * Text and ids: qkv's language models are trained on lines, each ended by the separator, so a
 * prompt's lines are joined by it. A byte-level model (GPT-2) reads raw text: '\n' is an ordinary
 * token, and <|endoftext|> (the separator here) only opens the document.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import { generate } from '../decode/gpt.ts';
import { readSafetensors } from '../io/safetensors.ts';
import { GPT, type GPTConfig } from '../models/gpt.ts';
import { checkGptConfig } from '../models/config-check.ts';
import { withEvalMode } from '../nn/module.ts';
import { GPT_FIELDS, loadWeights } from '../models/load-weights.ts';
import { Tensor } from '../tensor/tensor.ts';
import { readHfGpt2 } from '../io/hf.ts';
import { isHfConfig } from '../models/hf/gpt2.ts';
import { BpeTokenizer } from '../text/bpe.ts';
import { ByteLevelBpeTokenizer } from '../text/bytelevel.ts';
import { CharTokenizer } from '../text/chars.ts';
import { tokenizerFromJSON } from '../text/load.ts';
import { decodeLines, encodeLines, type LmTokenizer } from '../train/lm.ts';
import { headsOf, type AttentionStack } from './attention-data.ts';
import { clip, type AttentionMaps } from './attention-maps.ts';

export type GptTokenizer = CharTokenizer | BpeTokenizer | ByteLevelBpeTokenizer;

/** A language-model folder's config.json (`qkv train-lm` writes it). */
export interface LmConfigFile {
  format: 'qkv-gpt';
  version: 1;
  model: GPTConfig;
  /** 'bytelevel': a Hugging Face GPT-2 folder read as one (cli/hf.ts); never written. */
  tokenizer: 'char' | 'bpe' | 'bytelevel';
  /** How it was trained (preset, recipe, data), for reference. */
  training?: Record<string, unknown>;
}

/** A language model with its tokenizer: the one type for a loaded GPT (the CLI's loaders give `Required<LoadedGpt>`). */
export interface LoadedGpt {
  model: GPT;
  tokenizer: GptTokenizer;
  /** The id that ends a line: '\n' for characters, EOS for BPE (as `qkv train-lm` trains). */
  separatorId: number;
  /** The folder's config.json, when it was loaded by path (the CLI's loaders). */
  config?: LmConfigFile;
}

/** The id that ends a line (one document) in training: '\n' for a char tokenizer, EOS for BPE. */
export function lineSeparatorId(tokenizer: LmTokenizer): number {
  if (tokenizer instanceof CharTokenizer) {
    const id = tokenizer.tokenToId('\n');
    if (id === undefined) throw new Error('the character tokenizer has no "\\n" (the line separator a language model is trained with)');
    return id;
  }
  return (tokenizer as BpeTokenizer | ByteLevelBpeTokenizer).eosId;
}

/** A prompt's ids, without the leading separator: lines joined by the separator, or (byte-level) the raw text. */
export function promptIds(tokenizer: GptTokenizer, prompt: string, separatorId: number): number[] {
  if (tokenizer instanceof ByteLevelBpeTokenizer) return tokenizer.encode(prompt);
  const body = encodeLines(tokenizer, prompt.split('\n'), separatorId);
  return [...body.subarray(0, body.length - 1)];
}

/** The text of ids (no leading separator): separators become line ends, or (byte-level) the bytes' text. */
export function idsText(tokenizer: GptTokenizer, ids: readonly number[], separatorId: number): string {
  if (tokenizer instanceof ByteLevelBpeTokenizer) return tokenizer.decode(ids, { skipSpecialTokens: true });
  return decodeLines(tokenizer, ids, separatorId);
}

/** The model (in eval mode) and tokenizer of a language-model folder's three files, from their contents. */
export function loadGptFromFiles(configJson: unknown, tokenizerJson: unknown, weights: Uint8Array): LoadedGpt {
  if (isHfConfig(configJson)) {
    const tokenizer = hfTokenizer(tokenizerJson);
    let model: GPT;
    try {
      model = readHfGpt2(configJson, weights);
    } catch (e) {
      const m = (e as Error).message;
      throw new Error(/^(config\.json|model\.safetensors)/.test(m) ? m : `model.safetensors: ${m}`);
    }
    return checkedHf(model, tokenizer);
  }
  const cfg = configJson as { format?: string; model?: GPTConfig; tokenizer?: string } | null;
  if (!cfg || typeof cfg !== 'object' || cfg.format !== 'qkv-gpt' || !cfg.model) throw new Error(`config.json: expected format 'qkv-gpt' with a 'model' section, got format '${String(cfg?.format)}'`);
  if (cfg.tokenizer !== 'char' && cfg.tokenizer !== 'bpe') throw new Error(`config.json: expected "tokenizer": "char" or "bpe", got '${String(cfg.tokenizer)}'`);
  let tokenizer: GptTokenizer;
  try {
    tokenizer = cfg.tokenizer === 'char' ? CharTokenizer.fromJSON(tokenizerJson) : BpeTokenizer.fromJSON(tokenizerJson);
  } catch (e) {
    throw new Error(`tokenizer.json: ${(e as Error).message}`);
  }
  let model: GPT;
  try {
    model = new GPT(checkGptConfig(cfg.model));
  } catch (e) {
    throw new Error(`config.json: ${(e as Error).message}`);
  }
  if (tokenizer.vocabSize !== model.config.vocabSize) throw new Error(`tokenizer.json has ${tokenizer.vocabSize} tokens, config.json's model ${model.config.vocabSize}`);
  try {
    loadWeights(model, readSafetensors(weights).tensors, cfg.model, GPT_FIELDS);
  } catch (e) {
    throw new Error(`model.safetensors: ${(e as Error).message}`);
  }
  model.eval();
  return { model, tokenizer, separatorId: lineSeparatorId(tokenizer) };
}

/** A Hugging Face folder's tokenizer.json (byte-level BPE, or another kind qkv reads), errors naming the file. */
export function hfTokenizer(tokenizerJson: unknown): GptTokenizer {
  try {
    return tokenizerFromJSON(tokenizerJson);
  } catch (e) {
    const m = (e as Error).message;
    throw new Error(m.startsWith('tokenizer.json') ? m : `tokenizer.json: ${m}`);
  }
}

/** An HF model and its tokenizer, checked against each other. */
export function checkedHf(model: GPT, tokenizer: GptTokenizer): LoadedGpt {
  // GPT-2's embedding table may be padded past the tokenizer (e.g. to a multiple of 64), never shorter.
  if (tokenizer.vocabSize > model.config.vocabSize) throw new Error(`tokenizer.json has ${tokenizer.vocabSize} tokens, config.json's vocab_size is ${model.config.vocabSize}`);
  return { model, tokenizer, separatorId: lineSeparatorId(tokenizer) };
}

/** Every block's attention (per head) of one pass over ids: [layer][head][T][T], causal. */
export function causalAttention(model: GPT, ids: readonly number[]): AttentionStack {
  if (ids.length === 0) throw new Error('causalAttention: no tokens');
  if (ids.length > model.config.blockSize) throw new Error(`causalAttention: ${ids.length} tokens, more than the context of ${model.config.blockSize}`);
  return withEvalMode(model, () => noGrad(() => {
    const x = new Tensor(Int32Array.from(ids), [1, ids.length], 'int32');
    return model.forwardCached(x, model.initCache(), { needWeights: true }).weights!.map(headsOf);
  }));
}

/** A token as a label: characters with ' ' as '␣' and the line end as '⏎'; BPE pieces as they are. */
export function tokenLabel(tokenizer: GptTokenizer, id: number, separatorId: number): string {
  if (tokenizer instanceof ByteLevelBpeTokenizer) {
    if (id === separatorId) return '<|endoftext|>';
    const bytes = tokenizer.tokenBytes(id);
    if (!bytes) return tokenizer.idToToken(id) ?? `#${id}`; // an added token, or an unknown id
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      // A piece of a multi-byte character (one byte of an emoji, say) is not text on its own: show its bytes.
      return `<${Array.from(bytes, (b) => `0x${b.toString(16).toUpperCase().padStart(2, '0')}`).join(' ')}>`;
    }
    return text.replaceAll(' ', '␣').replaceAll('\n', '⏎').replaceAll('\t', '⇥');
  }
  if (id === separatorId) return '⏎';
  const t = tokenizer.idToToken(id) ?? `#${id}`;
  return tokenizer instanceof CharTokenizer && t === ' ' ? '␣' : t;
}

const promptIdsOf = promptIds;

export interface GenerateAttentionOptions {
  /** Tokens to generate at most (default 40); fewer when the context would overflow. */
  maxTokens?: number;
  /** 0 (default) = greedy; else sampling at this temperature. */
  temperature?: number;
  topK?: number;
  topP?: number;
  /** Seed of the sampling (default 0). */
  seed?: number;
  /** Stop after the line ends (the separator is generated), default true. */
  stopAtLineEnd?: boolean;
}

export interface GptAttention {
  prompt: string;
  /** The generated text (a final line end not included). */
  continuation: string;
  /** The ids fed to the model: a line start (when there is room), the prompt, the generated tokens. */
  ids: number[];
  /** One label per id. */
  tokens: string[];
  /** How many of `ids` come from the prompt (the line start included). */
  promptLength: number;
  /** Generation ended with the line end. */
  lineEnded: boolean;
  /** maxTokens was lowered to fit the model's context. */
  cut: boolean;
  /** [layer][head][query][key] over `ids`. */
  attention: AttentionStack;
}

/** Continue a prompt and collect the causal self-attention of every layer and head over prompt + continuation. */
export function generateWithAttention(lm: LoadedGpt, prompt: string, options: GenerateAttentionOptions = {}): GptAttention {
  const { model, tokenizer, separatorId } = lm;
  if (prompt.trim() === '') throw new Error('generate: the prompt is empty');
  const blockSize = model.config.blockSize;
  // As `qkv generate`: every line of the prompt but the last ends with the separator, and a line
  // start (the separator) comes first when there is room.
  const promptIds = promptIdsOf(tokenizer, prompt, separatorId);
  if (promptIds.length >= blockSize) throw new Error(`generate: the prompt is ${promptIds.length} tokens long; this model's context holds ${blockSize}, with room for at least one more`);
  const fed = promptIds.length + 1 < blockSize ? [separatorId, ...promptIds] : promptIds;
  const want = options.maxTokens ?? 40;
  if (!Number.isInteger(want) || want < 1) throw new Error(`generate: maxTokens must be a positive integer, got ${want}`);
  const maxTokens = Math.min(want, blockSize - fed.length);
  const stop = options.stopAtLineEnd ?? true;
  const { ids: generated } = generate(model, fed, {
    maxTokens, temperature: options.temperature ?? 0, topK: options.topK, topP: options.topP, seed: options.seed ?? 0, stopIds: stop ? [separatorId] : [],
  });
  const ids = [...fed, ...generated];
  const lineEnded = generated.length > 0 && generated[generated.length - 1] === separatorId;
  const shownPrompt = idsText(tokenizer, promptIds, separatorId);
  const full = idsText(tokenizer, [...promptIds, ...(lineEnded ? generated.slice(0, -1) : generated)], separatorId);
  return {
    prompt,
    continuation: full.startsWith(shownPrompt) ? full.slice(shownPrompt.length) : idsText(tokenizer, generated, separatorId),
    ids,
    tokens: ids.map((id) => tokenLabel(tokenizer, id, separatorId)),
    promptLength: fed.length,
    lineEnded,
    cut: maxTokens < want,
    attention: causalAttention(model, ids),
  };
}

export const GPT_ATTENTION_NAME = 'causal self-attention';

/** The maps of a generation, to draw with attention-maps.ts. */
export function gptMaps(g: GptAttention): AttentionMaps {
  return {
    name: GPT_ATTENTION_NAME,
    maps: g.attention,
    rows: g.tokens,
    cols: g.tokens,
    xLabel: 'key: earlier tokens',
    yLabel: 'query: position',
    causal: true,
    minCell: 10,
  };
}

/** A title for a grid of a generation's maps. */
export function gptTitle(g: GptAttention): string {
  return `${GPT_ATTENTION_NAME}: "${clip(g.prompt)}" → "${clip(g.continuation)}"`;
}
