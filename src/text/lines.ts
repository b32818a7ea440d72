/**
 * Text as one stream of token ids for a language model: each line followed by a separator id (a
 * character model's '\n', a BPE model's EOS), and back. The GPT trainer (src/train/lm.ts) and the
 * model folders' prompt encoding (src/folder/gpt.ts) both use it.
 */
/** What a language model needs of a tokenizer (CharTokenizer and BpeTokenizer both fit). */
export interface LmTokenizer {
  /** Number of token ids (0 .. vocabSize − 1); the GPT's vocabulary size. */
  readonly vocabSize: number;
  /** The token ids of one line of text. */
  encode(text: string): number[];
  /** The text of a sequence of ids. */
  decode(ids: Iterable<number>): string;
  /** The tokenizer as JSON: what `qkv train-lm` writes to the run folder's tokenizer.json. */
  toJSON(): unknown;
}

/** Lines as one stream of ids, each line followed by `separatorId` (char models: '\n'; BPE: EOS). */
export function encodeLines(tokenizer: LmTokenizer, lines: readonly string[], separatorId: number): Int32Array {
  const out: number[] = [];
  for (const line of lines) {
    for (const id of tokenizer.encode(line)) out.push(id);
    out.push(separatorId);
  }
  return Int32Array.from(out);
}

/** The text of a stream of ids: the separator becomes a newline, the lines between it are decoded alone. */
export function decodeLines(tokenizer: LmTokenizer, ids: readonly number[], separatorId: number): string {
  const parts: string[] = [];
  let line: number[] = [];
  for (const id of ids) {
    if (id === separatorId) {
      parts.push(tokenizer.decode(line));
      line = [];
    } else {
      line.push(id);
    }
  }
  parts.push(tokenizer.decode(line));
  return parts.join('\n');
}
