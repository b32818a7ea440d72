import { Generator } from '../tensor/random.ts';
import { shapeToString } from '../tensor/shape.ts';
import { Tensor } from '../tensor/tensor.ts';
import { backward } from './engine.ts';
import { noGrad } from './grad-mode.ts';

/** Options of {@link gradcheck}. */
export interface GradcheckOptions {
  /** Central-difference step. float32 arithmetic makes ~1e-2 the sweet spot for O(1) values. */
  eps?: number;
  /** Absolute tolerance: an element passes when |numeric − analytic| ≤ atol + rtol·|numeric| (default 1e-2). */
  atol?: number;
  /** Relative tolerance (default 1e-2). */
  rtol?: number;
  /** Seed of the random projection R (default 1234). */
  seed?: number;
}

/** What {@link gradcheck} found. */
export interface GradcheckReport {
  /** Whether every element's analytic gradient matched its finite difference. */
  ok: boolean;
  /** The largest |numeric − analytic| seen (up to the first mismatch). */
  maxAbsError: number;
  /** The first mismatch, if any: input index, element, analytic and numeric values. */
  failure: { input: number; index: number; analytic: number; numeric: number } | null;
}

/**
 * Compare backward() with central finite differences of L = Σ fn(inputs)·R for a fixed random R
 * (a random projection catches errors a plain sum would hide, e.g. in softmax). Every element of
 * every input that requires grad is perturbed; use small tensors.
 */
export function gradcheck(
  fn: (...inputs: Tensor[]) => Tensor,
  inputs: Tensor[],
  options: GradcheckOptions = {},
): GradcheckReport {
  const { eps = 1e-2, atol = 1e-2, rtol = 1e-2, seed = 1234 } = options;
  const out = fn(...inputs);
  const gen = new Generator(seed);
  const r = new Float64Array(out.size);
  for (let i = 0; i < r.length; i++) r[i] = gen.uniform() * 2 - 1;
  const loss = (t: Tensor): number => {
    let s = 0;
    const v = t.dataSync();
    for (let i = 0; i < t.size; i++) s += v[i] * r[i];
    return s;
  };
  for (const x of inputs) x.grad = null;
  backward(out, new Tensor(Float32Array.from(r), out.shape, 'float32'));
  let maxAbsError = 0;
  for (const [ii, x] of inputs.entries()) {
    if (!x.requiresGrad) continue;
    if (!x.grad)
      throw new Error(`gradcheck: input ${ii} (shape ${shapeToString(x.shape)}) requires grad but received none`);
    const analytic = x.grad.dataSync();
    const d = x.dataSync<Float32Array>();
    for (let i = 0; i < d.length; i++) {
      const orig = d[i];
      const [plus, minus] = noGrad(() => {
        d[i] = orig + eps;
        const p = loss(fn(...inputs));
        d[i] = orig - eps;
        const m = loss(fn(...inputs));
        d[i] = orig;
        return [p, m];
      });
      const numeric = (plus - minus) / (2 * eps);
      const err = Math.abs(numeric - analytic[i]);
      maxAbsError = Math.max(maxAbsError, err);
      if (!(err <= atol + rtol * Math.abs(numeric))) {
        return { ok: false, maxAbsError: err, failure: { input: ii, index: i, analytic: analytic[i], numeric } };
      }
    }
  }
  return { ok: true, maxAbsError, failure: null };
}
