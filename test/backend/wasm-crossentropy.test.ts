/**
 * The wasm cross-entropy (src/backend/wasm/crossentropy.ts, assembly/crossentropy.ts) against its
 * js twin, with label smoothing and ignored rows, both builds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { close, randomSource, twinRunner, variants } from './twins.ts';
import { setWasmVariant } from '../../src/backend/wasm/loader.ts';

const { rand, randn } = randomSource(7);
const both = twinRunner(randn);

const ROWS = [1, 3, 17];

for (const variant of variants) {
  test(`wasm (${variant}) crossEntropy with label smoothing and ignored rows matches js`, () => {
    setWasmVariant(variant);
    for (const r of ROWS)
      for (const c of [1, 2, 5, 64, 1003])
        for (const eps of [0, 0.1]) {
          const logits = randn(r * c, 5);
          const targets = Int32Array.from({ length: r }, (_, i) => (i % 3 === 2 ? -100 : Math.floor(rand() * c)));
          const f = both(
            [r, 2],
            (be, [losses, red]) => be.crossEntropy(logits, targets, losses!, red!, r, c, -100, eps, true),
            1,
          );
          assert.equal(f.wasm[1]![1], f.js[1]![1], 'count');
          close(f.wasm[1]!.subarray(0, 1), f.js[1]!.subarray(0, 1), `crossEntropy ${r}x${c} eps ${eps}: total`);
          close(f.wasm[0]!, f.js[0]!, `crossEntropy ${r}x${c} eps ${eps}`);
          const scale = randn(r);
          const b = both(
            [r * c],
            (be, [dl]) => be.crossEntropyBackward(logits, targets, scale, true, null, dl!, r, c, -100, eps),
            1,
          );
          close(b.wasm[0]!, b.js[0]!, `crossEntropyBackward ${r}x${c} eps ${eps}`);
        }
  });
}
