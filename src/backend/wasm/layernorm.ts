/**
 * Layer norm, forward and backward (assembly/layernorm.ts), behind the Backend interface. Arrays
 * are used in place when they live in wasm memory, copied in and out otherwise (`staged`).
 */
import type { HostKernels } from '../backend.ts';
import { declareExports, sig, type F32, type I32, type Ptr } from './loader.ts';
import { wasmKernels } from './registry.ts';
import { staged } from './stage.ts';

const K = declareExports('layernorm.ts', {
  layerNorm: sig<[x: Ptr, w: Ptr, b: Ptr, out: Ptr, mean: Ptr, rstd: Ptr, rows: I32, cols: I32, eps: F32]>(9),
  layerNormBackward:
    sig<[x: Ptr, w: Ptr, mean: Ptr, rstd: Ptr, dy: Ptr, dx: Ptr, dw: Ptr, db: Ptr, rows: I32, cols: I32]>(10),
});

const kernels = {
  layerNorm(x, weight, bias, out, mean, rstd, rows, cols, eps) {
    if (rows * cols === 0) return;
    staged(
      [
        { x, mode: 'in' },
        { x: weight, mode: 'in' },
        { x: bias, mode: 'in' },
        { x: out, mode: 'out' },
        { x: mean, mode: 'out' },
        { x: rstd, mode: 'out' },
      ],
      0,
      ([a, w, b, o, m, r]) => K().layerNorm(a!, w!, b!, o!, m!, r!, rows, cols, eps),
    );
  },

  layerNormBackward(x, weight, mean, rstd, dy, dx, dweight, dbias, rows, cols) {
    if (rows * cols === 0) return;
    staged(
      [
        { x, mode: 'in' },
        { x: weight, mode: 'in' },
        { x: mean, mode: 'in' },
        { x: rstd, mode: 'in' },
        { x: dy, mode: 'in' },
        { x: dx, mode: 'out' },
        { x: dweight, mode: 'inout' },
        { x: dbias, mode: 'inout' },
      ],
      0,
      ([a, w, m, r, d, o, dw, db]) => K().layerNormBackward(a!, w!, m!, r!, d!, o!, dw!, db!, rows, cols),
    );
  },
} satisfies Pick<HostKernels, 'layerNorm' | 'layerNormBackward'>;

export const { layerNorm, layerNormBackward } = kernels;

wasmKernels.register('layernorm', { layerNorm, layerNormBackward });
