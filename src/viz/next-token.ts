/**
 * What a GPT predicts next, as Transformer Explainer shows it: the distribution over the whole
 * vocabulary at the last position of a text, after temperature, top-k and top-p (decode/sample.ts,
 * the rules generation uses), its 20 most probable tokens with their probabilities, the mass they
 * hold together, and one token drawn from it with a seed. Pure numbers: the explorer draws them.
 */
import { noGrad } from '../autograd/grad-mode.ts';
import { argmax, samplingDistribution, sampleToken, type SamplingOptions } from '../decode/sample.ts';
import type { GPT } from '../models/gpt.ts';
import * as F from '../ops/index.ts';
import { Generator } from '../tensor/random.ts';
import { Tensor } from '../tensor/tensor.ts';
import { valuesOf } from './attention-data.ts';

export interface NextToken {
  id: number;
  /** Probability after temperature / top-k / top-p (what sampling draws from). */
  p: number;
  /** Probability of the plain softmax (temperature 1, nothing filtered), for comparison. */
  p0: number;
}

export interface NextTokenView {
  /** The `top` most probable tokens, most probable first (ties: lower id first). */
  top: NextToken[];
  /** Their probabilities summed: the share of the distribution the list shows. */
  shownMass: number;
  /** Tokens with a probability above 0 after filtering. */
  kept: number;
  /** One token drawn from the distribution with `seed` (the argmax at temperature 0 or with `greedy`). */
  sampled: number;
  /** Its probability. */
  sampledP: number;
}

/** Logits (vocabSize) at the last of `ids`: one forward pass, no gradients. */
export function lastLogits(model: GPT, ids: readonly number[]): Float32Array {
  const V = model.config.vocabSize;
  return noGrad(() =>
    forwardLogits(model, ids)
      .dataSync<Float32Array>()
      .slice((ids.length - 1) * V, ids.length * V),
  );
}

/** {@link lastLogits} on every device: the last row narrowed on the model's device and read back asynchronously. */
export function lastLogitsAsync(model: GPT, ids: readonly number[]): Promise<Float32Array> {
  const V = model.config.vocabSize;
  const last = noGrad(() => F.narrow(forwardLogits(model, ids).reshape(ids.length, V), 0, ids.length - 1, 1));
  return valuesOf(last);
}

/** The (1, T, vocabSize) logits of one pass over ids, after the checks. */
function forwardLogits(model: GPT, ids: readonly number[]): Tensor {
  if (ids.length === 0) throw new Error('lastLogits: no tokens');
  if (ids.length > model.config.blockSize)
    throw new Error(`lastLogits: ${ids.length} tokens, more than the context of ${model.config.blockSize}`);
  return model.forwardCached(new Tensor(Int32Array.from(ids), [1, ids.length], 'int32'), model.initCache()).logits;
}

/**
 * The next-token view of logits under sampling options; `top` entries (default 20). With `greedy`
 * the distribution is still shown (at the given temperature) and the pick is the argmax.
 */
export function nextTokenView(
  logits: ArrayLike<number>,
  options: SamplingOptions & { seed?: number; greedy?: boolean },
  top = 20,
): NextTokenView {
  const p = samplingDistribution(logits, options);
  const p0 = samplingDistribution(logits, {});
  const order = Array.from({ length: p.length }, (_, i) => i).sort((a, b) => p[b] - p[a] || p0[b] - p0[a] || a - b);
  const shown = order.slice(0, Math.min(top, p.length)).map((id) => ({ id, p: p[id], p0: p0[id] }));
  let kept = 0;
  for (let i = 0; i < p.length; i++) if (p[i] > 0) kept++;
  const sampled = options.greedy ? argmax(logits) : sampleToken(logits, options, new Generator(options.seed ?? 0));
  return { top: shown, shownMass: shown.reduce((s, t) => s + t.p, 0), kept, sampled, sampledP: p[sampled] };
}
