/**
 * Text layer: sacreBLEU-exact BLEU and chrF, Hugging Face-compatible BPE tokenizers, SentencePiece
 * Unigram models and Marian's tokenizer.
 */
export {
  SACREBLEU_VERSION,
  SIGNATURE_VERSION,
  computeBleu,
  corpusBleu,
  formatFixed,
  segmentStatistics,
  pairwiseSentenceBleu,
  segmentsBleu,
  sentenceBleu,
  tokenize13a,
} from './bleu.ts';
export type { BleuOptions, BleuScore, BleuTokenize, SegmentStats, SmoothMethod } from './bleu.ts';
export { corpusChrf, sentenceChrf } from './chrf.ts';
export type { ChrfOptions, ChrfScore } from './chrf.ts';
export { pairedBootstrap } from './significance.ts';
export type { PairedBootstrapOptions, PairedBootstrapResult } from './significance.ts';
export { mbrSelect } from './mbr.ts';
export type { MbrChoice, MbrOptions } from './mbr.ts';
export {
  BpeTokenizer,
  DEFAULT_SPECIAL_TOKENS,
  METASPACE,
  PUNCTUATION_PATTERN,
  metaspacePreTokenize,
  splitPunctuation,
} from './bpe.ts';
export type {
  BpeDecodeOptions,
  BpeLearnOptions,
  HfAddedToken,
  HfBpeModel,
  HfMetaspace,
  HfTokenizerJson,
} from './bpe.ts';
export { CharTokenizer } from './chars.ts';
export type { CharLearnOptions, CharTokenizerJson } from './chars.ts';
export { ByteLevelBpeTokenizer, GPT2_PATTERN, bytesToUnicode } from './bytelevel.ts';
export type { ByteLevelDecodeOptions } from './bytelevel.ts';
export { ChatTemplate, checkMessages } from './chat-template.ts';
export type { ChatMessage, ChatRenderOptions } from './chat-template.ts';
export { tokenizerFromJSON, tokenizerKind } from './load.ts';
export { PieceType, readSpmModel, SentencePiece } from './sentencepiece.ts';
export type { SpmEncoding, SpmModel, SpmNormalizerSpec, SpmPiece, SpmTrainerSpec } from './sentencepiece.ts';
export { cleanUpTokenization, MarianTokenizer } from './marian-tokenizer.ts';
export type { MarianDecodeOptions, MarianTokenizerFiles, MarianTokenizerOptions } from './marian-tokenizer.ts';
export { checkPhrase, parsePhrases } from './phrases.ts';
export type { Phrase } from './phrases.ts';
export type { AnyTokenizer, TokenizerKind } from './load.ts';
