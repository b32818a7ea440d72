/**
 * `pipeline('translation', folder)`: a function from a sentence (or sentences) to its translation,
 * decoding as `qkv translate --model folder` does: the folder's ensemble members, its beam, α and
 * MBR (config.json `decoding`, else beam 4, α 0.6), the same length-sorted batches, so the strings
 * are byte for byte the CLI's for the same lines.
 */
import { encodeLines, translateIds } from '../decode/batch.ts';
import type { OpenedSeq2Seq } from '../folder/open.ts';
import { DEFAULT_DECODING, type Decoding, type ModelConfigFile } from '../folder/spec.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import type { BpeTokenizer } from '../text/bpe.ts';

/**
 * Per-call decoding options of a {@link TranslationPipeline}. `beam`, `alpha` and `mbr` left out take
 * the folder's config.json `decoding`, else the paper's (beam 4, α 0.6, no MBR). A bad value makes
 * the call reject with an Error starting 'translation: ' that names the option.
 */
export interface TranslationOptions {
  /** Beam size, 1 = greedy (default: the folder's config.json `decoding`, else 4). */
  beam?: number;
  /** Length penalty α (default: the folder's, else 0.6). */
  alpha?: number;
  /** Most output tokens per sentence (default: its source length + 50, capped by the model). */
  maxLength?: number;
  /** Minimum Bayes risk among the beam pool (default: the folder's, else off; needs beam 2 or more). */
  mbr?: boolean;
}

/**
 * What `pipeline('translation', folder)` gives: a function translating a sentence or an array of
 * sentences (the same strings `qkv translate --model folder` writes for those lines), with the
 * opened folder's model, tokenizers and config on it. Input that is not a string (or an array of
 * strings) rejects with an Error naming it.
 */
export interface TranslationPipeline {
  /** The translation of one sentence ('' for an empty one). */
  (text: string, options?: TranslationOptions): Promise<string>;
  /** One translation per sentence, in order. */
  (texts: readonly string[], options?: TranslationOptions): Promise<string[]>;
  /** Always 'translation': the task it was made for. */
  readonly task: 'translation';
  /** The folder's own model (eval mode). */
  readonly model: Seq2Seq;
  /** The models decoded together: the folder's own first, then its ensemble members. */
  readonly members: readonly Seq2Seq[];
  /** Encodes the source. */
  readonly tokenizer: BpeTokenizer;
  /** Decodes the target (the same object as `tokenizer` unless the vocabularies are separate). */
  readonly targetTokenizer: BpeTokenizer;
  /** The folder's config.json. */
  readonly config: ModelConfigFile;
}

/** How decodingFor names the overrides in its errors, and the error it throws. */
export interface DecodingNames {
  beam: string;
  alpha: string;
  mbr: string;
  /** Put before each message: 'translation: ' for the pipeline, nothing for the CLI (its flags name themselves). */
  prefix: string;
  error: (message: string) => Error;
}

const PIPELINE_NAMES: DecodingNames = {
  beam: 'beam',
  alpha: 'alpha',
  mbr: 'mbr',
  prefix: 'translation: ',
  error: (m) => new Error(m),
};

/**
 * Beam, α and MBR, for this pipeline and for `qkv translate` / `qkv eval` alike (one
 * implementation; the CLI passes its flag names): the overrides, else the folder's decoding
 * defaults, else the paper's (no MBR). The folder's MBR applies to beam search only; an explicit
 * `mbr: true` with beam 1 is an error.
 */
export function decodingFor(
  o: Pick<TranslationOptions, 'beam' | 'alpha' | 'mbr'>,
  config: ModelConfigFile,
  names: DecodingNames = PIPELINE_NAMES,
): Decoding {
  const d = config.decoding ?? DEFAULT_DECODING;
  const fail = (m: string) => names.error(`${names.prefix}${m}`);
  const beam = o.beam ?? d.beam;
  if (!Number.isInteger(beam) || beam < 1) throw fail(`${names.beam} must be a positive integer, got ${beam}`);
  const alpha = o.alpha ?? d.alpha;
  if (typeof alpha !== 'number' || !(alpha >= 0) || !Number.isFinite(alpha))
    throw fail(`${names.alpha} must be a number >= 0, got ${alpha}`);
  if (o.mbr && beam < 2)
    throw fail(
      `${names.mbr} chooses among beam search's hypotheses: it needs ` +
        `${names.beam} 2 or more, got ${names.beam} ${beam}`,
    );
  const mbr = beam > 1 && (o.mbr ?? d.mbr ?? false);
  return { beam, alpha, ...(mbr && { mbr }) };
}

/** The translation pipeline of an opened folder. */
export function translationPipeline(opened: OpenedSeq2Seq): TranslationPipeline {
  const { model, members, tokenizer, targetTokenizer, config } = opened;
  const run = async (
    input: string | readonly string[],
    options: TranslationOptions = {},
  ): Promise<string | string[]> => {
    const one = typeof input === 'string';
    const lines = one ? [input] : input;
    if (!one && !Array.isArray(input))
      throw new Error(`translation: expected a string or an array of strings, got ${typeof input}`);
    lines.forEach((l, i) => {
      if (typeof l !== 'string') throw new Error(`translation: input ${i} is ${typeof l}, expected a string`);
    });
    if (options.maxLength !== undefined && (!Number.isInteger(options.maxLength) || options.maxLength < 1)) {
      throw new Error(`translation: maxLength must be a positive integer, got ${options.maxLength}`);
    }
    const dec = decodingFor(options, config);
    // As the CLI: an empty line translates to '', a line longer than the model reads is cut to what it reads.
    const { ids } = encodeLines(members, tokenizer, [...lines]);
    const out = translateIds(members, targetTokenizer, ids, {
      ...dec,
      ...(options.maxLength !== undefined && { maxLen: options.maxLength }),
    });
    return one ? out[0] : out;
  };
  return Object.assign(run, {
    task: 'translation' as const,
    model,
    members,
    tokenizer,
    targetTokenizer,
    config,
  }) as TranslationPipeline;
}
