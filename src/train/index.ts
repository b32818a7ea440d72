/** Training: `import { train } from 'qkv'`. */
export { PRESETS, type Seq2SeqPreset, type LmPreset } from './presets.ts';
export {
  Seq2SeqTrainer,
  PAPER_RECIPE,
  evaluateSeq2Seq,
  Trainer,
  evaluateLoss,
  type Seq2SeqTrainerOptions,
  type Seq2SeqStepResult,
  type Seq2SeqTrainerPosition,
  type TrainerOptions,
} from './trainer.ts';
export {
  LmTrainer,
  LM_RECIPE,
  evaluateLm,
  encodeLines,
  decodeLines,
  type LmTrainerOptions,
  type LmStepResult,
  type LmTrainerPosition,
  type LmTokenizer,
} from './lm.ts';
export { averageWeights } from './average.ts';
// The training loop (loop.ts) writes a run folder with node:fs, so it is imported from its file, not
// from here (this index is the browser-safe library).
