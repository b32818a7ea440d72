/**
 * Softmax and log-softmax, forward and backward (assembly/softmax.ts), behind the Backend
 * interface. Arrays are used in place when they live in wasm memory, copied in and out otherwise
 * (`staged`: the work per element repays the copy).
 */
import type { HostKernels } from '../backend.ts';
import { declareExports, sig, type I32, type Ptr } from './loader.ts';
import { wasmKernels } from './registry.ts';
import { staged } from './stage.ts';

const K = declareExports('softmax.ts', {
  softmax: sig<[x: Ptr, out: Ptr, rows: I32, cols: I32]>(4),
  softmaxBackward: sig<[y: Ptr, dy: Ptr, dx: Ptr, rows: I32, cols: I32]>(5),
  logSoftmax: sig<[x: Ptr, out: Ptr, rows: I32, cols: I32]>(4),
  logSoftmaxBackward: sig<[y: Ptr, dy: Ptr, dx: Ptr, rows: I32, cols: I32]>(5),
});

export const softmax: HostKernels['softmax'] = (x, out, rows, cols) => {
  if (rows * cols === 0) return;
  staged(
    [
      { x, mode: 'in' },
      { x: out, mode: 'out' },
    ],
    0,
    ([px, po]) => K().softmax(px!, po!, rows, cols),
  );
};

export const softmaxBackward: HostKernels['softmaxBackward'] = (y, dy, dx, rows, cols) => {
  if (rows * cols === 0) return;
  staged(
    [
      { x: y, mode: 'in' },
      { x: dy, mode: 'in' },
      { x: dx, mode: 'out' },
    ],
    0,
    ([a, b, c]) => K().softmaxBackward(a!, b!, c!, rows, cols),
  );
};

export const logSoftmax: HostKernels['logSoftmax'] = (x, out, rows, cols) => {
  if (rows * cols === 0) return;
  staged(
    [
      { x, mode: 'in' },
      { x: out, mode: 'out' },
    ],
    0,
    ([px, po]) => K().logSoftmax(px!, po!, rows, cols),
  );
};

export const logSoftmaxBackward: HostKernels['logSoftmaxBackward'] = (y, dy, dx, rows, cols) => {
  if (rows * cols === 0) return;
  staged(
    [
      { x: y, mode: 'in' },
      { x: dy, mode: 'in' },
      { x: dx, mode: 'out' },
    ],
    0,
    ([a, b, c]) => K().logSoftmaxBackward(a!, b!, c!, rows, cols),
  );
};

wasmKernels.register('softmax', { softmax, softmaxBackward, logSoftmax, logSoftmaxBackward });
