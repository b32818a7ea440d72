/**
 * A Hugging Face `tokenizer.json` read as the pipeline `tokenizers` runs (the encoder family's tokenizers:
 * BERT's WordPiece, RoBERTa's byte-level BPE, XLM-R's Unigram):
 *
 *  1. added tokens (`[CLS]`, `<mask>`, …) are cut out of the raw text first, leftmost-longest, each with its
 *     `lstrip`/`rstrip` taking the whitespace beside it, and map to their ids;
 *  2. every other segment goes through the normalizer, pre-tokenizer and model, chosen by `model.type`:
 *     WordPiece with `BertNormalizer` and `BertPreTokenizer` (text/wordpiece.ts); BPE with the `ByteLevel`
 *     pre-tokenizer (text/bytelevel.ts), or with the `Metaspace` one, SentencePiece's BPE (NLLB's:
 *     text/metaspace-bpe.ts); Unigram with its Metaspace pipeline (text/unigram-json.ts onto
 *     text/sentencepiece.ts);
 *  3. the post-processor adds the special tokens and type ids of one text or a pair (text/post-processor.ts);
 *     with `maxLength`, the texts are cut first, as transformers' truncation 'longest_first' cuts them;
 *  4. decoding maps ids back through the model's decoder (WordPiece, ByteLevel, Metaspace), leaving out the
 *     special added tokens when asked.
 *
 * `truncation` and `padding` in the file are left alone, as transformers overrides them on every call: a batch
 * is padded by its caller. Anything the file asks that this reader does not do is refused by its name.
 */
import { ByteLevelBpeTokenizer } from './bytelevel.ts';
import { MetaspaceBpe } from './metaspace-bpe.ts';
import { postProcessorFromJSON, type Encoded, type PostProcessor } from './post-processor.ts';
import { SentencePiece } from './sentencepiece.ts';
import {
  bertNormalize,
  bertPreTokenize,
  parseVocabTxt,
  WordPieceModel,
  wordPieceDecode,
  type BertNormalizerOptions,
} from './wordpiece.ts';

type Json = Record<string, unknown>;

const isObject = (x: unknown): x is Json => x !== null && typeof x === 'object' && !Array.isArray(x);

/** One entry of tokenizer.json's `added_tokens`. */
export interface AddedToken {
  id: number;
  content: string;
  /** Skipped by decode's skipSpecialTokens. */
  special: boolean;
  /** The match takes the whitespace on its left. */
  lstrip: boolean;
  /** The match takes the whitespace on its right. */
  rstrip: boolean;
}

/** What {@link HfTokenizer.encodeInput} gives: the post-processed ids, with how many tokens truncation cut. */
export interface HfEncoding extends Encoded {
  /** Tokens of the text(s) cut to fit `maxLength` (0: none). */
  truncated: number;
}

/** Options of {@link HfTokenizer.encodeInput}. */
export interface HfEncodeOptions {
  /** A second text (a pair: `[CLS] a [SEP] b [SEP]`). */
  pair?: string;
  /** Add the post-processor's special tokens (default true). */
  addSpecialTokens?: boolean;
  /** At most this many ids, special tokens included: the texts are cut (longest first) to fit. */
  maxLength?: number;
}

/** The model stage and its decoder: text segment → ids, ids → text. */
interface ModelStage {
  readonly type: 'WordPiece' | 'BPE' | 'Unigram';
  encode(segment: string): number[];
  /** The text of ids that are not added tokens. */
  decode(ids: number[]): string;
  /** The token of an id in the model's vocabulary. */
  token(id: number): string | undefined;
  /** The id of a token in the model's vocabulary. */
  id(token: string): number | undefined;
  /** One more than the largest id. */
  size: number;
}

function wordPieceStage(j: Json, m: Json): ModelStage {
  const n = j.normalizer;
  if (n !== null && n !== undefined && (!isObject(n) || n.type !== 'BertNormalizer'))
    throw new Error(`tokenizer.json: a WordPiece model's normalizer must be BertNormalizer or null, got ${kind(n)}`);
  const p = j.pre_tokenizer;
  if (!isObject(p) || p.type !== 'BertPreTokenizer')
    throw new Error(`tokenizer.json: a WordPiece model's pre_tokenizer must be BertPreTokenizer, got ${kind(p)}`);
  const d = j.decoder;
  if (d !== null && d !== undefined && (!isObject(d) || d.type !== 'WordPiece'))
    throw new Error(`tokenizer.json: a WordPiece model's decoder must be WordPiece or null, got ${kind(d)}`);
  if (!isObject(m.vocab)) throw new Error('tokenizer.json: model.vocab must be an object of token: id');
  const vocab = new Map<string, number>();
  for (const [t, id] of Object.entries(m.vocab)) {
    if (!Number.isInteger(id) || (id as number) < 0)
      throw new Error(
        `tokenizer.json: model.vocab id of ${JSON.stringify(t)} must be an integer >= 0, got ${String(id)}`,
      );
    vocab.set(t, id as number);
  }
  return wordPiece(vocab, (isObject(n) ? n : null) as BertNormalizerOptions | null, m, isObject(d) ? d : null);
}

function wordPiece(
  vocab: Map<string, number>,
  norm: BertNormalizerOptions | null,
  m: Json,
  d: Json | null,
): ModelStage {
  const model = new WordPieceModel(vocab, m);
  const tokens: string[] = [];
  for (const [t, id] of vocab) tokens[id] = t;
  const prefix = typeof d?.prefix === 'string' ? d.prefix : model.prefix;
  return {
    type: 'WordPiece',
    encode: (s) => bertPreTokenize(norm ? bertNormalize(s, norm) : s).flatMap((w) => model.tokenize(w)),
    decode: (ids) =>
      wordPieceDecode(
        ids.map((i) => tokens[i] ?? ''),
        prefix,
        d?.cleanup !== false,
      ),
    token: (id) => tokens[id],
    id: (t) => vocab.get(t),
    size: tokens.length,
  };
}

function byteLevelStage(j: Json): ModelStage {
  // The ByteLevel reader checks its own stages; the post-processor and added tokens are this file's.
  const bpe = ByteLevelBpeTokenizer.fromJSON({ ...j, post_processor: null, added_tokens: [] });
  return {
    type: 'BPE',
    encode: (s) => bpe.encode(s),
    decode: (ids) => bpe.decode(ids),
    token: (id) => bpe.idToToken(id),
    id: (t) => bpe.tokenToId(t),
    size: bpe.vocabSize,
  };
}

/** A SentencePiece BPE (a Metaspace pre-tokenizer: NLLB's, mBART's) through text/metaspace-bpe.ts. */
function metaspaceBpeStage(j: Json): ModelStage {
  const bpe = new MetaspaceBpe(j, 'tokenizer.json (BPE model)');
  return {
    type: 'BPE',
    encode: (s) => bpe.encode(s),
    decode: (ids) => bpe.decode(ids),
    token: (id) => bpe.pieces[id],
    id: (t) => bpe.vocab.get(t),
    size: bpe.pieces.length,
  };
}

function unigramStage(j: Json): ModelStage {
  const d = j.decoder;
  if (!isObject(d) || d.type !== 'Metaspace' || (d.replacement ?? '\u2581') !== '\u2581')
    throw new Error(`tokenizer.json: a Unigram model's decoder must be Metaspace with "▁", got ${kind(d)}`);
  const sp = SentencePiece.fromTokenizerJson({ ...j, added_tokens: [] }, 'tokenizer.json (Unigram model)');
  const stripFirst = d.prepend_scheme !== 'never' && d.add_prefix_space !== false;
  return {
    type: 'Unigram',
    encode: (s) => sp.encodeAsIds(s),
    // tokenizers' Metaspace decoder: every ▁ a space, the first token's leading one dropped.
    decode: (ids) =>
      ids
        .map((id, i) => {
          const t = (sp.idToPiece(id) ?? '').replaceAll('\u2581', ' ');
          return i === 0 && stripFirst && t.startsWith(' ') ? t.slice(1) : t;
        })
        .join(''),
    token: (id) => sp.idToPiece(id),
    id: (t) => {
      const id = sp.pieceToId(t);
      return sp.idToPiece(id) === t ? id : undefined;
    },
    size: sp.vocabSize,
  };
}

function kind(x: unknown): string {
  if (x === null || x === undefined) return String(x);
  return isObject(x) && typeof x.type === 'string' ? `'${x.type}'` : typeof x;
}

function readAdded(list: unknown): AddedToken[] {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new Error('tokenizer.json: added_tokens must be an array');
  return list.map((a) => {
    if (!isObject(a) || !Number.isInteger(a.id) || typeof a.content !== 'string' || a.content === '')
      throw new Error(`tokenizer.json: added token ${JSON.stringify(a)} needs an integer id and a content`);
    if (a.single_word === true)
      throw new Error(`tokenizer.json: added token ${JSON.stringify(a.content)}: single_word is not supported`);
    return {
      id: a.id as number,
      content: a.content,
      special: a.special === true,
      lstrip: a.lstrip === true,
      rstrip: a.rstrip === true,
    };
  });
}

/**
 * A tokenizer.json's tokenizer (see the file comment); {@link HfTokenizer.fromJSON} reads one,
 * {@link HfTokenizer.fromVocabTxt} a BERT folder's vocab.txt.
 */
export class HfTokenizer {
  private readonly byId: Map<number, AddedToken>;
  private readonly byContent: Map<string, AddedToken>;
  /** Added tokens, longest first (a leftmost match takes the longest). */
  private readonly added: AddedToken[];
  /** One more than the largest id of the model's vocabulary and the added tokens. */
  readonly vocabSize: number;

  private constructor(
    private readonly model: ModelStage,
    added: AddedToken[],
    /** The post-processor: special tokens and type ids. */
    readonly postProcessor: PostProcessor,
  ) {
    this.byId = new Map(added.map((a) => [a.id, a]));
    this.byContent = new Map(added.map((a) => [a.content, a]));
    this.added = [...added].sort((a, b) => b.content.length - a.content.length);
    this.vocabSize = Math.max(model.size, ...added.map((a) => a.id + 1));
  }

  /** The model type: 'WordPiece', 'BPE' (byte-level) or 'Unigram'. */
  get modelType(): ModelStage['type'] {
    return this.model.type;
  }

  /** A tokenizer.json (object or text). */
  static fromJSON(json: unknown): HfTokenizer {
    let j = json;
    if (typeof json === 'string') j = JSON.parse(json);
    if (!isObject(j)) throw new Error(`tokenizer.json: expected an object, got ${kind(j)}`);
    const m = j.model;
    if (!isObject(m)) throw new Error('tokenizer.json: model must be an object');
    let model: ModelStage;
    if (m.type === 'WordPiece') model = wordPieceStage(j, m);
    else if (m.type === 'BPE')
      model =
        isObject(j.pre_tokenizer) && j.pre_tokenizer.type === 'Metaspace' ? metaspaceBpeStage(j) : byteLevelStage(j);
    else if (m.type === 'Unigram') model = unigramStage(j);
    else throw new Error(`tokenizer.json: model.type ${kind(m)} is not supported (WordPiece, BPE, Unigram)`);
    return new HfTokenizer(model, readAdded(j.added_tokens), postProcessorFromJSON(j.post_processor));
  }

  /**
   * A BERT folder's vocab.txt with its tokenizer_config.json (may be null), as transformers' BertTokenizer
   * reads them: do_lower_case (default true), strip_accents, tokenize_chinese_chars, the special tokens
   * (default [UNK] [SEP] [PAD] [CLS] [MASK]) and the `[CLS] A [SEP] (B [SEP])` template.
   */
  static fromVocabTxt(text: string, tokenizerConfig: unknown = null): HfTokenizer {
    const c = isObject(tokenizerConfig) ? tokenizerConfig : {};
    const vocab = parseVocabTxt(text);
    const special = (k: string, fallback: string): AddedToken => {
      const v = c[k] ?? fallback;
      const content = typeof v === 'string' ? v : isObject(v) && typeof v.content === 'string' ? v.content : fallback;
      const id = vocab.get(content);
      if (id === undefined) throw new Error(`vocab.txt: the ${k} ${JSON.stringify(content)} is not in the vocabulary`);
      return { id, content, special: true, lstrip: false, rstrip: false };
    };
    const unk = special('unk_token', '[UNK]');
    const sep = special('sep_token', '[SEP]');
    const cls = special('cls_token', '[CLS]');
    const added = [special('pad_token', '[PAD]'), unk, cls, sep, special('mask_token', '[MASK]')];
    const lower = c.do_lower_case ?? true;
    const norm: BertNormalizerOptions = {
      clean_text: true,
      handle_chinese_chars: c.tokenize_chinese_chars !== false,
      strip_accents: (c.strip_accents ?? null) as boolean | null,
      lowercase: lower === true,
    };
    const model = wordPiece(vocab, norm, { unk_token: unk.content }, null);
    const post = postProcessorFromJSON({
      type: 'BertProcessing',
      cls: [cls.content, cls.id],
      sep: [sep.content, sep.id],
    });
    return new HfTokenizer(model, added, post);
  }

  /** The id of a token (vocabulary or added token). */
  tokenToId(token: string): number | undefined {
    return this.byContent.get(token)?.id ?? this.model.id(token);
  }

  /** The token of an id (its vocabulary string: `##ing`, `Ġworld`, `▁the`; an added token's content). */
  idToToken(id: number): string | undefined {
    return this.byId.get(id)?.content ?? this.model.token(id);
  }

  /** Whether `id` is a special added token ([CLS], <s>, <pad>, …). */
  isSpecial(id: number): boolean {
    return this.byId.get(id)?.special === true;
  }

  /** The ids of one text without special tokens: added tokens cut out, the rest through the model. */
  encode(text: string): number[] {
    const out: number[] = [];
    let start = 0;
    let segStart = 0;
    const flush = (end: number) => {
      if (end > segStart) out.push(...this.model.encode(text.slice(segStart, end)));
    };
    while (start < text.length) {
      const a = this.added.find((t) => text.startsWith(t.content, start));
      if (!a) {
        start++;
        continue;
      }
      let left = start;
      if (a.lstrip) while (left > segStart && /\s/u.test(text[left - 1])) left--;
      flush(left);
      out.push(a.id);
      start += a.content.length;
      if (a.rstrip) while (start < text.length && /\s/u.test(text[start])) start++;
      segStart = start;
    }
    flush(text.length);
    return out;
  }

  /** The tokens of a text without special tokens (`tokenizer.tokenize`). */
  tokenize(text: string): string[] {
    return this.encode(text).map((id) => this.idToToken(id) ?? '');
  }

  /**
   * One text (or a pair) as the model is fed it: ids with the post-processor's special tokens, type ids,
   * special mask; with `maxLength`, cut as transformers' truncation='longest_first' cuts.
   */
  encodeInput(text: string, options: HfEncodeOptions = {}): HfEncoding {
    let a = this.encode(text);
    let b = options.pair === undefined ? undefined : this.encode(options.pair);
    const add = options.addSpecialTokens ?? true;
    let truncated = 0;
    if (options.maxLength !== undefined) {
      const room = options.maxLength - (add ? this.postProcessor.addedTokens(b !== undefined) : 0);
      if (room < 0)
        throw new Error(
          `tokenizer: maxLength ${options.maxLength} leaves no room beside the ` +
            `${this.postProcessor.addedTokens(b !== undefined)} special tokens`,
        );
      const before = a.length + (b?.length ?? 0);
      [a, b] = longestFirst(a, b, room);
      truncated = before - a.length - (b?.length ?? 0);
    }
    return { ...this.postProcessor.process(a, b, add), truncated };
  }

  /** The text of ids (special added tokens left out with skipSpecialTokens). */
  decode(ids: readonly number[], options: { skipSpecialTokens?: boolean } = {}): string {
    // Runs of model ids go through the decoder; an added token between them is its content (tokenizers does the
    // same: added tokens are decoded by content, then the decoder runs over every token).
    const tokens: number[] = [];
    for (const id of ids) {
      const a = this.byId.get(id);
      if (a?.special && options.skipSpecialTokens) continue;
      tokens.push(id);
    }
    // WordPiece decodes token strings, and an added token's content is one.
    if (this.model.type === 'WordPiece') return this.model.decode(tokens);
    let text = '';
    let run: number[] = [];
    const flush = () => {
      if (run.length) text += this.model.decode(run);
      run = [];
    };
    for (const id of tokens) {
      const a = this.byId.get(id);
      if (a && this.model.token(id) !== a.content) {
        flush();
        text += a.content;
      } else run.push(id);
    }
    flush();
    return text;
  }
}

/**
 * transformers' truncation='longest_first' (tokenizers' TruncationStrategy::LongestFirst): one text cut to
 * `room`; of a pair, the longer cut first until both fit, the shorter kept whole where it fits in half.
 */
export function longestFirst(a: number[], b: number[] | undefined, room: number): [number[], number[] | undefined] {
  if (b === undefined) return [a.slice(0, Math.max(0, room)), undefined];
  if (a.length + b.length <= room) return [a, b];
  let n1 = a.length;
  let n2 = b.length;
  const swap = n1 > n2;
  if (swap) [n1, n2] = [n2, n1];
  n2 = n1 > room ? n1 : Math.max(n1, room - n1);
  if (n1 + n2 > room) {
    n1 = Math.floor(room / 2);
    n2 = n1 + (room % 2);
  }
  if (swap) [n1, n2] = [n2, n1];
  return [a.slice(0, n1), b.slice(0, n2)];
}
