/**
 * T5's relative position bias (nn/relative-position-bias.ts) against the real transformers 5.18
 * (scripts/fixtures/make_hf_seq2seq.py, case t5-blocks): `T5Attention._relative_position_bucket` for every offset
 * −300..300 under four configurations (bidirectional and causal, 32/128, 64/256, 8/20), and `compute_bias` of seeded
 * tables for an encoder, a decoder, a cached decoding step (query 139 against 140 keys) and 3 × 200 — exactly;
 * and `T5LayerNorm`, which qkv's nn.RMSNorm (the Llama family's) computes with eps 1e-6.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RMSNorm } from '../../src/nn/layers.ts';
import { RelativePositionBias, relativePositionBucket } from '../../src/nn/relative-position-bias.ts';
import { Tensor } from '../../src/tensor/tensor.ts';

const FILE = fileURLToPath(new URL('../fixtures/hf-seq2seq/t5-blocks/expected.json', import.meta.url));

interface Expected {
  relative_positions: [number, number];
  buckets: { bidirectional: boolean; num_buckets: number; max_distance: number; buckets: number[] }[];
  layer_norm: { eps: number; weight: number[]; input: number[]; output: number[] };
  biases: {
    is_decoder: boolean;
    query_length: number;
    key_length: number;
    past_seen_tokens: number;
    weight: number[];
    bias: number[];
  }[];
}
const E: Expected = JSON.parse(readFileSync(FILE, 'utf8'));

test("relativePositionBucket: transformers' buckets for every offset −300..300, four configurations", () => {
  const [lo, hi] = E.relative_positions;
  for (const c of E.buckets) {
    const got = [];
    for (let r = lo; r <= hi; r++) got.push(relativePositionBucket(r, c.bidirectional, c.num_buckets, c.max_distance));
    assert.deepEqual(
      got,
      c.buckets,
      `${c.bidirectional ? 'bidirectional' : 'causal'} ${c.num_buckets}/${c.max_distance}`,
    );
  }
});

test("RelativePositionBias: compute_bias's (1, h, L, S) for an encoder, a decoder and a cached step", () => {
  for (const c of E.biases) {
    const h = 4;
    const rpb = new RelativePositionBias(h, 32, 128, !c.is_decoder);
    rpb.loadStateDict({
      'relative_attention_bias.weight': new Tensor(Float32Array.from(c.weight), [32, h], 'float32'),
    });
    const bias = rpb.forward(c.query_length, c.key_length, c.past_seen_tokens);
    assert.deepEqual(bias.shape, [1, h, c.query_length, c.key_length]);
    assert.deepEqual(
      Array.from(bias.dataSync<Float32Array>()),
      Array.from(Float32Array.from(c.bias)),
      JSON.stringify(c.query_length),
    );
  }
  assert.throws(() => new RelativePositionBias(0), /RelativePositionBias: numHeads must be a positive integer, got 0/);
});

test("T5LayerNorm is qkv's RMSNorm with eps 1e-6 (no bias, no mean removed), within 1e-6", () => {
  const c = E.layer_norm;
  const norm = new RMSNorm(16, { eps: c.eps });
  norm.loadStateDict({ weight: new Tensor(Float32Array.from(c.weight), [16], 'float32') });
  const y = norm.forward(new Tensor(Float32Array.from(c.input), [2, 3, 16], 'float32')).dataSync<Float32Array>();
  let worst = 0;
  for (let i = 0; i < y.length; i++) worst = Math.max(worst, Math.abs(y[i] - c.output[i]));
  assert.ok(worst < 1e-6, `max |diff| ${worst}`);
});
