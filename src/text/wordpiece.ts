/**
 * BERT's WordPiece tokenizer (Devlin et al. 2019, §3; Wu et al. 2016), as the stages of a Hugging Face
 * `tokenizer.json` that `tokenizers` (the Rust library) applies, each read from its own section:
 *
 *  1. normalizer `BertNormalizer`: clean_text (control characters, NUL and U+FFFD dropped, every whitespace
 *     character a space), handle_chinese_chars (a space either side of each CJK ideograph), strip_accents
 *     (NFD, then the non-spacing marks dropped; default: as `lowercase`), lowercase (character by character,
 *     as Rust's char::to_lowercase: no final-sigma rule);
 *  2. pre-tokenizer `BertPreTokenizer`: split at whitespace (dropped), each punctuation character (ASCII
 *     punctuation or Unicode P*) a word of its own;
 *  3. model `WordPiece`: each word, greedily, the longest vocabulary entry from its start, the next ones
 *     continued with `##`; a word with a piece no entry covers (or longer than max_input_chars_per_word)
 *     is the unknown token as a whole;
 *  4. decoder `WordPiece`: tokens joined with spaces, a `##` continuation glued on, and with `cleanup` the
 *     spaces before . ? ! , and English contractions taken out (per token, as tokenizers does).
 *
 * Also what a folder with vocab.txt alone means (transformers' BertTokenizer): these stages with
 * tokenizer_config.json's do_lower_case, strip_accents and tokenize_chinese_chars.
 */

/** BertNormalizer's options (tokenizer.json's names). */
export interface BertNormalizerOptions {
  /** Drop control characters and make every whitespace character a space (default true). */
  clean_text?: boolean;
  /** Put spaces around CJK ideographs (default true). */
  handle_chinese_chars?: boolean;
  /** Strip accents; null: as `lowercase` (default null). */
  strip_accents?: boolean | null;
  /** Lowercase (default true). */
  lowercase?: boolean;
}

/** Rust's char::is_whitespace, with \t \n \r counted as whitespace (tokenizers' bert.rs). */
const WHITESPACE = /[\t\n\r\p{White_Space}]/u;
/** Unicode's "other" categories (Cc, Cf, Cs, Co, Cn), which clean_text drops, but \t \n \r. */
const CONTROL = /[^\t\n\r\P{C}]/u;
/** Non-spacing marks, which strip_accents drops after NFD. */
const MARKS = /\p{Mn}/gu;
/** BERT's punctuation: ASCII punctuation or Unicode P*. */
const PUNCTUATION = /^[!-/:-@[-`{-~\p{P}]$/u;

/** The CJK ideograph blocks of tokenizers' is_chinese_char. */
function isChineseChar(cp: number): boolean {
  return (
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) ||
    (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) ||
    (cp >= 0x2b920 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x2f800 && cp <= 0x2fa1f)
  );
}

/** The BertNormalizer stage: text → normalized text, in tokenizers' order (clean, CJK, accents, lowercase). */
export function bertNormalize(text: string, o: BertNormalizerOptions = {}): string {
  const lowercase = o.lowercase ?? true;
  let out = '';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (o.clean_text ?? true) {
      if (cp === 0 || cp === 0xfffd || CONTROL.test(ch)) continue;
      if (WHITESPACE.test(ch)) {
        out += ' ';
        continue;
      }
    }
    out += (o.handle_chinese_chars ?? true) && isChineseChar(cp) ? ` ${ch} ` : ch;
  }
  if (o.strip_accents ?? lowercase) out = out.normalize('NFD').replace(MARKS, '');
  if (lowercase) out = Array.from(out, (c) => c.toLowerCase()).join('');
  return out;
}

/** The BertPreTokenizer stage: words split at whitespace, each punctuation character a word. */
export function bertPreTokenize(text: string): string[] {
  const words: string[] = [];
  let word = '';
  for (const ch of text) {
    if (WHITESPACE.test(ch)) {
      if (word) words.push(word);
      word = '';
    } else if (PUNCTUATION.test(ch)) {
      if (word) words.push(word);
      words.push(ch);
      word = '';
    } else {
      word += ch;
    }
  }
  if (word) words.push(word);
  return words;
}

/** The WordPiece model's options (tokenizer.json's names). */
export interface WordPieceOptions {
  /** The unknown token (default '[UNK]'); it must be in the vocabulary. */
  unk_token?: string;
  /** The prefix of a piece that continues a word (default '##'). */
  continuing_subword_prefix?: string;
  /** A longer word is the unknown token (default 100 characters). */
  max_input_chars_per_word?: number;
}

/** The WordPiece model stage: a word → its vocabulary ids, greedy longest match first. */
export class WordPieceModel {
  readonly unkId: number;
  readonly prefix: string;
  readonly maxChars: number;

  constructor(
    /** Token → id. */
    readonly vocab: ReadonlyMap<string, number>,
    o: WordPieceOptions = {},
  ) {
    const unk = o.unk_token ?? '[UNK]';
    const id = vocab.get(unk);
    if (id === undefined) throw new Error(`WordPiece: unk_token ${JSON.stringify(unk)} is not in the vocabulary`);
    this.unkId = id;
    this.prefix = o.continuing_subword_prefix ?? '##';
    this.maxChars = o.max_input_chars_per_word ?? 100;
  }

  /** The ids of one word. */
  tokenize(word: string): number[] {
    const chars = Array.from(word);
    if (chars.length > this.maxChars) return [this.unkId];
    const ids: number[] = [];
    let start = 0;
    while (start < chars.length) {
      let end = chars.length;
      let found: number | undefined;
      while (start < end) {
        const piece = (start > 0 ? this.prefix : '') + chars.slice(start, end).join('');
        found = this.vocab.get(piece);
        if (found !== undefined) break;
        end--;
      }
      if (found === undefined) return [this.unkId];
      ids.push(found);
      start = end;
    }
    return ids;
  }
}

/** The WordPiece decoder stage: tokens → text (see the file comment). */
export function wordPieceDecode(tokens: readonly string[], prefix = '##', cleanup = true): string {
  return tokens
    .map((token, i) => {
      let t = token;
      if (i !== 0) t = t.startsWith(prefix) ? t.replace(prefix, '') : ` ${t}`;
      return cleanup ? cleanupSpaces(t) : t;
    })
    .join('');
}

/** tokenizers' decoders::wordpiece::cleanup: the spaces English tokenization put before punctuation and clitics. */
export function cleanupSpaces(s: string): string {
  return s
    .replaceAll(' .', '.')
    .replaceAll(' ?', '?')
    .replaceAll(' !', '!')
    .replaceAll(' ,', ',')
    .replaceAll(" ' ", "'")
    .replaceAll(" n't", "n't")
    .replaceAll(" 'm", "'m")
    .replaceAll(' do not', " don't")
    .replaceAll(" 's", "'s")
    .replaceAll(" 've", "'ve")
    .replaceAll(" 're", "'re");
}

/** vocab.txt: one token a line, the line number its id (a trailing newline ends the file, not a token). */
export function parseVocabTxt(text: string): Map<string, number> {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const vocab = new Map<string, number>();
  lines.forEach((line, i) => {
    const token = line.replace(/\r$/, '');
    vocab.set(token, i); // a repeated token keeps its last line, as transformers' load_vocab
  });
  return vocab;
}
