import type { HostAttentionParams, HostKernels } from '../backend.ts';
import { jsKernels } from './registry.ts';

/** row[j] = scale·(q_i · k_j) + bias[i, j] for the first `limit` keys; returns the row maximum. */
function scoreRow(
  q: Float32Array,
  qi: number,
  k: Float32Array,
  kBase: number,
  D: number,
  limit: number,
  scale: number,
  bias: HostAttentionParams['bias'],
  biasRow: number,
  row: Float64Array,
): number {
  let max = -Infinity;
  for (let j = 0; j < limit; j++) {
    const kj = kBase + j * D;
    let s = 0;
    for (let t = 0; t < D; t++) s += q[qi + t] * k[kj + t];
    s *= scale;
    if (bias) s += bias.data[biasRow + j];
    row[j] = s;
    if (s > max) max = s;
  }
  return max;
}

/** Where one query row's data lies: head bh = b·H + h, row i, its q row and its KV head's K and V. */
interface QueryRow {
  bh: number;
  i: number;
  qi: number;
  kBase: number;
  vBase: number;
  /** Keys 0 .. limit − 1 are seen (all S, or fewer under the causal mask). */
  limit: number;
}

/**
 * Visits every query row in (b, h, i) order, its scores (scoreRow) already in `scores`; `max` is
 * their maximum. The one loop forward and backward share, so both see the same rows and scores.
 */
function forEachScoredRow(
  q: Float32Array,
  k: Float32Array,
  p: HostAttentionParams,
  scores: Float64Array,
  visit: (row: QueryRow, max: number) => void,
): void {
  const { b: B, h: H, l: L, s: S, d: D, dv: DV, scale, causal, bias } = p;
  const HK = p.hk ?? H;
  const group = H / HK; // query heads per KV head (grouped-query attention; 1 for multi-head)
  const shift = S - L; // causal alignment: query i is position i + shift among the keys
  for (let bi = 0; bi < B; bi++) {
    for (let hi = 0; hi < H; hi++) {
      const bh = bi * H + hi;
      const kvh = bi * HK + Math.floor(hi / group); // the KV head this query head shares
      const qBase = bh * L * D;
      const kBase = kvh * S * D;
      const vBase = kvh * S * DV;
      const biasBase = bias ? bi * bias.strideB + hi * bias.strideH : 0;
      for (let i = 0; i < L; i++) {
        const qi = qBase + i * D;
        const limit = causal ? Math.min(S, i + shift + 1) : S;
        const max = scoreRow(q, qi, k, kBase, D, limit, scale, bias, biasBase + (bias ? i * bias.strideL : 0), scores);
        visit({ bh, i, qi, kBase, vBase, limit }, max);
      }
    }
  }
}

/**
 * Reference attention, one query row at a time: scores for the row, softmax, weighted sum of V.
 * Memory beyond the outputs is one row of S scores, the property the fused wasm kernel keeps with
 * tiles and an online softmax. The row's log-sum-exp is saved so backward can rebuild P exactly.
 *
 * q (B,H,L,D), k (B,Hk,S,D), v (B,Hk,S,Dv), out (B,H,L,Dv), lse (B,H,L), weights (B,H,L,S) or null; Hk = p.hk
 * (default H) KV heads, each read by H/Hk query heads in place.
 */
export const attention: HostKernels['attention'] = (q, k, v, out, lse, weights, p) => {
  const { l: L, s: S, dv: DV } = p;
  const row = new Float64Array(S);
  const acc = new Float64Array(DV);
  forEachScoredRow(q, k, p, row, ({ bh, i, vBase, limit }, max) => {
    let sum = 0;
    for (let j = 0; j < limit; j++) {
      const e = Math.exp(row[j] - max);
      row[j] = e;
      sum += e;
    }
    const inv = 1 / sum;
    acc.fill(0);
    for (let j = 0; j < limit; j++) {
      const pj = row[j] * inv;
      row[j] = pj;
      if (pj === 0) continue;
      const vj = vBase + j * DV;
      for (let t = 0; t < DV; t++) acc[t] += pj * v[vj + t];
    }
    const oi = (bh * L + i) * DV;
    for (let t = 0; t < DV; t++) out[oi + t] = acc[t];
    lse[bh * L + i] = max + Math.log(sum);
    if (weights) {
      const wi = (bh * L + i) * S;
      for (let j = 0; j < limit; j++) weights[wi + j] = row[j];
      for (let j = Math.max(limit, 0); j < S; j++) weights[wi + j] = 0;
    }
  });
};

/**
 * With P = softmax(S) rebuilt from lse, and Δ_i = dO_i·O_i:
 *   dV = Pᵀ·dO,  dP = dO·Vᵀ,  dS = P∘(dP − Δ),  dQ = scale·dS·K,  dK = scale·dSᵀ·Q.
 * A KV head shared by several query heads gathers the sum of their dK and dV.
 */
export const attentionBackward: HostKernels['attentionBackward'] = (q, k, v, out, dout, lse, dq, dk, dv, p) => {
  const { l: L, s: S, d: D, dv: DV, scale } = p;
  dq.fill(0);
  dk.fill(0);
  dv.fill(0);
  const prob = new Float64Array(S);
  forEachScoredRow(q, k, p, prob, ({ bh, i, qi, kBase, vBase, limit }) => {
    const oi = (bh * L + i) * DV;
    const l = lse[bh * L + i];
    let delta = 0;
    for (let t = 0; t < DV; t++) delta += dout[oi + t] * out[oi + t];
    for (let j = 0; j < limit; j++) prob[j] = Math.exp(prob[j] - l);
    for (let j = 0; j < limit; j++) {
      const pj = prob[j];
      if (pj === 0) continue;
      const vj = vBase + j * DV;
      let dp = 0;
      for (let t = 0; t < DV; t++) {
        dp += dout[oi + t] * v[vj + t];
        dv[vj + t] += pj * dout[oi + t];
      }
      const ds = pj * (dp - delta) * scale;
      const kj = kBase + j * D;
      for (let t = 0; t < D; t++) {
        dq[qi + t] += ds * k[kj + t];
        dk[kj + t] += ds * q[qi + t];
      }
    }
  });
};

jsKernels.register('attention', { attention, attentionBackward });
