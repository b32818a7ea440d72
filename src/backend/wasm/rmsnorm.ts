/**
 * RMS norm, forward and backward (assembly/rmsnorm.ts), behind the Backend interface. Arrays are used in
 * place when they live in wasm memory, copied in and out otherwise (`staged`).
 */
import type { HostKernels } from '../backend.ts';
import { declareExports, sig, type F32, type I32, type Ptr } from './loader.ts';
import { wasmKernels } from './registry.ts';
import { staged } from './stage.ts';

const K = declareExports('rmsnorm.ts', {
  rmsNorm: sig<[x: Ptr, w: Ptr, out: Ptr, rstd: Ptr, rows: I32, cols: I32, eps: F32]>(7),
  rmsNormBackward: sig<[x: Ptr, w: Ptr, rstd: Ptr, dy: Ptr, dx: Ptr, dw: Ptr, rows: I32, cols: I32]>(8),
});

const kernels = {
  rmsNorm(x, weight, out, rstd, rows, cols, eps) {
    if (rows * cols === 0) return;
    staged(
      [
        { x, mode: 'in' },
        { x: weight, mode: 'in' },
        { x: out, mode: 'out' },
        { x: rstd, mode: 'out' },
      ],
      0,
      ([a, w, o, r]) => K().rmsNorm(a!, w!, o!, r!, rows, cols, eps),
    );
  },

  rmsNormBackward(x, weight, rstd, dy, dx, dweight, rows, cols) {
    if (rows * cols === 0) return;
    staged(
      [
        { x, mode: 'in' },
        { x: weight, mode: 'in' },
        { x: rstd, mode: 'in' },
        { x: dy, mode: 'in' },
        { x: dx, mode: 'out' },
        { x: dweight, mode: 'inout' },
      ],
      0,
      ([a, w, r, d, o, dw]) => K().rmsNormBackward(a!, w!, r!, d!, o!, dw!, rows, cols),
    );
  },
} satisfies Pick<HostKernels, 'rmsNorm' | 'rmsNormBackward'>;

export const { rmsNorm, rmsNormBackward } = kernels;

wasmKernels.register('rmsnorm', { rmsNorm, rmsNormBackward });
