/**
 * Hugging Face GPT-2 checkpoints in qkv: the tiny GPT-2 that scripts/fixtures/make_hf_gpt2.py
 * writes in HF's exact names and layouts, with logits and per-layer attention from a PyTorch
 * forward written from HF's GPT-2 equations, must come out of qkv's own GPT within 1e-4; the
 * variants HF files come in load the same; anything else is refused in one line naming the key.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { io, models, noGrad, Tensor } from '../../../src/index.ts';
import { ByteLevelBpeTokenizer, tokenizerFromJSON } from '../../../src/text/index.ts';
import { assertClose } from '../../helpers/assert.ts';

const DIR = new URL('../../fixtures/hf-gpt2-tiny/', import.meta.url);
const file = (name: string) => new Uint8Array(readFileSync(new URL(name, DIR)));
const json = (name: string) => JSON.parse(readFileSync(new URL(name, DIR), 'utf8')) as Record<string, unknown>;
const expected = io.readSafetensors(file('expected.safetensors')).tensors;
const inputIds = Array.from(expected.input_ids.dataSync<Int32Array>());
const PROMPT = 'A man is riding a bike';

/** qkv's logits (1, T, V) and per-layer attention (1, h, T, T) for the fixture's input. */
function run(model: models.GPT): { logits: Tensor; attn: Tensor[] } {
  return noGrad(() => {
    const ids = new Tensor(Int32Array.from(inputIds), [1, inputIds.length], 'int32');
    const full = model.forward(ids);
    const r = model.forwardCached(ids, model.initCache(), { needWeights: true });
    assertClose(r.logits, full, 'forwardCached = forward');
    return { logits: full, attn: r.weights! };
  });
}

function checkAgainstPyTorch(model: models.GPT, what: string): void {
  const { logits, attn } = run(model);
  assertClose(logits, expected.logits, `${what}: logits`);
  assert.equal(attn.length, 2);
  attn.forEach((a, i) => assertClose(a, expected[`attn.${i}`], `${what}: attention of layer ${i}`));
}

test("the PyTorch fixture: qkv matches logits and every layer's attention (1e-4)", () => {
  const model = io.readHfGpt2(json('config.json'), file('model.safetensors'));
  assert.deepEqual(
    { ...model.config },
    {
      vocabSize: 317,
      blockSize: 32,
      nLayer: 2,
      nHead: 4,
      nEmbd: 32,
      dropout: 0,
      positions: 'learned',
      activation: 'gelu_tanh',
      layerNormEps: 1e-5,
    },
  );
  assert.equal(model.training, false);
  checkAgainstPyTorch(model, 'hub layout');
  // The fixture must tell the two GELUs apart, or the check above would not see the activation.
  const erf = new models.GPT({ ...model.config, activation: 'gelu' }, { init: false });
  erf.loadStateDict(model.stateDict());
  assert.throws(() => assertClose(run(erf).logits, expected.logits, 'erf gelu'), /logits|erf gelu/);
});

test("the fixture's tokenizer.json is byte-level BPE and encodes the prompt to the fixture's ids, as HF does", () => {
  const tj = json('tokenizer.json');
  const tok = tokenizerFromJSON(tj);
  assert.ok(tok instanceof ByteLevelBpeTokenizer);
  assert.equal(tok.vocabSize, 317);
  assert.deepEqual([tok.eosId, ...tok.encode(PROMPT)], inputIds);
  assert.deepEqual(new HfTokenizer(tj as never, {}).encode(PROMPT).ids, inputIds.slice(1));
  assert.equal(tok.decode(inputIds, { skipSpecialTokens: true }), PROMPT);
});

test("save_pretrained's layout (transformer. prefix, tied lm_head, no mask buffers) and fp16 load the same", () => {
  const hub = io.readSafetensors(file('model.safetensors')).tensors;
  const prefixed: Record<string, Tensor> = {};
  for (const [k, t] of Object.entries(hub)) if (!/\.attn\.bias$/.test(k)) prefixed[`transformer.${k}`] = t;
  prefixed['lm_head.weight'] = hub['wte.weight'];
  checkAgainstPyTorch(io.readHfGpt2(json('config.json'), io.writeSafetensors(prefixed)), 'transformer. prefix');
  checkAgainstPyTorch(models.GPT.fromHuggingFace(json('config.json'), prefixed), 'fromHuggingFace(record)');
  // fp16 weights: the same network up to fp16 rounding of the weights.
  const half = io.readHfGpt2(json('config.json'), io.writeSafetensors(hub, { dtype: 'F16' }));
  assertClose(run(half).logits, expected.logits, 'fp16', 0.05, 0.02);
});

test('streaming one tensor at a time gives the same model; a truncated file is named', async () => {
  const bytes = file('model.safetensors');
  const reads: number[] = [];
  const model = await io.readHfGpt2Streaming(json('config.json'), bytes.length, async (b, e) => {
    reads.push(e - b);
    return bytes.slice(b, e);
  });
  checkAgainstPyTorch(model, 'streamed');
  // Large tables are read in pieces straight into the parameter: the same model with 1000-byte pieces.
  const pieces: number[] = [];
  const chunked = await io.readHfGpt2Streaming(
    json('config.json'),
    bytes.length,
    async (b, e) => {
      pieces.push(e - b);
      return bytes.slice(b, e);
    },
    undefined,
    1000,
  );
  checkAgainstPyTorch(chunked, 'streamed in 1000-byte pieces');
  assert.ok(pieces.filter((n) => n === 1000).length >= 40, 'wte and wpe came in pieces');
  // Never the whole file at once: the largest read is one tensor (wte), and mask buffers are not read.
  assert.ok(Math.max(...reads) <= 317 * 32 * 4 + 8, `largest read ${Math.max(...reads)}`);
  const cut = bytes.slice(0, bytes.length - 1000);
  await assert.rejects(
    io.readHfGpt2Streaming(json('config.json'), cut.length, async (b, e) => cut.slice(b, e)),
    /^Error: safetensors: tensor '.+' has data_offsets \[\d+, \d+\] but the data buffer after the header is only \d+ bytes$/,
  );
  // A reader that returns fewer bytes than asked (the file changed under it).
  await assert.rejects(
    io.readHfGpt2Streaming(json('config.json'), bytes.length, async (b, e) =>
      bytes.slice(b, Math.min(e, bytes.length - 1000)),
    ),
    /^Error: model\.safetensors: tensor '.+' is cut short \(\d+ of \d+ bytes\): the file is truncated$/,
  );
  assert.throws(
    () => io.readHfGpt2(json('config.json'), cut),
    /^Error: safetensors: tensor .* but the data buffer after the header is only \d+ bytes$/,
  );
});

test('a checkpoint of another architecture is refused in one line naming the key', () => {
  const cfg = json('config.json');
  const w = file('model.safetensors');
  const bad = (over: Record<string, unknown>) => () => io.readHfGpt2({ ...cfg, ...over }, w);
  assert.throws(
    bad({ model_type: 'llama' }),
    /^Error: config\.json: model_type 'llama' is not supported \(expected 'gpt2': GPT-2, distilgpt2, gpt2-medium\/large\/xl\)$/,
  );
  assert.throws(
    bad({ activation_function: 'relu' }),
    /^Error: config\.json: activation_function 'relu' is not supported/,
  );
  assert.throws(bad({ n_inner: 100 }), /^Error: config\.json: n_inner 100 is not supported/);
  assert.throws(
    bad({ scale_attn_by_inverse_layer_idx: true }),
    /scale_attn_by_inverse_layer_idx true is not supported/,
  );
  assert.throws(bad({ n_embd: 'big' }), /^Error: config\.json: n_embd must be a positive integer, got "big"$/);
  assert.throws(
    bad({ n_layer: 3 }),
    /^Error: model\.safetensors: tensor for 'h\.2\.ln_1\.weight' is missing \(HF name 'h\.2\.ln_1\.weight'\)$/,
  );
  assert.throws(
    bad({ n_layer: 1 }),
    /^Error: model\.safetensors: tensor 'h\.1\.ln_1\.(weight|bias)' does not fit config\.json \(no 'h\.1\.ln_1\.(weight|bias)' in a model of 1 layers\)$/,
  );
  assert.throws(
    bad({ vocab_size: 300 }),
    /^Error: model\.safetensors: 'wte\.weight' has shape \[317, 32\], config\.json implies \[300, 32\]$/,
  );
  const hub = io.readSafetensors(w).tensors;
  const withExtra = io.writeSafetensors({ ...hub, 'h.0.attn.q_proj.weight': hub['h.0.attn.c_proj.weight'] });
  assert.throws(
    () => io.readHfGpt2(cfg, withExtra),
    /^Error: model\.safetensors: tensor 'h\.0\.attn\.q_proj\.weight' is not part of GPT-2's layout \(another architecture\?\)$/,
  );
  const { 'h.1.mlp.c_fc.weight': _, ...without } = hub;
  assert.throws(
    () => io.readHfGpt2(cfg, io.writeSafetensors(without)),
    /^Error: model\.safetensors: tensor for 'h\.1\.mlp\.c_fc\.weight' is missing \(HF name 'h\.1\.mlp\.c_fc\.weight'\)$/,
  );
  const { 'h.0.attn.c_attn.weight': __, ...noAttn } = hub;
  assert.throws(
    () => io.readHfGpt2(cfg, io.writeSafetensors(noAttn)),
    /is missing \(HF name 'h\.0\.attn\.c_attn\.weight'\)$/,
  );
  const transposed = io.writeSafetensors({
    ...hub,
    'h.0.mlp.c_fc.weight': hub['h.0.mlp.c_fc.weight'].reshape([128, 32]),
  });
  assert.throws(
    () => io.readHfGpt2(cfg, transposed),
    /^Error: model\.safetensors: 'h\.0\.mlp\.c_fc\.weight' has shape \[128, 32\], config\.json implies \[32, 128\]$/,
  );
});
