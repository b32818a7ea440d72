export { backward, record } from './engine.ts';
export { noGrad, enableGrad, isGradEnabled } from './grad-mode.ts';
export { gradcheck, type GradcheckOptions } from './gradcheck.ts';
export { checkpoint } from './checkpoint.ts';
