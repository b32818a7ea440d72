/**
 * `pipeline('translation', folder)`: a function from a sentence (or sentences) to its translation,
 * decoding as `qkv translate --model folder` does: the folder's ensemble members, its beam, α and
 * MBR (config.json `decoding`, else beam 4, α 0.6), the same length-sorted batches, so the strings
 * are byte for byte the CLI's for the same lines.
 */
import { encodeLines, translateIdsAsync, type TranslateOptions } from '../decode/batch.ts';
import type { Models } from '../decode/search.ts';
import { hfRules, translateIdsHf, type HfSearchOptions } from '../decode/hf-search.ts';
import type { OpenedM2M100, OpenedMarian, OpenedSeq2Seq } from '../folder/open.ts';
import { DEFAULT_DECODING, type Decoding, type ModelConfigFile } from '../folder/spec.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import type { BpeTokenizer } from '../text/bpe.ts';
import type { MarianTokenizer } from '../text/marian-tokenizer.ts';
import type { NllbTokenizer } from '../text/nllb-tokenizer.ts';
import { checkOptions, describeValue, warner, type OptionSpec, type PipelineWarning } from './options.ts';

/**
 * Per-call options of a {@link TranslationPipeline}. `beam`, `alpha` and `mbr` left out take the
 * folder's config.json `decoding`, else the paper's (beam 4, α 0.6, no MBR). An unknown name, or a
 * value of the wrong kind, makes the call reject with an Error starting 'translation: ' that names
 * it (and the nearest known name: `unknown option 'beams' (did you mean 'beam'?)`).
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
  /**
   * A sentence longer than the model reads (its `maxLen` tokens) is left untranslated ('') instead
   * of truncated to what it reads (default false; `qkv translate --skip-long`). Either way a warning says so.
   */
  skipLong?: boolean;
  /** Also warn about empty (or blank) sentences, which translate to '' (default false; `qkv eval` does). */
  warnEmpty?: boolean;
  /**
   * Called with each warning, what `qkv translate` prints on stderr: a sentence truncated or
   * skipped (and with `warnEmpty` an empty one). Default: console.warn.
   */
  onWarning?: (warning: PipelineWarning) => void;
  /** Called after each batch with the sentences done so far and their total. */
  onProgress?: (done: number, total: number) => void;
  /**
   * A multilingual folder's (NLLB / M2M100) source language code, e.g. 'eng_Latn' (default: the pipeline's
   * `srcLang`, else the tokenizer's src_lang). Refused for a folder that translates one pair.
   */
  srcLang?: string;
  /**
   * A multilingual folder's target language code, e.g. 'deu_Latn', forced as the first generated id (transformers'
   * forced_bos_token_id; default: the pipeline's `tgtLang`, else tokenizer_config.json's tgt_lang; required).
   */
  tgtLang?: string;
  /**
   * Cancels the translation: before every decoding step the call lets the event loop run (so a timer
   * or an event can abort it), then checks the signal. The call rejects with the signal's reason.
   */
  signal?: AbortSignal;
  /**
   * A qkv folder's searches over a static decoder cache whose steps are captured once and replayed (`qkv
   * translate --compiled`; docs/compiled.md): the same translations, and the same scores bit for bit, as the
   * dynamic cache. Default false: on the shipped models it is slower for now (every step attends over the cache's
   * full length; records/compiled, run 3). A model on a GPU, and Marian, NLLB / M2M100 folders (Hugging Face's
   * search), decode with the dynamic cache either way.
   */
  compiled?: boolean;
}

/** The names {@link TranslationOptions} knows and the kind of value each takes. */
const TRANSLATION_OPTIONS: OptionSpec = {
  beam: 'positiveInt',
  alpha: 'nonNegativeNumber',
  maxLength: 'positiveInt',
  mbr: 'boolean',
  skipLong: 'boolean',
  warnEmpty: 'boolean',
  onWarning: 'function',
  onProgress: 'function',
  signal: 'signal',
  srcLang: 'languageCode',
  tgtLang: 'languageCode',
  compiled: 'boolean',
};

/**
 * What `pipeline('translation', folder)` gives: a function translating a sentence or an array of
 * sentences (the same strings `qkv translate --model folder` writes for those lines), with the
 * opened folder's model, tokenizers and config on it. Input that is not a string (or an array of
 * strings) rejects with an Error naming it.
 */
export interface TranslationPipeline {
  /**
   * The translation of one sentence. An empty or blank string gives '' without running the model (as `qkv
   * translate` keeps an empty line empty; `warnEmpty` reports it); transformers' pipeline would instead translate
   * the tokenizer's lone `</s>`.
   */
  (text: string, options?: TranslationOptions): Promise<string>;
  /** One translation per sentence, in order. */
  (texts: readonly string[], options?: TranslationOptions): Promise<string[]>;
  /** Always 'translation': the task it was made for. */
  readonly task: 'translation';
  /**
   * 'seq2seq': a qkv folder (format 'qkv-seq2seq'); 'marian': a Hugging Face Marian folder, decoded by
   * HF's generate() rules, where `beam` is num_beams and `alpha` HF's length_penalty exponent
   * (sum log p / length^alpha; decode/hf-search.ts), both defaulting to the folder's generation config.
   */
  readonly kind: 'seq2seq' | 'marian' | 'm2m100';
  /** The folder's own model (eval mode). */
  readonly model: Seq2Seq;
  /** The models decoded together: the folder's own first, then its ensemble members. */
  readonly members: readonly Seq2Seq[];
  /** Encodes the source (a Marian folder's: its MarianTokenizer; an NLLB folder's: its NllbTokenizer). */
  readonly tokenizer: BpeTokenizer | MarianTokenizer | NllbTokenizer;
  /** Decodes the target (the same object as `tokenizer` unless the vocabularies are separate). */
  readonly targetTokenizer: BpeTokenizer | MarianTokenizer | NllbTokenizer;
  /** The folder's config.json (a Marian folder's: Hugging Face's). */
  readonly config: ModelConfigFile | Record<string, unknown>;
  /**
   * The beam, α and MBR a call with these options decodes with (the options over the folder's
   * `decoding`, over the paper's; a Marian folder's: over its generation config), checked as a call
   * checks them.
   */
  decoding(options?: TranslationOptions): Decoding;
}

/** How decodingFor names the overrides in its errors, and the error it throws. */
export interface DecodingNames {
  beam: string;
  alpha: string;
  mbr: string;
  /** A multilingual folder's language options (default 'srcLang', 'tgtLang'). */
  srcLang?: string;
  tgtLang?: string;
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
  config: Pick<ModelConfigFile, 'decoding'>,
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

/**
 * How a translation pipeline decodes source ids: qkv's own models (the default), or another engine
 * (the CLI's ONNX Runtime), with the names its errors use.
 */
export interface TranslationEngine {
  /** What encodeLines reads the source length limit from: the members, or a model of the same shape. */
  model: Models;
  /** The target text of each line's source ids. */
  run(ids: number[][], options: TranslateOptions): Promise<string[]>;
  /**
   * The same by Hugging Face's generate() rules given per call (a multilingual folder's: its target language forced
   * first), where the engine decodes a Hugging Face folder (the CLI's ONNX Runtime on an NLLB / M2M100 export).
   */
  runHf?(
    ids: number[][],
    options: TranslateOptions,
    rules: Omit<HfSearchOptions, 'numBeams' | 'lengthPenalty' | 'signal'>,
  ): Promise<string[]>;
  /** How decodingFor names the options (default: the pipeline's own names). */
  names?: DecodingNames;
}

/**
 * The translation pipeline of an opened folder, decoding with its members, or with `engine` (how
 * the CLI runs ONNX Runtime's graphs through the same path). A Marian folder decodes by Hugging
 * Face's rules (marianDecoding, decode/hf-search.ts).
 */
export function translationPipeline(
  opened: OpenedSeq2Seq | OpenedMarian | OpenedM2M100,
  engine?: TranslationEngine,
  names: DecodingNames = engine?.names ?? PIPELINE_NAMES,
  /** A multilingual folder's default languages (the pipeline's srcLang / tgtLang options). */
  languages: Languages = {},
): TranslationPipeline {
  const hfDecoding = (generation: OpenedMarian['generation'], what: string) => (options: TranslationOptions) => {
    if (options.mbr) throw names.error(`${names.prefix}${names.mbr} is not available for ${what}`);
    return decodingFor(options, { decoding: { beam: generation.numBeams, alpha: generation.lengthPenalty } }, names);
  };
  if (opened.kind === 'm2m100')
    return m2m100Pipeline(opened, engine, names, languages, hfDecoding(opened.generation, 'an M2M100 / NLLB folder'));
  if (languages.srcLang !== undefined || languages.tgtLang !== undefined) throw onePair(names);
  if (opened.kind === 'marian') {
    const { model, tokenizer, config, generation } = opened;
    const rules = marianRules(opened);
    const target = { padId: tokenizer.padId, decode: (x: readonly number[]) => tokenizer.decode(x) };
    return pipelineOver(
      { kind: 'marian', model, members: [model], tokenizer, targetTokenizer: tokenizer, config },
      engine ?? { model, run: (x, t) => translateIdsHf(model, target, x, t, rules) },
      hfDecoding(generation, 'a Marian folder'),
    );
  }
  const { model, members, tokenizer, targetTokenizer, config } = opened;
  return pipelineOver(
    { kind: 'seq2seq', model, members, tokenizer, targetTokenizer, config },
    engine ?? { model: members, run: (ids, t) => translateIdsAsync(members, targetTokenizer, ids, t) },
    (options) => decodingFor(options, config, names),
  );
}

/** A multilingual folder's languages: codes such as 'eng_Latn'. */
export interface Languages {
  srcLang?: string;
  tgtLang?: string;
}

function onePair(names: DecodingNames): Error {
  return names.error(
    `${names.prefix}srcLang and tgtLang choose the languages of a multilingual folder (NLLB / M2M100); ` +
      'this folder translates one language pair',
  );
}

/**
 * An NLLB / M2M100 folder's pipeline: each call encodes for its source language and forces its target language's
 * code first (forced_bos_token_id), as transformers' NllbTokenizer and generate() do.
 */
function m2m100Pipeline(
  opened: OpenedM2M100,
  engine: TranslationEngine | undefined,
  names: DecodingNames,
  languages: Languages,
  decodingOf: (options: TranslationOptions) => Decoding,
): TranslationPipeline {
  const { model, tokenizer, config, ids, generation } = opened;
  const target = { padId: tokenizer.padId, decode: (x: readonly number[]) => tokenizer.decode(x) };
  const perCall = (options: TranslationOptions): PerCall => {
    const srcLang = options.srcLang ?? languages.srcLang ?? tokenizer.srcLang;
    const tgtLang = options.tgtLang ?? languages.tgtLang ?? tokenizer.tgtLang;
    const [srcName, tgtName] = [names.srcLang ?? 'srcLang', names.tgtLang ?? 'tgtLang'];
    if (tgtLang === null)
      throw names.error(`${names.prefix}an NLLB / M2M100 folder needs ${tgtName}, a language code such as 'deu_Latn'`);
    const fail = (e: unknown) => names.error(`${names.prefix}${(e as Error).message}`);
    let forced: number;
    try {
      tokenizer.languageId(srcLang, srcName);
      forced = tokenizer.languageId(tgtLang, tgtName);
    } catch (e) {
      throw fail(e);
    }
    const rules = { ...hfRules(ids, generation), forcedBosTokenId: forced };
    return {
      tokenizer: { encode: (line: string) => tokenizer.encode(line, srcLang) },
      run: (x, t) => (engine?.runHf ? engine.runHf(x, t, rules) : translateIdsHf(model, target, x, t, rules)),
    };
  };
  return pipelineOver(
    { kind: 'm2m100', model, members: [model], tokenizer, targetTokenizer: tokenizer, config },
    engine ?? { model, run: () => Promise.reject(new Error('internal: perCall decides the run')) },
    decodingOf,
    perCall,
  );
}

/** What a call of a multilingual pipeline encodes and decodes with (its languages chosen). */
interface PerCall {
  tokenizer: { encode(line: string): number[] };
  run: TranslationEngine['run'];
}

/** HF's generation rules of a Marian folder, but num_beams and length_penalty (the call's beam and alpha). */
export function marianRules(
  m: Pick<OpenedMarian, 'ids' | 'generation'>,
): Omit<HfSearchOptions, 'numBeams' | 'lengthPenalty' | 'signal'> {
  return hfRules(m.ids, m.generation);
}

/** The pipeline function over a folder's parts, an engine, and how options become a Decoding. */
function pipelineOver(
  parts: Pick<TranslationPipeline, 'kind' | 'model' | 'members' | 'tokenizer' | 'targetTokenizer' | 'config'>,
  decode: TranslationEngine,
  decodingOf: (options: TranslationOptions) => Decoding,
  perCall?: (options: TranslationOptions) => PerCall,
): TranslationPipeline {
  const decoding = (options: TranslationOptions = {}): Decoding => {
    checkOptions('translation', options, TRANSLATION_OPTIONS);
    return decodingOf(options);
  };
  const run = async (
    input: string | readonly string[],
    options: TranslationOptions = {},
  ): Promise<string | string[]> => {
    const one = typeof input === 'string';
    if (!one && !Array.isArray(input))
      throw new Error(`translation: expected a string or an array of strings, got ${describeValue(input)}`);
    const lines: readonly string[] = one ? [input] : input;
    lines.forEach((l, i) => {
      if (typeof l !== 'string') throw new Error(`translation: input ${i}: expected a string, got ${describeValue(l)}`);
    });
    const dec = decoding(options);
    if (!perCall && (options.srcLang !== undefined || options.tgtLang !== undefined))
      throw new Error('translation: srcLang and tgtLang choose the languages of a multilingual folder (NLLB / M2M100)');
    const call = perCall?.(options);
    options.signal?.throwIfAborted();
    // As the CLI: an empty line translates to '', a line longer than the model reads is cut to what
    // it reads (or with skipLong left empty), and each such line is a warning.
    const { ids, degraded } = encodeLines(decode.model, call?.tokenizer ?? parts.tokenizer, [...lines], {
      skipLong: options.skipLong,
      reportEmpty: options.warnEmpty ?? false,
    });
    const warn = warner(options.onWarning);
    for (const d of degraded) warn(d);
    const out = await (call?.run ?? decode.run)(ids, {
      ...dec,
      ...(options.maxLength !== undefined && { maxLen: options.maxLength }),
      ...(options.onProgress && { onProgress: options.onProgress }),
      ...(options.signal && { signal: options.signal }),
      ...(options.compiled === true && { compiled: true }),
    });
    return one ? out[0] : out;
  };
  return Object.assign(run, { task: 'translation' as const, ...parts, decoding }) as TranslationPipeline;
}
