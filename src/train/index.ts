/** Training: `import { train } from 'qkv'`. */
export { PRESETS, type Preset } from './presets.ts';
export { Trainer, PAPER_RECIPE, evaluateLoss, averageWeights, type TrainerOptions, type StepResult, type TrainerPosition } from './trainer.ts';
export {
  LmTrainer, LM_RECIPE, LM_PRESETS, evaluateLm, encodeLines, decodeLines,
  type LmTrainerOptions, type LmPreset, type LmStepResult, type LmTrainerPosition, type LmTokenizer,
} from './lm.ts';
