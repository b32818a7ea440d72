/**
 * A Hugging Face folder's chat template, rendered as transformers 5's `tokenizer.apply_chat_template(messages,
 * tokenize=False, add_generation_prompt=…)` renders it, by `@huggingface/jinja` (the Jinja that transformers.js
 * uses; like transformers' environment it trims blocks, strips their left whitespace, and gives `raise_exception`
 * and `strftime_now`). Browser-safe.
 *
 * Which template (transformers' `PreTrainedTokenizerBase.from_pretrained`): a `chat_template.jinja` file, as
 * transformers 5 saves one, wins over `tokenizer_config.json`'s `chat_template`; that is a string, or (older files)
 * a list of `{ name, template }` of which, without tools, the one named `default` is used.
 *
 * The variables (`render_jinja_template`): `messages`, `add_generation_prompt`, `tools` and `documents` (None:
 * qkv passes no tools), and the tokenizer's special tokens by name (`special_tokens_map`: `bos_token`,
 * `eos_token`, `unk_token`, `sep_token`, `pad_token`, `cls_token`, `mask_token`, and every other `*_token` key of
 * tokenizer_config.json or entry of its `extra_special_tokens` object), as their strings.
 */
import { Template } from '@huggingface/jinja';

/** One message of a conversation, as transformers and transformers.js take it. */
export interface ChatMessage {
  /** 'system', 'user' or 'assistant' (a template may accept others, or refuse them). */
  role: string;
  /** The message's text. */
  content: string;
}

/** Options of {@link ChatTemplate.render}. */
export interface ChatRenderOptions {
  /**
   * End with the header of an assistant turn, so that the model writes the reply (transformers'
   * `add_generation_prompt`). Default false, as transformers and transformers.js.
   */
  addGenerationPrompt?: boolean;
}

const NAMED_TOKENS = ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token'];

/** A special token's string: a string, or an AddedToken object's `content`; undefined for anything else. */
function tokenString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string')
    return (v as { content: string }).content;
  return undefined;
}

/** What kind of value `v` is, for an error message. */
function kindOf(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'string' ? JSON.stringify(v) : typeof v;
}

/** A chat template and the special tokens it is rendered with. */
export class ChatTemplate {
  /** The template's Jinja source. */
  readonly source: string;
  /** Where it came from, as errors name it: 'chat_template.jinja' or "tokenizer_config.json's chat_template". */
  readonly from: string;
  /** The special tokens passed to the template by name (bos_token, eos_token, …). */
  readonly specialTokens: Readonly<Record<string, string>>;
  private readonly template: Template;

  constructor(source: string, specialTokens: Record<string, string> = {}, from = 'the chat template') {
    this.source = source;
    this.from = from;
    this.specialTokens = { ...specialTokens };
    try {
      this.template = new Template(source);
    } catch (e) {
      throw new Error(`${from}: not a template @huggingface/jinja reads: ${(e as Error).message}`);
    }
  }

  /**
   * A folder's chat template, or null where it has none: `jinja` is chat_template.jinja's text (undefined where
   * the folder has no such file), `tokenizerConfig` tokenizer_config.json parsed (undefined where absent). Errors
   * name the file and the key.
   */
  static fromFolder(tokenizerConfig: unknown, jinja?: string): ChatTemplate | null {
    const cfg = (tokenizerConfig ?? {}) as Record<string, unknown>;
    if (typeof cfg !== 'object' || Array.isArray(cfg))
      throw new Error(`tokenizer_config.json: expected a JSON object, got ${kindOf(cfg)}`);
    const tokens: Record<string, string> = {};
    for (const [k, v] of Object.entries(cfg)) {
      const s = tokenString(v);
      if (s !== undefined && (NAMED_TOKENS.includes(k) || k.endsWith('_token'))) tokens[k] = s;
    }
    const extra = cfg.extra_special_tokens;
    if (extra && typeof extra === 'object' && !Array.isArray(extra))
      for (const [k, v] of Object.entries(extra)) {
        const s = tokenString(v);
        if (s !== undefined) tokens[k] = s;
      }
    if (jinja !== undefined) return new ChatTemplate(jinja, tokens, 'chat_template.jinja');
    const t = cfg.chat_template;
    const key = "tokenizer_config.json's chat_template";
    if (t === undefined || t === null) return null;
    if (typeof t === 'string') return new ChatTemplate(t, tokens, key);
    if (!Array.isArray(t))
      throw new Error(`${key} must be a template string or a list of { name, template }, got ${kindOf(t)}`);
    const named = new Map<string, string>();
    for (const entry of t) {
      const { name, template } = (entry ?? {}) as { name?: unknown; template?: unknown };
      if (typeof name !== 'string' || typeof template !== 'string')
        throw new Error(
          `${key}: each entry must be { "name": string, "template": string }, got ${JSON.stringify(entry)}`,
        );
      named.set(name, template);
    }
    const chosen = named.get('default');
    if (chosen === undefined)
      throw new Error(
        `${key} names the templates ${[...named.keys()].join(', ')}, and none 'default' (the one used without tools)`,
      );
    return new ChatTemplate(chosen, tokens, `${key} 'default'`);
  }

  /**
   * The conversation as the template writes it: transformers' `apply_chat_template(messages, tokenize=False,
   * add_generation_prompt=…)`. A message that is not `{ role: string, content: string }`, or an empty
   * conversation, is an Error naming it; a template's `raise_exception(message)` is an Error with its message.
   */
  render(messages: readonly ChatMessage[], options: ChatRenderOptions = {}): string {
    checkMessages(messages);
    try {
      return this.template.render({
        ...this.specialTokens,
        messages: messages.map((m) => ({ ...m })),
        tools: null,
        documents: null,
        add_generation_prompt: options.addGenerationPrompt ?? false,
      });
    } catch (e) {
      throw new Error(`${this.from}: ${(e as Error).message}`);
    }
  }
}

/** An Error naming the first message that is not `{ role: string, content: string }`, or an empty conversation. */
export function checkMessages(messages: readonly ChatMessage[]): void {
  if (!Array.isArray(messages) || messages.length === 0) {
    const got = Array.isArray(messages) ? 'an empty array' : kindOf(messages);
    throw new Error(`messages: expected a non-empty array of { role, content }, got ${got}`);
  }
  messages.forEach((m, i) => {
    const ok = m !== null && typeof m === 'object' && typeof m.role === 'string' && typeof m.content === 'string';
    if (!ok)
      throw new Error(
        `messages[${i}]: expected { role: string, content: string }, got ${JSON.stringify(m) ?? String(m)}`,
      );
  });
}
