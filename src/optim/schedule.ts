/**
 * Learning-rate schedules as small pure functions of the step (counted from 1).
 */

/**
 * The paper's schedule (§5.3): lrate = dModel^-0.5 · min(step^-0.5, step · warmup^-1.5).
 * 1. rises linearly for the first `warmup` steps,
 * 2. peaks at step = warmup with dModel^-0.5 · warmup^-0.5,
 * 3. then decays with the inverse square root of the step.
 * `factor` scales the whole curve (the Annotated Transformer's knob; 1 is the paper).
 */
export function noamLr(step: number, dModel: number, warmup: number, factor = 1): number {
  if (!(step >= 1)) throw new Error(`noamLr: step counts from 1, got ${step}`);
  return factor * dModel ** -0.5 * Math.min(step ** -0.5, step * warmup ** -1.5);
}

/** Linear warmup to `maxLr`, then cosine decay to `minLr` at `totalSteps` (GPT-style). */
export function cosineLr(step: number, maxLr: number, warmup: number, totalSteps: number, minLr = 0): number {
  if (step < warmup) return (maxLr * (step + 1)) / warmup;
  if (step >= totalSteps) return minLr;
  const t = (step - warmup) / Math.max(1, totalSteps - warmup);
  return minLr + 0.5 * (maxLr - minLr) * (1 + Math.cos(Math.PI * t));
}
