import { record } from '../autograd/engine.ts';
import { isGradEnabled } from '../autograd/grad-mode.ts';
import type { AttentionBias, AttentionParams } from '../backend/backend.ts';
import type { Generator } from '../tensor/random.ts';
import { shapeToString, sizeOf } from '../tensor/shape.ts';
import { Tensor } from '../tensor/tensor.ts';
import { dropout } from './dropout.ts';
import { add, expand, mul } from './elementwise.ts';
import { matmul } from './matmul.ts';
import { softmax } from './softmax.ts';
import { transpose } from './shape.ts';
import { describe, empty, f32, K, scratch, st, upload } from './util.ts';

/**
 * Scaled dot-product attention (§3.2.1): softmax(Q·Kᵀ/√dK + mask)·V.
 *
 * Mask conventions follow the PyTorch function this mirrors, and PyTorch is inconsistent, so read
 * carefully:
 *  - here (F.scaled_dot_product_attention): a bool `attnMask` is TRUE WHERE ATTENTION IS ALLOWED;
 *  - in nn.MultiheadAttention / nn.Transformer: a bool mask is TRUE WHERE ATTENTION IS BLOCKED.
 * Float masks mean the same everywhere: they are added to the scores (use -Infinity to block).
 */
export interface AttentionOptions {
  /** Bool (true = attend) or float (added), broadcastable to (..., L, S). */
  attnMask?: Tensor | null;
  /** Block keys after each query (the decoder's mask, §3.2.3). Aligned to the end when S > L. */
  isCausal?: boolean;
  /** Defaults to 1/√dK. */
  scale?: number;
  /** Dropout on the attention weights (applied whenever > 0, as in torch). */
  dropoutP?: number;
  /** Random stream of the dropout mask (default: the global generator, see `manualSeed`). */
  generator?: Generator;
  /**
   * Grouped-query attention (torch's `enable_gqa`): key and value may have fewer heads (dim −3) than the
   * query, a divisor of them; query head i reads KV head ⌊i / (Hq / Hkv)⌋, without copying K and V.
   */
  enableGqa?: boolean;
}

/** softmax(Q·Kᵀ·scale + mask)·V for q (..., L, D), k (..., S, D), v (..., S, Dv) -> (..., L, Dv). */
export function scaledDotProductAttention(q: Tensor, k: Tensor, v: Tensor, options: AttentionOptions = {}): Tensor {
  return attention(q, k, v, { ...options, needWeights: false }).output;
}

/** What {@link attention} returns. */
export interface AttentionResult {
  /** The attended values (..., L, Dv). */
  output: Tensor;
  /** The softmax probabilities (..., L, S), when asked for. */
  weights: Tensor | null;
}

/**
 * The two paths of one computation. Without weights, the fused kernel never materialises the
 * L×S matrix, in training or inference. With weights (or dropout, which needs them) it is computed
 * as visible, differentiable steps: scores, softmax, product with V. They agree to float rounding.
 */
export function attention(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  options: AttentionOptions & { needWeights?: boolean } = {},
): AttentionResult {
  const op = 'scaledDotProductAttention';
  f32(q, op, 'query');
  f32(k, op, 'key');
  f32(v, op, 'value');
  if (q.ndim < 2 || k.ndim !== q.ndim || v.ndim !== q.ndim) {
    throw new Error(
      `${op}: query, key and value must have the same rank >= 2, got ` +
        `${shapeToString(q.shape)}, ${shapeToString(k.shape)}, ` +
        `${shapeToString(v.shape)}`,
    );
  }
  const lead = q.shape.slice(0, -2);
  const [L, D] = q.shape.slice(-2);
  const [S, Dk] = k.shape.slice(-2);
  const [Sv, Dv] = v.shape.slice(-2);
  if (Dk !== D) throw new Error(`${op}: key last dim must equal query's ${D}, got key shape ${shapeToString(k.shape)}`);
  if (Sv !== S)
    throw new Error(`${op}: value must have ${S} positions like key, got value shape ${shapeToString(v.shape)}`);
  const H = lead.length >= 1 ? lead[lead.length - 1] : 1;
  const gqa = (options.enableGqa ?? false) && lead.length >= 1;
  const Hk = gqa ? k.shape[k.ndim - 3] : H;
  for (const [name, t] of [
    ['key', k],
    ['value', v],
  ] as const) {
    const dims = t.shape.slice(0, -2);
    const bad = gqa
      ? dims[dims.length - 1] !== Hk || dims.slice(0, -1).some((d, i) => d !== lead[i])
      : dims.some((d, i) => d !== lead[i]);
    if (bad) {
      throw new Error(
        `${op}: ${name} batch dims ${shapeToString(dims)} must equal query's ${shapeToString(lead)}` +
          (gqa ? ` but for the heads (dim -3, ${Hk} as key's)` : ''),
      );
    }
  }
  if (Hk < 1 || H % Hk !== 0)
    throw new Error(`${op}: the query's ${H} heads are not a multiple of the key's ${Hk} (enableGqa)`);
  const B = sizeOf(lead) / (H || 1);
  let bias: Tensor | null = null;
  if (options.attnMask) bias = maskToBias(options.attnMask, 'allow', op, 'attnMask');
  const scale = options.scale ?? 1 / Math.sqrt(D);
  const geometry = { B, H, L, S, lead };
  return attentionCore(
    q.reshape(B, H, L, D),
    k.reshape(B, Hk, S, D),
    v.reshape(B, Hk, S, Dv),
    bias ? alignBias(bias, geometry, op, 'attnMask') : null,
    {
      causal: options.isCausal ?? false,
      scale,
      dropoutP: options.dropoutP ?? 0,
      needWeights: options.needWeights ?? false,
      generator: options.generator,
    },
    lead,
  );
}

/**
 * Turn a mask into an additive float bias. `meaning` says what a TRUE bool entry means: 'allow'
 * (F.scaled_dot_product_attention) or 'block' (nn.MultiheadAttention). int32 masks read as bool.
 */
export function maskToBias(mask: Tensor, meaning: 'allow' | 'block', op: string, arg: string): Tensor {
  if (!(mask instanceof Tensor)) throw new Error(`${op}: ${arg} must be a Tensor, got ${describe(mask)}`);
  if (mask.dtype === 'float32') return mask;
  const k = K(mask);
  const out = empty(mask.shape, k);
  k.maskToBias(mask.storage, st(out), mask.size, meaning === 'block' ? 1 : 0);
  return out;
}

interface Geometry {
  B: number;
  H: number;
  L: number;
  S: number;
  lead: readonly number[];
}

/**
 * Give an additive bias the 4-D shape (B|1, H|1, L|1, S) the kernels take (B = product of the
 * leading dims but the last, H = the last), materialising a broadcast only when strides over
 * (B, H) cannot express it.
 */
export function alignBias(bias: Tensor, g: Geometry, op: string, arg: string): Tensor {
  const full4 = [...g.lead, g.L, g.S];
  const n = g.lead.length;
  const fits =
    bias.ndim <= full4.length &&
    bias.shape.every((d, i) => {
      const t = full4[full4.length - bias.ndim + i];
      return d === t || d === 1;
    });
  if (!fits) {
    throw new Error(
      `${op}: ${arg} of shape ${shapeToString(bias.shape)} cannot be ` +
        `broadcast to the attention shape ${shapeToString(full4)}`,
    );
  }
  const padded = [...new Array<number>(full4.length - bias.ndim).fill(1), ...bias.shape];
  const leadM = padded.slice(0, n);
  const lm = padded[n];
  const sm = padded[n + 1];
  const outer = leadM.slice(0, -1);
  const outerOk = outer.every((d) => d === 1) || outer.every((d, i) => d === g.lead[i]);
  if (sm === g.S && outerOk) {
    const hm = n >= 1 ? leadM[n - 1] : 1;
    return bias.reshape(sizeOf(outer), hm, lm, sm);
  }
  // Irregular broadcast (e.g. a size-1 key dim): make it explicit.
  return expand(bias.reshape(padded), [...g.lead, lm, g.S]).reshape(g.B, g.H, lm, g.S);
}

function kernelBias(bias: Tensor | null): AttentionBias | null {
  if (!bias) return null;
  const [bm, hm, lm, s] = bias.shape;
  return {
    data: st(bias),
    strideB: bm === 1 ? 0 : hm * lm * s,
    strideH: hm === 1 ? 0 : lm * s,
    strideL: lm === 1 ? 0 : s,
  };
}

/** Causal mask as an additive bias (L, S): −∞ where key j is after query i (end-aligned). */
export function causalBias(L: number, S: number): Tensor {
  const d = new Float32Array(L * S);
  for (let i = 0; i < L; i++) for (let j = i + (S - L) + 1; j < S; j++) d[i * S + j] = -Infinity;
  return upload(d, [L, S]);
}

/** Options of {@link attentionCore}, resolved by its callers. */
export interface CoreOptions {
  /** Apply the causal mask, aligned to the end when S > L. */
  causal: boolean;
  /** Multiplier of Q·Kᵀ (1/√dK unless the caller says otherwise). */
  scale: number;
  /** Dropout on the weights (training only; > 0 takes the path with weights). */
  dropoutP: number;
  /** Return the weights (takes the visible, differentiable path). */
  needWeights: boolean;
  /** Random stream of the dropout mask. */
  generator?: Generator;
}

/**
 * Attention on (B, H, L, D) queries and (B, Hk, S, D) keys and values with a (B|1, H|1, L|1, S) additive bias.
 * Hk divides H: with Hk < H (grouped-query attention), query head i reads KV head ⌊i / (H / Hk)⌋ in place.
 * Shared by F.scaledDotProductAttention and nn.MultiheadAttention; `lead` restores the caller's batch dims.
 */
export function attentionCore(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  bias: Tensor | null,
  o: CoreOptions,
  lead: readonly number[],
): AttentionResult {
  const [B, H, L, D] = q.shape;
  const Hk = k.shape[1];
  const S = k.shape[2];
  const Dv = v.shape[3];
  if (Hk < 1 || H % Hk !== 0)
    throw new Error(`attention: the query's ${H} heads are not a multiple of the key/value heads ${Hk}`);
  const group = H / Hk;
  const outShape = [...lead, L, Dv];
  const wShape = [...lead, L, S];
  const recording = isGradEnabled() && (q.requiresGrad || k.requiresGrad || v.requiresGrad);

  if (o.dropoutP > 0 || (o.needWeights && recording)) {
    // Visible path: every step differentiable, weights part of the graph. The query heads of one KV head are
    // consecutive, so (B, H, L, D) is (B, Hk, group·L, D) as it lies: each KV head meets its group in one matmul.
    const qg = q.reshape(B, Hk, group * L, D);
    let scores = matmul(qg, transpose(k, -2, -1)).reshape(B, H, L, S); // (B, Hk, group·L, S) = (B, H, L, S)
    scores = mul(scores, o.scale);
    if (bias) scores = add(scores, bias);
    if (o.causal) scores = add(scores, causalBias(L, S));
    let w = softmax(scores, -1);
    if (o.dropoutP > 0) w = dropout(w, o.dropoutP, true, o.generator);
    const out = matmul(w.reshape(B, Hk, group * L, S), v); // (B, Hk, group·L, Dv) = (B, H, L, Dv)
    return { output: out.reshape(outShape), weights: o.needWeights ? w.reshape(wShape) : null };
  }

  // Fused path.
  const p: AttentionParams = {
    b: B,
    h: H,
    hk: Hk,
    l: L,
    s: S,
    d: D,
    dv: Dv,
    scale: o.scale,
    causal: o.causal,
    bias: kernelBias(bias),
  };
  const kb = K();
  const out = empty([B, H, L, Dv], kb);
  const lse = scratch(B * H * L, kb);
  const weights = o.needWeights ? empty([B, H, L, S], kb) : null;
  const qd = st(q);
  const kd = st(k);
  const vd = st(v);
  kb.attention(qd, kd, vd, st(out), lse, weights ? st(weights) : null, p);
  record(out, 'attention', [q, k, v], (g) => {
    const dq = empty(q.shape);
    const dk = empty(k.shape);
    const dv = empty(v.shape);
    K().attentionBackward(qd, kd, vd, st(out), st(g), lse, st(dq), st(dk), st(dv), p);
    return [dq, dk, dv];
  });
  return { output: out.reshape(outShape), weights: weights ? weights.reshape(wShape) : null };
}
