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
  version: string;
  truncation: null;
  padding: null;
  added_tokens: HfAddedToken[];
  normalizer: null;
  pre_tokenizer: HfMetaspace | HfPreTokenizerSequence;
  post_processor: null;
  decoder: HfMetaspace;
  model: HfBpeModel;
}

export interface HfAddedToken {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

export interface HfMetaspace {
  type: 'Metaspace';
  replacement: string;
  prepend_scheme: 'always';
  split: boolean;
}

export interface HfPunctuationSplit {
  type: 'Split';
  pattern: { Regex: string };
  behavior: 'Isolated';
  invert: false;
}

export interface HfPreTokenizerSequence {
  type: 'Sequence';
  pretokenizers: [HfMetaspace, HfPunctuationSplit];
}

export interface HfBpeModel {
  type: 'BPE';
  dropout: null;
  unk_token: string;
  continuing_subword_prefix: null;
  end_of_word_suffix: null;
  fuse_unk: boolean;
  byte_fallback: boolean;
  ignore_merges: boolean;
  vocab: Record<string, number>;
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
  const metaspace = (): HfMetaspace => ({ type: 'Metaspace', replacement: METASPACE, prepend_scheme: 'always', split: true });
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
      ? { type: 'Sequence', pretokenizers: [metaspace(), { type: 'Split', pattern: { Regex: PUNCTUATION_PATTERN }, behavior: 'Isolated', invert: false }] }
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
  if (model.continuing_subword_prefix || model.end_of_word_suffix) fail('continuing_subword_prefix / end_of_word_suffix are not supported');
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
    if (!Array.isArray(parts) || parts.length !== 2 || !sp || sp.type !== 'Split' || sp.pattern?.Regex !== PUNCTUATION_PATTERN
      || sp.behavior !== 'Isolated' || sp.invert !== false) {
      fail(`pre_tokenizer: a Sequence must be [Metaspace, Split {Regex: ${JSON.stringify(PUNCTUATION_PATTERN)}, behavior: "Isolated", invert: false}]`);
    }
    pre = (parts as unknown[])[0];
    splitPunct = true;
  }
  for (const [name, part] of [
    ['pre_tokenizer', pre as HfMetaspace | undefined],
    ['decoder', t.decoder],
  ] as const) {
    if (!part || typeof part !== 'object' || part.type !== 'Metaspace' || (part.replacement ?? METASPACE) !== METASPACE) fail(`${name} must be Metaspace with replacement "▁"`);
    if ((part as HfMetaspace).prepend_scheme !== undefined && (part as HfMetaspace).prepend_scheme !== 'always') fail(`${name}.prepend_scheme must be "always"`);
    if ((part as HfMetaspace).split === false && name === 'pre_tokenizer') fail('pre_tokenizer.split must be true');
  }
  const vocabObj = model.vocab;
  if (!vocabObj || typeof vocabObj !== 'object' || Array.isArray(vocabObj)) fail('model.vocab must be an object of token: id');
  const entries = Object.entries(vocabObj);
  const vocab = new Array<string>(entries.length);
  for (const [tok, id] of entries) {
    if (!Number.isInteger(id) || id < 0 || id >= entries.length || vocab[id] !== undefined) fail('model.vocab ids must be 0..n-1, each once');
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
  if (model.unk_token !== specials[1]) fail(`model.unk_token ${JSON.stringify(model.unk_token)} must be the second special token (${JSON.stringify(specials[1])})`);
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
    if (a === undefined || b === undefined) return fail(`merge ${JSON.stringify(mg)} uses a token missing from the vocabulary`);
    return [a, b] as [number, number];
  });
  return { vocab, merges, specials, splitPunctuation: splitPunct };
}
