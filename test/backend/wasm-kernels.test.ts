/**
 * Every wasm kernel against its js twin (src/backend/js), on awkward shapes: 1, primes, sizes
 * that are not multiples of the SIMD width (4) or of the attention key block (64), masks of every
 * kind (causal with S < L and S > L, additive biases with each broadcast stride, rows whose every
 * key is masked, a first key block wholly masked), both builds (relaxed and plain SIMD).
 *
 * The js twins accumulate some sums in float64 and use Math.exp; the wasm kernels are float32
 * with a polynomial exp. Agreement to 2e-5 + 2e-5·|js| (float32 rounding over a few hundred terms)
 * is asked, with NaN and ±∞ in the same places.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AttentionParams, Backend } from '../../src/backend/backend.ts';
import { jsBackend } from '../../src/backend/js/index.ts';
import { wasmBackend } from '../../src/backend/wasm/index.ts';
import { kernels, setWasmVariant, wasmVariant, type WasmVariant } from '../../src/backend/wasm/loader.ts';
import { alloc, free } from '../../src/backend/wasm/memory.ts';
import { assertClose } from '../helpers/assert.ts';
import { rng, uniformArray } from '../helpers/random.ts';

assert.ok(kernels(), 'the wasm module loads (npm run build:wasm)');
const variants: WasmVariant[] = wasmVariant() === 'simd' ? ['simd'] : ['relaxed-simd', 'simd'];

const rand = rng(7);
const randn = (n: number, scale = 1) => uniformArray(rand, n, scale);

const close = (a: Float32Array, b: Float32Array, what: string) => assertClose(a, b, what, 2e-5, 2e-5);

/** Run `f` on both backends with fresh copies of the outputs (pre-filled, to catch unwritten cells). */
function both(outs: number[], f: (be: Backend, o: Float32Array[]) => unknown, fill = 0): { js: Float32Array[]; wasm: Float32Array[]; rj: unknown; rw: unknown } {
  const init = outs.map((n) => randn(n, fill));
  const js = init.map((x) => x.slice());
  const wasm = init.map((x) => x.slice());
  const rj = f(jsBackend, js);
  const rw = f(wasmBackend, wasm);
  return { js, wasm, rj, rw };
}

const ROWS = [1, 3, 17];
const COLS = [1, 3, 4, 5, 17, 64, 131];

for (const variant of variants) {
  test(`wasm (${variant}) softmax, logSoftmax and their backward match js`, () => {
    setWasmVariant(variant);
    for (const r of ROWS) for (const c of COLS) {
      const x = randn(r * c, 8);
      if (c > 3) x[1] = -Infinity; // a masked score
      const dy = randn(r * c);
      for (const [fwd, bwd] of [['softmax', 'softmaxBackward'], ['logSoftmax', 'logSoftmaxBackward']] as const) {
        const f = both([r * c], (be, [o]) => be[fwd](x, o!, r, c));
        close(f.wasm[0]!, f.js[0]!, `${fwd} ${r}x${c}`);
        const y = f.js[0]!;
        const b = both([r * c], (be, [dx]) => be[bwd](y, dy, dx!, r, c), 1);
        close(b.wasm[0]!, b.js[0]!, `${bwd} ${r}x${c}`);
      }
    }
  });

  test(`wasm (${variant}) layerNorm forward/backward (with and without affine) match js`, () => {
    setWasmVariant(variant);
    for (const r of ROWS) for (const c of COLS) for (const affine of [true, false]) {
      const x = randn(r * c, 3);
      const w = affine ? randn(c) : null;
      const bias = affine ? randn(c) : null;
      const f = both([r * c, r, r], (be, [o, m, s]) => be.layerNorm(x, w, bias, o!, m!, s!, r, c, 1e-5));
      for (let i = 0; i < 3; i++) close(f.wasm[i]!, f.js[i]!, `layerNorm ${r}x${c} out ${i}`);
      const [, mean, rstd] = f.js;
      const dy = randn(r * c);
      const b = both([r * c, c, c], (be, [dx, dw, db]) => be.layerNormBackward(x, w, mean!, rstd!, dy, dx!, affine ? dw! : null, affine ? db! : null, r, c), 1);
      for (let i = 0; i < 3; i++) close(b.wasm[i]!, b.js[i]!, `layerNormBackward ${r}x${c} ${['dx', 'dw (accumulated)', 'db (accumulated)'][i]}`);
    }
  });

  test(`wasm (${variant}) gelu forward/backward match js, including tails and extremes`, () => {
    setWasmVariant(variant);
    for (const n of [1, 3, 4, 7, 1001]) {
      const x = randn(n, 6);
      x[0] = n > 1 ? -30 : 0;
      const dy = randn(n);
      const f = both([n], (be, [o]) => be.gelu(x, o!));
      close(f.wasm[0]!, f.js[0]!, `gelu ${n}`);
      const b = both([n], (be, [dx]) => be.geluBackward(x, dy, dx!));
      close(b.wasm[0]!, b.js[0]!, `geluBackward ${n}`);
    }
  });

  test(`wasm (${variant}) relu forward/backward match js (NaN, ±0, tails)`, () => {
    setWasmVariant(variant);
    for (const n of [1, 3, 4, 9, 1001]) {
      const x = randn(n, 2);
      x[0] = -0;
      if (n > 2) x[2] = NaN;
      const dy = randn(n);
      const f = both([n], (be, [o]) => be.relu(x, o!), 1);
      assert.ok(f.wasm[0]!.every((v, i) => Object.is(v, f.js[0]![i])), `relu ${n}`);
      const b = both([n], (be, [dx]) => be.reluBackward(x, dy, dx!), 1);
      assert.ok(b.wasm[0]!.every((v, i) => Object.is(v, b.js[0]![i])), `reluBackward ${n}`);
    }
  });

  test(`wasm (${variant}) crossEntropy with label smoothing and ignored rows matches js`, () => {
    setWasmVariant(variant);
    for (const r of ROWS) for (const c of [1, 2, 5, 64, 1003]) for (const eps of [0, 0.1]) {
      const logits = randn(r * c, 5);
      const targets = Int32Array.from({ length: r }, (_, i) => (i % 3 === 2 ? -100 : Math.floor(rand() * c)));
      const f = both([r], (be, [losses]) => be.crossEntropy(logits, targets, losses!, r, c, -100, eps), 1);
      assert.equal(f.rw, f.rj, 'count');
      close(f.wasm[0]!, f.js[0]!, `crossEntropy ${r}x${c} eps ${eps}`);
      const scale = randn(r);
      const b = both([r * c], (be, [dl]) => be.crossEntropyBackward(logits, targets, scale, dl!, r, c, -100, eps), 1);
      close(b.wasm[0]!, b.js[0]!, `crossEntropyBackward ${r}x${c} eps ${eps}`);
    }
  });

  test(`wasm (${variant}) fused attention forward (with and without weights) and backward match js on awkward shapes and masks`, () => {
    setWasmVariant(variant);
    const shapes: [number, number, number, number, number, number][] = [
      // B, H, L, S, D, Dv
      [1, 1, 1, 1, 1, 1],
      [2, 3, 5, 7, 3, 5],
      [1, 2, 17, 65, 8, 4],
      [2, 1, 64, 64, 16, 16],
      [1, 2, 70, 13, 17, 33],
      [1, 1, 9, 130, 64, 64],
    ];
    let n = 0;
    for (const [B, H, L, S, D, DV] of shapes) for (const causal of [false, true]) for (const biasKind of ['none', 'full', 'keys', 'heads'] as const) {
      const q = randn(B * H * L * D, 1.5);
      const k = randn(B * H * S * D, 1.5);
      const v = randn(B * H * S * DV);
      let bias: AttentionParams['bias'] = null;
      if (biasKind === 'full') {
        // Per (b, h, i, j), with some masked cells, a fully masked first row and (when S > 64) a
        // fully masked first key block for row 1.
        const data = randn(B * H * L * S, 2);
        for (let i = 0; i < data.length; i += 5) data[i] = -Infinity;
        for (let j = 0; j < S; j++) data[j] = -Infinity;
        if (L > 1 && S > 64) for (let j = 0; j < 64; j++) data[S + j] = -Infinity;
        bias = { data, strideB: H * L * S, strideH: L * S, strideL: S };
      } else if (biasKind === 'keys') {
        // Key padding: (B, 1, 1, S), last key of each batch masked.
        const data = new Float32Array(B * S);
        for (let b = 0; b < B; b++) data[b * S + S - 1] = S > 1 ? -Infinity : 0;
        bias = { data, strideB: S, strideH: 0, strideL: 0 };
      } else if (biasKind === 'heads') {
        bias = { data: randn(H * L * S), strideB: 0, strideH: L * S, strideL: S };
      }
      const p: AttentionParams = { b: B, h: H, l: L, s: S, d: D, dv: DV, scale: 1 / Math.sqrt(D), causal, bias };
      const what = `attention B${B} H${H} L${L} S${S} D${D} Dv${DV} causal=${causal} bias=${biasKind}`;
      const f = both([B * H * L * DV, B * H * L, B * H * L * S], (be, [out, lse, w]) => be.attention(q, k, v, out!, lse!, w!, p), 1);
      close(f.wasm[0]!, f.js[0]!, `${what}: output`);
      close(f.wasm[1]!, f.js[1]!, `${what}: lse`);
      close(f.wasm[2]!, f.js[2]!, `${what}: weights`);
      const g = both([B * H * L * DV, B * H * L], (be, [out, lse]) => be.attention(q, k, v, out!, lse!, null, p), 1);
      close(g.wasm[0]!, f.js[0]!, `${what}: output without weights`);
      const [out, lse] = f.js;
      const dout = randn(B * H * L * DV);
      const b = both([B * H * L * D, B * H * S * D, B * H * S * DV], (be, [dq, dk, dv]) => be.attentionBackward(q, k, v, out!, dout, lse!, dq!, dk!, dv!, p), 1);
      for (let i = 0; i < 3; i++) close(b.wasm[i]!, b.js[i]!, `${what}: ${['dq', 'dk', 'dv'][i]}`);
      n++;
    }
    assert.equal(n, shapes.length * 8);
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
    assert.deepEqual([...big.subarray(0, 3), ...big.subarray(3 + r * c)], new Array(10).fill(0), 'nothing written outside the view');
    free(ow);
    free(new Float32Array(xw.buffer, xw.byteOffset - 4, 1));
  });
}
