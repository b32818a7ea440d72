/**
 * The switches of today's decoders (Llama, Qwen2, Mistral; models/gpt.ts's Block) as ONNX nodes for gpt.ts's graph:
 * RMSNorm, the rotary embedding as turned tables, grouped-query attention's KV heads, the SwiGLU MLP and the
 * sliding window. Each computes what qkv's op computes, in the same order of float32 operations where ONNX has them
 * (RMSNorm as transformers' LlamaRMSNorm: x · 1/√(mean(x²) + ε) · w), so ONNX Runtime's outputs are qkv's up to
 * how its kernels sum.
 */
import type { GPTConfig } from '../../models/gpt-config.ts';
import { RotaryEmbedding } from '../../nn/rotary.ts';
import type { GraphBuilder } from './builder.ts';
import { linear, type Weights } from './layers.ts';

/** RMSNorm over the last axis with `${prefix}.weight`: x · 1/√(mean(x²) + ε) · w. */
export function rmsNorm(g: GraphBuilder, w: Weights, x: string, prefix: string, eps: number): string {
  const ms = g.op('ReduceMean', [g.op('Mul', [x, x], `${prefix}.sq`)], `${prefix}.ms`, { axes: [-1], keepdims: 1 });
  const inv = g.op(
    'Reciprocal',
    [g.op('Sqrt', [g.op('Add', [ms, g.constFloat(eps)], `${prefix}.mse`)], `${prefix}.rms`)],
    `${prefix}.inv`,
  );
  return g.op('Mul', [g.op('Mul', [x, inv], `${prefix}.normed`), w.get(`${prefix}.weight`)], `${prefix}.out`);
}

/**
 * The cos and sin (L, D) of query positions `positions` (L, int64): qkv's own float32 tables of every position the
 * model takes (RotaryEmbedding.tables, (blockSize, D/2)), gathered and repeated along D as transformers repeats them.
 */
export function rotaryTables(g: GraphBuilder, c: GPTConfig, positions: string): { cos: string; sin: string } {
  const D = c.headDim ?? c.nEmbd / c.nHead;
  const rope = new RotaryEmbedding(D, { base: c.rope?.base, scaling: c.rope?.scaling });
  const { cos, sin } = rope.tables(0, c.blockSize);
  const pick = (t: Float32Array, name: string) => {
    const rows = g.op('Gather', [g.table(`rope.${name}`, t, [c.blockSize, D / 2]), positions], `rope.${name}.rows`);
    return g.op('Concat', [rows, rows], `rope.${name}.full`, { axis: -1 });
  };
  return { cos: pick(cos.dataSync<Float32Array>(), 'cos'), sin: pick(sin.dataSync<Float32Array>(), 'sin') };
}

/** x (B, h, L, D) turned: x · cos + rotate_half(x) · sin, rotate_half(x) = (−x₂, x₁) of its halves. */
export function rotate(g: GraphBuilder, x: string, t: { cos: string; sin: string }, D: number, stem: string): string {
  const [x1, x2] = g.node('Split', [x, g.constInt([D / 2, D / 2])], [`${stem}.x1`, `${stem}.x2`], { axis: -1 });
  const half = g.op('Concat', [g.op('Neg', [x2], `${stem}.nx2`), x1], `${stem}.rot`, { axis: -1 });
  return g.op(
    'Add',
    [g.op('Mul', [x, t.cos], `${stem}.xc`), g.op('Mul', [half, t.sin], `${stem}.rs`)],
    `${stem}.turned`,
  );
}

/** KV heads (B, hk, T, D) repeated for their h / hk query heads each, (B, h, T, D): query head i reads ⌊i·hk/h⌋. */
export function repeatKv(g: GraphBuilder, x: string, h: number, hk: number, D: number, stem: string): string {
  if (h === hk) return x;
  const five = g.op('Unsqueeze', [x, g.constInt([2])], `${stem}.u`); // (B, hk, 1, T, D)
  const shape = g.op(
    'Concat',
    [
      g.op('Shape', [x], `${stem}.b`, { start: 0, end: 2 }),
      g.constInt([h / hk]),
      g.op('Shape', [x], `${stem}.td`, { start: 2, end: 4 }),
    ],
    `${stem}.shape5`,
    { axis: 0 },
  );
  const wide = g.op('Expand', [five, shape], `${stem}.e`);
  return g.op('Reshape', [wide, g.constInt([0, h, -1, D])], `${stem}.rep`);
}

/** The gated MLP: down_proj(silu(gate_proj(x)) · up_proj(x)), biases where the config has them. */
export function swiglu(g: GraphBuilder, w: Weights, x: string, prefix: string, bias: boolean): string {
  const gate = linear(g, w, x, `${prefix}.gate_proj`, bias);
  const silu = g.op('Mul', [gate, g.op('Sigmoid', [gate], `${prefix}.sigmoid`)], `${prefix}.silu`);
  const up = linear(g, w, x, `${prefix}.up_proj`, bias);
  return linear(g, w, g.op('Mul', [silu, up], `${prefix}.gated`), `${prefix}.down_proj`, bias);
}

/**
 * The causal bias (L, T) with a sliding window: −∞ where the key comes after the query or `window` or more
 * positions before it (transformers' sliding_window_overlay), from the query positions (L) and key positions (T).
 */
export function windowBias(g: GraphBuilder, causal: string, positions: string, total: string, window: number): string {
  const keys = g.op(
    'Range',
    [g.constInt([0], true), g.op('Squeeze', [total, g.constInt([0])], 'win.total'), g.constInt([1], true)],
    'win.keys',
  );
  const distance = g.op(
    'Sub',
    [g.op('Unsqueeze', [positions, g.constInt([1])], 'win.qp'), g.op('Unsqueeze', [keys, g.constInt([0])], 'win.kp')],
    'win.distance',
  ); // (L, T): query position − key position
  const far = g.op('GreaterOrEqual', [distance, g.constInt([window], true)], 'win.far');
  return g.op('Where', [far, g.constFloat(-Infinity), causal], 'win.bias');
}
