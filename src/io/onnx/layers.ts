/**
 * The Transformer's pieces as ONNX subgraphs, each the exact counterpart of a qkv module: Linear
 * (torch layout W (out, in), y = x·Wᵀ + b), LayerNorm, multi-head attention over split heads
 * (B, h, T, dK) with additive masks of 0 / −∞ (as qkv's biases), the feed-forward block and GELU
 * (erf form). Dimension letters: B batch, L new positions, T all positions (past + L), S source
 * positions, E dModel, h heads, dK = E / h.
 */
import type { Tensor } from '../../tensor/tensor.ts';
import { halvesToFloat32 } from '../../tensor/half.ts';
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

  /** Whether `name` is a quantized weight (its int8 or q4 values, with `name_scale` beside them). */
  quantized(name: string): 'int8' | 'q4' | null {
    const t = this.tensors[name];
    return t && (t.dtype === 'int8' || t.dtype === 'q4') ? t.dtype : null;
  }

  /** The quantized pair of `name` (rows [i·n, (i + 1)·n) with `part`) as host arrays. */
  private pair(
    name: string,
    part?: [number, number],
  ): { v: Int8Array | Uint8Array; s: Float32Array; rows: number; cols: number } {
    const t = this.tensors[name];
    const st = this.tensors[`${name}_scale`];
    if (!st) throw new Error(`${this.owner}: quantized weight '${name}' has no '${name}_scale'`);
    const [R, cols] = t.shape;
    const [r0, rows] = part ? [part[0] * part[1], part[1]] : [0, R];
    const per = t.dtype === 'q4' ? cols / 2 : cols;
    const sPer = st.shape[1];
    const v = (t.dataSync() as Int8Array | Uint8Array).subarray(r0 * per, (r0 + rows) * per);
    // float16 scales (q4 as qkv quantizes) widened exactly: MatMulNBits' scales here are float32.
    const all = st.dataSync<Float32Array | Uint16Array>();
    const s = all instanceof Uint16Array ? halvesToFloat32(all) : all;
    return { v, s: s.subarray(r0 * sPer, (r0 + rows) * sPer), rows, cols };
  }

  /** The uint8 scalar 128: the zero point of x quantized as uint8 (MatMulInteger's a_zero_point). */
  zeroPoint128(): string {
    const n = 'x_zero_point_128';
    if (!this.added.has(n)) {
      this.g.intWeight(n, Uint8Array.from([128]), []);
      this.added.set(n, n);
    }
    return n;
  }

  /** An int8 weight as MatMulInteger's B: its values transposed (I, O) and its scales as a row (1, O). */
  int8T(name: string, part?: [number, number]): { w: string; scale: string } {
    const key = part ? `${name}[${part[0]}]` : name;
    const w = `${key}.int8ᵀ`;
    const scale = `${key}.scale`;
    if (!this.added.has(w)) {
      const { v, s, rows, cols } = this.pair(name, part);
      const t = new Int8Array(rows * cols);
      for (let o = 0; o < rows; o++) for (let i = 0; i < cols; i++) t[i * rows + o] = v[o * cols + i];
      this.g.intWeight(w, t, [cols, rows]);
      this.g.table(scale, Float32Array.from(s), [1, rows]);
      this.added.set(w, w);
    }
    return { w, scale };
  }

  /**
   * A q4 weight as MatMulNBits's B (uint8 [O, I/32, 16]: qkv's bytes with each signed nibble + 8, ONNX Runtime's
   * default zero point) and scales ([O·I/32], a block's scale each, in qkv's order).
   */
  nbits(name: string, part?: [number, number]): { b: string; scale: string; K: number; N: number } {
    const key = part ? `${name}[${part[0]}]` : name;
    const b = `${key}.q4`;
    const scale = `${key}.scale`;
    const { v, s, rows, cols } = this.pair(name, part);
    if (!this.added.has(b)) {
      const u = new Uint8Array(v.length);
      for (let i = 0; i < v.length; i++) u[i] = v[i] ^ 0x88;
      this.g.intWeight(b, u, [rows, cols / 32, 16]);
      this.g.table(scale, Float32Array.from(s), [s.length]);
      this.added.set(b, b);
    }
    return { b, scale, K: cols, N: rows };
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

/** y = x·Wᵀ + b for a weight named `${prefix}.weight` (and `.bias` when it exists); W float or quantized. */
export function linear(g: GraphBuilder, w: Weights, x: string, prefix: string, hasBias = true): string {
  const y = matmulT(g, w, x, `${prefix}.weight`, `${prefix}.matmul`);
  return hasBias ? g.op('Add', [y, w.get(`${prefix}.bias`)], `${prefix}.out`) : y;
}

/**
 * x (..., I) · Wᵀ for the torch-layout weight `name` (O, I), rows [i·n, (i + 1)·n) of it when `part` is given:
 * a float MatMul, or for a quantized weight the products qkv's kernels compute (quantizedMatmul).
 */
export function matmulT(
  g: GraphBuilder,
  w: Weights,
  x: string,
  name: string,
  stem: string,
  part?: [number, number],
): string {
  if (w.quantized(name)) return quantizedMatmul(g, w, x, name, stem, part);
  const wt = part
    ? g.op('Transpose', [w.part(name, part[0], part[1])], `${name}[${part[0]}]ᵀ`, { perm: [1, 0] })
    : w.transposed(name);
  return g.op('MatMul', [x, wt], stem);
}

/**
 * x · Wᵀ for a quantized weight, as qkv's linearInt8 / linearQ4 compute it. int8 (MatMulInteger): each row of x
 * quantized on the fly as qkv does (sx = max|x|/127; q = Round(x · (127/max|x|)), ties to even; a row of zeros
 * gives zeros; fed as q + 128, uint8 with zero point 128), the integer products summed exactly in int32, then
 * float(acc) · (sx · s_o): the same float32
 * operations in the same order, so ONNX Runtime's outputs are qkv's up to how its kernels fuse them. q4
 * (com.microsoft MatMulNBits, bits 4, block_size 32): the packed values as unsigned nibbles with zero point 8
 * (qkv's signed nibble + 8), a scale per block, accuracy_level 4 (x quantized to int8 per block by ONNX Runtime,
 * where qkv quantizes per row: outputs agree to that rounding, within the bound test/io/onnx-quantized.once.test.ts
 * states).
 */
function quantizedMatmul(
  g: GraphBuilder,
  w: Weights,
  x: string,
  name: string,
  stem: string,
  part?: [number, number],
): string {
  if (w.quantized(name) === 'q4') {
    const q = w.nbits(name, part);
    return g.msOp('MatMulNBits', [x, q.b, q.scale], stem, {
      K: q.K,
      N: q.N,
      bits: 4,
      block_size: 32,
      accuracy_level: 4,
    });
  }
  const q = w.int8T(name, part);
  const amax = g.op('ReduceMax', [g.op('Abs', [x], `${stem}.abs`)], `${stem}.amax`, { axes: [-1], keepdims: 1 });
  const zero = g.op('Equal', [amax, g.constFloat(0)], `${stem}.zero_row`);
  const inv = g.op(
    'Div',
    [g.constFloat(127), g.op('Where', [zero, g.constFloat(1), amax], `${stem}.amax1`)],
    `${stem}.inv`,
  );
  // q + 128 as uint8 with zero point 128 (the same integer products): ONNX Runtime's fast x86 kernels take
  // uint8 × int8; int8 × int8 runs a generic path several times slower.
  const rounded = g.op('Round', [g.op('Mul', [x, inv], `${stem}.scaled`)], `${stem}.rounded`);
  const xq = g.op('Cast', [g.op('Add', [rounded, g.constFloat(128)], `${stem}.shifted`)], `${stem}.xq`, {
    to: 2 /* UINT8 */,
  });
  const acc = g.op('MatMulInteger', [xq, q.w, w.zeroPoint128()], `${stem}.acc`);
  const sx = g.op('Div', [amax, g.constFloat(127)], `${stem}.sx`);
  // sx·s as a MatMul of (..., 1) by (1, O): the same one rounded product, but no Mul node, which ONNX Runtime's
  // MatMulIntegerToFloat fusion would take for a per-tensor scale of x (it is per row here: a wrong result).
  const scale = g.op('MatMul', [sx, q.scale], `${stem}.scale`);
  return g.op('Mul', [g.op('Cast', [acc], `${stem}.accf`, { to: 1 /* FLOAT */ }), scale], stem);
}

/**
 * Rows of the table `name` (V, E) picked by `ids` (of rank `idsRank`): (..., E) float. A quantized table (int8)
 * is kept once, transposed (E, V) as its tied output projection reads it: the rows are gathered along its axis 1
 * and each value is q·s rounded once to float32, what qkv's quantized Embedding gives.
 */
export function tableRows(g: GraphBuilder, w: Weights, name: string, ids: string, stem: string, idsRank = 2): string {
  if (!w.quantized(name)) return g.op('Gather', [w.get(name), ids], stem);
  if (w.quantized(name) !== 'int8')
    throw new Error(`ONNX export: table '${name}' is q4; the graphs take int8 tables (module.quantize's default)`);
  const q = w.int8T(name);
  // Gathered along axis 1 of (E, V): (E, ...ids) back to (...ids, E).
  const perm = [...Array.from({ length: idsRank }, (_, k) => k + 1), 0];
  const back = (t: string, s: string) =>
    g.op('Transpose', [g.op('Gather', [t, ids], `${s}.g`, { axis: 1 })], s, { perm });
  const rows = g.op('Cast', [back(q.w, `${stem}.q`)], `${stem}.qf`, { to: 1 /* FLOAT */ });
  return g.op('Mul', [rows, back(q.scale, `${stem}.s`)], stem);
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
    [matmulT(g, w, x, `${prefix}.in_proj_weight`, `${prefix}.qkv`), w.get(`${prefix}.in_proj_bias`)],
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
  const y = g.op(
    'Add',
    [matmulT(g, w, x, `${prefix}.in_proj_weight`, `${prefix}.p${i}`, [i, E]), w.part(`${prefix}.in_proj_bias`, i, E)],
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
