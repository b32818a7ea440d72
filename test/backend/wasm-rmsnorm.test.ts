/**
 * The wasm RMS norm (src/backend/wasm/rmsnorm.ts, assembly/rmsnorm.ts) against its js twin, with and without a
 * weight, dweight accumulated into non-zero values, on awkward shapes, both builds.
 */
import { test } from 'node:test';
import { close, randomSource, twinRunner, variants } from './twins.ts';
import { setWasmVariant } from '../../src/backend/wasm/loader.ts';

const { randn } = randomSource(58);
const both = twinRunner(randn);

for (const variant of variants) {
  test(`wasm (${variant}) rmsNorm forward/backward (with and without weight) match js`, () => {
    setWasmVariant(variant);
    for (const r of [1, 3, 17])
      for (const c of [1, 3, 4, 5, 17, 64, 131])
        for (const affine of [true, false]) {
          const x = randn(r * c, 3);
          const w = affine ? randn(c) : null;
          const f = both([r * c, r], (be, [o, s]) => be.rmsNorm(x, w, o!, s!, r, c, 1e-6));
          close(f.wasm[0]!, f.js[0]!, `rmsNorm ${r}x${c} out`);
          close(f.wasm[1]!, f.js[1]!, `rmsNorm ${r}x${c} rstd`);
          const dy = randn(r * c);
          const b = both(
            [r * c, c],
            (be, [dx, dw]) => be.rmsNormBackward(x, w, f.js[1]!, dy, dx!, affine ? dw! : null, r, c),
            1,
          );
          close(b.wasm[0]!, b.js[0]!, `rmsNormBackward ${r}x${c} dx`);
          close(b.wasm[1]!, b.js[1]!, `rmsNormBackward ${r}x${c} dweight (accumulated)`);
        }
  });
}
