import * as F from '../ops/index.ts';
import { shapeToString } from '../tensor/shape.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { Module } from './module.ts';

/**
 * Self-attention without trainable weights, the first step of seed 002 (after Raschka): every
 * token's embedding is its own query, key and value. scores = X·Xᵀ (unscaled unless `scaled`),
 * weights = softmax(scores), context = weights·X.
 */
export class SimpleSelfAttention extends Module {
  constructor(
    /** The layer's options, as given. */
    readonly options: {
      /** Divide the scores by √d (scaled dot-product attention, §3.2.1). Default false, as seed 002 starts. */
      scaled?: boolean;
    } = {},
  ) {
    super();
  }

  /** x (..., T, d): every token attends to every token, itself included. */
  forward(x: Tensor): {
    /** The context vectors weights·X (..., T, d). */
    output: Tensor;
    /** softmax(scores) along the last dim (..., T, T). */
    weights: Tensor;
    /** X·Xᵀ, scaled if asked (..., T, T). */
    scores: Tensor;
  } {
    if (x.ndim < 2)
      throw new Error(`SimpleSelfAttention: input must be (..., T, d), got shape ${shapeToString(x.shape)}`);
    let scores = F.matmul(x, F.transpose(x, -2, -1)); // (..., T, T)
    if (this.options.scaled) scores = F.mul(scores, 1 / Math.sqrt(x.shape[x.ndim - 1]));
    const weights = F.softmax(scores, -1);
    return { output: F.matmul(weights, x), weights, scores };
  }
}
