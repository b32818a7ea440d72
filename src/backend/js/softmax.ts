import type { HostKernels } from '../backend.ts';
import { jsKernels } from './registry.ts';

/** Row-wise softmax, max-subtracted for stability. */
export const softmax: HostKernels['softmax'] = (x, out, rows, cols) => {
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    let max = -Infinity;
    for (let j = 0; j < cols; j++) if (x[o + j] > max) max = x[o + j];
    let sum = 0;
    for (let j = 0; j < cols; j++) {
      const e = Math.exp(x[o + j] - max);
      out[o + j] = e;
      sum += e;
    }
    const inv = 1 / sum;
    for (let j = 0; j < cols; j++) out[o + j] *= inv;
  }
};

export const softmaxBackward: HostKernels['softmaxBackward'] = (y, dy, dx, rows, cols) => {
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    let dot = 0;
    for (let j = 0; j < cols; j++) dot += dy[o + j] * y[o + j];
    for (let j = 0; j < cols; j++) dx[o + j] = y[o + j] * (dy[o + j] - dot);
  }
};

export const logSoftmax: HostKernels['logSoftmax'] = (x, out, rows, cols) => {
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    let max = -Infinity;
    for (let j = 0; j < cols; j++) if (x[o + j] > max) max = x[o + j];
    let sum = 0;
    for (let j = 0; j < cols; j++) sum += Math.exp(x[o + j] - max);
    const lse = max + Math.log(sum);
    for (let j = 0; j < cols; j++) out[o + j] = x[o + j] - lse;
  }
};

export const logSoftmaxBackward: HostKernels['logSoftmaxBackward'] = (y, dy, dx, rows, cols) => {
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    let sum = 0;
    for (let j = 0; j < cols; j++) sum += dy[o + j];
    for (let j = 0; j < cols; j++) dx[o + j] = dy[o + j] - Math.exp(y[o + j]) * sum;
  }
};

jsKernels.register('softmax', { softmax, softmaxBackward, logSoftmax, logSoftmaxBackward });
