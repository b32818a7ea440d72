/**
 * The part of a training recipe that the translation trainer (trainer.ts) and the language-model
 * trainer (lm.ts) share: the optimiser's constants, clipping and the seed. Each trainer's options
 * extend it with its own schedule and batches.
 */
export interface CommonTrainerOptions {
  /** Adam β1, β2. */
  betas: [number, number];
  /** Adam ε. */
  eps: number;
  /** Decoupled weight decay (AdamW); which parameters it shrinks is each trainer's choice (see there). */
  weightDecay: number;
  /** Clip the global gradient norm (0 = off). */
  clipNorm: number;
  /** Seeds the batches of every step and, at construction, dropout. */
  seed: number;
}
