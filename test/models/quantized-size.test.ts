/**
 * Issue 58, point 5: q4 is 4.5 bits a weight (llama.cpp's Q4_0: 32 four-bit values and one float16 scale a
 * block), the tied embedding table of a Llama-family model included, so a SmolLM2-135M-shaped model (30 layers,
 * 576 wide, 9 heads, 3 KV heads, 1536 MLP, 49152 vocabulary, tied head) is at least 7 times smaller than its
 * fp32 weights, in memory and in its file. The model is built without initialisation (its float32 weights are
 * never written) and made q4 as `pipeline(..., { dtype: 'q4' })` makes it (applyDType); it is never run. Bytes
 * are counted from what is held (each tensor's dtype and size) and from the file written; both are also checked
 * against the formula, so a scale of 32 bits (5 bits a weight: 6.4×) or an int8 table (6.1×) fails.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { writeSafetensors } from '../../src/io/safetensors.ts';
import { GPT } from '../../src/models/gpt.ts';
import { decoderConfigFromHf } from '../../src/models/hf/llama.ts';
import { applyDType } from '../../src/pipelines/options.ts';
import { quantizedForFile } from '../../src/tensor/quantize.ts';
import type { Tensor } from '../../src/tensor/tensor.ts';

/** SmolLM2-135M's config.json, the fields that shape its weights. */
const SMOLLM2_135M = {
  model_type: 'llama',
  hidden_size: 576,
  intermediate_size: 1536,
  num_hidden_layers: 30,
  num_attention_heads: 9,
  num_key_value_heads: 3,
  vocab_size: 49152,
  max_position_embeddings: 8192,
  rms_norm_eps: 1e-5,
  rope_theta: 100000,
  tie_word_embeddings: true,
  hidden_act: 'silu',
};

/** Bytes a tensor holds: q4 half a byte a value, float16 two, int8 one, float32 four. */
const BYTES: Record<string, number> = { q4: 0.5, float16: 2, int8: 1, float32: 4 };
const held = (t: Tensor) => t.size * BYTES[t.dtype]!;

test('q4 of a SmolLM2-135M-shaped model: 4.5 bits a weight with the tied table, 7× smaller than fp32', () => {
  const config = decoderConfigFromHf(SMOLLM2_135M);
  const model = new GPT(config, { init: false });
  const params = model.numParameters();
  assert.ok(params > 134e6 && params < 135e6, `${params} parameters (SmolLM2-135M has 134,515,008)`);
  const fp32 = 4 * params;
  // The float parameters by kind: 2-D weights (to be q4) and 1-D norm weights (kept float32).
  let matrices = 0;
  let vectors = 0;
  for (const p of model.parameters()) {
    if (p.ndim === 2) matrices += p.size;
    else vectors += p.size;
  }
  assert.equal(matrices + vectors, params);

  applyDType([model], 'q4', 'SmolLM2-135M-shaped');
  const sd = model.stateDict();
  assert.equal(sd['wte.weight']!.dtype, 'q4', 'the tied table (the head too) is q4');
  assert.equal(sd['wte.weight_scale']!.dtype, 'float16');
  assert.equal(sd['h.29.mlp.down_proj.weight']!.dtype, 'q4');
  assert.equal(sd['h.0.attn.in_proj_weight_scale']!.dtype, 'float16');
  assert.equal(model.numParameters(), params, 'quantized weights count as the parameters they stand for');

  // In memory: every matrix 4.5 bits a weight (a half byte a value, 2 bytes a block of 32), norms float32.
  const memory = Object.values(sd).reduce((n, t) => n + held(t), 0);
  assert.equal(memory, matrices * (0.5 + 2 / 32) + vectors * 4);
  const ratio = fp32 / memory;
  assert.ok(ratio >= 7, `fp32 ${fp32} bytes / q4 ${memory} bytes = ${ratio.toFixed(3)}, below 7`);

  // The file (`qkv export --dtype q4`'s layout): U8 values, F16 scales, F32 norms, plus its JSON header.
  const q = quantizedForFile(sd, { rest: 'F32' });
  assert.equal(q.dtype['wte.weight_scale'], 'F16');
  const file = writeSafetensors(q.tensors, { dtype: q.dtype }).byteLength;
  const header = file - memory;
  assert.ok(header > 0 && header < 200_000, `the file is the weights' bytes plus a header (${header} bytes)`);
  assert.ok(fp32 / file >= 7, `fp32 ${fp32} bytes / q4 file ${file} bytes = ${(fp32 / file).toFixed(3)}`);
});
