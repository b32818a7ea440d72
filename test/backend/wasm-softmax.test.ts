/**
 * The wasm softmax family (src/backend/wasm/softmax.ts, assembly/softmax.ts) against its js twin
 * on awkward shapes (1, primes, sizes that are not multiples of the SIMD width), with a masked
 * score, both builds; and in place on arrays in wasm memory and on subarray views.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { close, randomSource, twinRunner, variants } from './twins.ts';
import { setWasmVariant } from '../../src/backend/wasm/loader.ts';
import { hostBackend } from '../../src/backend/backend.ts';
import { jsBackend as jsB } from '../../src/backend/js/index.ts';
import { wasmBackend as wasmB } from '../../src/backend/wasm/index.ts';
import { alloc, free } from '../../src/backend/wasm/memory.ts';
const jsBackend = hostBackend(jsB);
const wasmBackend = hostBackend(wasmB);

const { randn } = randomSource(7);
const both = twinRunner(randn);

const ROWS = [1, 3, 17];
const COLS = [1, 3, 4, 5, 17, 64, 131];

for (const variant of variants) {
  test(`wasm (${variant}) softmax, logSoftmax and their backward match js`, () => {
    setWasmVariant(variant);
    for (const r of ROWS)
      for (const c of COLS) {
        const x = randn(r * c, 8);
        if (c > 3) x[1] = -Infinity; // a masked score
        const dy = randn(r * c);
        for (const [fwd, bwd] of [
          ['softmax', 'softmaxBackward'],
          ['logSoftmax', 'logSoftmaxBackward'],
        ] as const) {
          const f = both([r * c], (be, [o]) => be[fwd](x, o!, r, c));
          close(f.wasm[0]!, f.js[0]!, `${fwd} ${r}x${c}`);
          const y = f.js[0]!;
          const b = both([r * c], (be, [dx]) => be[bwd](y, dy, dx!, r, c), 1);
          close(b.wasm[0]!, b.js[0]!, `${bwd} ${r}x${c}`);
        }
      }
  });

  test(`wasm (${variant}) kernels work in place on arrays in wasm memory, and on subarray views`, () => {
    setWasmVariant(variant);
    const [r, c] = [5, 37];
    const xw = alloc(r * c + 1).subarray(1);
    xw.set(randn(r * c, 4));
    const ow = alloc(r * c);
    wasmBackend.softmax(xw, ow, r, c);
    const ref = new Float32Array(r * c);
    jsBackend.softmax(xw, ref, r, c);
    close(ow, ref, 'softmax in wasm memory (misaligned input)');
    const big = new Float32Array(r * c + 10);
    wasmBackend.softmax(xw, big.subarray(3, 3 + r * c), r, c);
    close(big.subarray(3, 3 + r * c), ref, 'softmax into a subarray');
    assert.deepEqual(
      [...big.subarray(0, 3), ...big.subarray(3 + r * c)],
      new Array(10).fill(0),
      'nothing written outside the view',
    );
    free(ow);
    free(new Float32Array(xw.buffer, xw.byteOffset - 4, 1));
  });
}
