/**
 * Translating many sentences in length-sorted batches (`qkv translate`, `qkv eval`, the translation pipeline), and
 * scoring them with BLEU.
 */
import {
  beamSearch,
  ensembleMembers,
  greedy,
  readsSync,
  type DecodeResult,
  type Hypothesis,
  type Models,
} from './search.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import { beamSearchPausing, greedyPausing } from './pausing.ts';
import { Tensor } from '../tensor/tensor.ts';
import { corpusBleu, type BleuScore } from '../text/bleu.ts';
import type { BpeTokenizer } from '../text/bpe.ts';
import { mbrSelect } from '../text/mbr.ts';

export interface TranslateOptions {
  beam: number;
  alpha: number;
  /**
   * Minimum Bayes risk: of each sentence's beam pool, output the hypothesis with the highest mean
   * sentence BLEU against the others (see text/mbr.ts) instead of the best-scored one. Needs beam > 1.
   */
  mbr?: boolean;
  /** Sentences per decoding batch. */
  batchSize?: number;
  /**
   * Most output tokens per sentence (default: its source length + 50, capped by the model; see DecodeOptions.maxLen).
   */
  maxLen?: number;
  onProgress?: (done: number, total: number) => void;
  /**
   * Checked before every decoding step: once aborted, translation stops with the signal's reason.
   * translateIdsAsync also lets the event loop run before each step, so a timer or an event can abort it.
   */
  signal?: AbortSignal;
  /**
   * Decode over a static cache with captured, replayed steps (decode/static-seq2seq.ts; default false): the same
   * tokens and scores bit for bit as the dynamic cache, which a model on a GPU always uses.
   */
  compiled?: boolean;
}

/** Exit status of translate/eval when every line was written but some were degraded (1 stays for errors). */
export const EXIT_DEGRADED = 2;

/** A line that could not be translated as given: empty, or longer than the model reads. */
export interface DegradedLine {
  /** Counted from 1. */
  line: number;
  kind: 'empty' | 'truncated' | 'skipped';
  /** For stderr: `line 7: 289 tokens, truncated to 256`. */
  message: string;
}

export interface EncodeOptions {
  /** Leave over-long lines untranslated (an empty output line) instead of truncating them. */
  skipLong?: boolean;
  /**
   * List empty (or blank) lines in `degraded` (default true: `qkv eval`, where an empty source
   * line is a hole in the test set). False: an empty line is simply an empty line (`qkv translate`).
   */
  reportEmpty?: boolean;
}

/**
 * Token ids of each line, as batch translators do it (marian-decoder, fairseq-interactive): one
 * output line per input line whatever happens. An empty line gets no ids (its translation is an
 * empty line); a line longer than the model reads is cut to its first maxLen tokens, or with
 * skipLong left untranslated. Each such line is listed in `degraded`, empty ones unless
 * `reportEmpty` is false.
 */
export function encodeLines(
  model: Models,
  tok: { encode(line: string): number[] },
  lines: string[],
  o: EncodeOptions = {},
): { ids: number[][]; degraded: DegradedLine[] } {
  const limit = Math.min(...ensembleMembers(model).map((m) => m.config.maxLen));
  const degraded: DegradedLine[] = [];
  const ids = lines.map((line, i) => {
    if (line.trim() === '') {
      if (o.reportEmpty ?? true)
        degraded.push({ line: i + 1, kind: 'empty', message: `line ${i + 1}: empty, left empty` });
      return [];
    }
    const t = tok.encode(line);
    if (t.length <= limit) return t;
    if (o.skipLong) {
      degraded.push({
        line: i + 1,
        kind: 'skipped',
        message:
          `line ${i + 1}: ${t.length} tokens, more than the ${limit} this model ` +
          `reads: left untranslated (--skip-long)`,
      });
      return [];
    }
    degraded.push({
      line: i + 1,
      kind: 'truncated',
      message: `line ${i + 1}: ${t.length} tokens, truncated to ${limit}`,
    });
    return t.slice(0, limit);
  });
  return { ids, degraded };
}

/** One line for stderr: `2 of 1000 lines degraded (1 empty, 1 truncated)`. */
export function degradedSummary(degraded: readonly DegradedLine[], total: number): string {
  const counts = (['empty', 'truncated', 'skipped'] as const)
    .map((k) => [k, degraded.filter((d) => d.kind === k).length] as const)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${n} ${k}`);
  return `${degraded.length} of ${total} lines degraded (${counts.join(', ')}); exit status ${EXIT_DEGRADED}`;
}

/** One batch of sources: the input lines it holds, their ids padded to (rows, S), and lines done after it. */
export interface SourceBatch {
  rows: number[];
  src: Tensor;
  done: number;
}

/**
 * The batches every engine translates: lines sorted by length, `o.batchSize` at a time (default 32
 * with beam search, 64 greedy), padded. Lines without ids (empty, or skipped as too long) are in no
 * batch: they translate to an empty line, and count as done from the start.
 */
export function* sourceBatches(
  srcIds: readonly number[][],
  padId: number,
  o: TranslateOptions,
): Generator<SourceBatch> {
  const order = srcIds
    .map((_, i) => i)
    .filter((i) => srcIds[i].length > 0)
    .sort((a, b) => srcIds[a].length - srcIds[b].length);
  const bs = o.batchSize ?? (o.beam > 1 ? 32 : 64);
  for (let start = 0; start < order.length; start += bs) {
    const rows = order.slice(start, start + bs);
    const S = Math.max(...rows.map((r) => srcIds[r].length));
    const data = new Int32Array(rows.length * S).fill(padId);
    rows.forEach((r, b) => data.set(srcIds[r], b * S));
    yield {
      rows,
      src: new Tensor(data, [rows.length, S], 'int32'),
      done: srcIds.length - order.length + Math.min(start + bs, order.length),
    };
  }
}

/**
 * Translate every line; batches are formed from similar lengths, results return in input order.
 * `tok` is the target side's tokenizer (the shared one, unless the vocabularies are separate);
 * `model` may be an ensemble.
 */
export function translateIds(model: Models, tok: BpeTokenizer, srcIds: number[][], o: TranslateOptions): string[] {
  const out = srcIds.map(() => '');
  const ids = searchIds(model, tok, o);
  for (const { rows, src, done } of sourceBatches(srcIds, tok.padId, o)) {
    const res =
      o.beam > 1
        ? beamSearch(model, src, { ...ids, beamSize: o.beam, lengthPenalty: o.alpha })
        : greedy(model, src, ids);
    rows.forEach((r, b) => (out[r] = outputText(res, b, tok, o)));
    o.onProgress?.(done, srcIds.length);
  }
  return out;
}

/**
 * translateIds; with `o.signal`, the event loop runs before every decoding step (a timer or an
 * event may abort it there). The same batches, steps and strings.
 */
export async function translateIdsAsync(
  model: Models,
  tok: BpeTokenizer,
  srcIds: number[][],
  o: TranslateOptions,
): Promise<string[]> {
  // The synchronous loop where it can run: no signal to hear, and values that read back at once (not a GPU).
  if (!o.signal && readsSync(model)) return translateIds(model, tok, srcIds, o);
  const out = srcIds.map(() => '');
  const ids = searchIds(model, tok, o);
  for (const { rows, src, done } of sourceBatches(srcIds, tok.padId, o)) {
    const res =
      o.beam > 1
        ? await beamSearchPausing(model, src, { ...ids, beamSize: o.beam, lengthPenalty: o.alpha })
        : await greedyPausing(model, src, ids);
    rows.forEach((r, b) => (out[r] = outputText(res, b, tok, o)));
    o.onProgress?.(done, srcIds.length);
  }
  return out;
}

/**
 * What the searches take from the tokenizer and the options: the ids, the length limit, the signal, and the
 * static cache where the models read back synchronously (the CPU backends) and `o.compiled` is true.
 */
function searchIds(model: Models, tok: BpeTokenizer, o: TranslateOptions) {
  return {
    bosId: tok.bosId,
    eosId: tok.eosId,
    ...(o.compiled === true && readsSync(model) && { staticCache: true }),
    ...(o.maxLen !== undefined && { maxLen: o.maxLen }),
    ...(o.signal && { signal: o.signal }),
  };
}

/**
 * Sentence b's output text: the search's best, or with `o.mbr` the MBR choice among its beam pool
 * (each hypothesis detokenized first: the utility compares what the user reads).
 */
export function outputText(
  res: DecodeResult & { hypotheses?: Hypothesis[][] },
  b: number,
  tok: BpeTokenizer,
  o: Pick<TranslateOptions, 'beam' | 'mbr'>,
): string {
  if (!o.mbr) return tok.decode(res.tokens[b]);
  if (o.beam < 2 || !res.hypotheses)
    throw new Error(`MBR chooses among beam search's hypotheses: needs beam 2 or more, got beam ${o.beam}`);
  const pool = res.hypotheses[b];
  if (pool.length === 0) return tok.decode(res.tokens[b]);
  const texts = pool.map((h) => tok.decode(h.tokens));
  return texts[mbrSelect(texts).index];
}

/** Corpus BLEU of greedy translations (fast enough to run during training). */
export function validationBleu(
  model: Seq2Seq,
  tokens: { source: BpeTokenizer; target: BpeTokenizer },
  src: string[],
  refs: string[],
): number {
  if (src.length === 0) return 0;
  const hyps = translateIds(model, tokens.target, encodeLines(model, tokens.source, src).ids, { beam: 1, alpha: 0 });
  return corpusBleu(hyps, refs).score;
}

export function bleu(hyps: string[], refs: string[]): BleuScore {
  return corpusBleu(hyps, refs);
}
