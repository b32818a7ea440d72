/**
 * The tokenizer of a Marian (Helsinki-NLP opus-mt) folder, as Hugging Face's `MarianTokenizer`
 * (transformers/models/marian/tokenization_marian.py) computes it, from the folder's files:
 * `source.spm` and `target.spm` (SentencePiece Unigram models, sentencepiece.ts), `vocab.json`
 * (piece → id, one table for both sides, in an order of its own), optionally `target_vocab.json`
 * (with `separate_vocabs`) and `tokenizer_config.json`.
 *
 * Encoding a text (HF `tokenizer(text).input_ids`):
 *  1. the special tokens (`</s>`, `<unk>`, `<pad>`) found literally in the text are cut out and kept
 *     as their ids (HF's added-token split, no whitespace stripped around them); empty chunks vanish;
 *  2. a chunk that starts with `>>` and holds a `<<` has its language code (up to the first `<<`) cut
 *     off and kept as one token (HF's `remove_language_code` in transformers 5; transformers 4 also
 *     deleted every `>>…<<` further on, transformers 5 leaves those to SentencePiece);
 *  3. the rest is segmented by the side's SentencePiece model into pieces;
 *  4. pieces map to ids through the vocabulary, a piece it lacks to `<unk>`'s id; `</s>` is appended.
 * Decoding (HF `decode(ids, skip_special_tokens)`): ids → pieces through the vocabulary (an unknown
 * id → `<unk>`), special tokens dropped or kept as text followed by a space, each run of other
 * pieces through `decode_pieces` of source.spm where one vocabulary serves both sides (transformers 5;
 * transformers 4 used target.spm), of target.spm with separate vocabularies; `▁` → space, trimmed.
 *
 * Not done: HF calls sacremoses' punctuation normalizer only where that package is installed (and
 * transformers.js never), so text is used as given; `clean_up_tokenization_spaces` is applied only
 * when tokenizer_config.json sets it true (its default was true before transformers 4.45, false since).
 */
import { SentencePiece } from './sentencepiece.ts';

/** The files of a Marian folder that the tokenizer reads; JSON files as text or parsed. */
export interface MarianTokenizerFiles {
  /** `source.spm`'s bytes. */
  sourceSpm: Uint8Array;
  /** `target.spm`'s bytes. */
  targetSpm: Uint8Array;
  /** `vocab.json`: piece → id. */
  vocab: string | Record<string, number>;
  /** `target_vocab.json`, used for the target side when tokenizer_config.json sets `separate_vocabs`. */
  targetVocab?: string | Record<string, number>;
  /** `tokenizer_config.json`, if the folder has one. */
  tokenizerConfig?: string | Record<string, unknown> | null;
}

/** Options of the {@link MarianTokenizer} constructor, as tokenizer_config.json gives them. */
export interface MarianTokenizerOptions {
  /** Default `<unk>`. */
  unkToken?: string;
  /** Default `</s>`. */
  eosToken?: string;
  /** Default `<pad>`. */
  padToken?: string;
  /** The target side's own vocabulary (`separate_vocabs`); default none: vocab.json serves both sides. */
  targetVocab?: Record<string, number> | null;
  /** Apply {@link cleanUpTokenization} when decoding. Default false. */
  cleanUpTokenizationSpaces?: boolean;
}

/** Options of {@link MarianTokenizer.decode}. */
export interface MarianDecodeOptions {
  /** Drop `</s>`, `<unk>` and `<pad>` (HF `skip_special_tokens`). Default true. */
  skipSpecialTokens?: boolean;
  /**
   * Decode with the source side's SentencePiece model (HF `use_source_tokenizer`). Default as transformers 5:
   * true where one vocabulary serves both sides, false with `separate_vocabs` (transformers 4: always false).
   */
  source?: boolean;
}

type Side = 'source' | 'target';

const SPIECE_UNDERLINE = '\u2581';

/** Hugging Face's MarianTokenizer. */
export class MarianTokenizer {
  /** The unknown token (`<unk>`), what pieces missing from the vocabulary become. */
  readonly unkToken: string;
  /** The end-of-sentence token (`</s>`), appended to every encoding; Marian also starts decoding with pad. */
  readonly eosToken: string;
  /** The padding token (`<pad>`, the decoder's start token in Marian). */
  readonly padToken: string;
  /** The language codes (`>>xx<<`) of the vocabulary, in its order (HF `supported_language_codes`). */
  readonly languageCodes: string[];
  /** Whether decode applies {@link cleanUpTokenization} (tokenizer_config.json's `clean_up_tokenization_spaces`). */
  readonly cleanUpTokenizationSpaces: boolean;
  private readonly encoders: Record<Side, Map<string, number>>;
  /** Whether vocab.json serves both sides (no `separate_vocabs`): transformers 5 then decodes with source.spm. */
  private readonly decoderVocabIsShared: boolean;
  /** id → piece: HF's one decoder, the target vocabulary's inverse when vocabularies are separate. */
  private readonly decoder: Map<number, string>;
  private readonly specials: string[];

  /** Checks that the vocabulary holds the unknown and padding tokens, as HF does. */
  constructor(
    /** The source side's model (`source.spm`). */
    readonly source: SentencePiece,
    /** The target side's model (`target.spm`). */
    readonly target: SentencePiece,
    vocab: Record<string, number>,
    options: MarianTokenizerOptions = {},
  ) {
    this.unkToken = options.unkToken ?? '<unk>';
    this.eosToken = options.eosToken ?? '</s>';
    this.padToken = options.padToken ?? '<pad>';
    this.cleanUpTokenizationSpaces = options.cleanUpTokenizationSpaces ?? false;
    const sourceMap = vocabMap(vocab, 'vocab.json');
    const targetMap = options.targetVocab ? vocabMap(options.targetVocab, 'target_vocab.json') : sourceMap;
    for (const [token, what] of [
      [this.unkToken, 'unk_token'],
      [this.padToken, 'pad_token'],
    ] as const) {
      if (!sourceMap.has(token))
        throw new Error(`vocab.json: ${what} ${JSON.stringify(token)} is not in the vocabulary (expected it there)`);
    }
    this.encoders = { source: sourceMap, target: targetMap };
    this.decoder = new Map([...targetMap].map(([p, id]) => [id, p]));
    this.decoderVocabIsShared = !options.targetVocab;
    this.languageCodes = options.targetVocab
      ? []
      : [...sourceMap.keys()].filter((k) => k.startsWith('>>') && k.endsWith('<<'));
    // Longest first, so that a special token that contains another is cut out whole.
    this.specials = [this.eosToken, this.unkToken, this.padToken].sort((a, b) => b.length - a.length);
  }

  /** The tokenizer of a Marian folder's files. */
  static fromFiles(files: MarianTokenizerFiles): MarianTokenizer {
    const config = parseJson(files.tokenizerConfig ?? null, 'tokenizer_config.json') as Record<string, unknown> | null;
    const separate = config?.separate_vocabs === true;
    if (separate && files.targetVocab === undefined)
      throw new Error('tokenizer_config.json: separate_vocabs is true but no target_vocab.json was given');
    const token = (key: string): string | undefined => {
      const v = config?.[key];
      if (v === undefined || v === null) return undefined;
      const content = typeof v === 'object' ? (v as { content?: unknown }).content : v;
      if (typeof content !== 'string')
        throw new Error(
          `tokenizer_config.json: ${key} must be a string or {content: string}, got ${JSON.stringify(v)}`,
        );
      return content;
    };
    return new MarianTokenizer(
      SentencePiece.fromBytes(files.sourceSpm, 'source.spm'),
      SentencePiece.fromBytes(files.targetSpm, 'target.spm'),
      parseJson(files.vocab, 'vocab.json') as Record<string, number>,
      {
        unkToken: token('unk_token'),
        eosToken: token('eos_token'),
        padToken: token('pad_token'),
        targetVocab: separate ? (parseJson(files.targetVocab!, 'target_vocab.json') as Record<string, number>) : null,
        cleanUpTokenizationSpaces: config?.clean_up_tokenization_spaces === true,
      },
    );
  }

  /** Number of ids in vocab.json (HF `vocab_size`). */
  get vocabSize(): number {
    return this.encoders.source.size;
  }

  /** Id of `</s>`. */
  get eosId(): number {
    return this.tokenToId(this.eosToken);
  }

  /** Id of `<pad>`. */
  get padId(): number {
    return this.tokenToId(this.padToken);
  }

  /** Id of `<unk>`. */
  get unkId(): number {
    return this.tokenToId(this.unkToken);
  }

  /** The id of a token, `<unk>`'s id for one the vocabulary lacks (HF `_convert_token_to_id`). */
  tokenToId(token: string, side: Side = 'source'): number {
    const m = this.encoders[side];
    return m.get(token) ?? m.get(this.unkToken)!;
  }

  /** The token of an id, `<unk>` for an id the vocabulary lacks (HF `_convert_id_to_token`). */
  idToToken(id: number): string {
    return this.decoder.get(id) ?? this.unkToken;
  }

  /** The tokens of a text, without `</s>` (HF `tokenize`); `side` picks the SentencePiece model. */
  tokenize(text: string, side: Side = 'source'): string[] {
    const spm = side === 'source' ? this.source : this.target;
    const out: string[] = [];
    for (const [chunk, special] of this.splitSpecials(text)) {
      if (special) {
        out.push(chunk);
        continue;
      }
      // HF's remove_language_code: only a code opening the chunk is taken out.
      const end = chunk.startsWith('>>') ? chunk.indexOf('<<') : -1;
      if (end >= 0) out.push(chunk.slice(0, end + 2));
      out.push(...spm.encodeAsPieces(end >= 0 ? chunk.slice(end + 2) : chunk));
    }
    return out;
  }

  /** The source ids of a text, `</s>` appended (HF `tokenizer(text).input_ids`). */
  encode(text: string): number[] {
    return this.idsOf(this.tokenize(text, 'source'), 'source');
  }

  /** The target ids of a text, `</s>` appended (HF `tokenizer(text_target=text).input_ids`, the labels). */
  encodeTarget(text: string): number[] {
    return this.idsOf(this.tokenize(text, 'target'), 'target');
  }

  /** The text of ids (HF `decode`), through the SentencePiece model `options.source` picks. */
  decode(ids: Iterable<number>, options: MarianDecodeOptions = {}): string {
    const skip = options.skipSpecialTokens ?? true;
    const spm = (options.source ?? this.decoderVocabIsShared) ? this.source : this.target;
    const specialIds = new Set(this.specials.map((t) => this.tokenToId(t)));
    let out = '';
    let run: string[] = [];
    for (const id of ids) {
      if (skip && specialIds.has(id)) continue;
      const token = this.idToToken(id);
      if (this.specials.includes(token)) {
        out += `${spm.decodePieces(run)}${token} `;
        run = [];
      } else {
        run.push(token);
      }
    }
    out += spm.decodePieces(run);
    const text = out.replaceAll(SPIECE_UNDERLINE, ' ').trim();
    return this.cleanUpTokenizationSpaces ? cleanUpTokenization(text) : text;
  }

  private idsOf(tokens: string[], side: Side): number[] {
    return [...tokens.map((t) => this.tokenToId(t, side)), this.tokenToId(this.eosToken, side)];
  }

  /** The text cut around literal special tokens: [text, false] chunks (never empty) and [token, true]. */
  private splitSpecials(text: string): [string, boolean][] {
    const out: [string, boolean][] = [];
    let start = 0;
    for (let i = 0; i < text.length; ) {
      const hit = this.specials.find((t) => text.startsWith(t, i));
      if (hit === undefined) {
        i++;
        continue;
      }
      if (i > start) out.push([text.slice(start, i), false]);
      out.push([hit, true]);
      i += hit.length;
      start = i;
    }
    if (text.length > start) out.push([text.slice(start), false]);
    return out;
  }
}

/** HF's `clean_up_tokenization`: no space before . ? ! , and English contractions. */
export function cleanUpTokenization(text: string): string {
  return text
    .replaceAll(' .', '.')
    .replaceAll(' ?', '?')
    .replaceAll(' !', '!')
    .replaceAll(' ,', ',')
    .replaceAll(" ' ", "'")
    .replaceAll(" n't", "n't")
    .replaceAll(" 'm", "'m")
    .replaceAll(" 's", "'s")
    .replaceAll(" 've", "'ve")
    .replaceAll(" 're", "'re");
}

function parseJson(x: unknown, name: string): unknown {
  if (typeof x !== 'string') return x;
  try {
    return JSON.parse(x);
  } catch (e) {
    throw new Error(`${name}: not valid JSON (${(e as Error).message})`);
  }
}

function vocabMap(vocab: unknown, name: string): Map<string, number> {
  if (vocab === null || typeof vocab !== 'object' || Array.isArray(vocab))
    throw new Error(
      `${name}: expected an object of piece: id, got ${Array.isArray(vocab) ? 'an array' : typeof vocab}`,
    );
  const m = new Map<string, number>();
  for (const [piece, id] of Object.entries(vocab)) {
    if (!Number.isInteger(id) || (id as number) < 0)
      throw new Error(`${name}: the id of ${JSON.stringify(piece)} must be an integer >= 0, got ${JSON.stringify(id)}`);
    m.set(piece, id as number);
  }
  return m;
}
