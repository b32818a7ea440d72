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
  type LmTrainerOptions,
  type LmStepResult,
  type LmTrainerPosition,
} from './lm.ts';
// Text as a token stream lives in text/ (the model folders use it too); the trainer's users find it here.
export { encodeLines, decodeLines, type LmTokenizer } from '../text/lines.ts';
export { averageWeights } from './average.ts';
// The training loop (loop.ts) writes a run folder with node:fs, so it is imported from its file, not
// from here (this index is the browser-safe library).
