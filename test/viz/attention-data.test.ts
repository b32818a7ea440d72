import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { encoderAttention, loadModelFromFiles, translateWithAttention } from '../../src/viz/attention-data.ts';
import {
  attentionGridSvg,
  attentionHeadViewSvg,
  attentionHeatmapSvg,
  attentionModelViewSvg,
} from '../../src/viz/translation.ts';
import { HEADS, LAYERS, makeTinyModel } from '../e2e/tiny-model.ts';

const { dir, model, tokenizer } = makeTinyModel();
const count = (s: string, re: RegExp) => (s.match(re) ?? []).length;

test('every map of a translation: shapes, rows summing to 1, the causal mask', () => {
  const t = translateWithAttention(model, tokenizer, 'A dog runs in the park.');
  const S = t.srcTokens.length;
  const T = t.tgtTokens.length;
  assert.equal(S, tokenizer.encode('A dog runs in the park.').length);
  assert.equal(T, t.outTokens.length);
  assert.ok(T >= 1);
  assert.equal(t.tgtTokens[0], '<s>');
  for (const [maps, rows, cols] of [
    [t.encoder, S, S],
    [t.decoder, T, T],
    [t.cross, T, S],
  ] as const) {
    assert.equal(maps.length, LAYERS);
    for (const layer of maps) {
      assert.equal(layer.length, HEADS);
      for (const m of layer) {
        assert.equal(m.length, rows);
        for (const row of m) {
          assert.equal(row.length, cols);
          assert.ok(Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-4);
        }
      }
    }
  }
  for (const layer of t.decoder)
    for (const m of layer) for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) assert.equal(m[i][j], 0);
  assert.equal(t.translation, tokenizer.decode(t.outIds));
});

test('the encoder pass that collects weights gives the same memory as Seq2Seq.encode', () => {
  const ids = tokenizer.encode('Two men are playing soccer.');
  const src = new Tensor(Int32Array.from(ids), [1, ids.length], 'int32');
  const { memory } = encoderAttention(model, src);
  const ref = noGrad(() => model.encode(src));
  const a = memory.dataSync<Float32Array>();
  const b = ref.dataSync<Float32Array>();
  assert.equal(a.length, b.length);
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) < 1e-5);
});

test("beam search works too, and loading from the folder's bytes gives the same model", () => {
  const loaded = loadModelFromFiles(
    JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')),
    JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')),
    readFileSync(join(dir, 'model.safetensors')),
  );
  const a = translateWithAttention(model, tokenizer, 'A little girl climbs a tree.', { beam: 3 });
  const b = translateWithAttention(loaded.model, loaded.tokenizer, 'A little girl climbs a tree.', { beam: 3 });
  assert.equal(a.translation, b.translation);
  assert.deepEqual(a.cross[1][0][0], b.cross[1][0][0]);
  assert.throws(() => translateWithAttention(model, tokenizer, '   '), /empty/);
  assert.throws(() => loadModelFromFiles({ format: 'other' }, {}, new Uint8Array()), /qkv-seq2seq/);
});

test('an over-long sentence is cut to the tokens the model reads, and says so (the explorer shows it)', () => {
  const long = 'A dog runs in the park. '.repeat(6).trim();
  const n = tokenizer.encode(long).length;
  assert.ok(n > model.config.maxLen);
  const t = translateWithAttention(model, tokenizer, long);
  assert.equal(t.truncatedFrom, n);
  assert.deepEqual(t.srcIds, tokenizer.encode(long).slice(0, model.config.maxLen));
  assert.equal(t.encoder[0][0].length, model.config.maxLen, 'the encoder saw maxLen positions');
  assert.equal(translateWithAttention(model, tokenizer, 'A dog runs.').truncatedFrom, undefined);
});

test('pictures of a translation', () => {
  const t = translateWithAttention(model, tokenizer, 'A dog runs in the park.');
  const S = t.srcTokens.length;
  const T = t.tgtTokens.length;
  const cross = attentionHeatmapSvg(t, 'cross', 1, 0);
  assert.equal(count(cross, /<rect class="cell/g), T * S);
  assert.equal(count(cross, /class="row-label"/g) <= T, true);
  const dec = attentionHeatmapSvg(t, 'decoder', 0, 'mean');
  assert.equal(count(dec, /class="cell masked"/g), (T * (T - 1)) / 2);
  assert.ok(attentionHeadViewSvg(t, 'encoder', 0).includes('head 2'));
  assert.equal(count(attentionModelViewSvg(t, 'cross'), /<g class="thumb/g), LAYERS * HEADS);
  assert.equal(count(attentionGridSvg(t, 'encoder'), /<svg /g), 1 + LAYERS * HEADS);
  assert.throws(
    () => attentionHeatmapSvg(t, 'cross', 2, 0),
    /layer 3 does not exist: the decoder → encoder cross-attention has layers 1..2/,
  );
  assert.throws(() => attentionHeatmapSvg(t, 'cross', 0, 5), /head 6 does not exist/);
});
