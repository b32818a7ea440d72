/**
 * T5's relative position bias (Raffel et al. 2020, §2.1; transformers' `T5Attention.compute_bias`): instead of
 * position encodings added to the embeddings, every self-attention adds to its scores a learned scalar per head
 * for each (query, key) offset, the offsets binned into buckets — exact below `numBuckets / 2` (per direction),
 * logarithmically wider up to `maxDistance`, one bucket beyond. The first layer of each stack owns the table
 * (`relative_attention_bias.weight`, (numBuckets, h)); the other layers reuse its output.
 *
 * The bias (1, h, L, S) is what the attention adds to its scores (an additive float mask, as
 * `nn.MultiheadAttention`'s 3-D attnMask takes one (N·h, L, S) once repeated over the batch).
 */
import * as F from '../ops/index.ts';
import { Tensor } from '../tensor/tensor.ts';
import { Embedding } from './layers.ts';
import { Module } from './module.ts';

/**
 * The bucket of a relative position `key − query` (transformers' `T5Attention._relative_position_bucket`),
 * computed in float32 where torch does (the log of the offset over max_exact), so that the truncation to a bucket
 * falls as there.
 */
export function relativePositionBucket(
  relativePosition: number,
  bidirectional: boolean,
  numBuckets: number,
  maxDistance: number,
): number {
  let buckets = 0;
  let n = numBuckets;
  let rel = relativePosition;
  if (bidirectional) {
    n = Math.floor(n / 2);
    if (rel > 0) buckets += n; // keys after the query use the upper half
    rel = Math.abs(rel);
  } else {
    rel = -Math.min(rel, 0); // a decoder only sees keys at or before the query
  }
  const maxExact = Math.floor(n / 2);
  if (rel < maxExact) return buckets + rel;
  // max_exact + log(rel / max_exact) / log(max_distance / max_exact) · (n − max_exact), each step in float32.
  const f = Math.fround;
  const ratio = f(Math.log(f(f(rel) / maxExact)));
  const scaled = f(f(ratio / f(Math.log(maxDistance / maxExact))) * (n - maxExact));
  return buckets + Math.min(maxExact + Math.trunc(scaled), n - 1);
}

/** T5's learned relative position bias of one stack (the table its first layer owns). */
export class RelativePositionBias extends Module {
  /** The table: (numBuckets, h), transformers' `relative_attention_bias.weight`. */
  readonly relativeAttentionBias: Embedding;

  constructor(
    /** h: heads. */
    readonly numHeads: number,
    /** Buckets (T5: 32). */
    readonly numBuckets = 32,
    /** Offsets at or beyond this share the last bucket (T5: 128). */
    readonly maxDistance = 128,
    /** Encoder self-attention (keys on both sides); false for the decoder's (earlier keys only). */
    readonly bidirectional = true,
  ) {
    super();
    for (const [k, v] of Object.entries({ numHeads, numBuckets, maxDistance }))
      if (!Number.isInteger(v) || v <= 0)
        throw new Error(`RelativePositionBias: ${k} must be a positive integer, got ${v}`);
    this.relativeAttentionBias = this.registerModule('relative_attention_bias', new Embedding(numBuckets, numHeads));
  }

  /** Bucket ids (L, S) of queries at offset..offset + L − 1 against keys 0..S − 1 (cached decoding: offset t). */
  buckets(L: number, S: number, offset = 0): Tensor {
    const ids = new Int32Array(L * S);
    for (let i = 0; i < L; i++)
      for (let j = 0; j < S; j++)
        ids[i * S + j] = relativePositionBucket(
          j - (offset + i),
          this.bidirectional,
          this.numBuckets,
          this.maxDistance,
        );
    return new Tensor(ids, [L, S], 'int32');
  }

  /** The bias (1, h, L, S) for L queries from position `offset` against S keys from position 0. */
  forward(L: number, S: number, offset = 0): Tensor {
    const values = this.relativeAttentionBias.forward(this.buckets(L, S, offset)); // (L, S, h)
    return F.permute(values, [2, 0, 1]).reshape(1, this.numHeads, L, S); // (1, h, L, S)
  }
}
