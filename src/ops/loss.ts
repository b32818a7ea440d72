import { record } from '../autograd/engine.ts';
import { shapeToString } from '../tensor/shape.ts';
import { Tensor, full } from '../tensor/tensor.ts';
import { empty, f32, K } from './util.ts';

/** Options of {@link crossEntropy}, torch's names. */
export interface CrossEntropyOptions {
  /** Targets equal to this contribute nothing, and are not counted by 'mean'. Default -100. */
  ignoreIndex?: number;
  /** ε of label smoothing (§5.4 of the paper uses 0.1). Default 0. */
  labelSmoothing?: number;
  /** 'mean' over the counted targets (default), 'sum', or 'none': one loss per target, shaped as `target`. */
  reduction?: 'mean' | 'sum' | 'none';
}

/**
 * Cross-entropy from logits, fused with log-softmax, as torch.nn.functional.cross_entropy.
 * One layout difference from torch: classes are the LAST dim, so logits (..., C) pair with targets
 * (...) — the natural layout of a (B, T, vocab) decoder output, no transpose needed.
 */
export function crossEntropy(logits: Tensor, target: Tensor, options: CrossEntropyOptions = {}): Tensor {
  const { ignoreIndex = -100, labelSmoothing = 0, reduction = 'mean' } = options;
  const ld = f32(logits, 'crossEntropy', 'input');
  if (target.dtype !== 'int32')
    throw new Error(`crossEntropy: target must be int32 class indices, got ${target.dtype}`);
  if (logits.ndim < 1 || target.ndim !== logits.ndim - 1 || target.shape.some((d, i) => d !== logits.shape[i])) {
    throw new Error(
      `crossEntropy: target shape ${shapeToString(target.shape)} must equal ` +
        `input shape ${shapeToString(logits.shape)} without its last (class) ` +
        `dim`,
    );
  }
  if (!(labelSmoothing >= 0 && labelSmoothing <= 1))
    throw new Error(`crossEntropy: labelSmoothing must be in [0, 1], got ${labelSmoothing}`);
  const c = logits.shape[logits.ndim - 1];
  const rows = target.size;
  const td = target.data as Int32Array;
  for (let i = 0; i < rows; i++) {
    if (td[i] !== ignoreIndex && (td[i] < 0 || td[i] >= c)) {
      throw new Error(`crossEntropy: target ${td[i]} at position ${i} is out of range for ${c} classes`);
    }
  }
  const losses = new Float32Array(rows);
  const count = K().crossEntropy(ld, td, losses, rows, c, ignoreIndex, labelSmoothing);
  let out: Tensor;
  const rowScale = new Float32Array(rows);
  if (reduction === 'none') {
    out = new Tensor(losses, target.shape, 'float32');
  } else {
    let s = 0;
    for (let i = 0; i < rows; i++) s += losses[i];
    // torch returns NaN for a mean over zero counted targets; so do we (0/0).
    out = full([], reduction === 'mean' ? s / count : s);
    rowScale.fill(reduction === 'mean' ? 1 / count : 1);
  }
  return record(out, 'crossEntropy', [logits], (g) => {
    const gd = g.data as Float32Array;
    if (reduction === 'none') for (let i = 0; i < rows; i++) rowScale[i] = gd[i];
    else for (let i = 0; i < rows; i++) rowScale[i] *= gd[0];
    const dl = empty(logits.shape);
    K().crossEntropyBackward(ld, td, rowScale, dl.data as Float32Array, rows, c, ignoreIndex, labelSmoothing);
    return [dl];
  });
}

/** Mean squared error. */
export function mseLoss(input: Tensor, target: Tensor): Tensor {
  const a = f32(input, 'mseLoss', 'input');
  const b = f32(target, 'mseLoss', 'target');
  if (a.length !== b.length)
    throw new Error(
      `mseLoss: input shape ${shapeToString(input.shape)} and target shape ${shapeToString(target.shape)} differ`,
    );
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] - b[i]) ** 2;
  const out = full([], s / a.length);
  return record(out, 'mseLoss', [input], (g) => {
    const dx = empty(input.shape);
    const dd = dx.data as Float32Array;
    const k = (2 * g.data[0]) / a.length;
    for (let i = 0; i < a.length; i++) dd[i] = k * (a[i] - b[i]);
    return [dx];
  });
}
