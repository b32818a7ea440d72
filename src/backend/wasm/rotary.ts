/**
 * Rotary position embedding (assembly/rotary.ts) behind the Backend interface: x (outer, T, heads, D) turned
 * by the (T, D/2) tables. Arrays are used in place when they live in wasm memory, copied otherwise (`staged`;
 * an out that is x itself is then copied once, in and out).
 */
import type { HostKernels } from '../backend.ts';
import { declareExports, sig, type I32, type Ptr } from './loader.ts';
import { wasmKernels } from './registry.ts';
import { staged } from './stage.ts';

const K = declareExports('rotary.ts', {
  rotary:
    sig<[x: Ptr, cos: Ptr, sin: Ptr, out: Ptr, outer: I32, positions: I32, heads: I32, dim: I32, inverse: I32]>(9),
});

export const rotary: HostKernels['rotary'] = (x, cos, sin, out, outer, positions, heads, dim, inverse) => {
  const n = outer * positions * heads * dim;
  if (n === 0) return;
  const half = positions * (dim >> 1);
  const inPlace = x === out;
  staged(
    [
      { x: x.subarray(0, n), mode: inPlace ? 'inout' : 'in' },
      { x: cos.subarray(0, half), mode: 'in' },
      { x: sin.subarray(0, half), mode: 'in' },
      { x: inPlace ? null : out.subarray(0, n), mode: 'out' },
    ],
    0,
    ([a, c, s, o]) => K().rotary(a!, c!, s!, inPlace ? a! : o!, outer, positions, heads, dim, inverse ? 1 : 0),
  );
};

wasmKernels.register('rotary', { rotary });
