/**
 * The wasm layer norm (src/backend/wasm/layernorm.ts, assembly/layernorm.ts) against its js twin,
 * with and without affine parameters, on awkward shapes, both builds.
 */
import { test } from 'node:test';
import { close, randomSource, twinRunner, variants } from './twins.ts';
import { setWasmVariant } from '../../src/backend/wasm/loader.ts';

const { randn } = randomSource(7);
const both = twinRunner(randn);

const ROWS = [1, 3, 17];
const COLS = [1, 3, 4, 5, 17, 64, 131];

for (const variant of variants) {
  test(`wasm (${variant}) layerNorm forward/backward (with and without affine) match js`, () => {
    setWasmVariant(variant);
    for (const r of ROWS)
      for (const c of COLS)
        for (const affine of [true, false]) {
          const x = randn(r * c, 3);
          const w = affine ? randn(c) : null;
          const bias = affine ? randn(c) : null;
          const f = both([r * c, r, r], (be, [o, m, s]) => be.layerNorm(x, w, bias, o!, m!, s!, r, c, 1e-5));
          for (let i = 0; i < 3; i++) close(f.wasm[i]!, f.js[i]!, `layerNorm ${r}x${c} out ${i}`);
          const [, mean, rstd] = f.js;
          const dy = randn(r * c);
          const b = both(
            [r * c, c, c],
            (be, [dx, dw, db]) =>
              be.layerNormBackward(x, w, mean!, rstd!, dy, dx!, affine ? dw! : null, affine ? db! : null, r, c),
            1,
          );
          for (let i = 0; i < 3; i++)
            close(
              b.wasm[i]!,
              b.js[i]!,
              `layerNormBackward ${r}x${c} ${['dx', 'dw (accumulated)', 'db (accumulated)'][i]}`,
            );
        }
  });
}
