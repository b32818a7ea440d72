/**
 * Checking a model config read from a file before anything is allocated: every field the model
 * needs, with its type and range, and a bound on the model's size, so that a damaged or hostile
 * config.json is one clear error instead of a crash deep in a constructor or a multi-gigabyte
 * allocation. Fields this file does not know are left alone (a newer qkv may add some).
 */
import type { GPTConfig } from './gpt.ts';
import type { Seq2SeqConfig } from './seq2seq.ts';

/**
 * The most floats (parameters and fixed tables) a model from a file may have: 2^29 (2 GiB), past
 * which the wasm backend's 4 GiB memory cannot also hold gradients and activations. GPT-2 (124M)
 * and the paper's big model (213M) fit.
 */
export const MAX_MODEL_FLOATS = 2 ** 29;

type Rule = (v: unknown) => string | null;

const intIn =
  (lo: number, hi = 2 ** 31 - 1): Rule =>
  (v) =>
    typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi ? null : `an integer from ${lo} to ${hi}`;
const rate: Rule = (v) => (typeof v === 'number' && v >= 0 && v < 1 ? null : 'a number in [0, 1)');
const oneOf =
  (...xs: unknown[]): Rule =>
  (v) =>
    xs.includes(v) ? null : `one of ${xs.map((x) => JSON.stringify(x)).join(', ')}`;

function show(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 40 ? `${s.slice(0, 40)}…` : s;
}

function check(
  c: unknown,
  where: string,
  rules: Record<string, Rule>,
  optional: Record<string, Rule> = {},
): Record<string, unknown> {
  if (c === null || typeof c !== 'object' || Array.isArray(c))
    throw new Error(`${where} must be an object, got ${show(c)}`);
  const o = c as Record<string, unknown>;
  for (const [k, rule] of Object.entries(rules)) {
    const want = rule(Object.hasOwn(o, k) ? o[k] : undefined);
    if (want) throw new Error(`${where}.${k} must be ${want}, got ${show(o[k])}`);
  }
  for (const [k, rule] of Object.entries(optional)) {
    if (!Object.hasOwn(o, k) || o[k] === undefined) continue;
    const want = rule(o[k]);
    if (want) throw new Error(`${where}.${k} must be ${want}, got ${show(o[k])}`);
  }
  return o;
}

function bound(floats: number, where: string): void {
  if (floats > MAX_MODEL_FLOATS) {
    throw new Error(
      `${where} describes a model of ${floats.toExponential(2)} floats; qkv ` +
        `holds at most ${MAX_MODEL_FLOATS.toLocaleString('en-US')} (2 GiB)`,
    );
  }
}

/** A Seq2Seq config from a file, checked (`where` names it in errors, e.g. "config.json: model"). */
export function checkSeq2SeqConfig(c: unknown, where = 'model'): Seq2SeqConfig {
  const o = check(
    c,
    where,
    {
      vocabSize: intIn(1),
      dModel: intIn(1),
      nhead: intIn(1),
      numEncoderLayers: intIn(0, 1024),
      numDecoderLayers: intIn(1, 1024),
      dimFeedforward: intIn(1),
      dropout: rate,
      activation: oneOf('relu', 'gelu', 'silu'),
      normFirst: oneOf(true, false),
      maxLen: intIn(1),
      padId: intIn(0),
    },
    {
      attentionDropout: rate,
      activationDropout: rate,
      tgtVocabSize: intIn(1),
      positionLayout: oneOf('interleaved', 'halves', 'fairseq'),
      positionOffset: intIn(0),
      scaleEmbedding: oneOf(true, false),
      finalNorm: oneOf(true, false),
      finalLogitsBias: oneOf(true, false),
      maskTargetPadding: oneOf(true, false),
    },
  );
  const cfg = o as unknown as Seq2SeqConfig;
  if (cfg.dModel % cfg.nhead !== 0)
    throw new Error(`${where}.dModel ${cfg.dModel} is not divisible by nhead ${cfg.nhead}`);
  if (cfg.padId >= cfg.vocabSize)
    throw new Error(`${where}.padId ${cfg.padId} is outside the vocabulary of ${cfg.vocabSize}`);
  if (cfg.tgtVocabSize !== undefined && cfg.padId >= cfg.tgtVocabSize)
    throw new Error(`${where}.padId ${cfg.padId} is outside the target vocabulary of ${cfg.tgtVocabSize}`);
  const d = cfg.dModel;
  const ff = cfg.dimFeedforward;
  const enc = 4 * d * d + 2 * d * ff + 9 * d + ff;
  const dec = 8 * d * d + 2 * d * ff + 15 * d + ff;
  bound(
    (cfg.vocabSize + (cfg.tgtVocabSize ?? 0)) * d +
      cfg.maxLen * d +
      cfg.numEncoderLayers * enc +
      cfg.numDecoderLayers * dec,
    where,
  );
  return cfg;
}

/** A GPT config from a file, checked. */
export function checkGptConfig(c: unknown, where = 'model'): GPTConfig {
  const o = check(c, where, {
    vocabSize: intIn(1),
    blockSize: intIn(1),
    nLayer: intIn(1, 1024),
    nHead: intIn(1),
    nEmbd: intIn(1),
    dropout: rate,
    positions: oneOf('learned', 'sinusoidal'),
  });
  const cfg = o as unknown as GPTConfig;
  if (cfg.nEmbd % cfg.nHead !== 0)
    throw new Error(`${where}.nEmbd ${cfg.nEmbd} is not divisible by nHead ${cfg.nHead}`);
  const E = cfg.nEmbd;
  bound(cfg.vocabSize * E + cfg.blockSize * E + cfg.nLayer * (12 * E * E + 13 * E), where);
  return cfg;
}

/** The sizes and special ids of a tokenizer that `checkVocabularies` compares with a config. */
interface VocabularyLike {
  vocabSize: number;
  padId: number;
  bosId: number;
  eosId: number;
}

/**
 * A model with separate vocabularies (model.tgtVocabSize) against its two tokenizers: each must
 * have its table's size, and both the same special ids. Returns the first disagreement (naming the
 * files as `names` says), or null.
 */
export function checkVocabularies(
  cfg: Seq2SeqConfig,
  src: VocabularyLike,
  tgt: VocabularyLike,
  names = { src: 'tokenizer.json', tgt: 'target_tokenizer.json', config: 'config.json' },
): string | null {
  if (cfg.tgtVocabSize === undefined) return null;
  if (src.vocabSize !== cfg.vocabSize)
    return `${names.src}: ${src.vocabSize} tokens, but ${names.config}'s model.vocabSize is ${cfg.vocabSize}`;
  if (tgt.vocabSize !== cfg.tgtVocabSize)
    return `${names.tgt}: ${tgt.vocabSize} tokens, but ${names.config}'s model.tgtVocabSize is ${cfg.tgtVocabSize}`;
  for (const k of ['padId', 'bosId', 'eosId'] as const) {
    if (src[k] !== tgt[k])
      return (
        `${names.tgt}: ${k} ${tgt[k]}, but ${names.src}'s is ${src[k]} (both ` +
        `vocabularies must share the special ids)`
      );
  }
  return null;
}
