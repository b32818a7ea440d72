/**
 * Cross-entropy with label smoothing, forward and backward (assembly/crossentropy.ts), behind the
 * Backend interface. Split among the threads by rows (each row is computed exactly as one thread
 * would), when the work pays: the logits of a translation batch are thousands of rows of the
 * vocabulary's width. Arrays are used in place or copied in and out (`staged`).
 */
import type { HostKernels } from '../backend.ts';
import { declareExports, sig, type F32, type I32, type Ptr } from './loader.ts';
import { splitUnits } from './parallel.ts';
import { reduceLosses, rowScales } from '../js/crossentropy.ts';
import { wasmKernels } from './registry.ts';
import { staged } from './stage.ts';

// Both run on a part of the rows: the caller offsets the addresses (the thread pool calls them too).
declareExports('crossentropy.ts', {
  /** Returns the number of counted rows. */
  crossEntropy: sig<[logits: Ptr, targets: Ptr, losses: Ptr, rows: I32, cols: I32, ignoreIndex: I32, eps: F32], I32>(7),
  crossEntropyBackward:
    sig<[logits: Ptr, targets: Ptr, rowScale: Ptr, dlogits: Ptr, rows: I32, cols: I32, ignoreIndex: I32, eps: F32]>(8),
});

const kernels = {
  crossEntropy(logits, targets, losses, reduced, rows, cols, ignoreIndex, labelSmoothing, mean) {
    let count = 0;
    for (let r = 0; r < rows; r++) if (targets[r] !== ignoreIndex) count++;
    if (rows === 0) return reduceLosses(losses, rows, count, reduced, mean);
    staged(
      [
        { x: logits, mode: 'in' },
        { x: targets, mode: 'in' },
        { x: losses, mode: 'out' },
      ],
      0,
      ([l, t, o]) =>
        splitUnits('crossEntropy', rows, 4 * cols, (r0, r1) => [
          l! + 4 * r0 * cols,
          t! + 4 * r0,
          o! + 4 * r0,
          r1 - r0,
          cols,
          ignoreIndex,
          labelSmoothing,
        ]),
    );
    reduceLosses(losses, rows, count, reduced, mean);
  },

  crossEntropyBackward(logits, targets, gradOut, perRow, reduced, dlogits, rows, cols, ignoreIndex, labelSmoothing) {
    if (rows === 0) return;
    const rowScale = rowScales(gradOut, perRow, reduced, rows);
    staged(
      [
        { x: logits, mode: 'in' },
        { x: targets, mode: 'in' },
        { x: rowScale, mode: 'in' },
        { x: dlogits, mode: 'out' },
      ],
      0,
      ([l, t, s, o]) =>
        splitUnits('crossEntropyBackward', rows, 4 * cols, (r0, r1) => [
          l! + 4 * r0 * cols,
          t! + 4 * r0,
          s! + 4 * r0,
          o! + 4 * r0 * cols,
          r1 - r0,
          cols,
          ignoreIndex,
          labelSmoothing,
        ]),
    );
  },
} satisfies Pick<HostKernels, 'crossEntropy' | 'crossEntropyBackward'>;

export const { crossEntropy, crossEntropyBackward } = kernels;

wasmKernels.register('crossentropy', { crossEntropy, crossEntropyBackward });
