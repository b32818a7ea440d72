/**
 * A GPT's causal self-attention over a prompt and what it generates: the continuation is drawn
 * (greedy or seeded sampling), then one pass over the whole sequence reads every block's attention
 * weights, per head, as plain arrays ([layer][head][query][key]) for the drawing functions. Row i
 * is the position fed token i; it attends to tokens 0..i only, so everything above the diagonal is
 * exactly 0. Runs anywhere qkv runs (no Node APIs): the explorer uses it in the browser.
 *
 * Opening a language-model folder (a qkv GPT or a Hugging Face GPT-2) is the folder module's
 * (src/folder/gpt.ts, docs/model-folder.md); `loadGptFromFiles` and the text helpers are re-exported
 * here for the views that used them from viz.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import { generate, generateStream, generateStreamAsync, gptAsyncLm, type GenerateOptions } from '../decode/gpt.ts';
import {
  checkedHf as folderCheckedHf,
  hfTokenizer as folderHfTokenizer,
  idsText,
  promptContext,
  promptIds,
  type GptTokenizer,
  type LoadedGpt,
} from '../folder/gpt.ts';
import { lmFromFiles } from '../folder/open.ts';
import type { GPT } from '../models/gpt.ts';
import { withEvalMode } from '../nn/module.ts';
import { Tensor } from '../tensor/tensor.ts';
import { ByteLevelBpeTokenizer } from '../text/bytelevel.ts';
import { CharTokenizer } from '../text/chars.ts';
import { headsOf, headsOfAsync, type AttentionStack } from './attention-data.ts';
import { clip, type AttentionMaps } from './attention-maps.ts';

export type { GptTokenizer, LoadedGpt } from '../folder/gpt.ts';
export { idsText, lineSeparatorId, promptIds } from '../folder/gpt.ts';

/**
 * The model (in eval mode) and tokenizer of a language-model folder's three files, from their contents (folder/gpt.ts).
 */
export function loadGptFromFiles(configJson: unknown, tokenizerJson: unknown, weights: Uint8Array): LoadedGpt {
  const { model, tokenizer, separatorId, generation } = lmFromFiles({
    config: configJson,
    tokenizer: tokenizerJson,
    weights,
  });
  // A Hugging Face folder's generation settings (config.json's keys here) kept: it generates as the pipeline does.
  return { model, tokenizer, separatorId, ...(generation && { generation }) };
}

/** A Hugging Face folder's tokenizer.json (byte-level BPE, or another kind qkv reads), errors naming the file. */
export function hfTokenizer(tokenizerJson: unknown): GptTokenizer {
  return folderHfTokenizer({ tokenizer: tokenizerJson });
}

/** An HF model and its tokenizer, checked against each other. */
export function checkedHf(model: GPT, tokenizer: GptTokenizer): LoadedGpt {
  const { separatorId } = folderCheckedHf(model, tokenizer);
  return { model, tokenizer, separatorId };
}

/** Every block's attention (per head) of one pass over ids: [layer][head][T][T], causal. */
export function causalAttention(model: GPT, ids: readonly number[]): AttentionStack {
  return causalWeights(model, ids).map(headsOf);
}

/** {@link causalAttention} on every device: the weights read back asynchronously (a GPU's are read only so). */
export function causalAttentionAsync(model: GPT, ids: readonly number[]): Promise<AttentionStack> {
  return headsOfAsync(causalWeights(model, ids));
}

/** The pass of causalAttention, its weights (1, h, T, T) per block as tensors, not read yet. */
function causalWeights(model: GPT, ids: readonly number[]): Tensor[] {
  if (ids.length === 0) throw new Error('causalAttention: no tokens');
  if (ids.length > model.config.blockSize)
    throw new Error(`causalAttention: ${ids.length} tokens, more than the context of ${model.config.blockSize}`);
  return withEvalMode(model, () =>
    noGrad(() => {
      const x = new Tensor(Int32Array.from(ids), [1, ids.length], 'int32');
      return model.forwardCached(x, model.initCache(), { needWeights: true }).weights!;
    }),
  );
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

/** Options of {@link generateWithAttention}. */
export interface GenerateAttentionOptions {
  /** Tokens to generate at most (default 40); fewer when the context would overflow. */
  maxTokens?: number;
  /** 0 (default) = greedy; else sampling at this temperature. */
  temperature?: number;
  /** Sample only among the k most probable tokens (default: all). */
  topK?: number;
  /** Nucleus sampling: the smallest set of tokens whose probabilities sum to at least p (default 1, all). */
  topP?: number;
  /** Seed of the sampling (default 0). */
  seed?: number;
  /** Stop after the line ends (the separator is generated), default true. */
  stopAtLineEnd?: boolean;
  /**
   * Called with each generated id as it comes and its index (0: the first), before the attention is computed
   * (generateWithAttentionAsync only: the explorer's model worker reports the first token's time).
   */
  onToken?: (id: number, index: number) => void;
}

/** A generation and the causal self-attention of every layer and head over it. */
export interface GptAttention {
  /** The prompt as given. */
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
export function generateWithAttention(
  lm: LoadedGpt,
  prompt: string,
  options: GenerateAttentionOptions = {},
): GptAttention {
  const plan = generationPlan(lm, prompt, options);
  const { ids: generated } = generate(lm.model, plan.fed, plan.options);
  const g = plan.result(generated);
  return { ...g, attention: causalAttention(lm.model, g.ids) };
}

/**
 * {@link generateWithAttention} on every device: on a GPU each step's logits and the attention read back
 * asynchronously (decode/gpt.ts's gptAsyncLm, how a model on a GPU generates); on a CPU device the synchronous
 * steps, so the same tokens and numbers.
 */
export async function generateWithAttentionAsync(
  lm: LoadedGpt,
  prompt: string,
  options: GenerateAttentionOptions = {},
): Promise<GptAttention> {
  const plan = generationPlan(lm, prompt, options);
  const generated: number[] = [];
  // Where the model's device reads synchronously (a CPU), the synchronous stream: the same tokens, without a copy
  // and a promise a step.
  const sync = lm.model.parameters().every((p) => p.device.readSync !== undefined);
  const tokens = sync
    ? generateStream(lm.model, plan.fed, plan.options)
    : generateStreamAsync(gptAsyncLm(lm.model), plan.fed, plan.options);
  for await (const t of tokens) {
    generated.push(t.id);
    options.onToken?.(t.id, generated.length - 1);
  }
  const g = plan.result(generated);
  return { ...g, attention: await causalAttentionAsync(lm.model, g.ids) };
}

/** A generation's checks, what is fed, the options of decode/gpt.ts, and its result from the generated ids. */
function generationPlan(
  lm: LoadedGpt,
  prompt: string,
  options: GenerateAttentionOptions,
): {
  fed: number[];
  options: GenerateOptions;
  result(generated: number[]): Omit<GptAttention, 'attention'>;
} {
  const { model, tokenizer, separatorId } = lm;
  if (prompt.trim() === '') throw new Error('generate: the prompt is empty');
  const blockSize = model.config.blockSize;
  // As `qkv generate`: every line of the prompt but the last ends with the separator, and a line
  // start (the separator) comes first when there is room.
  const promptIds = promptIdsOf(tokenizer, prompt, separatorId);
  if (promptIds.length >= blockSize)
    throw new Error(
      `generate: the prompt is ${promptIds.length} tokens long; this model's ` +
        `context holds ${blockSize}, with room for at least one more`,
    );
  // A Hugging Face folder: what the text-generation pipeline feeds (its tokenizer's ids with its own special
  // tokens: none for GPT-2, a BOS for Llama's), and its generation_config.json's rules (the stop ids, the
  // repetition penalty, the least new tokens); qkv's folders: the prompt after a line start.
  const hf = lm.generation;
  const fed = promptContext(lm, prompt);
  if (hf && fed.length >= blockSize)
    throw new Error(
      `generate: the prompt is ${fed.length} tokens long; this model's ` +
        `context holds ${blockSize}, with room for at least one more`,
    );
  const want = options.maxTokens ?? 40;
  if (!Number.isInteger(want) || want < 1)
    throw new Error(`generate: maxTokens must be a positive integer, got ${want}`);
  const maxTokens = Math.min(want, blockSize - fed.length);
  const stop = options.stopAtLineEnd ?? true;
  const stopIds = hf ? hf.eosTokenIds : [separatorId];
  return {
    fed,
    options: {
      maxTokens,
      temperature: options.temperature ?? 0,
      topK: options.topK,
      topP: options.topP,
      seed: options.seed ?? 0,
      stopIds: stop ? stopIds : [],
      ...(hf && {
        repetitionPenalty: hf.repetitionPenalty,
        minNewTokens: stop ? Math.max(hf.minNewTokens, hf.minLength - fed.length) : 0,
      }),
    },
    result(generated) {
      const ids = [...fed, ...generated];
      const lineEnded = generated.length > 0 && stopIds.includes(generated[generated.length - 1]);
      const shownPrompt = idsText(tokenizer, promptIds, separatorId);
      const full = idsText(tokenizer, [...promptIds, ...(lineEnded ? generated.slice(0, -1) : generated)], separatorId);
      return {
        prompt,
        continuation: full.startsWith(shownPrompt)
          ? full.slice(shownPrompt.length)
          : idsText(tokenizer, generated, separatorId),
        ids,
        tokens: ids.map((id) => tokenLabel(tokenizer, id, separatorId)),
        promptLength: fed.length,
        lineEnded,
        cut: maxTokens < want,
      };
    },
  };
}

/** The name of a GPT's one kind of attention, as pages and titles print it. */
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
    // 12 px: the heatmap labels a row or column only where its cell is 12 px or more; every token is labelled.
    minCell: 12,
  };
}

/** A title for a grid of a generation's maps. */
export function gptTitle(g: GptAttention): string {
  return `${GPT_ATTENTION_NAME}: "${clip(g.prompt)}" → "${clip(g.continuation)}"`;
}
