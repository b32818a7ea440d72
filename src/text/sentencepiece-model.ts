/**
 * A SentencePiece model file (`.spm`, `.model`) read from its bytes: the protobuf `ModelProto` of
 * sentencepiece's `sentencepiece_model.proto`, the fields that encoding and decoding use. Fields
 * that only steer training are skipped. Defaults are the proto's own (`[default = …]`), so a model
 * that leaves a field out reads as sentencepiece reads it.
 */
import { PbfReader } from 'pbf';

/** A piece's role (`ModelProto.SentencePiece.Type`, with the proto's numbers). */
export const PieceType = {
  /** A piece the segmentation scores by its log probability. */
  NORMAL: 1,
  /** `<unk>`: what characters no piece covers become. */
  UNKNOWN: 2,
  /** `<s>`, `</s>`: never produced by segmentation, invisible when decoded. */
  CONTROL: 3,
  /** Kept whole, unnormalized, wherever it occurs (`user_defined_symbols`, e.g. `>>de<<`). */
  USER_DEFINED: 4,
  /** In the vocabulary, never produced. */
  UNUSED: 5,
  /** `<0xNN>`: one UTF-8 byte of an unknown character, with byte fallback. */
  BYTE: 6,
} as const;
/** One of the values of {@link PieceType}. */
export type PieceType = (typeof PieceType)[keyof typeof PieceType];

/** One entry of the vocabulary; its id is its index in {@link SpmModel.pieces}. */
export interface SpmPiece {
  /** The piece's text, spaces written as `▁`. */
  piece: string;
  /** Log probability (Unigram); a float32 in the file. */
  score: number;
  /** Its role. */
  type: PieceType;
}

/** How text is normalized before segmentation (`NormalizerSpec`). */
export interface SpmNormalizerSpec {
  /** The rule's name (`nmt_nfkc`, `nmt_nfkc_cf`, `identity`, …); informative only. */
  name: string;
  /** The compiled rules: a double-array trie and the strings it maps to; empty for `identity`. */
  precompiledCharsmap: Uint8Array;
  /** Prepend a space (`▁`) to the text, so the first word looks like any other. Default true. */
  addDummyPrefix: boolean;
  /** Drop leading and trailing spaces, squeeze runs of spaces into one. Default true. */
  removeExtraWhitespaces: boolean;
  /** Write each space as `▁` (U+2581). Default true. */
  escapeWhitespaces: boolean;
}

/** The `TrainerSpec` fields that change how a trained model encodes or decodes. */
export interface SpmTrainerSpec {
  /** 1 UNIGRAM, 2 BPE, 3 WORD, 4 CHAR. */
  modelType: number;
  /** The dummy space goes after the text rather than before it. Default false. */
  treatWhitespaceAsSuffix: boolean;
  /** Unknown characters become `<0xNN>` pieces, one per UTF-8 byte. Default false. */
  byteFallback: boolean;
  /** Id of `<unk>` as trained (the UNKNOWN piece is what encoding uses). Default 0. */
  unkId: number;
  /** Id of `<s>`, −1 if none. Default 1. */
  bosId: number;
  /** Id of `</s>`, −1 if none. Default 2. */
  eosId: number;
  /** −1 when the model has no padding piece. */
  padId: number;
  /** What `<unk>` decodes to. Default " ⁇ ". */
  unkSurface: string;
}

/** A SentencePiece model: pieces by id, training options that matter, normalizer(s). */
export interface SpmModel {
  /** The vocabulary: piece i has id i. */
  pieces: SpmPiece[];
  /** The training options that change encoding and decoding. */
  trainerSpec: SpmTrainerSpec;
  /** How text is normalized before segmentation. */
  normalizerSpec: SpmNormalizerSpec;
  /** Applied to decoded text when present (rare). */
  denormalizerSpec: SpmNormalizerSpec | null;
}

/** The names of `TrainerSpec.ModelType`, for messages. */
export const MODEL_TYPES: Record<number, string> = { 1: 'UNIGRAM', 2: 'BPE', 3: 'WORD', 4: 'CHAR' };

/** A NormalizerSpec with the proto's defaults and no rules (identity). */
export function defaultNormalizerSpec(): SpmNormalizerSpec {
  return {
    name: '',
    precompiledCharsmap: new Uint8Array(0),
    addDummyPrefix: true,
    removeExtraWhitespaces: true,
    escapeWhitespaces: true,
  };
}

/** A TrainerSpec with the proto's defaults. */
export function defaultTrainerSpec(): SpmTrainerSpec {
  return {
    modelType: 1,
    treatWhitespaceAsSuffix: false,
    byteFallback: false,
    unkId: 0,
    bosId: 1,
    eosId: 2,
    padId: -1,
    unkSurface: ' \u2047 ',
  };
}

/**
 * The model in `bytes` (a `.spm` file's contents). `name` (the file) starts error messages.
 * Throws on bytes that are not a ModelProto and on a model without pieces.
 */
export function readSpmModel(bytes: Uint8Array, name = 'sentencepiece model'): SpmModel {
  const model: SpmModel = {
    pieces: [],
    trainerSpec: defaultTrainerSpec(),
    normalizerSpec: defaultNormalizerSpec(),
    denormalizerSpec: null,
  };
  const pbf = new PbfReader(bytes);
  try {
    pbf.readFields((tag, m, r) => {
      if (tag === 1) m.pieces.push(r.readMessage(readPiece, { piece: '', score: 0, type: PieceType.NORMAL }));
      else if (tag === 2) r.readMessage(readTrainerSpec, m.trainerSpec);
      else if (tag === 3) r.readMessage(readNormalizerSpec, m.normalizerSpec);
      else if (tag === 5) m.denormalizerSpec = r.readMessage(readNormalizerSpec, defaultNormalizerSpec());
    }, model);
    // pbf reads past a truncated message's end without complaint; a whole file ends where its bytes do.
    if (pbf.pos !== bytes.length) throw new Error(`ended at byte ${pbf.pos} of ${bytes.length}`);
  } catch (e) {
    throw new Error(`${name}: not a SentencePiece ModelProto (${(e as Error).message})`);
  }
  if (model.pieces.length === 0) throw new Error(`${name}: expected a SentencePiece model with pieces, got none`);
  return model;
}

function readPiece(tag: number, p: SpmPiece, r: PbfReader): void {
  if (tag === 1) p.piece = r.readString();
  else if (tag === 2) p.score = r.readFloat();
  else if (tag === 3) p.type = r.readVarint() as PieceType;
}

function readTrainerSpec(tag: number, t: SpmTrainerSpec, r: PbfReader): void {
  if (tag === 3) t.modelType = r.readVarint();
  else if (tag === 24) t.treatWhitespaceAsSuffix = r.readBoolean();
  else if (tag === 35) t.byteFallback = r.readBoolean();
  else if (tag === 40) t.unkId = r.readVarint(true);
  else if (tag === 41) t.bosId = r.readVarint(true);
  else if (tag === 42) t.eosId = r.readVarint(true);
  else if (tag === 43) t.padId = r.readVarint(true);
  else if (tag === 44) t.unkSurface = r.readString();
}

function readNormalizerSpec(tag: number, n: SpmNormalizerSpec, r: PbfReader): void {
  if (tag === 1) n.name = r.readString();
  else if (tag === 2) n.precompiledCharsmap = r.readBytes();
  else if (tag === 3) n.addDummyPrefix = r.readBoolean();
  else if (tag === 4) n.removeExtraWhitespaces = r.readBoolean();
  else if (tag === 5) n.escapeWhitespaces = r.readBoolean();
}
