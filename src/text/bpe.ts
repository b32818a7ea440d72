/**
 * Sennrich-style BPE over Unicode code points (no byte level), whose saved form is a Hugging Face
 * `tokenizer.json` that `tokenizers` (Rust/Python) and `@huggingface/tokenizers` (JS) load and
 * encode to the same ids.
 *
 * Pipeline (identical in qkv and in HF with the saved JSON):
 *  - normalizer: none (text is kept code point for code point);
 *  - pre-tokenizer: Metaspace (replacement '▁' U+2581, prepend_scheme 'always', split): every ' '
 *    becomes '▁', a '▁' is prepended unless the text already starts with one, and the text is cut
 *    before every '▁' ("a  b" -> "▁a", "▁", "▁b");
 *  - model: BPE with `unk_token`, no continuing-subword prefix / end-of-word suffix, merges applied
 *    lowest rank first (leftmost first among equal ranks);
 *  - optionally (`splitPunctuation`), a second pre-tokenizer after Metaspace, HF `Split` with the
 *    regex PUNCTUATION_PATTERN and behaviour `Isolated`: every punctuation character becomes a word
 *    of its own ("▁man." -> "▁man", "."), as Moses tokenization does before BPE in MT, so "man",
 *    "man." and "man," share one token. Saved as a `Sequence` pre-tokenizer, so HF still loads it;
 *  - decoder: Metaspace ('▁' -> ' ', and the '▁' that starts the first token is dropped).
 *
 * Learning keeps every character seen in the training texts as a base symbol, so training text
 * never needs `<unk>`.
 *
 * Round-trip guarantee: `decode(encode(s)) === s` for every string `s` that
 *  (1) does not start with a space (a leading space is dropped, as in SentencePiece/HF Metaspace),
 *  (2) does not contain '▁' (U+2581; it decodes to a space), and
 *  (3) contains only characters seen during learning (others encode to `<unk>`, one per character,
 *      and decode to the literal text of the unk token).
 * Multiple, trailing and non-space whitespace (tabs, newlines, NBSP) and all other Unicode
 * round-trip unchanged. Every sentence of the Multi30K training data satisfies (1)-(3).
 *
 * Special tokens: `encode` treats text as plain text (a literal "<s>" in the input is tokenized as
 * the characters '<', 's', '>'); HF `tokenizers` would instead map literal special-token strings in
 * the input to their ids, so the two agree on every text that does not contain a special token's
 * string. `encode` adds no BOS/EOS (the saved JSON has no post-processor, so HF adds none either).
 *
 * Pure TypeScript: runs in Node and in browsers.
 *
 * Over 500 lines: one tokenizer, learned (the merge heap), applied (encode with its cache) and
 * inverted (decode), with the round-trip guarantee that ties the three together.
 */

import {
  bpeTokenizerJson,
  METASPACE,
  parseBpeTokenizerJson,
  PUNCTUATION_PATTERN,
  type HfTokenizerJson,
} from './tokenizer-json.ts';
import { Vocabulary } from './vocabulary.ts';

export { METASPACE, PUNCTUATION_PATTERN } from './tokenizer-json.ts';
export type {
  HfAddedToken,
  HfBpeModel,
  HfMetaspace,
  HfPreTokenizerSequence,
  HfPunctuationSplit,
  HfTokenizerJson,
} from './tokenizer-json.ts';

const METASPACE_CODE = 0x2581;
const PUNCTUATION_RE = new RegExp(PUNCTUATION_PATTERN, 'gu');

/**
 * The special tokens {@link BpeTokenizer.learn} reserves by default, in id order: pad (0), unk (1), bos (2),
 * eos (3).
 */
export const DEFAULT_SPECIAL_TOKENS: readonly string[] = ['<pad>', '<unk>', '<s>', '</s>'];

/** Options of {@link BpeTokenizer.learn}. */
export interface BpeLearnOptions {
  /**
   * Target vocabulary size including the special tokens. Learning stops when it is reached, when no
   * pair is left or when the most frequent pair occurs fewer than `minFrequency` times. The
   * alphabet (every character of the training text) is always kept whole, so the result exceeds a
   * `vocabSize` smaller than specials + alphabet.
   */
  vocabSize: number;
  /** Smallest pair frequency that is still merged. Default 2. */
  minFrequency?: number;
  /**
   * Special tokens, given ids 0, 1, 2, ... in this order. The first four play the roles pad, unk,
   * bos, eos (in that order); more may follow. Default `['<pad>', '<unk>', '<s>', '</s>']`.
   */
  specialTokens?: readonly string[];
  /** Split punctuation from words before BPE (see the file comment). Default false. */
  splitPunctuation?: boolean;
}

/** Options of {@link BpeTokenizer.decode}. */
export interface BpeDecodeOptions {
  /** Drop the special tokens other than unk (pad, bos, eos, extras). Default true. unk always decodes to its text. */
  skipSpecialTokens?: boolean;
}

/**
 * Metaspace pre-tokenization (HF `Metaspace`, prepend_scheme 'always', split true): spaces become
 * '▁', a '▁' is prepended unless present, and the text is cut before every '▁'.
 */
export function metaspacePreTokenize(text: string): string[] {
  if (text.length === 0) return [];
  let s = text.replaceAll(' ', METASPACE);
  if (s.charCodeAt(0) !== METASPACE_CODE) s = METASPACE + s;
  const out: string[] = [];
  let start = 0;
  for (let i = 1; i < s.length; i++) {
    if (s.charCodeAt(i) === METASPACE_CODE) {
      out.push(s.slice(start, i));
      start = i;
    }
  }
  out.push(s.slice(start));
  return out;
}

/** Each word of `words` cut around every punctuation character ("▁man." -> "▁man", "."). */
export function splitPunctuation(words: readonly string[]): string[] {
  const out: string[] = [];
  for (const w of words) {
    let prev = 0;
    for (const m of w.matchAll(PUNCTUATION_RE)) {
      const i = m.index as number;
      if (i > prev) out.push(w.slice(prev, i));
      out.push(m[0]);
      prev = i + m[0].length;
    }
    if (prev < w.length) out.push(w.slice(prev));
  }
  return out;
}

// Pair keys: left * 2^22 + right, exact in a double while ids < 2^31.
const PAIR_SHIFT = 4194304;
const MAX_VOCAB = PAIR_SHIFT;
const pairKey = (a: number, b: number): number => a * PAIR_SHIFT + b;

/** Max-heap of (count, key): larger count first, then smaller key (= smaller (left, right) ids). */
class PairHeap {
  private counts: number[] = [];
  private keys: number[] = [];

  get size(): number {
    return this.keys.length;
  }

  private before(i: number, j: number): boolean {
    const ci = this.counts[i];
    const cj = this.counts[j];
    return ci > cj || (ci === cj && this.keys[i] < this.keys[j]);
  }

  private swap(i: number, j: number): void {
    const c = this.counts[i];
    this.counts[i] = this.counts[j];
    this.counts[j] = c;
    const k = this.keys[i];
    this.keys[i] = this.keys[j];
    this.keys[j] = k;
  }

  push(count: number, key: number): void {
    this.counts.push(count);
    this.keys.push(key);
    let i = this.keys.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.before(i, p)) break;
      this.swap(i, p);
      i = p;
    }
  }

  /** Removes the top; returns [count, key]. Only call when size > 0. */
  pop(): [number, number] {
    const top: [number, number] = [this.counts[0], this.keys[0]];
    const lastC = this.counts.pop() as number;
    const lastK = this.keys.pop() as number;
    const n = this.keys.length;
    if (n > 0) {
      this.counts[0] = lastC;
      this.keys[0] = lastK;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < n && this.before(l, m)) m = l;
        if (r < n && this.before(r, m)) m = r;
        if (m === i) break;
        this.swap(i, m);
        i = m;
      }
    }
    return top;
  }
}

const WORD_CACHE_LIMIT = 100_000;

/**
 * A BPE tokenizer over code points (see the file comment for the pipeline and the round-trip guarantee):
 * learned with {@link BpeTokenizer.learn}, saved and loaded as a Hugging Face `tokenizer.json` with `toJSON` /
 * {@link BpeTokenizer.fromJSON}.
 */
export class BpeTokenizer extends Vocabulary {
  private readonly mergePairs: [number, number][];
  /** pair key -> rank */
  private readonly ranks: Map<number, number>;
  /** rank -> id of the merged token */
  private readonly mergeResult: number[];
  private readonly specials: string[];
  private readonly specialIds: Set<number>;
  private readonly cache = new Map<string, number[]>();

  /** Whether punctuation is split from words before BPE (see the file comment). */
  readonly splitPunctuation: boolean;
  /** Id of the padding token (the first special token, `<pad>` by default). */
  readonly padId: number;
  /** Id of the unknown-character token (the second special token, `<unk>` by default). */
  readonly unkId: number;
  /** Id of the beginning-of-sentence token (the third special token, `<s>` by default). */
  readonly bosId: number;
  /** Id of the end-of-sentence token (the fourth special token, `</s>` by default). */
  readonly eosId: number;

  private constructor(
    vocab: string[],
    merges: [number, number][],
    specialTokens: readonly string[],
    splitPunct = false,
  ) {
    if (vocab.length >= MAX_VOCAB)
      throw new RangeError(`BpeTokenizer: vocabulary of ${vocab.length} tokens is too large`);
    if (specialTokens.length < 4) throw new Error('BpeTokenizer: need at least 4 special tokens (pad, unk, bos, eos)');
    super(vocab, 'BpeTokenizer');
    this.splitPunctuation = splitPunct;
    this.specials = [...specialTokens];
    const sid = this.specials.map((t) => {
      const id = this.ids.get(t);
      if (id === undefined)
        throw new Error(`BpeTokenizer: special token ${JSON.stringify(t)} is not in the vocabulary`);
      return id;
    });
    this.specialIds = new Set(sid);
    [this.padId, this.unkId, this.bosId, this.eosId] = sid;
    this.mergePairs = merges;
    this.ranks = new Map();
    this.mergeResult = [];
    for (let r = 0; r < merges.length; r++) {
      const [a, b] = merges[r];
      const merged = this.ids.get(vocab[a] + vocab[b]);
      if (merged === undefined) {
        throw new Error(
          `BpeTokenizer: merge ${JSON.stringify([vocab[a], vocab[b]])} yields a token missing from the vocabulary`,
        );
      }
      // A repeated pair takes its last rank, as in HF `tokenizers` (Rust and JS).
      this.ranks.set(pairKey(a, b), r);
      this.mergeResult.push(merged);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Learning

  /**
   * Learns merges from `texts` (each a sentence or any text; pre-tokenized with Metaspace). Counts
   * words once, then merges the most frequent adjacent pair (ties: smaller (left id, right id),
   * with base characters numbered in code-point order after the special tokens — the order HF's
   * `BpeTrainer` uses), updating pair counts incrementally for the words that contain the pair.
   */
  static learn(texts: Iterable<string>, options: BpeLearnOptions): BpeTokenizer {
    const vocabSize = options.vocabSize;
    const minFrequency = options.minFrequency ?? 2;
    const specialTokens = options.specialTokens ?? DEFAULT_SPECIAL_TOKENS;
    if (!Number.isInteger(vocabSize) || vocabSize < 1)
      throw new RangeError('BpeTokenizer.learn: vocabSize must be a positive integer');
    if (new Set(specialTokens).size !== specialTokens.length)
      throw new Error('BpeTokenizer.learn: special tokens must be distinct');

    // Word frequency table.
    const wordFreq = new Map<string, number>();
    const split = options.splitPunctuation ?? false;
    for (const text of texts) {
      for (const w of preTokenize(text, split)) wordFreq.set(w, (wordFreq.get(w) ?? 0) + 1);
    }

    // Vocabulary: specials, then the alphabet in code-point order.
    const vocab: string[] = [...specialTokens];
    const ids = new Map<string, number>();
    vocab.forEach((t, i) => ids.set(t, i));
    const alphabet = new Set<string>();
    for (const w of wordFreq.keys()) for (const ch of w) alphabet.add(ch);
    const chars = [...alphabet].sort((x, y) => (x.codePointAt(0) as number) - (y.codePointAt(0) as number));
    for (const ch of chars) {
      if (!ids.has(ch)) {
        ids.set(ch, vocab.length);
        vocab.push(ch);
      }
    }
    const forbidden = new Set<string>(specialTokens);

    // Words as symbol-id arrays, pair counts and pair -> words index.
    const words: number[][] = [];
    const freqs: number[] = [];
    const pairCount = new Map<number, number>();
    const pairWords = new Map<number, Set<number>>();
    for (const [w, f] of wordFreq) {
      const syms = Array.from(w, (ch) => ids.get(ch) as number);
      const wi = words.length;
      words.push(syms);
      freqs.push(f);
      for (let i = 0; i + 1 < syms.length; i++) {
        const k = pairKey(syms[i], syms[i + 1]);
        pairCount.set(k, (pairCount.get(k) ?? 0) + f);
        let s = pairWords.get(k);
        if (s === undefined) pairWords.set(k, (s = new Set()));
        s.add(wi);
      }
    }
    const heap = new PairHeap();
    for (const [k, c] of pairCount) heap.push(c, k);

    const merges: [number, number][] = [];
    const local = new Map<number, number>();
    const raised = new Set<number>();
    while (vocab.length < vocabSize && heap.size > 0) {
      const [count, key] = heap.pop();
      const cur = pairCount.get(key) ?? 0;
      if (cur !== count) {
        // Stale entry. A smaller current count is re-queued; a larger one already has its own entry.
        if (cur > 0 && cur < count) heap.push(cur, key);
        continue;
      }
      if (cur < 1 || cur < minFrequency) break;
      const a = Math.floor(key / PAIR_SHIFT);
      const b = key - a * PAIR_SHIFT;
      const mergedText = vocab[a] + vocab[b];
      if (forbidden.has(mergedText)) continue; // never create a token equal to a special token
      let c = ids.get(mergedText);
      if (c === undefined) {
        c = vocab.length;
        ids.set(mergedText, c);
        vocab.push(mergedText);
        if (vocab.length >= MAX_VOCAB) throw new RangeError('BpeTokenizer.learn: vocabulary too large');
      }
      merges.push([a, b]);

      raised.clear();
      const affected = pairWords.get(key);
      pairCount.delete(key);
      pairWords.delete(key);
      if (affected === undefined) continue;
      for (const wi of affected) {
        const syms = words[wi];
        const f = freqs[wi];
        // Merge left to right, non-overlapping.
        const out: number[] = [];
        let changed = false;
        for (let i = 0; i < syms.length; ) {
          if (i + 1 < syms.length && syms[i] === a && syms[i + 1] === b) {
            out.push(c);
            i += 2;
            changed = true;
          } else {
            out.push(syms[i]);
            i += 1;
          }
        }
        if (!changed) continue;
        // Net change of this word's pair multiset, times its frequency.
        local.clear();
        for (let i = 0; i + 1 < syms.length; i++) {
          const k = pairKey(syms[i], syms[i + 1]);
          local.set(k, (local.get(k) ?? 0) - 1);
        }
        for (let i = 0; i + 1 < out.length; i++) {
          const k = pairKey(out[i], out[i + 1]);
          local.set(k, (local.get(k) ?? 0) + 1);
        }
        for (const [k, d] of local) {
          if (d === 0 || k === key) continue;
          const n = (pairCount.get(k) ?? 0) + d * f;
          if (d > 0) {
            pairCount.set(k, n);
            let s = pairWords.get(k);
            if (s === undefined) pairWords.set(k, (s = new Set()));
            s.add(wi);
            raised.add(k);
          } else if (n > 0) {
            pairCount.set(k, n);
          } else {
            pairCount.delete(k);
          }
        }
        words[wi] = out;
      }
      for (const k of raised) {
        const n = pairCount.get(k);
        if (n !== undefined) heap.push(n, k);
      }
    }
    return new BpeTokenizer(vocab, merges, specialTokens, split);
  }

  // -------------------------------------------------------------------------------------------
  // Vocabulary (vocabSize, idToToken, tokenToId: see Vocabulary)

  /** The special tokens, in id order of their roles (pad, unk, bos, eos, extras). */
  get specialTokens(): readonly string[] {
    return this.specials;
  }

  /** The merges, in rank order, as token pairs. */
  get merges(): readonly (readonly [string, string])[] {
    return this.mergePairs.map(([a, b]) => [this.vocab[a], this.vocab[b]] as const);
  }

  // -------------------------------------------------------------------------------------------
  // Encoding

  private encodeWord(word: string): number[] {
    const cached = this.cache.get(word);
    if (cached !== undefined) return cached;
    const syms = Array.from(word, (ch) => this.ids.get(ch) ?? -1);
    while (syms.length > 1) {
      let bestRank = Infinity;
      let bestI = -1;
      for (let i = 0; i + 1 < syms.length; i++) {
        const x = syms[i];
        const y = syms[i + 1];
        if (x < 0 || y < 0) continue;
        const r = this.ranks.get(pairKey(x, y));
        if (r !== undefined && r < bestRank) {
          bestRank = r;
          bestI = i;
        }
      }
      if (bestI < 0) break;
      syms.splice(bestI, 2, this.mergeResult[bestRank]);
    }
    for (let i = 0; i < syms.length; i++) if (syms[i] < 0) syms[i] = this.unkId;
    if (this.cache.size >= WORD_CACHE_LIMIT) this.cache.clear();
    this.cache.set(word, syms);
    return syms;
  }

  /** Token ids of `text` (no BOS/EOS added). */
  encode(text: string): number[] {
    const out: number[] = [];
    for (const w of preTokenize(text, this.splitPunctuation)) for (const id of this.encodeWord(w)) out.push(id);
    return out;
  }

  /** Token strings of `text`. */
  tokenize(text: string): string[] {
    return this.encode(text).map((id) => this.vocab[id]);
  }

  /** Text of `ids` (Metaspace decoding). Throws a RangeError on an id outside the vocabulary. */
  decode(ids: Iterable<number>, options: BpeDecodeOptions = {}): string {
    const skip = options.skipSpecialTokens ?? true;
    let out = '';
    let first = true;
    for (const id of ids) {
      const tok = this.vocab[id];
      if (tok === undefined)
        throw new RangeError(`BpeTokenizer.decode: id ${id} outside the vocabulary of ${this.vocab.length}`);
      if (skip && id !== this.unkId && this.specialIds.has(id)) continue;
      let t = tok;
      if (first && t.charCodeAt(0) === METASPACE_CODE) t = t.slice(1);
      first = false;
      out += t.replaceAll(METASPACE, ' ');
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Hugging Face tokenizer.json

  /**
   * A Hugging Face `tokenizer.json` object (so `JSON.stringify(tokenizer)` writes the file; text/tokenizer-json.ts).
   */
  toJSON(): HfTokenizerJson {
    return bpeTokenizerJson({
      vocab: this.vocab,
      merges: this.mergePairs,
      specials: this.specials,
      splitPunctuation: this.splitPunctuation,
    });
  }

  /**
   * Loads a `tokenizer.json` (object or JSON text) of the form `toJSON` writes (text/tokenizer-json.ts).
   * Special-token roles are read from `added_tokens` in id order (pad, unk, bos, eos, extras).
   */
  static fromJSON(json: unknown): BpeTokenizer {
    const p = parseBpeTokenizerJson(json);
    return new BpeTokenizer(p.vocab, p.merges, p.specials, p.splitPunctuation);
  }
}

function preTokenize(text: string, splitPunct: boolean): string[] {
  const words = metaspacePreTokenize(text);
  return splitPunct ? splitPunctuation(words) : words;
}
