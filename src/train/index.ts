/** Training: `import { train } from 'qkv'`. */
export { Trainer, PAPER_RECIPE, evaluateLoss, averageWeights, type TrainerOptions, type StepResult, type TrainerPosition } from './trainer.ts';
