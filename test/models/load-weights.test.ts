/**
 * Weights that do not fit their config, or that hold NaN/Infinity (issue 13, items 2 and 3): one
 * line naming the count, the first tensors and the config field; a refusal naming the tensor and
 * index; decoding that stops at the step whose output is not finite. The loaders the explorer page
 * runs (loadModelFromFiles, loadGptFromFiles) give the same messages.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generate } from '../../src/decode/gpt.ts';
import { beamSearch, greedy } from '../../src/decode/search.ts';
import { readSafetensors, writeSafetensors } from '../../src/io/safetensors.ts';
import { GPT } from '../../src/models/gpt.ts';
import { checkFinite, describeMismatch, GPT_FIELDS, SEQ2SEQ_FIELDS } from '../../src/models/load-weights.ts';
import { Seq2Seq } from '../../src/models/seq2seq.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { loadGptFromFiles } from '../../src/viz/gpt-attention.ts';
import { loadModelFromFiles } from '../../src/viz/attention-data.ts';
import { makeTinyGpt, makeTinyModel } from '../e2e/tiny-model.ts';

const tiny = makeTinyModel();
const files = (dir: string) => ({
  config: JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')),
  tokenizer: JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')),
  weights: readFileSync(join(dir, 'model.safetensors')),
});

function withValue(weights: Uint8Array, key: string, index: number, value: number): Uint8Array {
  const t = readSafetensors(weights).tensors;
  t[key].dataSync<Float32Array>()[index] = value;
  return writeSafetensors(t);
}

test('a config whose dModel disagrees with the weights: one line with the count, the first three tensors and the field', () => {
  const f = files(tiny.dir);
  const config = { ...f.config, model: { ...f.config.model, dModel: 32, dimFeedforward: 32 } };
  const err = (() => {
    try {
      loadModelFromFiles(config, f.tokenizer, f.weights);
    } catch (e) {
      return (e as Error).message;
    }
    return '';
  })();
  assert.ok(!err.includes('\n'), 'one line');
  assert.match(
    err,
    /^model\.safetensors: the weights do not match config\.json: dModel 32 in config\.json, the weights have 16 \(/,
  );
  const n = Object.keys(tiny.model.stateDict()).length;
  // Every tensor but the feed-forward biases (dimFeedforward 32 both ways) depends on dModel.
  assert.match(
    err,
    new RegExp(
      `\\((\\d+) of ${n} tensors differ in shape \\(embedding\\.weight \\[120, 32\\] in config\\.json, \\[120, 16\\] in the weights; `,
    ),
  );
  assert.match(err, /; and \d+ more\)\)$/);
  assert.ok(err.length < 600, `short: ${err.length} characters`);
});

test('layer counts and vocabulary come from missing or unexpected keys and shapes', () => {
  const own = new Seq2Seq({ ...tiny.model.config, numEncoderLayers: 3 }).stateDict();
  const m = describeMismatch(
    own,
    tiny.model.stateDict(),
    { ...tiny.model.config, numEncoderLayers: 3 },
    SEQ2SEQ_FIELDS,
  )!;
  assert.match(
    m,
    /^the weights do not match config\.json: numEncoderLayers 3 in config\.json, the weights have 2 \(12 tensors missing from the weights \(transformer\.encoder\.layers\.2\.self_attn\.in_proj_weight; /,
  );
  const g = makeTinyGpt();
  const big = new GPT({ ...g.model.config, vocabSize: 50, nLayer: 1 });
  const gm = describeMismatch(big.stateDict(), g.model.stateDict(), big.config, GPT_FIELDS)!;
  assert.match(gm, /vocabSize 50 in config\.json, the weights have 36; nLayer 1 in config\.json, the weights have 2/);
  assert.match(
    gm,
    /1 of \d+ tensors differ in shape \(wte\.weight \[50, 16\] in config\.json, \[36, 16\] in the weights\)/,
  );
  assert.match(
    gm,
    /12 tensors in the weights the model lacks \(h\.1\.ln_1\.weight; h\.1\.ln_1\.bias; h\.1\.attn\.in_proj_weight; and 9 more\)/,
  );
  assert.equal(
    describeMismatch(tiny.model.stateDict(), tiny.model.stateDict(), tiny.model.config, SEQ2SEQ_FIELDS),
    null,
  );
});

test("NaN or Infinity in the weights is refused at load, naming the tensor and index (the page's loaders too)", () => {
  const f = files(tiny.dir);
  const nan = withValue(f.weights, 'embedding.weight', 37, Number.NaN);
  assert.throws(
    () => loadModelFromFiles(f.config, f.tokenizer, nan),
    /^Error: model\.safetensors: tensor 'embedding\.weight' holds NaN at index 37 \(row 2\) of \[120, 16\]: the weights are corrupt/,
  );
  const inf = withValue(f.weights, 'transformer.decoder.norm.bias', 3, -Infinity);
  assert.throws(
    () => loadModelFromFiles(f.config, f.tokenizer, inf),
    /tensor 'transformer\.decoder\.norm\.bias' holds -Infinity at index 3 of \[16\]/,
  );
  const g = makeTinyGpt();
  const gf = files(g.dir);
  assert.throws(
    () => loadGptFromFiles(gf.config, gf.tokenizer, withValue(gf.weights, 'h.1.mlp.c_fc.weight', 5, Infinity)),
    /model\.safetensors: tensor 'h\.1\.mlp\.c_fc\.weight' holds Infinity at index 5 \(row 0\)/,
  );
  assert.doesNotThrow(() => checkFinite(tiny.model.stateDict()));
  assert.doesNotThrow(() => loadModelFromFiles(f.config, f.tokenizer, f.weights));
});

test('decoding stops at the first step whose output is not finite, naming it (greedy, beam, GPT)', () => {
  // Finite weights that overflow: a final layer-norm gain of 3e38 makes the logits infinite.
  const f = files(tiny.dir);
  const { model, tokenizer } = loadModelFromFiles(f.config, f.tokenizer, f.weights);
  (model.stateDict()['transformer.decoder.norm.weight'].dataSync() as Float32Array).fill(3e38);
  const src = new Tensor(
    Int32Array.from(tokenizer.encode('A dog runs.')),
    [1, tokenizer.encode('A dog runs.').length],
    'int32',
  );
  const ids = { bosId: tokenizer.bosId, eosId: tokenizer.eosId };
  assert.throws(
    () => greedy(model, src, ids),
    /^Error: decoding step 1: the model's output is not finite \((NaN|Infinity) for token \d+ of row 0\): its weights or activations hold NaN or Infinity$/,
  );
  assert.throws(
    () => beamSearch(model, src, { ...ids, beamSize: 3 }),
    /decoding step 1: the model's output is not finite/,
  );
  assert.throws(
    () => greedy(model, src, { ...ids, useCache: false }),
    /decoding step 1: the model's output is not finite/,
  );
  const g = makeTinyGpt();
  // Layer norm keeps a GPT's stream finite; its last gain of 3e38 overflows the logits.
  (g.model.stateDict()['ln_f.weight'].dataSync() as Float32Array).fill(3e38);
  assert.throws(
    () => generate(g.model, [1, 2], { maxTokens: 3, temperature: 0 }),
    /^Error: generate: step 1: logit \d+ is (NaN|-?Infinity): the model's weights or activations hold NaN or Infinity$/,
  );
});
