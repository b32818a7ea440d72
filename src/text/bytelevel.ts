/**
 * Over 500 lines: the tokenizer, its tokenizer.json reader and writer, and the pre-tokenizers of GPT-2, Llama 3 and
 * Qwen2 belong together (one reader of one file format).
 *
 * Byte-level BPE, as GPT-2 (Radford et al. 2019, §2.2) and Hugging Face's `ByteLevel`
 * pre-tokenizer/decoder do it, read from a `tokenizer.json`:
 *
 *  1. added tokens (e.g. `<|endoftext|>`) found literally in the text are cut out first and map to
 *     their own ids, as HF `tokenizers` does;
 *  2. the rest is split by GPT-2's regex into words ("'s", " hello", " 123", " !!", whitespace runs);
 *     with add_prefix_space a space is put in front of the text when it has none;
 *  3. each word's UTF-8 bytes are written as printable characters by GPT-2's byte-to-unicode table
 *     (the 188 printable Latin-1 bytes stand for themselves, the other 68 are shifted to U+0100..),
 *     so the vocabulary never needs an unknown token: every byte is a base symbol;
 *  4. merges are applied lowest rank first, as in bpe.ts;
 *  5. decoding joins the pieces, maps the characters back to bytes and reads them as UTF-8.
 *
 * `decode(encode(s)) === s` for every string s of well-formed Unicode (no lone surrogates) that
 * contains no added token's text. Pure TypeScript: runs in Node and browsers.
 */

import { postProcessorFromJSON, type Encoded, type PostProcessor } from './post-processor.ts';
import type { ChatMessage, ChatRenderOptions, ChatTemplate } from './chat-template.ts';

/** GPT-2's pre-tokenizer pattern (the `use_regex` of HF's ByteLevel). */
export const GPT2_PATTERN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

/** GPT-2's `bytes_to_unicode`: byte -> a printable character, and back. */
export function bytesToUnicode(): {
  /** Character of each byte, indexed by byte value 0..255. */
  encoder: string[];
  /** Byte value of each of those 256 characters. */
  decoder: Map<string, number>;
} {
  const bs: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b); // '!'..'~'
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b); // '¡'..'¬'
  for (let b = 0xae; b <= 0xff; b++) bs.push(b); // '®'..'ÿ'
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n++);
    }
  }
  const encoder = new Array<string>(256);
  const decoder = new Map<string, number>();
  for (let i = 0; i < 256; i++) {
    encoder[bs[i]] = String.fromCodePoint(cs[i]);
    decoder.set(String.fromCodePoint(cs[i]), bs[i]);
  }
  return { encoder, decoder };
}

const BYTES = bytesToUnicode();
const utf8 = new TextEncoder();

interface AddedToken {
  id: number;
  content: string;
  special: boolean;
}

/** Options of {@link ByteLevelBpeTokenizer.decode}. */
export interface ByteLevelDecodeOptions {
  /** Drop the special added tokens (e.g. `<|endoftext|>`). Default false: they decode to their text. */
  skipSpecialTokens?: boolean;
}

/**
 * GPT-2's byte-level BPE tokenizer, loaded from a Hugging Face `tokenizer.json` with {@link
 * ByteLevelBpeTokenizer.fromJSON}; encodes to the same ids as HF `tokenizers` (see the file comment).
 */
export class ByteLevelBpeTokenizer {
  private readonly vocab: Map<string, number>;
  private readonly idToTok: string[];
  private readonly ranks: Map<string, number>;
  private readonly added: AddedToken[];
  private readonly addedById: Map<number, AddedToken>;
  private readonly addPrefixSpace: boolean;
  private readonly useRegex: boolean;
  /**
   * Llama 3's and Qwen2's pre-tokenizer: a Split on a regex (Isolated: matches and the text between them are the
   * words) before the ByteLevel mapping without its own regex; null: GPT-2's (ByteLevel's use_regex).
   */
  private readonly split: SplitStep | null;
  private readonly cache = new Map<string, number[]>();
  private readonly merges: [string, string][];
  /**
   * tokenizer.json's post-processor: the special tokens {@link encodeText} adds around a text (none for GPT-2's own
   * files; a folder's tokenizer_config.json `add_bos_token` replaces it, as transformers 5 does).
   */
  readonly postProcessor: PostProcessor;
  /** The post-processor as tokenizer.json wrote it (written back by toJSON); undefined: the default ByteLevel one. */
  private readonly postProcessorJson: unknown;
  /** Number of ids: one more than the largest id of the vocabulary and the added tokens (50257 for GPT-2). */
  readonly vocabSize: number;
  /**
   * The folder's chat template (chat_template.jinja, else tokenizer_config.json's chat_template), or null: a
   * tokenizer.json alone has none (text/chat-template.ts; set by the folder loaders with {@link withChatTemplate}).
   */
  readonly chatTemplate: ChatTemplate | null;

  private constructor(
    vocab: Map<string, number>,
    merges: [string, string][],
    added: AddedToken[],
    addPrefixSpace: boolean,
    useRegex: boolean,
    postProcessorJson: unknown,
    postProcessor: PostProcessor = postProcessorFromJSON(postProcessorJson),
    split: SplitStep | null = null,
    chatTemplate: ChatTemplate | null = null,
  ) {
    this.chatTemplate = chatTemplate;
    this.split = split;
    this.postProcessorJson = postProcessorJson;
    this.postProcessor = postProcessor;
    this.vocab = vocab;
    this.merges = merges;
    this.ranks = new Map(merges.map(([a, b], i) => [`${a} ${b}`, i]));
    this.added = added.slice().sort((a, b) => b.content.length - a.content.length); // longest match first
    this.addedById = new Map(added.map((t) => [t.id, t]));
    this.addPrefixSpace = addPrefixSpace;
    this.useRegex = useRegex;
    let size = 0;
    for (const id of vocab.values()) size = Math.max(size, id + 1);
    for (const t of added) size = Math.max(size, t.id + 1);
    this.vocabSize = size;
    this.idToTok = new Array<string>(size);
    for (const [tok, id] of vocab) this.idToTok[id] = tok;
    for (const t of added) this.idToTok[t.id] = t.content;
  }

  /**
   * A tokenizer.json whose pre-tokenizer is ByteLevel (alone, or the only ByteLevel step of a
   * Sequence) and whose model is BPE. Merges may be "a b" strings (older files) or [a, b] pairs.
   */
  static fromJSON(json: unknown): ByteLevelBpeTokenizer {
    const j = json as Record<string, unknown> | null;
    if (!j || typeof j !== 'object')
      throw new Error(`tokenizer.json: expected an object, got ${j === null ? 'null' : typeof j}`);
    const split = splitStep(j.pre_tokenizer);
    const pre = split ? split.byteLevel : byteLevelStep(j.pre_tokenizer);
    if (!pre)
      throw new Error(
        'tokenizer.json: pre_tokenizer must be ByteLevel, or a Sequence of a Split on a regex and ByteLevel, got ' +
          kindOf(j.pre_tokenizer),
      );
    const model = j.model as Record<string, unknown> | null;
    if (model?.type !== 'BPE') throw new Error(`tokenizer.json: model.type must be 'BPE', got ${kindOf(model)}`);
    if (j.decoder !== null && j.decoder !== undefined && (j.decoder as { type?: unknown }).type !== 'ByteLevel')
      throw new Error(`tokenizer.json: decoder must be ByteLevel, got ${kindOf(j.decoder)}`);
    const postProcessor = postProcessorFromJSON(j.post_processor); // refuses, by type, a kind it does not read
    if (j.normalizer !== null && j.normalizer !== undefined)
      throw new Error(
        `tokenizer.json: a byte-level tokenizer with a normalizer (${kindOf(j.normalizer)}) is not supported`,
      );
    if (model.continuing_subword_prefix || model.end_of_word_suffix)
      throw new Error(
        'tokenizer.json: continuing_subword_prefix / end_of_word_suffix are not supported with ByteLevel',
      );
    const rawVocab = model.vocab as Record<string, unknown> | null;
    if (!rawVocab || typeof rawVocab !== 'object')
      throw new Error('tokenizer.json: model.vocab must be an object of token -> id');
    const vocab = new Map<string, number>();
    for (const [tok, id] of Object.entries(rawVocab)) {
      if (!Number.isInteger(id) || (id as number) < 0)
        throw new Error(
          `tokenizer.json: vocab id of ${JSON.stringify(tok)} must be a non-negative integer, got ${String(id)}`,
        );
      vocab.set(tok, id as number);
    }
    if (!Array.isArray(model.merges)) throw new Error('tokenizer.json: model.merges must be an array');
    const merges: [string, string][] = model.merges.map((m: unknown, i: number) => {
      if (typeof m === 'string') {
        const k = m.indexOf(' ');
        if (k <= 0 || k !== m.lastIndexOf(' '))
          throw new Error(`tokenizer.json: merge ${i} must be "a b", got ${JSON.stringify(m)}`);
        return [m.slice(0, k), m.slice(k + 1)];
      }
      if (Array.isArray(m) && m.length === 2 && typeof m[0] === 'string' && typeof m[1] === 'string')
        return [m[0], m[1]];
      throw new Error(`tokenizer.json: merge ${i} must be "a b" or [a, b], got ${JSON.stringify(m)}`);
    });
    const added: AddedToken[] = [];
    for (const t of (j.added_tokens as { id: number; content: string; special?: boolean }[] | undefined) ?? []) {
      if (!Number.isInteger(t.id) || typeof t.content !== 'string' || t.content === '')
        throw new Error(`tokenizer.json: bad added token ${JSON.stringify(t)}`);
      added.push({ id: t.id, content: t.content, special: t.special ?? false });
    }
    return new ByteLevelBpeTokenizer(
      vocab,
      merges,
      added,
      pre.add_prefix_space === true,
      pre.use_regex !== false,
      j.post_processor ?? null,
      postProcessor,
      split,
    );
  }

  /**
   * The same tokenizer with another post-processor: how a folder's tokenizer_config.json `add_bos_token` /
   * `add_eos_token` rebuild the template, as transformers 5 does (text/post-processor.ts `bosEosPostProcessor`).
   */
  withPostProcessor(postProcessor: PostProcessor): ByteLevelBpeTokenizer {
    return this.with({ postProcessor });
  }

  /** The same tokenizer with a chat template (a folder's; null: none). */
  withChatTemplate(chatTemplate: ChatTemplate | null): ByteLevelBpeTokenizer {
    return this.with({ chatTemplate });
  }

  /** A copy with `change`'s post-processor or chat template in place of this one's. */
  private with(change: { postProcessor?: PostProcessor; chatTemplate?: ChatTemplate | null }): ByteLevelBpeTokenizer {
    return new ByteLevelBpeTokenizer(
      this.vocab,
      this.merges,
      this.added,
      this.addPrefixSpace,
      this.useRegex,
      this.postProcessorJson,
      change.postProcessor ?? this.postProcessor,
      this.split,
      change.chatTemplate === undefined ? this.chatTemplate : change.chatTemplate,
    );
  }

  /**
   * A conversation through the folder's chat template, as transformers' `tokenizer.apply_chat_template` and
   * transformers.js's `tokenizer.apply_chat_template` (named here as qkv names methods): the rendered text with
   * `tokenize: false`, else (default) its ids, encoded WITHOUT the post-processor's special tokens (the template
   * writes them: transformers tokenizes the rendering with add_special_tokens=False). `addGenerationPrompt`
   * (default false) ends with the header of the assistant's turn. A tokenizer without a template is an Error.
   */
  applyChatTemplate(messages: readonly ChatMessage[], options: ChatRenderOptions & { tokenize: false }): string;
  applyChatTemplate(messages: readonly ChatMessage[], options?: ChatRenderOptions & { tokenize?: true }): number[];
  applyChatTemplate(
    messages: readonly ChatMessage[],
    options: ChatRenderOptions & { tokenize?: boolean } = {},
  ): string | number[] {
    if (!this.chatTemplate)
      throw new Error(
        'applyChatTemplate: this tokenizer has no chat template (its folder has no chat_template.jinja and no ' +
          'chat_template in tokenizer_config.json): give the model a plain text prompt',
      );
    const text = this.chatTemplate.render(messages, options);
    return options.tokenize === false ? text : this.encodeText(text, { addSpecialTokens: false }).ids;
  }

  /**
   * A text (or a pair) as transformers' `tokenizer(text)` encodes it: {@link encode}'s ids with the
   * post-processor's special tokens (`addSpecialTokens`, default true), their type ids and special mask.
   */
  encodeText(text: string, options: { pair?: string; addSpecialTokens?: boolean } = {}): Encoded {
    const b = options.pair === undefined ? undefined : this.encode(options.pair);
    return this.postProcessor.process(this.encode(text), b, options.addSpecialTokens ?? true);
  }

  /** A tokenizer.json that @huggingface/tokenizers (and fromJSON) read back to the same ids. */
  toJSON(): unknown {
    const json = byteLevelBpeJson({
      addPrefixSpace: this.addPrefixSpace,
      useRegex: this.useRegex,
      added: [...this.addedById.values()],
      addedNormalized: false,
      ignoreMerges: false,
      vocab: Object.fromEntries(this.vocab),
      merges: this.merges.map(([a, b]) => [a, b]),
      postProcessor: this.postProcessorJson,
    }) as Record<string, unknown>;
    if (this.split) json.pre_tokenizer = { type: 'Sequence', pretokenizers: [this.split.json, json.pre_tokenizer] };
    return json;
  }

  /**
   * The token string of an id (byte-level characters, e.g. `'Ġworld'`), or undefined if the id is not in the
   * vocabulary.
   */
  idToToken(id: number): string | undefined {
    return this.idToTok[id];
  }

  /** The id of a token string (vocabulary or added token), or undefined if there is none. */
  tokenToId(token: string): number | undefined {
    return this.vocab.get(token) ?? this.added.find((t) => t.content === token)?.id;
  }

  /**
   * The end-of-text token (`<|endoftext|>` in GPT-2), which also starts a document; else the last special added token.
   */
  get eosId(): number {
    const eot = this.added.find((t) => t.content === '<|endoftext|>') ?? this.added.filter((t) => t.special).at(-1);
    if (!eot) throw new Error('tokenizer.json: no end-of-text token (no special added token)');
    return eot.id;
  }

  /** The bytes a (non-added) token stands for; undefined for an unknown id or an added token. */
  tokenBytes(id: number): Uint8Array | undefined {
    if (this.addedById.has(id)) return undefined;
    const tok = this.idToTok[id];
    if (tok === undefined) return undefined;
    return Uint8Array.from(Array.from(tok, (ch) => BYTES.decoder.get(ch) ?? 0x3f));
  }

  /** The token strings of a text (byte-level characters, e.g. 'Ġworld'). */
  tokenize(text: string): string[] {
    return this.encode(text).map((id) => this.idToTok[id]);
  }

  /**
   * The ids of a text: added tokens found literally map to their ids, the rest goes through the GPT-2 regex,
   * bytes-to-characters and BPE merges. No BOS/EOS is added.
   */
  encode(text: string): number[] {
    const out: number[] = [];
    for (const [segment, addedId] of this.splitAdded(text)) {
      if (addedId !== null) {
        out.push(addedId);
        continue;
      }
      for (const word of this.preTokenize(segment)) for (const id of this.bpe(word)) out.push(id);
    }
    return out;
  }

  /**
   * The text of ids: the tokens' bytes read as UTF-8 (an incomplete or invalid sequence decodes to U+FFFD).
   * Throws if an id is not in the vocabulary.
   */
  decode(ids: Iterable<number>, options: ByteLevelDecodeOptions = {}): string {
    let text = '';
    let bytes: number[] = [];
    const flush = () => {
      if (bytes.length > 0) text += new TextDecoder('utf-8').decode(Uint8Array.from(bytes));
      bytes = [];
    };
    for (const id of ids) {
      const a = this.addedById.get(id);
      if (a) {
        flush();
        if (!(a.special && options.skipSpecialTokens)) text += a.content;
        continue;
      }
      const tok = this.idToTok[id];
      if (tok === undefined) throw new Error(`decode: id ${id} is not in the vocabulary of ${this.vocabSize}`);
      for (const ch of tok) {
        const b = BYTES.decoder.get(ch);
        if (b === undefined)
          throw new Error(
            `decode: token ${JSON.stringify(tok)} holds ${JSON.stringify(ch)}, not a byte-level character`,
          );
        bytes.push(b);
      }
    }
    flush();
    return text;
  }

  /** The text cut around literal added tokens: [piece, null] for text, [content, id] for an added token. */
  private splitAdded(text: string): [string, number | null][] {
    if (this.added.length === 0) return [[text, null]];
    const out: [string, number | null][] = [];
    let start = 0;
    let i = 0;
    while (i < text.length) {
      const t = this.added.find((a) => text.startsWith(a.content, i));
      if (t) {
        if (i > start) out.push([text.slice(start, i), null]);
        out.push([t.content, t.id]);
        i += t.content.length;
        start = i;
      } else i++;
    }
    if (start < text.length) out.push([text.slice(start), null]);
    return out;
  }

  /** Words in byte-level characters. */
  private preTokenize(text: string): string[] {
    if (text === '') return [];
    if (this.addPrefixSpace && !text.startsWith(' ')) text = ` ${text}`;
    const words = this.split
      ? isolatedSplit(text, this.split.regex)
      : this.useRegex
        ? (text.match(GPT2_PATTERN) ?? [])
        : [text];
    return words.map((w) => {
      let s = '';
      for (const b of utf8.encode(w)) s += BYTES.encoder[b];
      return s;
    });
  }

  /** Merge a word's symbols lowest rank first (leftmost among equals), then look each piece up. */
  private bpe(word: string): number[] {
    const hit = this.cache.get(word);
    if (hit) return hit;
    let parts = Array.from(word);
    while (parts.length > 1) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i < parts.length - 1; i++) {
        const r = this.ranks.get(`${parts[i]} ${parts[i + 1]}`);
        if (r !== undefined && r < bestRank) {
          bestRank = r;
          best = i;
        }
      }
      if (best < 0) break;
      const a = parts[best];
      const b = parts[best + 1];
      // Merge every occurrence of this pair, left to right (as GPT-2's encoder and HF do).
      const next: string[] = [];
      for (let i = 0; i < parts.length; i++) {
        if (i < parts.length - 1 && parts[i] === a && parts[i + 1] === b) {
          next.push(a + b);
          i++;
        } else next.push(parts[i]);
      }
      parts = next;
    }
    const ids = parts.map((p) => {
      const id = this.vocab.get(p);
      if (id === undefined)
        throw new Error(
          `encode: the piece ${JSON.stringify(p)} is not in the vocabulary ` +
            `(tokenizer.json lacks a base byte or a merge result)`,
        );
      return id;
    });
    if (this.cache.size < 100_000) this.cache.set(word, ids);
    return ids;
  }
}

interface ByteLevelStep {
  type: 'ByteLevel';
  add_prefix_space?: boolean;
  use_regex?: boolean;
}

/** A Split pre-tokenizer on a regex before ByteLevel (Llama 3, Qwen2): the regex in JavaScript's syntax. */
interface SplitStep {
  regex: RegExp;
  /** The Split step as tokenizer.json has it (written back by toJSON). */
  json: unknown;
  /** The ByteLevel step after it. */
  byteLevel: ByteLevelStep;
}

/**
 * The one case-insensitive group of Llama 3's and Qwen2's patterns (Oniguruma's `(?i:…)`), spelled out for
 * JavaScript, whose regexes have no inline flags before ES2025.
 */
const CONTRACTIONS_I = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
const CONTRACTIONS_JS = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

/** An Oniguruma pattern of tokenizer.json as a JavaScript regex (global, Unicode), or an error naming it. */
function jsRegex(pattern: string): RegExp {
  const src = pattern.split(CONTRACTIONS_I).join(CONTRACTIONS_JS);
  if (/\(\?[a-z]*[imx]/.test(src))
    throw new Error(`tokenizer.json: the Split pattern's inline flags are not supported: ${JSON.stringify(pattern)}`);
  try {
    return new RegExp(src, 'gu');
  } catch (e) {
    throw new Error(
      `tokenizer.json: the Split pattern ${JSON.stringify(pattern)} is not a regex qkv reads: ${(e as Error).message}`,
    );
  }
}

/** Sequence[Split(Regex, Isolated, invert false), ByteLevel(use_regex false)], else null (refused by name if odd). */
function splitStep(p: unknown): SplitStep | null {
  const o = p as { type?: string; pretokenizers?: unknown[] } | null;
  if (o?.type !== 'Sequence' || !Array.isArray(o.pretokenizers) || o.pretokenizers.length !== 2) return null;
  const [split, bl] = o.pretokenizers as Record<string, unknown>[];
  if (split?.type !== 'Split' || bl?.type !== 'ByteLevel') return null;
  const regex = (split.pattern as { Regex?: unknown } | undefined)?.Regex;
  if (typeof regex !== 'string')
    throw new Error(
      `tokenizer.json: the Split pre-tokenizer must have a { Regex } pattern, got ${JSON.stringify(split.pattern)}`,
    );
  if (split.behavior !== 'Isolated' || split.invert === true)
    throw new Error(
      `tokenizer.json: a Split pre-tokenizer with behavior ${JSON.stringify(split.behavior)}, invert ` +
        `${JSON.stringify(split.invert)} is not supported (expected Isolated, false)`,
    );
  if (bl.use_regex !== false)
    throw new Error('tokenizer.json: the ByteLevel after a Split must have use_regex false (else it splits twice)');
  return { regex: jsRegex(regex), json: split, byteLevel: bl as unknown as ByteLevelStep };
}

/** The pieces of a Split with behavior Isolated: each match, and each run of text between matches. */
function isolatedSplit(text: string, regex: RegExp): string[] {
  const out: string[] = [];
  let at = 0;
  for (const m of text.matchAll(regex)) {
    if (m[0] === '') continue;
    if (m.index > at) out.push(text.slice(at, m.index));
    out.push(m[0]);
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

/** The ByteLevel step of a pre_tokenizer (itself, or the one inside a Sequence), else null. */
function byteLevelStep(p: unknown): ByteLevelStep | null {
  const o = p as { type?: string; pretokenizers?: unknown[] } | null;
  if (!o || typeof o !== 'object') return null;
  if (o.type === 'ByteLevel') return o as ByteLevelStep;
  if (o.type === 'Sequence' && Array.isArray(o.pretokenizers) && o.pretokenizers.length === 1)
    return byteLevelStep(o.pretokenizers[0]);
  return null;
}

function kindOf(x: unknown): string {
  if (x === null || x === undefined) return String(x);
  if (typeof x !== 'object') return typeof x;
  const t = (x as { type?: unknown }).type;
  return typeof t === 'string' ? `'${t}'` : 'an object without a type';
}

/** What {@link byteLevelBpeJson} writes into a tokenizer.json. */
export interface ByteLevelBpeJsonParts {
  /** The ByteLevel pre-tokenizer's add_prefix_space. */
  addPrefixSpace: boolean;
  /** The ByteLevel pre-tokenizer's use_regex (GPT-2's split before the byte mapping). */
  useRegex: boolean;
  /** The added tokens, in order. */
  added: readonly { id: number; content: string; special: boolean }[];
  /** The `normalized` flag of every added token. */
  addedNormalized: boolean;
  /** The BPE model's ignore_merges; the key is left out when undefined. */
  ignoreMerges?: boolean;
  /** The BPE model's vocab: token → id. */
  vocab: unknown;
  /** The BPE model's merges, in rank order. */
  merges: readonly (readonly [string, string])[];
  /** The post-processor (default, and where null: ByteLevel, which adds no token). */
  postProcessor?: unknown;
}

/**
 * A byte-level BPE tokenizer.json in the layout @huggingface/tokenizers writes: ByteLevel
 * pre-tokenizer, post-processor and decoder around a BPE model without unknown token or dropout.
 */
export function byteLevelBpeJson(p: ByteLevelBpeJsonParts): unknown {
  const byteLevel = {
    type: 'ByteLevel',
    add_prefix_space: p.addPrefixSpace,
    trim_offsets: true,
    use_regex: p.useRegex,
  };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: p.added.map((t) => ({
      id: t.id,
      content: t.content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: p.addedNormalized,
      special: t.special,
    })),
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: p.postProcessor ?? byteLevel,
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ...(p.ignoreMerges === undefined ? {} : { ignore_merges: p.ignoreMerges }),
      vocab: p.vocab,
      merges: p.merges,
    },
  };
}
