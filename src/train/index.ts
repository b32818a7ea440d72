/** Training: `import { train } from 'qkv'`. */
export { PRESETS, type Preset } from './presets.ts';
export { Trainer, PAPER_RECIPE, evaluateLoss, averageWeights, type TrainerOptions, type StepResult, type TrainerPosition } from './trainer.ts';
