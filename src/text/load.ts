/**
 * One entry point for a `tokenizer.json` of any kind qkv reads, chosen by what the file says:
 * a qkv character tokenizer (`"type": "qkv-chars"`), qkv's own BPE (pre-tokenizer Metaspace, or the
 * Sequence [Metaspace, Split(punctuation)] of --split-punctuation), or
 * GPT-2's byte-level BPE (pre-tokenizer ByteLevel). Anything else gets one line naming the kind found.
 */
import { BpeTokenizer } from './bpe.ts';
import { ByteLevelBpeTokenizer } from './bytelevel.ts';
import { CharTokenizer } from './chars.ts';

/** Any of qkv's tokenizers; {@link tokenizerFromJSON} returns the one a file holds. */
export type AnyTokenizer = CharTokenizer | BpeTokenizer | ByteLevelBpeTokenizer;

/**
 * Which tokenizer a file holds: `char` (qkv's {@link CharTokenizerJson}), `bpe` (Metaspace BPE, {@link
 * BpeTokenizer}) or `bytelevel` (GPT-2 style, {@link ByteLevelBpeTokenizer}).
 */
export type TokenizerKind = 'char' | 'bpe' | 'bytelevel';

/** Which class reads this tokenizer.json, or an error naming the unsupported kind. */
export function tokenizerKind(json: unknown): TokenizerKind {
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw new Error(
      `tokenizer.json: expected a JSON object, got ` +
        `${json === null ? 'null' : Array.isArray(json) ? 'an array' : typeof json}`,
    );
  const j = json as { type?: unknown; pre_tokenizer?: unknown; model?: unknown };
  if (j.type === 'qkv-chars') return 'char';
  const model = j.model as { type?: unknown } | null | undefined;
  if (model?.type === 'Unigram')
    throw new Error(
      "tokenizer.json: model type 'Unigram' is a SentencePiece model: read it with " +
        'SentencePiece.fromTokenizerJson (tokenizerFromJSON reads BPE and qkv-chars tokenizers)',
    );
  if (model?.type !== 'BPE')
    throw new Error(
      `tokenizer.json: unsupported model type ${describeKind(model)} (supported: BPE, or a qkv-chars tokenizer)`,
    );
  const pre = preTokenizerType(j.pre_tokenizer);
  if (pre === 'Metaspace') return 'bpe';
  if (pre === 'ByteLevel') return 'bytelevel';
  // Llama 3's and Qwen2's: Sequence[Split(regex), ByteLevel(use_regex false)] (text/bytelevel.ts checks the rest).
  const steps = (j.pre_tokenizer as { pretokenizers?: { type?: unknown }[] } | null)?.pretokenizers;
  if (pre === 'Split' && steps?.length === 2 && steps[1]?.type === 'ByteLevel') return 'bytelevel';
  throw new Error(
    `tokenizer.json: unsupported pre_tokenizer ` +
      `${describeKind(j.pre_tokenizer)} (supported: Metaspace, as qkv's BPE ` +
      `writes, and ByteLevel, as GPT-2's)`,
  );
}

/** The tokenizer a tokenizer.json describes. */
export function tokenizerFromJSON(json: unknown): AnyTokenizer {
  const kind = tokenizerKind(json);
  if (kind === 'char') return CharTokenizer.fromJSON(json);
  if (kind === 'bpe') return BpeTokenizer.fromJSON(json);
  return ByteLevelBpeTokenizer.fromJSON(json);
}

function preTokenizerType(p: unknown): string | null {
  const o = p as { type?: unknown; pretokenizers?: unknown[] } | null;
  if (!o || typeof o !== 'object') return null;
  // A Sequence is named by its first step: [Metaspace, Split(punctuation)] is what qkv's BPE writes with
  // --split-punctuation, [ByteLevel] what some GPT-2 files hold; the class then checks the whole sequence.
  if (o.type === 'Sequence' && Array.isArray(o.pretokenizers) && o.pretokenizers.length >= 1)
    return preTokenizerType(o.pretokenizers[0]);
  return typeof o.type === 'string' ? o.type : null;
}

function describeKind(x: unknown): string {
  if (x === null || x === undefined) return String(x);
  if (typeof x !== 'object') return typeof x;
  const t = (x as { type?: unknown }).type;
  return typeof t === 'string' ? `'${t}'` : 'without a type';
}
