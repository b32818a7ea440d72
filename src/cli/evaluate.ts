/** Translating many sentences in length-sorted batches, and scoring them with BLEU. */
import { beamSearch, greedy } from '../decode/search.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import { Tensor } from '../tensor/tensor.ts';
import { corpusBleu, type BleuScore } from '../text/bleu.ts';
import type { BpeTokenizer } from '../text/bpe.ts';
import { UserError } from './files.ts';

export interface TranslateOptions {
  beam: number;
  alpha: number;
  /** Sentences per decoding batch. */
  batchSize?: number;
  onProgress?: (done: number, total: number) => void;
}

/** Token ids of each line, or a clear error naming the line that cannot be translated. */
export function encodeLines(model: Seq2Seq, tok: BpeTokenizer, lines: string[]): number[][] {
  const limit = model.config.maxLen;
  return lines.map((line, i) => {
    if (line.trim() === '') throw new UserError(`input line ${i + 1} is empty`);
    const ids = tok.encode(line);
    if (ids.length > limit) throw new UserError(`input line ${i + 1} has ${ids.length} tokens; this model reads at most ${limit}`);
    return ids;
  });
}

/** Translate every line; batches are formed from similar lengths, results return in input order. */
export function translateIds(model: Seq2Seq, tok: BpeTokenizer, srcIds: number[][], o: TranslateOptions): string[] {
  const order = srcIds.map((_, i) => i).sort((a, b) => srcIds[a].length - srcIds[b].length);
  const out = new Array<string>(srcIds.length);
  const bs = o.batchSize ?? (o.beam > 1 ? 32 : 64);
  const ids = { bosId: tok.bosId, eosId: tok.eosId };
  for (let start = 0; start < order.length; start += bs) {
    const rows = order.slice(start, start + bs);
    const S = Math.max(...rows.map((r) => srcIds[r].length));
    const data = new Int32Array(rows.length * S).fill(tok.padId);
    rows.forEach((r, b) => data.set(srcIds[r], b * S));
    const src = new Tensor(data, [rows.length, S], 'int32');
    const res = o.beam > 1 ? beamSearch(model, src, { ...ids, beamSize: o.beam, lengthPenalty: o.alpha }) : greedy(model, src, ids);
    rows.forEach((r, b) => (out[r] = tok.decode(res.tokens[b])));
    o.onProgress?.(Math.min(start + bs, order.length), order.length);
  }
  return out;
}

/** Corpus BLEU of greedy translations (fast enough to run during training). */
export function validationBleu(model: Seq2Seq, tok: BpeTokenizer, src: string[], refs: string[]): number {
  if (src.length === 0) return 0;
  const hyps = translateIds(model, tok, encodeLines(model, tok, src), { beam: 1, alpha: 0 });
  return corpusBleu(hyps, refs).score;
}

export function bleu(hyps: string[], refs: string[]): BleuScore {
  return corpusBleu(hyps, refs);
}
