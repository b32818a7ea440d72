/**
 * The wasm embedding and its scatter-add gradient (src/backend/wasm/embedding.ts,
 * assembly/embedding.ts) against the js twins, bit for bit: repeated ids, padding, empty.
 */
import { test } from 'node:test';
import { hostBackend } from '../../src/backend/backend.ts';
import { jsBackend as jsB } from '../../src/backend/js/index.ts';
import { wasmBackend as wasmB } from '../../src/backend/wasm/index.ts';
import { setWasmVariant } from '../../src/backend/wasm/loader.ts';
import { randomSource, routed, sameBits, variants, w } from './twins.ts';
const jsBackend = hostBackend(jsB);
const wasmBackend = hostBackend(wasmB);

const { rand, randn } = randomSource(11);

for (const variant of variants) {
  test(`wasm (${variant}) embedding and its scatter-add gradient match js (repeated ids, padding, empty)`, () => {
    setWasmVariant(variant);
    for (const dim of [1, 3, 4, 5, 17])
      for (const nIds of [0, 1, 6, 41])
        for (const pad of [-1, 0, 3]) {
          const num = 11;
          const weight = randn(num * dim);
          const ids = Int32Array.from({ length: nIds }, (_, i) =>
            i % 5 === 0 ? 0 : i % 4 === 1 ? 3 : Math.floor(rand() * num),
          );
          const ref = new Float32Array(nIds * dim);
          jsBackend.embedding(weight, ids, ref, dim);
          const out = w(randn(nIds * dim, 2));
          const what = `embedding ${nIds} ids, dim ${dim}`;
          routed(nIds > 0 ? 'wasm' : 'js', what, () => wasmBackend.embedding(w(weight), ids, out, dim));
          sameBits(out, ref, what);
          // Backward accumulates into a gradient that already holds something.
          const dy = randn(nIds * dim);
          const dw0 = randn(num * dim);
          const dref = dw0.slice();
          jsBackend.embeddingBackward(dy, ids, dref, dim, pad);
          const dw = w(dw0);
          routed(nIds > 0 ? 'wasm' : 'js', `${what} backward`, () =>
            wasmBackend.embeddingBackward(w(dy), ids, dw, dim, pad),
          );
          sameBits(dw, dref, `${what} backward, paddingIdx ${pad}`);
          if (pad >= 0 && ids.includes(pad)) {
            // The padding row got nothing.
            sameBits(
              dw.subarray(pad * dim, (pad + 1) * dim),
              dw0.subarray(pad * dim, (pad + 1) * dim),
              `${what}: padding row untouched`,
            );
          }
          const plain = dw0.slice();
          if (nIds > 0)
            routed('js', `${what} backward plain`, () => wasmBackend.embeddingBackward(dy, ids, plain, dim, pad));
          sameBits(plain, dref, `${what} backward plain`);
        }
  });
}
