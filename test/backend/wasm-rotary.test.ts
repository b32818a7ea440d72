/**
 * The wasm rotary embedding (src/backend/wasm/rotary.ts, assembly/rotary.ts) against its js twin: forward and
 * inverse, heads before or after the positions, half-widths that are not multiples of 4, in place, both builds.
 * Each output is two float32 products and a sum in both, so the plain-SIMD build is bit-identical to js.
 */
import { test } from 'node:test';
import { close, randomSource, sameBits, twinRunner, variants, w } from './twins.ts';
import { setWasmVariant } from '../../src/backend/wasm/loader.ts';
import { hostBackend } from '../../src/backend/backend.ts';
import { wasmBackend } from '../../src/backend/wasm/index.ts';

const { randn } = randomSource(59);
const both = twinRunner(randn);

for (const variant of variants) {
  test(`wasm (${variant}) rotary matches js (forward, inverse, in place)`, () => {
    setWasmVariant(variant);
    for (const [outer, T, heads, D] of [
      [1, 1, 1, 2],
      [2, 5, 1, 6],
      [3, 7, 2, 10],
      [1, 3, 9, 64],
      [2, 4, 3, 34],
    ])
      for (const inverse of [false, true]) {
        const n = outer * T * heads * D;
        const x = randn(n, 2);
        const cos = randn((T * D) / 2);
        const sin = randn((T * D) / 2);
        const f = both([n], (be, [o]) => be.rotary(x, cos, sin, o!, outer, T, heads, D, inverse));
        const what = `rotary ${outer}x${T}x${heads}x${D} inverse=${inverse}`;
        if (variant === 'simd') sameBits(f.wasm[0]!, f.js[0]!, what);
        else close(f.wasm[0]!, f.js[0]!, what);
        const inPlace = w(x);
        hostBackend(wasmBackend).rotary(inPlace, cos, sin, inPlace, outer, T, heads, D, inverse);
        close(inPlace, f.js[0]!, `${what} in place`);
      }
  });
}
