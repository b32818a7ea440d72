/**
 * SentencePiece Unigram models, encoding and decoding exactly as sentencepiece (0.1.97 to 0.2)
 * does: `SentencePieceProcessor::Encode` = `Normalizer::Normalize` (sentencepiece-normalizer.ts),
 * the Unigram model's Viterbi search (`unigram_model.cc` `EncodeOptimized`), then the processor's
 * pass over the best path (`PopulateSentencePieceText`: a run of unknown pieces becomes one piece,
 * or with byte fallback each unknown byte a `<0xNN>` piece); and `Decode`.
 *
 * The search, in sentencepiece's own arithmetic, since ties and near-ties decide pieces:
 *  - scores are float32; a path's score is stored as float32; a candidate path is compared in
 *    double (C++ promotes `score + best` to double because the user-defined score below is one);
 *  - a user-defined piece scores `length_in_bytes × max_score − 0.1`, where max_score is the largest
 *    NORMAL score but at least FLT_MIN (the C++ starts from FLT_MIN, the smallest positive float), so
 *    such a piece is almost always taken whole;
 *  - a character that starts no piece of one character gets an unknown node scoring
 *    `min_score − 10`, added in float32;
 *  - on equal scores the first path found stays: shorter pieces are tried first, starting positions
 *    left to right.
 * Positions are UTF-8 byte offsets, as in sentencepiece; text is encoded with TextEncoder (a lone
 * surrogate becomes U+FFFD, which Python would refuse to encode).
 *
 * Only Unigram models (what Marian's opus-mt folders and T5 ship) are read; a BPE, WORD or CHAR
 * model is refused by name.
 */
import { MODEL_TYPES, PieceType, readSpmModel, type SpmModel, type SpmNormalizerSpec } from './sentencepiece-model.ts';
import { ByteTrie, oneCharLen, SpmNormalizer, validCharLen } from './sentencepiece-normalizer.ts';
import { spmModelFromTokenizerJson } from './unigram-json.ts';

export { PieceType, readSpmModel } from './sentencepiece-model.ts';
export type { SpmModel, SpmNormalizerSpec, SpmPiece, SpmTrainerSpec } from './sentencepiece-model.ts';

/** The pieces of a text and their ids, one to one. */
export interface SpmEncoding {
  /** The pieces' texts (a run of unknown characters is one piece, its text the characters). */
  pieces: string[];
  /** Their ids. */
  ids: number[];
}

const FLT_MAX = 3.4028234663852886e38;
const FLT_MIN = 1.1754943508222875e-38;
/** sentencepiece's `kUnkPenalty`: an unknown character costs this much more than the rarest piece. */
const UNK_PENALTY = 10;
const METASPACE = '\u2581';
const encoder = new TextEncoder();
// ignoreBOM: a piece may start with U+FEFF, which TextDecoder would otherwise drop.
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** `<0xNN>` for a byte (sentencepiece's `ByteToPiece`). */
function byteToPiece(byte: number): string {
  return `<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`;
}

/** A SentencePiece Unigram model, ready to encode and decode. */
export class SentencePiece {
  /** The pieces' texts (token i is pieces[i]). */
  private readonly pieceText: string[];
  private readonly types: Uint8Array;
  private readonly scores: Float64Array;
  /** Piece text → id: CONTROL, UNKNOWN and BYTE pieces first, as sentencepiece's `PieceToId` looks them up. */
  private readonly reserved = new Map<string, number>();
  private readonly ordinary = new Map<string, number>();
  /** NORMAL, USER_DEFINED and UNUSED pieces by their UTF-8 bytes: what the search may match. */
  private readonly trie = new ByteTrie();
  private readonly normalizer: SpmNormalizer;
  private readonly denormalizer: SpmNormalizer | null;
  private readonly minScore: number;
  private readonly maxScore: number;
  /** Id of the UNKNOWN piece. */
  readonly unkId: number;

  /** Checks the model as sentencepiece's `InitializePieces` does; `name` (the file) starts every error. */
  constructor(
    /** The model as read. */
    readonly model: SpmModel,
    /** The model's file, for messages. */
    readonly name = 'sentencepiece model',
  ) {
    const type = model.trainerSpec.modelType;
    if (type !== 1)
      throw new Error(
        `${name}: model_type ${MODEL_TYPES[type] ?? type} is not supported (expected UNIGRAM, ` +
          "the type of Marian's and T5's models)",
      );
    const n = model.pieces.length;
    this.pieceText = model.pieces.map((p) => p.piece);
    this.types = new Uint8Array(n);
    this.scores = new Float64Array(n);
    let unkId = -1;
    let minScore = FLT_MAX;
    let maxScore = FLT_MIN;
    const bytesSeen = new Set<string>();
    model.pieces.forEach((p, id) => {
      if (p.piece === '') throw new Error(`${name}: piece ${id} is empty (expected a non-empty piece)`);
      if (p.type < 1 || p.type > 6) throw new Error(`${name}: piece ${id} has type ${p.type} (expected 1 to 6)`);
      this.types[id] = p.type;
      this.scores[id] = Math.fround(p.score);
      const ordinary = p.type === PieceType.NORMAL || p.type === PieceType.USER_DEFINED || p.type === PieceType.UNUSED;
      const map = ordinary ? this.ordinary : this.reserved;
      if (map.has(p.piece)) throw new Error(`${name}: piece ${JSON.stringify(p.piece)} is defined twice`);
      map.set(p.piece, id);
      if (ordinary) this.trie.insert(encoder.encode(p.piece), id);
      if (p.type === PieceType.NORMAL) {
        minScore = Math.min(minScore, this.scores[id]!);
        maxScore = Math.max(maxScore, this.scores[id]!);
      }
      if (p.type === PieceType.UNKNOWN) {
        if (unkId >= 0) throw new Error(`${name}: two unknown pieces (ids ${unkId} and ${id}); expected one`);
        unkId = id;
      }
      if (p.type === PieceType.BYTE) {
        if (!model.trainerSpec.byteFallback)
          throw new Error(`${name}: byte piece ${JSON.stringify(p.piece)} found although byte_fallback is false`);
        if (!/^<0x[0-9A-F]{2}>$/.test(p.piece))
          throw new Error(`${name}: byte piece ${JSON.stringify(p.piece)} is invalid (expected <0xNN>)`);
        bytesSeen.add(p.piece);
      }
    });
    if (unkId < 0) throw new Error(`${name}: no unknown piece (expected one piece of type UNKNOWN)`);
    if (model.trainerSpec.byteFallback && bytesSeen.size !== 256)
      throw new Error(`${name}: byte_fallback is true but the model has ${bytesSeen.size} byte pieces, not 256`);
    this.unkId = unkId;
    this.minScore = minScore;
    this.maxScore = maxScore;
    const userDefined = new ByteTrie();
    let anyUserDefined = false;
    model.pieces.forEach((p, id) => {
      if (p.type === PieceType.USER_DEFINED) {
        userDefined.insert(encoder.encode(p.piece), id);
        anyUserDefined = true;
      }
    });
    this.normalizer = new SpmNormalizer(
      model.normalizerSpec,
      model.trainerSpec.treatWhitespaceAsSuffix,
      anyUserDefined ? userDefined : null,
      name,
    );
    const d = model.denormalizerSpec;
    this.denormalizer = d && d.precompiledCharsmap.length > 0 ? new SpmNormalizer(d, false, null, name) : null;
  }

  /** The model in a `.spm` file's bytes; `name` (the file) starts error messages. */
  static fromBytes(bytes: Uint8Array, name = 'sentencepiece model'): SentencePiece {
    return new SentencePiece(readSpmModel(bytes, name), name);
  }

  /** The model of a Unigram `tokenizer.json` (object or text; see unigram-json.ts for what is read). */
  static fromTokenizerJson(json: unknown, name = 'a Unigram tokenizer JSON'): SentencePiece {
    return new SentencePiece(spmModelFromTokenizerJson(json, name), name);
  }

  /** Number of pieces (ids are 0 .. vocabSize − 1). */
  get vocabSize(): number {
    return this.pieceText.length;
  }

  /** The normalizer spec text goes through before segmentation. */
  get normalizerSpec(): SpmNormalizerSpec {
    return this.model.normalizerSpec;
  }

  /** The piece with this id, or undefined. */
  idToPiece(id: number): string | undefined {
    return this.pieceText[id];
  }

  /** The id of this piece; the unknown piece's id for a piece the model lacks (as sentencepiece). */
  pieceToId(piece: string): number {
    return this.reserved.get(piece) ?? this.ordinary.get(piece) ?? this.unkId;
  }

  /** The piece's type (see {@link PieceType}); undefined for an id out of range. */
  pieceType(id: number): PieceType | undefined {
    return id >= 0 && id < this.types.length ? (this.types[id] as PieceType) : undefined;
  }

  /** `text` as sentencepiece normalizes it before segmentation (spaces as `▁`, dummy prefix added). */
  normalize(text: string): string {
    return decoder.decode(this.normalizer.normalize(encoder.encode(text)));
  }

  /** The pieces and ids of `text` (`sp.encode(text, out_type=str)` and `out_type=int`). */
  encode(text: string): SpmEncoding {
    const normalized = this.normalizer.normalize(encoder.encode(text));
    const path = this.viterbi(normalized);
    const pieces: string[] = [];
    const ids: number[] = [];
    const byteFallback = this.model.trainerSpec.byteFallback;
    let prevUnk = false;
    let runStart = 0;
    for (let k = 0; k < path.length; k += 3) {
      const [start, end, id] = [path[k]!, path[k + 1]!, path[k + 2]!];
      const unk = id === this.unkId;
      if (unk && byteFallback) {
        for (let i = start; i < end; i++) {
          const piece = byteToPiece(normalized[i]!);
          pieces.push(piece);
          ids.push(this.pieceToId(piece));
        }
      } else if (unk && prevUnk) {
        // A run of unknown characters is one unknown piece, so a decoder can copy it whole.
        pieces[pieces.length - 1] = decoder.decode(normalized.subarray(runStart, end));
      } else {
        if (unk) runStart = start;
        // A matched piece's text is the piece itself; only an unknown one needs the normalized bytes.
        pieces.push(unk ? decoder.decode(normalized.subarray(start, end)) : this.pieceText[id]!);
        ids.push(id);
      }
      prevUnk = unk;
    }
    return { pieces, ids };
  }

  /** The pieces of `text`. */
  encodeAsPieces(text: string): string[] {
    return this.encode(text).pieces;
  }

  /** The ids of `text`. */
  encodeAsIds(text: string): number[] {
    return this.encode(text).ids;
  }

  /**
   * The best segmentation of normalized bytes, as (start, end, id) triples in order
   * (`Model::EncodeOptimized`).
   */
  private viterbi(b: Uint8Array): number[] {
    const size = b.length;
    if (size === 0) return [];
    const best = new Float64Array(size + 1); // best path score ending at each byte offset (a float32)
    const from = new Int32Array(size + 1).fill(-1); // where that path's last piece starts
    const lastId = new Int32Array(size + 1);
    const unkScore = Math.fround(this.minScore - UNK_PENALTY);
    const offer = (end: number, start: number, score: number, id: number): void => {
      if (from[end] === -1 || score > best[end]!) {
        best[end] = Math.fround(score);
        from[end] = start;
        lastId[end] = id;
      }
    };
    for (let start = 0; start < size; ) {
      const base = best[start]!;
      const charLen = Math.min(oneCharLen(b[start]!), size - start);
      let hasSingleChar = false;
      let node = 0;
      for (let end = start; end < size; ) {
        node = this.trie.step(node, b[end]!);
        end++;
        if (node < 0) break;
        const id = this.trie.value(node);
        if (id < 0) continue;
        const type = this.types[id];
        if (type === PieceType.UNUSED) continue;
        const length = end - start;
        const score = type === PieceType.USER_DEFINED ? Math.fround(length * this.maxScore) - 0.1 : this.scores[id]!;
        offer(end, start, score + base, id);
        if (length === charLen) hasSingleChar = true;
      }
      if (!hasSingleChar) offer(start + charLen, start, Math.fround(unkScore + base), this.unkId);
      start += charLen;
    }
    const out: number[] = [];
    for (let end = size; end > 0; end = from[end]!) out.push(lastId[end]!, end, from[end]!);
    return out.reverse();
  }

  /** The text of ids (`sp.decode(ids)`); throws on an id out of range. */
  decode(ids: readonly number[]): string {
    return this.decodePieces(
      ids.map((id) => {
        const piece = Number.isInteger(id) ? this.pieceText[id] : undefined;
        if (piece === undefined)
          throw new RangeError(`${this.name}: decode: id ${id} is not in 0..${this.vocabSize - 1}`);
        return piece;
      }),
    );
  }

  /**
   * The text of pieces (`sp.decode_pieces`, `SentencePieceProcessor::Decode`): control pieces vanish,
   * `<unk>` reads " ⁇ " (the model's unk_surface), a piece the model lacks reads as itself, runs of
   * byte pieces are put back together as UTF-8 (an invalid byte reads U+FFFD), `▁` reads as a space,
   * and the first space of the text is dropped when the model adds a dummy prefix.
   */
  decodePieces(pieces: readonly string[]): string {
    const spec = this.model.normalizerSpec;
    const ids = pieces.map((p) => this.pieceToId(p));
    let text = '';
    let byteStart = 0;
    let bosWs = true; // still at the start, where a leading ▁ is the dummy prefix
    let bosWsSeen = false;
    const flushBytes = (end: number): void => {
      if (byteStart >= end) return;
      const bytes = Uint8Array.from(pieces.slice(byteStart, end), (p) => Number.parseInt(p.slice(3, 5), 16));
      for (let offset = 0; offset < bytes.length; ) {
        const len = validCharLen(bytes, offset);
        text += len === 0 ? '\ufffd' : decoder.decode(bytes.subarray(offset, offset + len));
        offset += len === 0 ? 1 : len;
      }
    };
    for (let i = 0; i < pieces.length; i++) {
      const id = ids[i]!;
      if (this.types[id] === PieceType.BYTE) continue;
      flushBytes(i);
      if (bosWsSeen || text.length > 0) bosWs = false;
      byteStart = i + 1;
      let piece = pieces[i]!;
      bosWsSeen = false;
      if (this.types[id] === PieceType.CONTROL) continue;
      if (this.types[id] === PieceType.UNKNOWN) {
        text += this.pieceText[id] === piece ? this.model.trainerSpec.unkSurface : piece;
        continue;
      }
      if (bosWs && (spec.addDummyPrefix || spec.removeExtraWhitespaces) && piece.startsWith(METASPACE)) {
        piece = piece.slice(METASPACE.length);
        // With extra whitespace removed, every leading ▁ goes, so the start is not over yet.
        bosWsSeen = !spec.removeExtraWhitespaces;
      }
      text += piece.replaceAll(METASPACE, ' ');
    }
    flushBytes(pieces.length);
    return this.denormalizer ? decoder.decode(this.denormalizer.normalize(encoder.encode(text))) : text;
  }
}
