/**
 * Drawing the next token from a language model's logits: temperature, then top-k, then top-p
 * (nucleus), the order Hugging Face's `generate` applies them, with a seeded generator so a run
 * can be repeated exactly.
 */
import type { Generator as RandomGenerator } from '../tensor/random.ts';

/**
 * How the next token is drawn from the logits: temperature, then top-k, then top-p (the defaults sample from
 * the full softmax).
 */
export interface SamplingOptions {
  /** Logits are divided by it before the softmax: < 1 sharpens, > 1 flattens. 0 = greedy (argmax). Default 1. */
  temperature?: number;
  /** Keep only the k most probable tokens (ties broken towards the lower id). Default: all. */
  topK?: number;
  /**
   * Nucleus sampling (Holtzman et al. 2020): keep the smallest set of most probable tokens whose
   * probabilities (after temperature and top-k) sum to at least p. In (0, 1]; default 1 (all).
   */
  topP?: number;
}

/**
 * Throws, naming `name` and the option, unless temperature is finite and ≥ 0, topK a positive integer and topP
 * in (0, 1].
 */
export function checkSamplingOptions(o: SamplingOptions, name = 'sample'): void {
  const { temperature = 1, topK, topP = 1 } = o;
  if (!(temperature >= 0) || !Number.isFinite(temperature))
    throw new Error(`${name}: temperature must be a finite number >= 0, got ${temperature}`);
  if (topK !== undefined && (!Number.isInteger(topK) || topK < 1))
    throw new Error(`${name}: topK must be a positive integer, got ${topK}`);
  if (!(topP > 0 && topP <= 1)) throw new Error(`${name}: topP must be in (0, 1], got ${topP}`);
}

/** The index of the largest value (the first one on ties). */
export function argmax(x: ArrayLike<number>): number {
  let best = 0;
  for (let j = 1; j < x.length; j++) if (x[j] > x[best]) best = j;
  return best;
}

/**
 * The distribution a token is drawn from: probabilities (float64, summing to 1) after temperature,
 * top-k and top-p, zero for every filtered id. Temperature 0 gives all the mass to the argmax.
 * Logits of −∞ have probability 0; NaN logits are an error.
 */
export function samplingDistribution(logits: ArrayLike<number>, options: SamplingOptions = {}): Float64Array {
  checkSamplingOptions(options, 'samplingDistribution');
  const V = logits.length;
  if (V === 0) throw new Error('samplingDistribution: no logits');
  let max = -Infinity;
  for (let j = 0; j < V; j++) {
    if (Number.isNaN(logits[j])) throw new Error(`samplingDistribution: logit ${j} is NaN`);
    if (logits[j] > max) max = logits[j];
  }
  if (max === -Infinity) throw new Error('samplingDistribution: every logit is -Infinity');
  const p = new Float64Array(V);
  const temperature = options.temperature ?? 1;
  if (temperature === 0 || max === Infinity) {
    p[argmax(logits)] = 1;
    return p;
  }
  for (let j = 0; j < V; j++) p[j] = Math.exp((logits[j] - max) / temperature);
  const topK = options.topK ?? V;
  const topP = options.topP ?? 1;
  if (topK < V || topP < 1) {
    // Most probable first; equal probabilities in id order.
    const order = Array.from({ length: V }, (_, j) => j).sort((a, b) => p[b] - p[a] || a - b);
    let keep = Math.min(topK, V);
    if (topP < 1) {
      let total = 0;
      for (let r = 0; r < keep; r++) total += p[order[r]];
      let cum = 0;
      for (let r = 0; r < keep; r++) {
        cum += p[order[r]];
        if (cum >= topP * total) {
          keep = r + 1;
          break;
        }
      }
    }
    for (let r = keep; r < V; r++) p[order[r]] = 0;
  }
  let total = 0;
  for (let j = 0; j < V; j++) total += p[j];
  for (let j = 0; j < V; j++) p[j] /= total;
  return p;
}

/**
 * One token drawn from `samplingDistribution(logits, options)` by inverting its CDF with one
 * uniform draw from `generator` (greedy, temperature 0, draws nothing).
 */
export function sampleToken(logits: ArrayLike<number>, options: SamplingOptions, generator: RandomGenerator): number {
  if ((options.temperature ?? 1) === 0) {
    checkSamplingOptions(options, 'sampleToken');
    return argmax(logits);
  }
  const p = samplingDistribution(logits, options);
  const u = generator.uniform();
  let cum = 0;
  let last = 0;
  for (let j = 0; j < p.length; j++) {
    if (p[j] === 0) continue;
    cum += p[j];
    last = j;
    if (u < cum) return j;
  }
  return last; // u within rounding of 1
}
