/** Optimisers and schedules: `import { optim } from 'qkv'`. */
export { Adam, AdamW, type AdamOptions, type AdamState } from './adam.ts';
export { noamLr, cosineLr } from './schedule.ts';
export { clipGradNorm, clipGradNormAsync } from './clip.ts';
