/**
 * `pipeline('text-generation', folder)`: a function from a prompt to its continuation, generated as
 * `qkv generate --model folder` does: the prompt after one line separator (a line start, as the
 * model was trained), the same sampling (temperature, top-k, top-p, seeded), the same KV cache,
 * the same text for the ids. `generate.stream` yields the continuation piece by piece.
 */
import { generateStreamAsync, gptAsyncLm, type GeneratedToken, type GenerateOptions } from '../decode/gpt.ts';
import { generateStreamCompiled } from '../decode/static-gpt.ts';
import { pause } from '../decode/stepper.ts';
import { hfNewTokens } from '../models/hf/lm-generation.ts';
import { idsText, promptContext, promptIds, type GptTokenizer, type LoadedLm } from '../folder/gpt.ts';
import type { LmConfigFile } from '../folder/spec.ts';
import type { GPT } from '../models/gpt.ts';
import { BpeTokenizer } from '../text/bpe.ts';
import { ByteLevelBpeTokenizer } from '../text/bytelevel.ts';
import { checkMessages, type ChatMessage } from '../text/chat-template.ts';
import { CharTokenizer } from '../text/chars.ts';
import { checkOptions, describeValue, warner, type OptionSpec, type PipelineWarning } from './options.ts';

/**
 * Per-call options of a {@link TextGenerationPipeline}, those of `qkv generate`. An unknown name,
 * or a value of the wrong kind, is an Error starting 'text-generation: ' that names it (and the
 * nearest known name: `unknown option 'max_new_tokens' (did you mean 'maxNewTokens'?)`).
 */
export interface GenerationOptions {
  /**
   * Tokens to generate. Default for qkv's folders 200 (as `qkv generate --max-tokens`), or fewer where the model's
   * context ends first; for a Hugging Face folder what generate() makes: its generation_config.json's
   * `max_new_tokens`, else `max_length` less the prompt, else 20. More than the context holds is an Error unless
   * `beyondContext`.
   */
  maxNewTokens?: number;
  /**
   * Softmax temperature, 0 = greedy. Default for qkv's folders 0.8 (as the CLI); for a Hugging Face folder 0
   * (greedy) unless its generation_config.json sets `do_sample`, then its `temperature` (default 1).
   */
  temperature?: number;
  /** Sample among the k most probable tokens (a Hugging Face folder: its `top_k`, default 50, as transformers). */
  topK?: number;
  /** Sample among the most probable tokens that make up probability p (a Hugging Face folder: its `top_p`). */
  topP?: number;
  /**
   * transformers' repetition penalty: the logits of ids already in the sequence divided by it (multiplied where
   * negative) before each draw. Default 1 (none), or a Hugging Face folder's `repetition_penalty`.
   */
  repetitionPenalty?: number;
  /**
   * Stop once the text holds one of these strings (transformers' `stop_strings`): after the token whose text
   * completes an occurrence (one that reaches into that token; the prompt's text counts for the occurrence's start).
   * The string stays in the output, as in transformers. Default: none.
   */
  stopStrings?: string[];
  /** Seed of the sampling, an integer >= 0 (default: a random one, as the CLI without --seed). */
  seed?: number;
  /** The KV cache (default true; false recomputes the context at every step, as --no-cache). */
  useCache?: boolean;
  /**
   * With the KV cache, a static one whose steps are captured once and replayed (`qkv generate --compiled`;
   * docs/compiled.md): the same tokens from the same logits, bit for bit, as the dynamic cache op by op. Default
   * false: not faster yet (records/compiled, run 3). A model on a GPU uses the dynamic cache either way.
   */
  compiled?: boolean;
  /**
   * Generate past the model's context (`blockSize` tokens, the prompt's included): when it is full,
   * the context is cut to its last half and generation goes on, as `qkv generate` does. Default
   * false: at most `blockSize + 1` minus the prompt's tokens (and its leading line separator), so the
   * model sees the whole prompt at every step.
   */
  beyondContext?: boolean;
  /** Called with each token's text (possibly '', when a token completes no character yet) and id. */
  onToken?: (piece: string, id: number) => void;
  /**
   * Called with each warning, what `qkv generate` prints on stderr: prompt characters the model's
   * vocabulary does not hold (encoded as its unknown token). Default: console.warn.
   */
  onWarning?: (warning: PipelineWarning) => void;
  /**
   * Cancels generation: between two tokens the call lets the event loop run, then checks the
   * signal; the promise rejects (the stream throws) with the signal's reason.
   */
  signal?: AbortSignal;
}

/** The names {@link GenerationOptions} knows and the kind of value each takes. */
const GENERATION_OPTIONS: OptionSpec = {
  maxNewTokens: 'nonNegativeInt',
  temperature: 'nonNegativeNumber',
  topK: 'positiveInt',
  topP: 'probability',
  repetitionPenalty: 'positiveNumber',
  stopStrings: 'strings',
  seed: 'nonNegativeInt',
  useCache: 'boolean',
  compiled: 'boolean',
  beyondContext: 'boolean',
  onToken: 'function',
  onWarning: 'function',
  signal: 'signal',
};

/** Default of maxNewTokens, `qkv generate --max-tokens`'s. */
const DEFAULT_NEW_TOKENS = 200;

/**
 * What `pipeline('text-generation', folder)` gives: a function continuing a prompt (the same text
 * `qkv generate --model folder` writes for it with the same options and seed), `stream` for the
 * continuation piece by piece, and the opened folder's model, tokenizer and config. A prompt that
 * is no string, an empty one, or one longer than the model's context (`blockSize` tokens) is an
 * Error (the promise rejects; `stream` throws).
 */
export interface TextGenerationPipeline {
  /** The continuation of `prompt` (the prompt itself not included). */
  (prompt: string, options?: GenerationOptions): Promise<string>;
  /**
   * A conversation's next assistant message, in transformers.js's shape: the messages and the reply,
   * `[{ generated_text: [...messages, { role: 'assistant', content }] }]`. The folder's chat template renders the
   * conversation with the generation prompt (`apply_chat_template(messages, add_generation_prompt=True)`); a
   * folder without one is an Error.
   */
  (messages: readonly ChatMessage[], options?: GenerationOptions): Promise<ChatGenerated>;
  /** A batch of conversations: one {@link ChatGenerated} each, in order (generated one after the other). */
  (conversations: readonly (readonly ChatMessage[])[], options?: GenerationOptions): Promise<ChatGenerated[]>;
  /** The continuation (or a conversation's reply), piece by piece (pieces that add no text are left out). */
  stream(prompt: string | readonly ChatMessage[], options?: GenerationOptions): AsyncIterableIterator<string>;
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

/** A conversation continued: the messages and the assistant's reply (transformers' and transformers.js's shape). */
export type ChatGenerated = [
  {
    /** The conversation's messages, then the assistant's reply. */
    generated_text: ChatMessage[];
  },
];

/**
 * How a text-generation pipeline draws tokens: qkv's GPT (the default) or another engine (the
 * CLI's ONNX Runtime), with the names its errors use and a hook the CLI writes the prompt from.
 */
export interface GenerationEngine {
  /**
   * The generated tokens after `context` (the prompt's ids as the model is fed them); `options.compiled` is the
   * call's (qkv's engine: the static cache, replayed, unless false).
   */
  tokens(
    context: number[],
    options: GenerateOptions & { compiled: boolean },
  ): Iterable<GeneratedToken> | AsyncIterable<GeneratedToken>;
  /** How errors name the prompt (`--prompt`) and what they start with ('' for the CLI). */
  names?: GenerationNames;
  /** Called once the prompt is checked, before the first step, with the prompt as its ids read back. */
  onPrompt?: (shown: string) => void;
}

/** How the errors of a text-generation pipeline name things. */
export interface GenerationNames {
  /** The prompt, as the error about an empty one names it: 'the prompt', or '--prompt'. */
  prompt: string;
  /** Put before each message: 'text-generation: ', or '' for the CLI. */
  prefix: string;
}

const PIPELINE_NAMES: GenerationNames = { prompt: 'the prompt', prefix: 'text-generation: ' };

/** Each generated token's id and the text it adds, exactly as `qkv generate` writes it. */
async function* pieces(
  lm: LoadedLm,
  engine: GenerationEngine,
  prompt: string | readonly ChatMessage[],
  o: GenerationOptions,
): AsyncGenerator<{ id: number; piece: string }> {
  checkOptions('text-generation', o, GENERATION_OPTIONS);
  const names = engine.names ?? PIPELINE_NAMES;
  const { model, tokenizer, separatorId, generation: hf } = lm;
  const { blockSize } = model.config;
  let ids: number[];
  let context: number[];
  if (Array.isArray(prompt)) {
    // A conversation: the folder's chat template with the generation prompt, its ids without added specials.
    if (!(tokenizer instanceof ByteLevelBpeTokenizer) || !tokenizer.chatTemplate || !hf)
      throw new Error(
        `${names.prefix}this folder has no chat template (no chat_template.jinja, no chat_template in ` +
          'tokenizer_config.json): give a text prompt',
      );
    try {
      checkMessages(prompt);
      if (prompt.at(-1)!.role === 'assistant')
        throw new Error(
          'messages: the conversation ends with an assistant message; transformers would continue it ' +
            '(continue_final_message), which qkv does not: end it with a user message',
        );
      ids = tokenizer.applyChatTemplate(prompt, { addGenerationPrompt: true });
    } catch (e) {
      throw new Error(`${names.prefix}${(e as Error).message}`);
    }
    context = ids;
  } else {
    if (typeof prompt !== 'string')
      throw new Error(
        `${names.prefix}prompt: expected a string or chat messages [{ role, content }], got ${describeValue(prompt)}`,
      );
    if (prompt === '') throw new Error(`${names.prefix}${names.prompt} is empty: give some text to continue`);
    ids = promptIds(tokenizer, prompt, separatorId);
    // qkv's folders: the prompt after a line separator; a Hugging Face folder: its tokenizer's ids, specials included.
    context = promptContext(lm, prompt);
  }
  if (Math.max(ids.length, hf ? context.length : 0) > blockSize)
    throw new Error(
      `${names.prefix}the prompt is ${hf ? context.length : ids.length} tokens long; ` +
        `this model's context holds ${blockSize}`,
    );
  // Without a cut, the model sees the whole prompt while drawing every token: the last token drawn is never fed.
  const room = blockSize + 1 - context.length;
  if (o.maxNewTokens !== undefined && o.maxNewTokens > room && !o.beyondContext)
    throw new Error(
      `${names.prefix}maxNewTokens ${o.maxNewTokens} goes past this model's context: it holds ${blockSize} ` +
        `tokens, the prompt takes ${context.length}, which leaves ${room} to generate; ask for fewer, ` +
        'or pass beyondContext: true to go on with the context cut as it fills (as qkv generate does)',
    );
  if (tokenizer instanceof CharTokenizer || tokenizer instanceof BpeTokenizer) {
    const unknown = ids.filter((id) => id === tokenizer.unkId).length;
    if (unknown > 0)
      warner(o.onWarning)({
        kind: 'unknown-tokens',
        message: `${unknown} prompt token(s) are not in the model's vocabulary (encoded as unknown)`,
      });
  }
  let maxTokens: number;
  if (o.maxNewTokens !== undefined) maxTokens = o.maxNewTokens;
  else if (hf) {
    try {
      maxTokens = hfNewTokens(hf, context.length, blockSize);
    } catch (e) {
      throw new Error(`${names.prefix}${(e as Error).message}`);
    }
    if (maxTokens > room && !o.beyondContext)
      throw new Error(
        `${names.prefix}the folder's ${hf.file} asks for ${maxTokens} new tokens, past this model's context ` +
          `(${blockSize} tokens, the prompt takes ${context.length}): pass maxNewTokens, or beyondContext: true`,
      );
  } else maxTokens = o.beyondContext ? DEFAULT_NEW_TOKENS : Math.min(DEFAULT_NEW_TOKENS, room);
  const seed = o.seed ?? Math.floor(Math.random() * 2 ** 31);
  // The prompt as shown: for a Hugging Face folder the ids fed (a BOS its tokenizer adds is special, not shown).
  const all = hf ? context.slice() : ids.slice();
  let shown = idsText(tokenizer, all, separatorId);
  engine.onPrompt?.(shown);
  o.signal?.throwIfAborted();
  // qkv's folders: qkv's documented defaults; a Hugging Face folder: its own (generate()'s with no options).
  const options: GenerateOptions = hf
    ? {
        maxTokens,
        temperature: o.temperature ?? (hf.doSample ? hf.temperature : 0),
        topK: o.topK ?? (hf.topK > 0 ? hf.topK : undefined),
        topP: o.topP ?? hf.topP,
        repetitionPenalty: o.repetitionPenalty ?? hf.repetitionPenalty,
        stopIds: hf.eosTokenIds,
        minNewTokens: Math.max(hf.minNewTokens, hf.minLength - context.length),
        seed,
        useCache: o.useCache ?? true,
      }
    : {
        maxTokens,
        temperature: o.temperature ?? 0.8,
        topK: o.topK,
        topP: o.topP,
        repetitionPenalty: o.repetitionPenalty,
        seed,
        useCache: o.useCache ?? true,
      };
  const stops = new Set(options.stopIds ?? []);
  const drawn = engine.tokens(context, { ...options, compiled: o.compiled ?? false });
  let n = 0;
  let before = shown; // the text of the ids before this token (a trailing U+FFFD, an unfinished character, cut)
  for await (const t of drawn) {
    all.push(t.id);
    n++;
    const text = idsText(tokenizer, all, separatorId);
    // A stop string ends generation where an occurrence reaches into this token's text (transformers'
    // StopStringCriteria: not one that lies wholly in the text before it).
    const stopped = (o.stopStrings ?? []).some((x) => {
      const at = text.lastIndexOf(x);
      return at >= 0 && at + x.length > before.length;
    });
    before = text.endsWith('\uFFFD') ? text.replace(/\uFFFD+$/, '') : text;
    // A token that ends inside a character (byte-level BPE) reads as U+FFFD until the next completes it: its piece
    // waits (''), so that the pieces join to the text of the ids; the last token's shows whatever is there.
    const last = n >= maxTokens || stops.has(t.id) || stopped;
    const wait = !last && text.endsWith('\uFFFD') && text.startsWith(shown);
    const piece = wait ? '' : text.slice(shown.length);
    if (!wait) shown = text;
    yield { id: t.id, piece };
    if (stopped) break;
    // Before the next step (which runs when the loop asks for the next token): let a timer or an event abort.
    if (o.signal) {
      await pause();
      o.signal.throwIfAborted();
    }
  }
}

/**
 * The text-generation pipeline of an opened language-model folder, drawing with its model, or
 * with `engine` (how the CLI runs ONNX Runtime's graph through the same path).
 */
export function textGenerationPipeline(lm: LoadedLm, engine?: GenerationEngine): TextGenerationPipeline {
  // A model on a device that reads back only asynchronously (a GPU) is read through the async driver.
  const onGpu = lm.model.parameters().some((p) => p.device.readSync === undefined);
  const draw: GenerationEngine = engine ?? {
    tokens: (context, o) =>
      onGpu
        ? generateStreamAsync(gptAsyncLm(lm.model, o.useCache), context, o)
        : generateStreamCompiled(lm.model, context, o),
  };
  const text = async (prompt: string | readonly ChatMessage[], options: GenerationOptions): Promise<string> => {
    let out = '';
    for await (const { id, piece } of pieces(lm, draw, prompt, options)) {
      out += piece;
      options.onToken?.(piece, id);
    }
    return out;
  };
  const chat = async (messages: readonly ChatMessage[], options: GenerationOptions): Promise<ChatGenerated> => {
    const content = await text(messages, options);
    return [{ generated_text: [...messages.map((m) => ({ ...m })), { role: 'assistant', content }] }];
  };
  async function run(
    prompt: string | readonly ChatMessage[] | readonly (readonly ChatMessage[])[],
    options: GenerationOptions = {},
  ): Promise<string | ChatGenerated | ChatGenerated[]> {
    if (!Array.isArray(prompt)) return text(prompt as string, options);
    if (prompt.length > 0 && prompt.every((c) => Array.isArray(c))) {
      const out: ChatGenerated[] = [];
      for (const c of prompt as readonly (readonly ChatMessage[])[]) out.push(await chat(c, options));
      return out;
    }
    return chat(prompt as readonly ChatMessage[], options);
  }
  async function* stream(
    prompt: string | readonly ChatMessage[],
    options: GenerationOptions = {},
  ): AsyncIterableIterator<string> {
    for await (const { id, piece } of pieces(lm, draw, prompt, options)) {
      options.onToken?.(piece, id);
      if (piece !== '') yield piece;
    }
  }
  return Object.assign(run as TextGenerationPipeline, {
    stream,
    task: 'text-generation' as const,
    model: lm.model,
    tokenizer: lm.tokenizer,
    separatorId: lm.separatorId,
    config: lm.config,
  });
}
