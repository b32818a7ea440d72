/** Checkpoint averaging (§6.1), apart from the training loop so that it stays browser-safe. */
import { Tensor } from '../tensor/tensor.ts';

/** Element-wise mean of several weight sets (checkpoint averaging, §6.1: the last 5 checkpoints). */
export function averageWeights(sets: readonly Record<string, Tensor>[]): Record<string, Tensor> {
  if (sets.length === 0) throw new Error('averageWeights: no checkpoints given');
  const out: Record<string, Tensor> = {};
  for (const name of Object.keys(sets[0])) {
    const first = sets[0][name];
    const acc = new Float32Array(first.size);
    for (const [i, s] of sets.entries()) {
      const t = s[name];
      if (!t || t.size !== first.size)
        throw new Error(`averageWeights: checkpoint ${i} lacks '${name}' or its shape differs`);
      const d = t.dataSync<Float32Array>();
      for (let j = 0; j < acc.length; j++) acc[j] += d[j];
    }
    for (let j = 0; j < acc.length; j++) acc[j] /= sets.length;
    out[name] = new Tensor(acc, first.shape, 'float32');
  }
  return out;
}
