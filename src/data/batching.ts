/**
 * Batches by token budget from length-sorted buckets (§5.1: "sentence pairs were batched together
 * by approximate sequence length; each training batch contained ... approximately 25000 source
 * tokens and 25000 target tokens"). Sorting by length keeps padding small; shuffling the batches
 * (not the sentences) each epoch with a seeded generator keeps training stochastic and repeatable.
 */
import { Generator } from '../tensor/random.ts';
import { Tensor } from '../tensor/tensor.ts';

/** One tokenised sentence pair (ids without BOS/EOS). */
export interface Pair {
  /** Source sentence's token ids. */
  src: readonly number[];
  /** Target sentence's token ids. */
  tgt: readonly number[];
}

/** Tensors for teacher forcing: tgtIn = [BOS, y1..yn], tgtOut = [y1..yn, EOS], pad elsewhere. */
export interface Batch {
  /** Source ids, int32 (B, S), padded with padId. */
  src: Tensor;
  /** Decoder input, int32 (B, T): BOS then the target, padded. */
  tgtIn: Tensor;
  /** Decoder targets, int32 (B, T): the target then EOS, padded (the loss ignores padId). */
  tgtOut: Tensor;
  /** Number of target tokens predicted (non-pad entries of tgtOut). */
  targetTokens: number;
  /** Indices of the pairs in the original array. */
  indices: number[];
}

/** The ids of the tokenizer's special tokens that batching inserts. */
export interface SpecialIds {
  /** Padding, after each row's last token. */
  padId: number;
  /** Beginning of sentence, first token of the decoder input. */
  bosId: number;
  /** End of sentence, last token of the decoder target. */
  eosId: number;
}

/**
 * Group pair indices into batches whose padded size B·max(S, T+1) stays within maxTokens.
 * Deterministic: the same pairs and maxTokens always give the same batches.
 */
export function planBatches(pairs: readonly Pair[], maxTokens: number): number[][] {
  if (!(maxTokens > 0)) throw new Error(`planBatches: maxTokens must be positive, got ${maxTokens}`);
  const len = (i: number) => Math.max(pairs[i].src.length, pairs[i].tgt.length + 1);
  // Sort by target length, then source length: pairs in a batch then pad little on either side.
  const order = pairs
    .map((_, i) => i)
    .sort((a, b) => pairs[a].tgt.length - pairs[b].tgt.length || pairs[a].src.length - pairs[b].src.length || a - b);
  const batches: number[][] = [];
  let cur: number[] = [];
  let curMax = 0;
  for (const i of order) {
    const l = len(i);
    if (l > maxTokens) throw new Error(`planBatches: pair ${i} needs ${l} tokens, more than maxTokens ${maxTokens}`);
    const m = Math.max(curMax, l);
    if (cur.length > 0 && m * (cur.length + 1) > maxTokens) {
      batches.push(cur);
      cur = [];
      curMax = 0;
    }
    cur.push(i);
    curMax = Math.max(curMax, l);
  }
  if (cur.length) batches.push(cur);
  return batches;
}

/** The batch order of one epoch: a Fisher-Yates shuffle seeded by (seed, epoch). */
export function epochOrder(numBatches: number, seed: number, epoch: number): number[] {
  const g = new Generator((seed * 1000003 + epoch * 7919) >>> 0);
  const order = Array.from({ length: numBatches }, (_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = g.int(i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

/** Pad one planned batch into tensors. */
export function makeBatch(pairs: readonly Pair[], indices: number[], ids: SpecialIds): Batch {
  const B = indices.length;
  const S = Math.max(1, ...indices.map((i) => pairs[i].src.length));
  const T = Math.max(...indices.map((i) => pairs[i].tgt.length)) + 1;
  const src = new Int32Array(B * S).fill(ids.padId);
  const tin = new Int32Array(B * T).fill(ids.padId);
  const tout = new Int32Array(B * T).fill(ids.padId);
  let targetTokens = 0;
  indices.forEach((p, b) => {
    const { src: s, tgt: t } = pairs[p];
    for (let j = 0; j < s.length; j++) src[b * S + j] = s[j];
    tin[b * T] = ids.bosId;
    for (let j = 0; j < t.length; j++) {
      tin[b * T + j + 1] = t[j];
      tout[b * T + j] = t[j];
    }
    tout[b * T + t.length] = ids.eosId;
    targetTokens += t.length + 1;
  });
  return {
    src: new Tensor(src, [B, S], 'int32'),
    tgtIn: new Tensor(tin, [B, T], 'int32'),
    tgtOut: new Tensor(tout, [B, T], 'int32'),
    targetTokens,
    indices,
  };
}
