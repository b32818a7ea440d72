/**
 * The Hugging Face `tokenizer.json` of qkv's BPE (text/bpe.ts): the subset of the format it writes
 * and reads, and the two directions between that file and the tokenizer's parts (vocabulary,
 * merges, special tokens, whether punctuation is split). bpe.ts keeps the algorithm; this file
 * keeps the file format, so a change to one does not touch the other.
 */

/** The Metaspace replacement character. */
export const METASPACE = '\u2581';

/**
 * Punctuation as HF's `Punctuation` pre-tokenizer defines it (Unicode P* plus ASCII punctuation,
 * which includes $+<=>^`|~), one character per match. Written as a `Split` regex rather than HF's
 * `Punctuation` type because the JS port of that type groups runs ("...") where Rust isolates each
 * character; a regex means the same to both.
 */
export const PUNCTUATION_PATTERN = '[\\p{P}!-/:-@\\[-`{-~]';

/** The subset of a Hugging Face `tokenizer.json` that this class writes and reads. */
export interface HfTokenizerJson {
  /** Format version; qkv writes `'1.0'`. */
  version: string;
  /**
   * Always `null`: qkv never truncates at tokenization (the model's context limit is enforced where the ids
   * are used).
   */
  truncation: null;
  /** Always `null`: batches are padded by the caller (data/, decode/), not by the tokenizer. */
  padding: null;
  /** The special tokens, in id order: pad, unk, bos, eos, then any extras. */
  added_tokens: HfAddedToken[];
  /** Always `null`: text is used as given (no lowercasing or Unicode normalization). */
  normalizer: null;
  /**
   * Metaspace alone, or Metaspace followed by the punctuation `Split` when the tokenizer splits punctuation.
   */
  pre_tokenizer: HfMetaspace | HfPreTokenizerSequence;
  /** Always `null`: bos/eos are added by the caller, not by the tokenizer. */
  post_processor: null;
  /** Metaspace again, which turns `▁` back into spaces when decoding. */
  decoder: HfMetaspace;
  /** The BPE vocabulary and merges. */
  model: HfBpeModel;
}

/** One entry of `added_tokens`: a special token that bypasses BPE and maps straight to its id. */
export interface HfAddedToken {
  /** Its id in the vocabulary. */
  id: number;
  /** Its text, e.g. `<pad>`. */
  content: string;
  /** HF: match only as a whole word; qkv writes `false`. */
  single_word: boolean;
  /** HF: swallow whitespace on its left; qkv writes `false`. */
  lstrip: boolean;
  /** HF: swallow whitespace on its right; qkv writes `false`. */
  rstrip: boolean;
  /** HF: match after normalization rather than on the raw text; qkv writes `false`. */
  normalized: boolean;
  /** HF: skipped by `decode(..., skip_special_tokens=True)`; qkv writes `true`. */
  special: boolean;
}

/**
 * HF's Metaspace pre-tokenizer and decoder: spaces become `▁` ({@link METASPACE}) and one is prepended to the
 * text, so word starts are marked (SentencePiece style).
 */
export interface HfMetaspace {
  /** Discriminator of the pre-tokenizer kind. */
  type: 'Metaspace';
  /** The character that stands for a space: {@link METASPACE}. */
  replacement: string;
  /** Prepend `▁` to every text, so the first word looks like any other. */
  prepend_scheme: 'always';
  /** Split the text at each `▁` into words before BPE; qkv writes `true`. */
  split: boolean;
}

/**
 * HF's `Split` pre-tokenizer with {@link PUNCTUATION_PATTERN}: each punctuation character becomes a word of
 * its own.
 */
export interface HfPunctuationSplit {
  type: 'Split';
  pattern: { Regex: string };
  behavior: 'Isolated';
  invert: false;
}

/** Metaspace followed by the punctuation split, the pre-tokenizer of a tokenizer that splits punctuation. */
export interface HfPreTokenizerSequence {
  type: 'Sequence';
  pretokenizers: [HfMetaspace, HfPunctuationSplit];
}

/**
 * The `model` section: a BPE vocabulary and merge list, with every HF option at the value qkv's algorithm
 * implements.
 */
export interface HfBpeModel {
  /** Discriminator of the model kind. */
  type: 'BPE';
  /** Always `null`: no BPE-dropout (merges are applied deterministically). */
  dropout: null;
  /** The token unknown characters map to; must be the second added token (id order pad, unk, ...). */
  unk_token: string;
  /** Always `null`: word starts are marked by `▁`, not continuations by a prefix like `##`. */
  continuing_subword_prefix: null;
  /** Always `null`: no `</w>` suffix (the original Sennrich et al. BPE used one; Metaspace replaces it). */
  end_of_word_suffix: null;
  /** HF: merge runs of unknown characters into one unk; qkv writes `false` (one unk per character). */
  fuse_unk: boolean;
  /** HF: encode unknown characters as `<0xNN>` byte tokens; qkv writes `false` (they become unk). */
  byte_fallback: boolean;
  /** HF: look a whole word up in the vocabulary before merging; qkv writes `false`. */
  ignore_merges: boolean;
  /** Token text to id. */
  vocab: Record<string, number>;
  /** Merges in rank order (earliest learned first), as token pairs; "a b" strings are also read. */
  merges: [string, string][];
}

/** What a BPE tokenizer is made of, as its tokenizer.json stores it. */
export interface BpeParts {
  /** Tokens by id. */
  vocab: string[];
  /** Merges by rank, as pairs of token ids. */
  merges: [number, number][];
  /** Special tokens in id order: pad, unk, bos, eos, then extras. */
  specials: string[];
  splitPunctuation: boolean;
}

/** The tokenizer.json of a BPE tokenizer's parts. */
export function bpeTokenizerJson(p: BpeParts): HfTokenizerJson {
  const metaspace = (): HfMetaspace => ({
    type: 'Metaspace',
    replacement: METASPACE,
    prepend_scheme: 'always',
    split: true,
  });
  const ids = new Map<string, number>();
  p.vocab.forEach((t, i) => ids.set(t, i));
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: p.specials.map((content) => ({
      id: ids.get(content) as number,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: p.splitPunctuation
      ? {
          type: 'Sequence',
          pretokenizers: [
            metaspace(),
            { type: 'Split', pattern: { Regex: PUNCTUATION_PATTERN }, behavior: 'Isolated', invert: false },
          ],
        }
      : metaspace(),
    post_processor: null,
    decoder: metaspace(),
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: p.specials[1],
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      // fromEntries defines own properties, so even a token "__proto__" is stored as data.
      vocab: Object.fromEntries(p.vocab.map((t, i) => [t, i])),
      merges: p.merges.map(([a, b]) => [p.vocab[a], p.vocab[b]]),
    },
  };
}

/**
 * The parts of a `tokenizer.json` (object or JSON text) of the form bpeTokenizerJson writes.
 * Special-token roles are read from `added_tokens` in id order (pad, unk, bos, eos, extras); unk
 * must be the model's `unk_token`. Merges may be pairs or "a b" strings. Errors start with
 * `BpeTokenizer.fromJSON:`, the call users make.
 */
export function parseBpeTokenizerJson(json: unknown): BpeParts {
  const fail = (msg: string): never => {
    throw new Error(`BpeTokenizer.fromJSON: ${msg}`);
  };
  let j = json as Partial<HfTokenizerJson> | null;
  if (typeof json === 'string') {
    try {
      j = JSON.parse(json) as Partial<HfTokenizerJson> | null;
    } catch (e) {
      fail(`not valid JSON (${(e as Error).message})`);
    }
  }
  if (j === null || typeof j !== 'object' || Array.isArray(j)) fail('not a tokenizer.json object');
  const t = j as Partial<HfTokenizerJson>;
  const m = t.model;
  if (!m || typeof m !== 'object' || m.type !== 'BPE') fail('model.type must be "BPE"');
  const model = m as HfBpeModel;
  if (model.continuing_subword_prefix || model.end_of_word_suffix)
    fail('continuing_subword_prefix / end_of_word_suffix are not supported');
  if (model.byte_fallback) fail('byte_fallback is not supported');
  if (model.ignore_merges) fail('ignore_merges is not supported');
  if (model.dropout) fail('dropout is not supported');
  if (t.normalizer != null) fail('only normalizer null is supported');
  if (t.post_processor != null) fail('only post_processor null is supported');
  // Metaspace, or the Sequence [Metaspace, Split(punctuation, Isolated)] that splitPunctuation writes.
  let pre: unknown = t.pre_tokenizer;
  let splitPunct = false;
  if (pre && typeof pre === 'object' && (pre as { type?: unknown }).type === 'Sequence') {
    const parts = (pre as { pretokenizers?: unknown }).pretokenizers;
    const sp = Array.isArray(parts) ? (parts[1] as Partial<HfPunctuationSplit> | undefined) : undefined;
    if (
      !Array.isArray(parts) ||
      parts.length !== 2 ||
      !sp ||
      sp.type !== 'Split' ||
      sp.pattern?.Regex !== PUNCTUATION_PATTERN ||
      sp.behavior !== 'Isolated' ||
      sp.invert !== false
    ) {
      fail(
        `pre_tokenizer: a Sequence must be [Metaspace, Split {Regex: ` +
          `${JSON.stringify(PUNCTUATION_PATTERN)}, behavior: "Isolated", invert: ` +
          `false}]`,
      );
    }
    pre = (parts as unknown[])[0];
    splitPunct = true;
  }
  for (const [name, part] of [
    ['pre_tokenizer', pre as HfMetaspace | undefined],
    ['decoder', t.decoder],
  ] as const) {
    if (!part || typeof part !== 'object' || part.type !== 'Metaspace' || (part.replacement ?? METASPACE) !== METASPACE)
      fail(`${name} must be Metaspace with replacement "▁"`);
    if ((part as HfMetaspace).prepend_scheme !== undefined && (part as HfMetaspace).prepend_scheme !== 'always')
      fail(`${name}.prepend_scheme must be "always"`);
    if ((part as HfMetaspace).split === false && name === 'pre_tokenizer') fail('pre_tokenizer.split must be true');
  }
  const vocabObj = model.vocab;
  if (!vocabObj || typeof vocabObj !== 'object' || Array.isArray(vocabObj))
    fail('model.vocab must be an object of token: id');
  const entries = Object.entries(vocabObj);
  const vocab = new Array<string>(entries.length);
  for (const [tok, id] of entries) {
    if (!Number.isInteger(id) || id < 0 || id >= entries.length || vocab[id] !== undefined)
      fail('model.vocab ids must be 0..n-1, each once');
    vocab[id] = tok;
  }
  // Added tokens not in the model vocab (HF allows that) are appended at their ids.
  if (t.added_tokens != null && !Array.isArray(t.added_tokens)) fail('added_tokens must be an array');
  for (const a of t.added_tokens ?? []) {
    if (a === null || typeof a !== 'object' || !Number.isInteger(a.id) || a.id < 0 || typeof a.content !== 'string') {
      fail(`added token ${JSON.stringify(a)} needs an integer id >= 0 and a string content`);
    }
  }
  const added = [...(t.added_tokens ?? [])].sort((x, y) => x.id - y.id);
  for (const a of added) {
    if (a.id < vocab.length) {
      if (vocab[a.id] !== a.content) fail(`added token ${JSON.stringify(a.content)} disagrees with model.vocab`);
    } else if (a.id === vocab.length) {
      vocab.push(a.content);
    } else {
      fail('added_tokens ids must continue model.vocab without gaps');
    }
  }
  const specials = added.filter((a) => a.special).map((a) => a.content);
  if (specials.length < 4) fail('need at least 4 special added_tokens (pad, unk, bos, eos)');
  if (model.unk_token !== specials[1])
    fail(
      `model.unk_token ${JSON.stringify(model.unk_token)} must be the second ` +
        `special token (${JSON.stringify(specials[1])})`,
    );
  const ids = new Map<string, number>();
  vocab.forEach((tok, i) => ids.set(tok, i));
  if (model.merges != null && !Array.isArray(model.merges)) fail('model.merges must be an array');
  const merges: [number, number][] = (model.merges ?? []).map((mg: unknown) => {
    let pair: unknown = mg;
    if (typeof mg === 'string') {
      const sp = mg.indexOf(' ');
      pair = [mg.slice(0, sp), mg.slice(sp + 1)];
    }
    if (!Array.isArray(pair) || pair.length !== 2) return fail(`bad merge ${JSON.stringify(mg)}`);
    const a = ids.get(pair[0] as string);
    const b = ids.get(pair[1] as string);
    if (a === undefined || b === undefined)
      return fail(`merge ${JSON.stringify(mg)} uses a token missing from the vocabulary`);
    return [a, b] as [number, number];
  });
  return { vocab, merges, specials, splitPunctuation: splitPunct };
}
