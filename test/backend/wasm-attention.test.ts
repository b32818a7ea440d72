/**
 * The wasm fused attention (src/backend/wasm/attention.ts, assembly/attention.ts) against its js
 * twin, forward (with and without weights) and backward, on awkward shapes: sizes that are not
 * multiples of the SIMD width (4) or of the key block (64), masks of every kind (causal with
 * S < L and S > L, additive biases with each broadcast stride, rows whose every key is masked, a
 * first key block wholly masked), grouped-query attention (fewer KV heads, each read by several query heads; its
 * dK and dV the sums over them), both builds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HostAttentionParams } from '../../src/backend/backend.ts';
import { close, randomSource, twinRunner, variants } from './twins.ts';
import { setWasmVariant } from '../../src/backend/wasm/loader.ts';

const { randn } = randomSource(7);
const both = twinRunner(randn);

for (const variant of variants) {
  test(`wasm (${variant}) fused attention forward (with and without weights) and backward match js on awkward shapes and masks`, () => {
    setWasmVariant(variant);
    const shapes: [number, number, number, number, number, number, number][] = [
      // B, H, Hk, L, S, D, Dv
      [1, 1, 1, 1, 1, 1, 1],
      [2, 3, 3, 5, 7, 3, 5],
      [1, 2, 2, 17, 65, 8, 4],
      [2, 1, 1, 64, 64, 16, 16],
      [1, 2, 2, 70, 13, 17, 33],
      [1, 1, 1, 9, 130, 64, 64],
      // grouped-query: 3 query heads a KV head; multi-query (1 KV head); a decoding step over 130 keys
      [2, 6, 2, 5, 7, 3, 5],
      [1, 4, 1, 70, 70, 16, 16],
      [1, 9, 3, 1, 130, 8, 8],
      [2, 8, 2, 64, 64, 32, 32],
    ];
    let n = 0;
    for (const [B, H, HK, L, S, D, DV] of shapes)
      for (const causal of [false, true])
        for (const biasKind of ['none', 'full', 'keys', 'heads'] as const) {
          const q = randn(B * H * L * D, 1.5);
          const k = randn(B * HK * S * D, 1.5);
          const v = randn(B * HK * S * DV);
          let bias: HostAttentionParams['bias'] = null;
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
          const p: HostAttentionParams = {
            b: B,
            h: H,
            hk: HK,
            l: L,
            s: S,
            d: D,
            dv: DV,
            scale: 1 / Math.sqrt(D),
            causal,
            bias,
          };
          const what = `attention B${B} H${H} Hk${HK} L${L} S${S} D${D} Dv${DV} causal=${causal} bias=${biasKind}`;
          const f = both(
            [B * H * L * DV, B * H * L, B * H * L * S],
            (be, [out, lse, w]) => be.attention(q, k, v, out!, lse!, w!, p),
            1,
          );
          close(f.wasm[0]!, f.js[0]!, `${what}: output`);
          close(f.wasm[1]!, f.js[1]!, `${what}: lse`);
          close(f.wasm[2]!, f.js[2]!, `${what}: weights`);
          const g = both(
            [B * H * L * DV, B * H * L],
            (be, [out, lse]) => be.attention(q, k, v, out!, lse!, null, p),
            1,
          );
          close(g.wasm[0]!, f.js[0]!, `${what}: output without weights`);
          const [out, lse] = f.js;
          const dout = randn(B * H * L * DV);
          const b = both(
            [B * H * L * D, B * HK * S * D, B * HK * S * DV],
            (be, [dq, dk, dv]) => be.attentionBackward(q, k, v, out!, dout, lse!, dq!, dk!, dv!, p),
            1,
          );
          for (let i = 0; i < 3; i++) close(b.wasm[i]!, b.js[i]!, `${what}: ${['dq', 'dk', 'dv'][i]}`);
          n++;
        }
    assert.equal(n, shapes.length * 8);
  });
}
