/**
 * gptWeightBytes (src/models/gpt-memory.ts), what the explorer estimates before it loads a folder (issue 63,
 * point 4): for GPT-2's layout (learned positions, LayerNorm, biases), a grouped-query Llama (tied, RMS norm, SwiGLU)
 * and a Qwen2-like one (q/k/v biases, untied head), the bytes it gives from the config alone equal the bytes of the
 * state dict of the model built from that config, as it is (fp32) and after `quantize({ dtype })` (int8, q4: its
 * tables int8, or q4 in the tied Llama), each tensor counted by its dtype and storage length. A width q4 cannot
 * take is refused in one line, as quantize refuses it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GPT, type GPTConfig } from '../../src/models/gpt.ts';
import { gptRunBytes, gptWeightBytes } from '../../src/models/gpt-memory.ts';
import { storageLength } from '../../src/tensor/storage.ts';

const held = (m: GPT): number =>
  Object.values(m.stateDict()).reduce(
    (n, t) =>
      n +
      storageLength(t.dtype, t.size) *
        (t.dtype === 'float32' || t.dtype === 'int32' ? 4 : t.dtype === 'float16' ? 2 : 1),
    0,
  );

const GPT2_LIKE: GPTConfig = {
  vocabSize: 50,
  blockSize: 24,
  nLayer: 2,
  nHead: 2,
  nEmbd: 64,
  dropout: 0,
  positions: 'learned',
};
const LLAMA_GQA: GPTConfig = {
  vocabSize: 70,
  blockSize: 32,
  nLayer: 2,
  nHead: 4,
  nKVHead: 2,
  nEmbd: 64,
  dFf: 96,
  dropout: 0,
  positions: 'rotary',
  norm: 'rms',
  mlp: 'swiglu',
  qkvBias: false,
  outBias: false,
  mlpBias: false,
  tiedHead: true,
};
const QWEN_UNTIED: GPTConfig = { ...LLAMA_GQA, qkvBias: true, tiedHead: false, headDim: 32 };

for (const [name, c] of Object.entries({ GPT2_LIKE, LLAMA_GQA, QWEN_UNTIED }))
  test(`${name}: the estimated bytes are the state dict's, in fp32, int8 and q4`, () => {
    const fp32 = new GPT(c, { init: false });
    const est = gptWeightBytes(c, null);
    assert.equal(est.fp32, held(fp32));
    assert.equal(est.held, est.fp32);
    for (const dtype of ['int8', 'q4'] as const) {
      const m = new GPT(c, { init: false }).quantize({ dtype });
      const e = gptWeightBytes(c, dtype);
      assert.equal(e.fp32, est.fp32);
      assert.equal(e.held, held(m), `${name} ${dtype}`);
      assert.ok(e.held < e.fp32 / (dtype === 'int8' ? 3 : 5), `${name} ${dtype}: ${e.held} of ${e.fp32}`);
      assert.equal(e.tables, dtype === 'q4' && name === 'LLAMA_GQA' ? 'q4' : 'int8');
    }
  });

test('q4 of a width that is not a multiple of 32 is refused in one line; a bad dtype is named', () => {
  const c = { ...GPT2_LIKE, nEmbd: 48 };
  assert.throws(() => new GPT(c, { init: false }).quantize({ dtype: 'q4' }), /multiple of 32/);
  assert.throws(
    () => gptWeightBytes(c, 'q4'),
    /q4 needs every matrix's width a multiple of 32: this model has one 48 wide/,
  );
  assert.throws(() => gptWeightBytes(c, 'fp16' as never), /dtype must be 'int8', 'q4' or null/);
});

test("a run's KV cache and maps: keys and values of the KV heads, a map per layer × head", () => {
  // 2 layers × 2 KV heads × 16 wide × 10 tokens × (k, v) × 4 bytes; 2 × 4 maps of 10 × 10 floats.
  assert.deepEqual(gptRunBytes(LLAMA_GQA, 10), { kvCache: 2 * 2 * 2 * 16 * 10 * 4, maps: 2 * 4 * 100 * 4 });
});
