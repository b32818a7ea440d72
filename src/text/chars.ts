/**
 * Character-level tokenizer: one id per Unicode code point seen while learning, plus `<unk>` for
 * the rest. Same shape as BpeTokenizer (learn, encode, decode, toJSON, fromJSON), so a language
 * model can be trained on either. The saved form is a small JSON object (not a Hugging Face file):
 *   { "type": "qkv-chars", "version": 1, "unk_token": "<unk>", "vocab": ["<unk>", "\n", " ", "!", ...] }
 * with the token of id i at vocab[i].
 *
 * Round trip: `decode(encode(s)) === s` for every `s` made of characters seen while learning.
 * Pure TypeScript: runs in Node and in browsers.
 */
import { Vocabulary } from './vocabulary.ts';

/** The saved form of a {@link CharTokenizer} (see the file comment). */
export interface CharTokenizerJson {
  /** Marks the file as qkv's own format, so a loader can tell it from a Hugging Face `tokenizer.json`. */
  type: 'qkv-chars';
  /** Format version, 1. */
  version: 1;
  /** Text of the unknown-character token, id 0; also `vocab[0]`. */
  unk_token: string;
  /** The token of id i at index i: the unk token, then one code point each. */
  vocab: string[];
}

/** Options of {@link CharTokenizer.learn}. */
export interface CharLearnOptions {
  /** Characters always in the vocabulary, seen or not. Default '\n' (the line separator of a corpus). */
  always?: string;
  /** Text of the unknown-character token (id 0). Default '<unk>'. */
  unkToken?: string;
}

/**
 * A character-level tokenizer: one id per code point seen while learning, id 0 for the rest (see the file
 * comment).
 */
export class CharTokenizer extends Vocabulary {
  /** Id of the unknown-character token, always 0. */
  readonly unkId = 0;

  private constructor(vocab: string[]) {
    super(vocab, 'CharTokenizer', (t, i) => {
      if (i > 0 && Array.from(t).length !== 1)
        throw new Error(`CharTokenizer: token ${i} ${JSON.stringify(t)} is not one character`);
    });
  }

  /** A vocabulary of `<unk>` then every code point of `texts` (and `always`), in code-point order. */
  static learn(texts: Iterable<string>, options: CharLearnOptions = {}): CharTokenizer {
    const unk = options.unkToken ?? '<unk>';
    const seen = new Set<string>(Array.from(options.always ?? '\n'));
    for (const text of texts) for (const ch of text) seen.add(ch);
    seen.delete(unk);
    const chars = [...seen].sort((a, b) => a.codePointAt(0)! - b.codePointAt(0)!);
    return new CharTokenizer([unk, ...chars]);
  }

  /** One id per code point; characters not in the vocabulary become unkId. */
  encode(text: string): number[] {
    const out: number[] = [];
    for (const ch of text) out.push(this.ids.get(ch) ?? this.unkId);
    return out;
  }

  /** The characters of `ids`; unk decodes to its token text. Throws a RangeError on an id outside the vocabulary. */
  decode(ids: Iterable<number>): string {
    let out = '';
    for (const id of ids) {
      const t = this.vocab[id];
      if (t === undefined)
        throw new RangeError(`CharTokenizer.decode: id ${id} outside the vocabulary of ${this.vocab.length}`);
      out += t;
    }
    return out;
  }

  /** The saved form, which {@link CharTokenizer.fromJSON} loads. */
  toJSON(): CharTokenizerJson {
    return { type: 'qkv-chars', version: 1, unk_token: this.vocab[0], vocab: this.vocab.slice() };
  }

  /** Loads what toJSON wrote (object or JSON text). */
  static fromJSON(json: unknown): CharTokenizer {
    let j = json as Partial<CharTokenizerJson> | null;
    if (typeof json === 'string') {
      try {
        j = JSON.parse(json) as Partial<CharTokenizerJson> | null;
      } catch (e) {
        throw new Error(`CharTokenizer.fromJSON: not valid JSON (${(e as Error).message})`);
      }
    }
    if (j === null || typeof j !== 'object' || j.type !== 'qkv-chars')
      throw new Error('CharTokenizer.fromJSON: not a qkv-chars tokenizer (expected "type": "qkv-chars")');
    if (!Array.isArray(j.vocab) || j.vocab.length === 0 || j.vocab.some((t) => typeof t !== 'string'))
      throw new Error('CharTokenizer.fromJSON: vocab must be a non-empty array of strings');
    if (j.unk_token !== j.vocab[0])
      throw new Error(
        `CharTokenizer.fromJSON: unk_token ${JSON.stringify(j.unk_token)} must ` +
          `be vocab[0] (${JSON.stringify(j.vocab[0])})`,
      );
    return new CharTokenizer(j.vocab.slice());
  }
}
