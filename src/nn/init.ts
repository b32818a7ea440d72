import { defaultGenerator, type Generator } from '../tensor/random.ts';
import type { Tensor } from '../tensor/tensor.ts';

/** How many withoutInit calls are running: while any is, every initialiser here leaves its tensor as it is. */
let skipping = 0;

/**
 * Build a model that is about to be loaded: `fn` runs with every initialiser of this file a no-op (the tensor
 * returned as it is, no random draws), so its parameters stay as allocated (zeros, LayerNorm's ones) and, on the
 * wasm backend, the pages of a large model are never written before its weights are (a quantized folder's model
 * then never holds its float32 weights in memory: they are quantized from untouched zero pages). Folder readers
 * and `GPT(config, { init: false })` build through it.
 */
export function withoutInit<T>(fn: () => T): T {
  skipping++;
  try {
    return fn();
  } finally {
    skipping--;
  }
}

/** Parameter initialisers, as torch.nn.init (same distributions; our own seeded stream). */
export function uniform_(t: Tensor, low: number, high: number, g: Generator = defaultGenerator): Tensor {
  if (skipping > 0) return t;
  const d = new Float32Array(t.size);
  for (let i = 0; i < d.length; i++) d[i] = low + (high - low) * g.uniform();
  return t.write(d);
}

/** Fill `t` in place with draws from N(mean, std²), as torch.nn.init.normal_; returns `t`. */
export function normal_(t: Tensor, mean = 0, std = 1, g: Generator = defaultGenerator): Tensor {
  if (skipping > 0) return t;
  const d = new Float32Array(t.size);
  for (let i = 0; i < d.length; i++) d[i] = mean + std * g.normal();
  return t.write(d);
}

/** Fill `t` in place with `v`, as torch.nn.init.constant_; returns `t`. */
export function constant_(t: Tensor, v: number): Tensor {
  if (skipping > 0) return t;
  t.device.fill(t.storage, t.dtype, v, t.size);
  return t;
}

function fans(t: Tensor): [number, number] {
  if (t.ndim < 2) throw new Error(`init: fan in/out needs at least 2 dims, got ${t.ndim}`);
  const receptive = t.shape.slice(2).reduce((a, b) => a * b, 1);
  return [t.shape[1] * receptive, t.shape[0] * receptive];
}

/** Glorot & Bengio: U(±√(6/(fanIn+fanOut))). */
export function xavierUniform_(t: Tensor, gain = 1, g: Generator = defaultGenerator): Tensor {
  const [fi, fo] = fans(t);
  const a = gain * Math.sqrt(6 / (fi + fo));
  return uniform_(t, -a, a, g);
}

/** torch.nn.Linear's default: kaiming_uniform(a=√5), which is U(±1/√fanIn). */
export function linearDefault_(t: Tensor, g: Generator = defaultGenerator): Tensor {
  const [fi] = fans(t);
  const b = 1 / Math.sqrt(fi);
  return uniform_(t, -b, b, g);
}
