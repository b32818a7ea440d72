/**
 * The Transformer's pieces as ONNX subgraphs, each the exact counterpart of a qkv module: Linear
 * (torch layout W (out, in), y = x·Wᵀ + b), LayerNorm, multi-head attention over split heads
 * (B, h, T, dK) with additive masks of 0 / −∞ (as qkv's biases), the feed-forward block and GELU
 * (erf form). Dimension letters: B batch, L new positions, T all positions (past + L), S source
 * positions, E dModel, h heads, dK = E / h.
 */
import type { Tensor } from '../../tensor/tensor.ts';
import type { GraphBuilder } from './builder.ts';

/** A model's state dict as initializers: each weight is added once, on first use, under its own name. */
export class Weights {
  private readonly added = new Map<string, string>();

  constructor(
    private readonly g: GraphBuilder,
    private readonly tensors: Record<string, Tensor>,
    private readonly owner: string,
  ) {}

  get(name: string): string {
    let v = this.added.get(name);
    if (v) return v;
    const t = this.tensors[name];
    if (!t) throw new Error(`${this.owner}: weight '${name}' is missing from the state dict`);
    v = this.g.weight(name, t.dataSync<Float32Array>(), t.shape.slice());
    this.added.set(name, v);
    return v;
  }

  /** Wᵀ of a torch-layout weight (ONNX Runtime folds the Transpose of an initializer at load). */
  transposed(name: string): string {
    const key = `${name}ᵀ`;
    let v = this.added.get(key);
    if (!v) {
      v = this.g.op('Transpose', [this.get(name)], key, { perm: [1, 0] });
      this.added.set(key, v);
    }
    return v;
  }

  /** Rows [i·n, (i+1)·n) of a packed weight (in_proj_weight (3E, E), in_proj_bias (3E)). */
  part(name: string, i: number, n: number): string {
    const key = `${name}[${i}]`;
    let v = this.added.get(key);
    if (!v) {
      v = this.g.op(
        'Slice',
        [this.get(name), this.g.constInt([i * n]), this.g.constInt([(i + 1) * n]), this.g.constInt([0])],
        key,
      );
      this.added.set(key, v);
    }
    return v;
  }
}

/** y = x·Wᵀ + b for a weight named `${prefix}.weight` (and `.bias` when it exists). */
export function linear(g: GraphBuilder, w: Weights, x: string, prefix: string, hasBias = true): string {
  const y = g.op('MatMul', [x, w.transposed(`${prefix}.weight`)], `${prefix}.matmul`);
  return hasBias ? g.op('Add', [y, w.get(`${prefix}.bias`)], `${prefix}.out`) : y;
}

/** LayerNormalization over the last axis with `${prefix}.weight` and `.bias` (opset 17's op). */
export function layerNorm(g: GraphBuilder, w: Weights, x: string, prefix: string, eps: number): string {
  return g.op('LayerNormalization', [x, w.get(`${prefix}.weight`), w.get(`${prefix}.bias`)], `${prefix}.out`, {
    axis: -1,
    epsilon: { float: eps },
  });
}

/** GELU, exact: x · ½ · (1 + erf(x / √2)) (torch's default, qkv's F.gelu). */
export function gelu(g: GraphBuilder, x: string): string {
  const e = g.op('Erf', [g.op('Mul', [x, g.constFloat(Math.SQRT1_2)], 'gelu.scaled')], 'gelu.erf');
  const half = g.op('Mul', [x, g.constFloat(0.5)], 'gelu.half');
  return g.op('Mul', [half, g.op('Add', [e, g.constFloat(1)], 'gelu.1p')], 'gelu.out');
}

/**
 * GELU, GPT-2's tanh form (`gelu_new`, qkv's `F.gelu(x, 'tanh')`): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))),
 * in the same order of operations as qkv's op.
 */
export function geluTanh(g: GraphBuilder, x: string): string {
  const cube = g.op('Mul', [g.op('Mul', [x, x], 'gelu_tanh.sq'), x], 'gelu_tanh.cube');
  const sum = g.op('Add', [x, g.op('Mul', [cube, g.constFloat(0.044715)], 'gelu_tanh.c')], 'gelu_tanh.sum');
  const inner = g.op('Mul', [sum, g.constFloat(Math.sqrt(2 / Math.PI))], 'gelu_tanh.inner');
  const t = g.op('Add', [g.op('Tanh', [inner], 'gelu_tanh.tanh'), g.constFloat(1)], 'gelu_tanh.1p');
  return g.op('Mul', [g.op('Mul', [x, g.constFloat(0.5)], 'gelu_tanh.half'), t], 'gelu_tanh.out');
}

/** (B, T, E) → (B, h, T, dK). */
export function splitHeads(g: GraphBuilder, x: string, h: number, dK: number): string {
  return g.op('Transpose', [g.op('Reshape', [x, g.constInt([0, 0, h, dK])], 'heads')], 'heads.t', {
    perm: [0, 2, 1, 3],
  });
}

/** (B, h, L, dK) → (B, L, E). */
export function mergeHeads(g: GraphBuilder, x: string, E: number): string {
  return g.op('Reshape', [g.op('Transpose', [x], 'merge.t', { perm: [0, 2, 1, 3] }), g.constInt([0, 0, E])], 'merge');
}

/** Projections of a packed in_proj (3E, E): q, k, v each (B, h, T, dK). */
export function projectSelf(
  g: GraphBuilder,
  w: Weights,
  x: string,
  prefix: string,
  h: number,
  E: number,
): { q: string; k: string; v: string } {
  // One GEMM for all three, then three chunks along E (as qkv's projectSelf).
  const qkv = g.op(
    'Add',
    [g.op('MatMul', [x, w.transposed(`${prefix}.in_proj_weight`)], `${prefix}.qkv`), w.get(`${prefix}.in_proj_bias`)],
    `${prefix}.qkv_b`,
  );
  const [q, k, v] = g.node('Split', [qkv, g.constInt([E, E, E])], [`${prefix}.q`, `${prefix}.k`, `${prefix}.v`], {
    axis: -1,
  });
  const dK = E / h;
  return { q: splitHeads(g, q, h, dK), k: splitHeads(g, k, h, dK), v: splitHeads(g, v, h, dK) };
}

/** Rows i of a packed projection applied to x: (B, h, T, dK). */
export function projectPart(
  g: GraphBuilder,
  w: Weights,
  x: string,
  prefix: string,
  i: number,
  h: number,
  E: number,
): string {
  const Wt = g.op('Transpose', [w.part(`${prefix}.in_proj_weight`, i, E)], `${prefix}.W${i}ᵀ`, { perm: [1, 0] });
  const y = g.op(
    'Add',
    [g.op('MatMul', [x, Wt], `${prefix}.p${i}`), w.part(`${prefix}.in_proj_bias`, i, E)],
    `${prefix}.p${i}_b`,
  );
  return splitHeads(g, y, h, E / h);
}

/**
 * softmax(q·kᵀ·scale + bias)·v and the output projection: q (B, h, L, dK), k and v (B, h, T, dK),
 * bias broadcastable to (B, h, L, T) or null. Returns the output (B, L, E) and the weights (B, h, L, T).
 */
export function attend(
  g: GraphBuilder,
  w: Weights,
  prefix: string,
  q: string,
  k: string,
  v: string,
  bias: string | null,
  E: number,
  h: number,
): { out: string; weights: string } {
  const kT = g.op('Transpose', [k], `${prefix}.kT`, { perm: [0, 1, 3, 2] });
  let scores = g.op(
    'Mul',
    [g.op('MatMul', [q, kT], `${prefix}.qk`), g.constFloat(1 / Math.sqrt(E / h))],
    `${prefix}.scores`,
  );
  if (bias) scores = g.op('Add', [scores, bias], `${prefix}.masked`);
  const weights = g.op('Softmax', [scores], `${prefix}.weights`, { axis: -1 });
  const ctx = g.op('MatMul', [weights, v], `${prefix}.ctx`);
  return { out: linear(g, w, mergeHeads(g, ctx, E), `${prefix}.out_proj`), weights };
}

/** Additive key bias from a keep-mask (B, T) int64 (1 = attend, 0 = padding), as (B, 1, 1, T): 0 / −∞. */
export function keepMaskBias(g: GraphBuilder, mask: string): string {
  const keep = g.op('Cast', [mask], 'mask.bool', { to: 9 /* BOOL */ });
  const bias = g.op('Where', [keep, g.constFloat(0), g.constFloat(-Infinity)], 'mask.bias');
  return g.op('Unsqueeze', [bias, g.constInt([1, 2])], 'mask.bias4');
}

/** 1-D [n] of dimension `axis` of x. */
export function dim(g: GraphBuilder, x: string, axis: number): string {
  return g.op('Shape', [x], `${x}.dim${axis}`, { start: axis, end: axis + 1 });
}

/**
 * Causal bias (L, T) for L new positions past .. past + L − 1 over T = past + L keys: −∞ where the
 * key comes after the query. `past` and `total` are 1-D [n] values. Also returns the query positions (L).
 */
export function causalBias(g: GraphBuilder, past: string, total: string): { bias: string; positions: string } {
  const scalar = (x: string) => g.op('Squeeze', [x, g.constInt([0])], `${x}.s`);
  const one = g.constInt([1], true);
  const keys = g.op('Range', [g.constInt([0], true), scalar(total), one], 'key_positions'); // (T)
  const positions = g.op('Range', [scalar(past), scalar(total), one], 'query_positions'); // (L)
  const later = g.op(
    'Greater',
    [g.op('Unsqueeze', [keys, g.constInt([0])], 'kp'), g.op('Unsqueeze', [positions, g.constInt([1])], 'qp')],
    'later',
  ); // (L, T)
  return { bias: g.op('Where', [later, g.constFloat(-Infinity), g.constFloat(0)], 'causal_bias'), positions };
}

/** The position-wise feed-forward block: linear2(act(linear1(x))). */
export function feedForward(
  g: GraphBuilder,
  w: Weights,
  x: string,
  fc1: string,
  fc2: string,
  activation: 'relu' | 'gelu' | 'gelu_tanh' | 'silu',
): string {
  const a = linear(g, w, x, fc1);
  const act =
    activation === 'relu'
      ? g.op('Relu', [a], `${fc1}.relu`)
      : activation === 'silu'
        ? g.op('Mul', [a, g.op('Sigmoid', [a], `${fc1}.sigmoid`)], `${fc1}.silu`) // x·σ(x), Marian's swish
        : activation === 'gelu_tanh'
          ? geluTanh(g, a)
          : gelu(g, a);
  return linear(g, w, act, fc2);
}
