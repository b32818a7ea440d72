import { record } from '../autograd/engine.ts';
import { shapeToString } from '../tensor/shape.ts';
import { type Tensor, full } from '../tensor/tensor.ts';
import { empty, f32, i32, K, st, upload } from './util.ts';

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
  const td = i32(target, 'crossEntropy', 'target');
  // Targets come from the host (the data); checked where they can be read at once (see embedding).
  const host = target.device.readSync ? target.dataSync<Int32Array>() : null;
  if (host) {
    for (let i = 0; i < rows; i++) {
      if (host[i] !== ignoreIndex && (host[i] < 0 || host[i] >= c)) {
        throw new Error(`crossEntropy: target ${host[i]} at position ${i} is out of range for ${c} classes`);
      }
    }
  }
  const losses = empty(target.shape);
  // [total, count]: the reduction happens in the kernel, so no value comes back to the host.
  const reduced = empty([2]);
  const mean = reduction === 'mean';
  K().crossEntropy(ld, td, st(losses), st(reduced), rows, c, ignoreIndex, labelSmoothing, mean);
  let out = losses;
  if (reduction !== 'none') {
    out = empty([]);
    K().copyRows(reduced.storage, 0, 0, out.storage, 0, 0, 1, 1); // the total, as a scalar
  }
  return record(out, 'crossEntropy', [logits], (g) => {
    const dl = empty(logits.shape);
    const perRow = reduction === 'none';
    K().crossEntropyBackward(
      ld,
      td,
      st(g),
      perRow,
      mean ? st(reduced) : null,
      st(dl),
      rows,
      c,
      ignoreIndex,
      labelSmoothing,
    );
    return [dl];
  });
}

/** Mean squared error. */
export function mseLoss(input: Tensor, target: Tensor): Tensor {
  f32(input, 'mseLoss', 'input');
  f32(target, 'mseLoss', 'target');
  // Computed on the host (no kernel yet): explicit synchronous reads, refused on devices without them.
  const a = input.dataSync<Float32Array>();
  const b = target.dataSync<Float32Array>();
  if (a.length !== b.length)
    throw new Error(
      `mseLoss: input shape ${shapeToString(input.shape)} and target shape ${shapeToString(target.shape)} differ`,
    );
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] - b[i]) ** 2;
  const out = full([], s / a.length);
  return record(out, 'mseLoss', [input], (g) => {
    const dd = new Float32Array(a.length);
    const k = (2 * g.item()) / a.length;
    for (let i = 0; i < a.length; i++) dd[i] = k * (a[i] - b[i]);
    return [upload(dd, input.shape)];
  });
}
