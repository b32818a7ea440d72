/**
 * `pipeline('text-generation', folder)`: a function from a prompt to its continuation, generated as
 * `qkv generate --model folder` does: the prompt after one line separator (a line start, as the
 * model was trained), the same sampling (temperature, top-k, top-p, seeded), the same KV cache,
 * the same text for the ids. `generate.stream` yields the continuation piece by piece.
 */
import { generateStream } from '../decode/gpt.ts';
import { idsText, promptContext, promptIds, type GptTokenizer, type LoadedLm } from '../folder/gpt.ts';
import type { LmConfigFile } from '../folder/spec.ts';
import type { GPT } from '../models/gpt.ts';

/**
 * Per-call options of a {@link TextGenerationPipeline}, those of `qkv generate`. A bad value is an Error
 * naming it (temperature finite and ≥ 0, topK a positive integer, topP in (0, 1], maxNewTokens a non-negative integer).
 */
export interface GenerationOptions {
  /** Tokens to generate (default 200, as `qkv generate --max-tokens`). */
  maxNewTokens?: number;
  /** Softmax temperature, 0 = greedy (default 0.8, as the CLI). */
  temperature?: number;
  /** Sample among the k most probable tokens. */
  topK?: number;
  /** Sample among the most probable tokens that make up probability p. */
  topP?: number;
  /** Seed of the sampling (default: a random one, as the CLI without --seed). */
  seed?: number;
  /** The KV cache (default true; false recomputes the context at every step, as --no-cache). */
  useCache?: boolean;
  /** Called with each token's text (possibly '', when a token completes no character yet) and id. */
  onToken?: (piece: string, id: number) => void;
}

/**
 * What `pipeline('text-generation', folder)` gives: a function continuing a prompt (the same text
 * `qkv generate --model folder` writes for it with the same options and seed), `stream` for the
 * continuation piece by piece, and the opened folder's model, tokenizer and config. An empty prompt,
 * or one longer than the model's context (`blockSize` tokens), is an Error (the promise rejects; `stream` throws).
 */
export interface TextGenerationPipeline {
  /** The continuation of `prompt` (the prompt itself not included). */
  (prompt: string, options?: GenerationOptions): Promise<string>;
  /** The continuation, piece by piece (pieces that add no text are left out). */
  stream(prompt: string, options?: GenerationOptions): AsyncIterableIterator<string>;
  /** Always 'text-generation': the task it was made for. */
  readonly task: 'text-generation';
  /** The folder's language model (eval mode): a qkv GPT, or GPT-2's weights on qkv's GPT. */
  readonly model: GPT;
  /** The folder's tokenizer: characters, qkv's BPE, or GPT-2's byte-level BPE. */
  readonly tokenizer: GptTokenizer;
  /** The id that ends a line: '\n' for characters, EOS for BPE and GPT-2. */
  readonly separatorId: number;
  /** config.json as qkv reads it (a Hugging Face GPT-2 one described in qkv's terms). */
  readonly config: LmConfigFile;
}

/** Each generated token's id and the text it adds, exactly as `qkv generate` writes it. */
function* pieces(lm: LoadedLm, prompt: string, o: GenerationOptions): Generator<{ id: number; piece: string }> {
  if (typeof prompt !== 'string' || prompt === '')
    throw new Error('text-generation: the prompt is empty: give some text to continue');
  const { model, tokenizer, separatorId } = lm;
  const ids = promptIds(tokenizer, prompt, separatorId);
  if (ids.length > model.config.blockSize)
    throw new Error(
      `text-generation: the prompt is ${ids.length} tokens long; this model's context holds ${model.config.blockSize}`,
    );
  const maxTokens = o.maxNewTokens ?? 200;
  const seed = o.seed ?? Math.floor(Math.random() * 2 ** 31);
  const all = ids.slice();
  let shown = idsText(tokenizer, all, separatorId);
  const options = {
    maxTokens,
    temperature: o.temperature ?? 0.8,
    topK: o.topK,
    topP: o.topP,
    seed,
    useCache: o.useCache ?? true,
  };
  for (const t of generateStream(model, promptContext(lm, prompt), options)) {
    all.push(t.id);
    const text = idsText(tokenizer, all, separatorId);
    const piece = text.slice(shown.length);
    shown = text;
    yield { id: t.id, piece };
  }
}

/** The text-generation pipeline of an opened language-model folder. */
export function textGenerationPipeline(lm: LoadedLm): TextGenerationPipeline {
  const run = async (prompt: string, options: GenerationOptions = {}): Promise<string> => {
    let out = '';
    for (const { id, piece } of pieces(lm, prompt, options)) {
      out += piece;
      options.onToken?.(piece, id);
    }
    return out;
  };
  async function* stream(prompt: string, options: GenerationOptions = {}): AsyncIterableIterator<string> {
    for (const { id, piece } of pieces(lm, prompt, options)) {
      options.onToken?.(piece, id);
      if (piece !== '') yield piece;
    }
  }
  return Object.assign(run, {
    stream,
    task: 'text-generation' as const,
    model: lm.model,
    tokenizer: lm.tokenizer,
    separatorId: lm.separatorId,
    config: lm.config,
  });
}
