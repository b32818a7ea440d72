/**
 * The wasm Adam/AdamW (src/backend/wasm/adam.ts, assembly/adam.ts) against the js twin over
 * several steps, bit for bit, on arrays in wasm memory; ordinary arrays take the twin.
 */
import { test } from 'node:test';
import { hostBackend } from '../../src/backend/backend.ts';
import { jsBackend as jsB } from '../../src/backend/js/index.ts';
import { wasmBackend as wasmB } from '../../src/backend/wasm/index.ts';
import { setWasmVariant } from '../../src/backend/wasm/loader.ts';
import { alloc } from '../../src/backend/wasm/memory.ts';
import { assertClose } from '../helpers/assert.ts';
import { randomSource, routed, sameBits, variants, w } from './twins.ts';
const jsBackend = hostBackend(jsB);
const wasmBackend = hostBackend(wasmB);

const { randn } = randomSource(11);

for (const variant of variants) {
  test(`wasm (${variant}) Adam and AdamW over several steps equal the js twin (and 1e-6 relative is asked at the least)`, () => {
    setWasmVariant(variant);
    for (const n of [1, 3, 5, 1001])
      for (const [wd, decoupled] of [
        [0, false],
        [0.1, false],
        [0.01, true],
        [0, true],
      ] as const) {
        const p0 = randn(n, 2);
        const jp = p0.slice(),
          jm = new Float32Array(n),
          jv = new Float32Array(n);
        const wp = w(p0),
          wm = alloc(n),
          wv = alloc(n),
          wg = alloc(n);
        for (let step = 1; step <= 6; step++) {
          const g = randn(n);
          if (n > 2) g[2] = 0; // a zero gradient: m and v decay only
          wg.set(g);
          jsBackend.adam(jp, g, jm, jv, 1e-2, 0.9, 0.98, 1e-9, wd, decoupled, step);
          routed('wasm', 'adam', () => wasmBackend.adam(wp, wg, wm, wv, 1e-2, 0.9, 0.98, 1e-9, wd, decoupled, step));
        }
        const what = `adam n ${n} wd ${wd} decoupled ${decoupled}`;
        assertClose(wp, jp, `${what}: param`, 0, 1e-6);
        assertClose(wm, jm, `${what}: m`, 1e-12, 1e-6);
        assertClose(wv, jv, `${what}: v`, 1e-12, 1e-6);
        sameBits(wp, jp, `${what}: param (bit for bit)`);
        sameBits(wm, jm, `${what}: m (bit for bit)`);
        sameBits(wv, jv, `${what}: v (bit for bit)`);
        // Plain arrays take the twin.
        const pp = p0.slice();
        routed('js', 'adam plain', () =>
          wasmBackend.adam(
            pp,
            randn(n),
            new Float32Array(n),
            new Float32Array(n),
            1e-2,
            0.9,
            0.98,
            1e-9,
            wd,
            decoupled,
            1,
          ),
        );
      }
  });
}
