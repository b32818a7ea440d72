/**
 * Fused attention, forward and backward (assembly/attention.ts), behind the Backend interface,
 * split among the threads by (batch, head) pairs when the work pays. Arrays are used in place
 * when they live in wasm memory, copied in and out otherwise (`staged`).
 */
import type { HostAttentionParams, HostKernels } from '../backend.ts';
import { declareExports, sig, type F32, type I32, type Ptr } from './loader.ts';
import { runParallel, threadsFor } from './parallel.ts';
import { wasmKernels } from './registry.ts';
import { staged, type Arg } from './stage.ts';

/** What both kernels take after their arrays: the sizes, scale, causal flag, and the bias with its strides. */
type Shape = [
  B: I32,
  H: I32,
  HK: I32,
  L: I32,
  S: I32,
  D: I32,
  DV: I32,
  scale: F32,
  causal: I32,
  bias: Ptr,
  bsB: I32,
  bsH: I32,
  bsL: I32,
];
/** The arguments before scratch: the arrays, then the shape. */
type Head = [q: Ptr, k: Ptr, v: Ptr, out: Ptr, lse: Ptr, weights: Ptr, ...shape: Shape];
type BackHead = [q: Ptr, k: Ptr, v: Ptr, out: Ptr, dout: Ptr, lse: Ptr, dq: Ptr, dk: Ptr, dv: Ptr, ...shape: Shape];

const K = declareExports('attention.ts', {
  attentionScratchFloats: sig<[l: I32, d: I32, dv: I32], I32>(3),
  attention: sig<[...Head, scratch: Ptr]>(20),
  attentionBackward: sig<[...BackHead, scratch: Ptr]>(23),
  /** (batch, head) pairs [bh0, bh1) only: what one thread computes. */
  attentionRange: sig<[...Head, scratch: Ptr, bh0: I32, bh1: I32]>(22),
  attentionBackwardRange: sig<[...BackHead, scratch: Ptr, bh0: I32, bh1: I32]>(25),
});

/** The `Shape` arguments of both kernels for `p`, with the bias at `pb`. */
function shapeArgs(p: HostAttentionParams, pb: number): number[] {
  const { b, h, l, s, d, dv, bias } = p;
  return [
    b,
    h,
    p.hk ?? h,
    l,
    s,
    d,
    dv,
    p.scale,
    p.causal ? 1 : 0,
    pb,
    bias?.strideB ?? 0,
    bias?.strideH ?? 0,
    bias?.strideL ?? 0,
  ];
}

function scratchBytes(p: HostAttentionParams): number {
  return Math.ceil((K().attentionScratchFloats(p.l, p.d, p.dv) * 4) / 16) * 16;
}

/** The first staged arguments of both kernels: q, k and v (HK KV heads), as long as `p` says, read only. */
function qkvArgs(q: Float32Array, k: Float32Array, v: Float32Array, p: HostAttentionParams): Arg[] {
  const { b: B, h: H, l: L, s: S, d: D, dv: DV } = p;
  const HK = p.hk ?? H;
  return [
    { x: q.subarray(0, B * H * L * D), mode: 'in' },
    { x: k.subarray(0, B * HK * S * D), mode: 'in' },
    { x: v.subarray(0, B * HK * S * DV), mode: 'in' },
  ];
}

/** Threads for an attention call: one per part of the (batch, head) pairs, when the work pays. */
function attentionParts(p: HostAttentionParams, backward: boolean): number {
  const flops = 2 * p.b * p.h * p.l * p.s * (p.d + p.dv) * (backward ? 2 : 1);
  return Math.min(p.b * p.h, threadsFor(flops));
}

/**
 * Run an attention range kernel over the (batch, head) pairs of `p` split into `parts` (the caller
 * takes the first); `head` is the kernel's arguments before scratch, each part gets its own scratch.
 */
function splitHeads(
  kernel: 'attentionRange' | 'attentionBackwardRange',
  head: number[],
  scratch: number,
  p: HostAttentionParams,
  parts: number,
): void {
  const own = K()[kernel] as (...a: number[]) => void;
  const perPart = scratchBytes(p);
  const bh = p.b * p.h;
  // Parts hold whole groups of query heads: a KV head's dK and dV sum over its group within one thread.
  const group = p.h / (p.hk ?? p.h);
  const chunk = Math.ceil(bh / group / parts) * group;
  if (parts === 1) {
    own(...head, scratch, 0, bh);
    return;
  }
  const args = Array.from({ length: parts - 1 }, (_, w) => {
    const b0 = Math.min(bh, (w + 1) * chunk),
      b1 = Math.min(bh, (w + 2) * chunk);
    return b1 > b0 ? [...head, scratch + (w + 1) * perPart, b0, b1] : null;
  });
  runParallel(kernel, args, () => own(...head, scratch, 0, Math.min(bh, chunk)));
}

export const attention: HostKernels['attention'] = (q, k, v, out, lse, weights, p) => {
  const { b: B, h: H, l: L, s: S, dv: DV, bias } = p;
  if (B * H * L === 0) return;
  if (S === 0) {
    // No keys: the js twin's empty softmax (0/0), written out directly.
    out.fill(NaN, 0, B * H * L * DV);
    lse.fill(-Infinity, 0, B * H * L);
    return;
  }
  const parts = attentionParts(p, false);
  staged(
    [
      ...qkvArgs(q, k, v, p),
      { x: out.subarray(0, B * H * L * DV), mode: 'out' },
      { x: lse.subarray(0, B * H * L), mode: 'out' },
      { x: weights ? weights.subarray(0, B * H * L * S) : null, mode: 'out' },
      { x: bias ? bias.data : null, mode: 'in' },
    ],
    scratchBytes(p) * parts,
    ([pq, pk, pv, po, pl, pw, pb, scratch]) => {
      const head = [pq!, pk!, pv!, po!, pl!, pw!, ...shapeArgs(p, pb!)];
      splitHeads('attentionRange', head, scratch!, p, parts);
    },
  );
};

export const attentionBackward: HostKernels['attentionBackward'] = (q, k, v, out, dout, lse, dq, dk, dv, p) => {
  const { b: B, h: H, l: L, s: S, d: D, dv: DV, bias } = p;
  const HK = p.hk ?? H;
  dq.fill(0, 0, B * H * L * D);
  dk.fill(0, 0, B * HK * S * D);
  dv.fill(0, 0, B * HK * S * DV);
  if (B * H * L * S === 0) return;
  const parts = attentionParts(p, true);
  staged(
    [
      ...qkvArgs(q, k, v, p),
      { x: out.subarray(0, B * H * L * DV), mode: 'in' },
      { x: dout.subarray(0, B * H * L * DV), mode: 'in' },
      { x: lse.subarray(0, B * H * L), mode: 'in' },
      { x: dq.subarray(0, B * H * L * D), mode: 'out' },
      { x: dk.subarray(0, B * HK * S * D), mode: 'out' },
      { x: dv.subarray(0, B * HK * S * DV), mode: 'out' },
      { x: bias ? bias.data : null, mode: 'in' },
    ],
    scratchBytes(p) * parts,
    ([pq, pk, pv, po, pdo, pl, pdq, pdk, pdv, pb, scratch]) => {
      const head = [pq!, pk!, pv!, po!, pdo!, pl!, pdq!, pdk!, pdv!, ...shapeArgs(p, pb!)];
      splitHeads('attentionBackwardRange', head, scratch!, p, parts);
    },
  );
};

wasmKernels.register('attention', { attention, attentionBackward });
