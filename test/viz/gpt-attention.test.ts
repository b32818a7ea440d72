import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { generate } from '../../src/decode/gpt.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { decodeLines } from '../../src/text/lines.ts';
import { headsOf, modelKind } from '../../src/viz/attention-data.ts';
import { mapsGridSvg, mapsHeadViewSvg, mapsHeatmapSvg, mapsModelViewSvg } from '../../src/viz/attention-maps.ts';
import {
  causalAttention,
  generateWithAttention,
  gptMaps,
  gptTitle,
  lineSeparatorId,
  loadGptFromFiles,
  type LoadedGpt,
} from '../../src/viz/gpt-attention.ts';
import { GPT_HEADS, GPT_LAYERS, makeTinyGpt } from '../e2e/tiny-model.ts';

const { dir, model, tokenizer } = makeTinyGpt();
const sep = lineSeparatorId(tokenizer);
const lm: LoadedGpt = { model, tokenizer, separatorId: sep };
const count = (s: string, re: RegExp) => (s.match(re) ?? []).length;

test('every map of a generation: [layer][head][T][T], rows summing to 1, nothing above the diagonal', () => {
  const g = generateWithAttention(lm, 'A dog runs', { maxTokens: 12, stopAtLineEnd: false });
  const T = g.ids.length;
  assert.equal(g.promptLength, 1 + 'A dog runs'.length, 'a line start, then one id per character');
  assert.equal(g.ids[0], sep);
  assert.equal(T, g.promptLength + 12);
  assert.deepEqual(g.tokens.slice(0, 4), ['⏎', 'A', '␣', 'd']);
  assert.equal(g.attention.length, GPT_LAYERS);
  for (const layer of g.attention) {
    assert.equal(layer.length, GPT_HEADS);
    for (const m of layer) {
      assert.equal(m.length, T);
      for (let i = 0; i < T; i++) {
        assert.equal(m[i].length, T);
        assert.ok(Math.abs(m[i].reduce((a, b) => a + b, 0) - 1) < 1e-4, `row ${i} sums to 1`);
        for (let j = i + 1; j < T; j++) assert.equal(m[i][j], 0, `(${i}, ${j}) above the diagonal`);
        assert.ok(m[i][i] > 0);
      }
    }
  }
  assert.equal(g.attention[0][0][0][0], 1, 'the first position sees only itself');
});

test('the continuation is what qkv generate draws, and its text', () => {
  const g = generateWithAttention(lm, 'Two men', { maxTokens: 10, stopAtLineEnd: false });
  const fed = g.ids.slice(0, g.promptLength);
  const ref = generate(model, fed, { maxTokens: 10, temperature: 0 });
  assert.deepEqual(g.ids.slice(g.promptLength), ref.ids);
  assert.equal(g.continuation, decodeLines(tokenizer, ref.ids, sep));
  const s1 = generateWithAttention(lm, 'Two men', { maxTokens: 10, temperature: 1, seed: 5 });
  const s2 = generateWithAttention(lm, 'Two men', { maxTokens: 10, temperature: 1, seed: 5 });
  assert.deepEqual(s1.ids, s2.ids, 'same seed, same tokens');
  assert.deepEqual(s1.attention, s2.attention);
});

test("the weights are those of the model's own forward pass, block by block", () => {
  const ids = tokenizer.encode('A little girl climbs a tree.');
  const got = causalAttention(model, ids);
  noGrad(() => {
    let x = model.embed(new Tensor(Int32Array.from(ids), [1, ids.length], 'int32'));
    let l = 0;
    for (const block of model.h) {
      const a = block.ln1.forward(x);
      const ref = headsOf(
        block.attn.forward(a, a, a, { isCausal: true, needWeights: true, averageAttnWeights: false }).weights!,
      );
      for (let h = 0; h < GPT_HEADS; h++) {
        for (let i = 0; i < ids.length; i++)
          for (let j = 0; j < ids.length; j++)
            assert.ok(Math.abs(got[l][h][i][j] - ref[h][i][j]) < 1e-5, `layer ${l} head ${h} (${i}, ${j})`);
      }
      x = block.forward(x);
      l++;
    }
  });
});

test('stopping at the line end, and the context limit', () => {
  // A seed whose sampled text holds a line end within 30 tokens.
  let found = false;
  for (let seed = 0; seed < 40 && !found; seed++) {
    const free = generateWithAttention(lm, 'A', { maxTokens: 30, temperature: 3, seed, stopAtLineEnd: false });
    const k = free.ids.indexOf(sep, free.promptLength);
    if (k < 0) continue;
    found = true;
    const stopped = generateWithAttention(lm, 'A', { maxTokens: 30, temperature: 3, seed });
    assert.deepEqual(stopped.ids, free.ids.slice(0, k + 1));
    assert.equal(stopped.lineEnded, true);
    assert.ok(!stopped.continuation.endsWith('\n'));
    assert.equal(stopped.tokens.at(-1), '⏎');
  }
  assert.ok(found, 'some seed ends a line');
  const long = generateWithAttention(lm, 'A dog runs in the park.', { maxTokens: 100, stopAtLineEnd: false });
  assert.equal(long.ids.length, model.config.blockSize, 'cut to the context');
  assert.equal(long.cut, true);
  assert.throws(() => generateWithAttention(lm, '  '), /generate: the prompt is empty/);
  assert.throws(
    () => generateWithAttention(lm, 'a'.repeat(48)),
    /the prompt is 48 tokens long; this model's context holds 48/,
  );
  assert.throws(() => generateWithAttention(lm, 'A', { maxTokens: 0 }), /maxTokens must be a positive integer, got 0/);
});

test("loading a folder's files gives the same model; bad files are named", () => {
  const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
  const tok = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'));
  const weights = readFileSync(join(dir, 'model.safetensors'));
  const loaded = loadGptFromFiles(cfg, tok, weights);
  assert.equal(modelKind(cfg), 'gpt');
  const a = generateWithAttention(lm, 'A man', { maxTokens: 8 });
  const b = generateWithAttention(loaded, 'A man', { maxTokens: 8 });
  assert.deepEqual(b.ids, a.ids);
  assert.deepEqual(b.attention, a.attention);
  assert.throws(
    () => loadGptFromFiles({ ...cfg, format: 'qkv-seq2seq' }, tok, weights),
    /config\.json: expected format 'qkv-gpt' with a 'model' section, got format 'qkv-seq2seq'/,
  );
  assert.throws(
    () => loadGptFromFiles({ ...cfg, tokenizer: 'word' }, tok, weights),
    /config\.json: expected "tokenizer": "char" or "bpe", got 'word'/,
  );
  assert.throws(
    () => loadGptFromFiles(cfg, { type: 'other' }, weights),
    /^Error: tokenizer\.json: CharTokenizer\.fromJSON/,
  );
  assert.throws(
    () => loadGptFromFiles({ ...cfg, model: { ...cfg.model, vocabSize: 7 } }, tok, weights),
    /^Error: tokenizer\.json: \d+ tokens, but config\.json's model\.vocabSize is 7$/,
  );
  assert.throws(
    () => loadGptFromFiles({ ...cfg, model: { ...cfg.model, nEmbd: 32 } }, tok, weights),
    /^Error: model\.safetensors: /,
  );
  assert.throws(
    () => modelKind({ format: 'qkv-bert' }, 'model/config.json'),
    /^Error: model\/config\.json: expected format 'qkv-seq2seq' \(a translation model from qkv train\) or 'qkv-gpt' \(a language model from qkv train-lm\), got format 'qkv-bert'$/,
  );
  assert.throws(() => modelKind([1], 'x.json'), /got format 'undefined'/);
  assert.throws(() => modelKind(null), /config\.json: .*got not a JSON object \(null\)/);
  assert.throws(() => modelKind({ format: 'toString' }), /got format 'toString'/);
});

test('pictures of a generation: masked upper triangle, every layer × head', () => {
  const g = generateWithAttention(lm, 'A dog', { maxTokens: 6, stopAtLineEnd: false });
  const T = g.ids.length;
  const m = gptMaps(g);
  const heat = mapsHeatmapSvg(m, 1, 1);
  assert.equal(count(heat, /<rect class="cell/g), T * T);
  assert.equal(count(heat, /<rect class="cell masked"/g), (T * (T - 1)) / 2);
  assert.match(heat, /causal self-attention · layer 2 · head 2/);
  assert.match(heat, /<title>⏎ → A: 0\.0000 \(masked\)<\/title>/);
  assert.equal(count(mapsModelViewSvg(m), /<g class="thumb/g), GPT_LAYERS * GPT_HEADS);
  assert.equal(count(mapsGridSvg(m, gptTitle(g)), /<svg /g), 1 + GPT_LAYERS * GPT_HEADS);
  // No line from a query to a later key in the head view.
  const hv = mapsHeadViewSvg(m, 0);
  for (const [, r, c] of hv.matchAll(/data-row="(\d+)" data-col="(\d+)"/g))
    assert.ok(Number(c) <= Number(r), `line ${r} → ${c}`);
  assert.throws(() => mapsHeatmapSvg(m, 2, 0), /layer 3 does not exist: the causal self-attention has layers 1\.\.2/);
  assert.throws(() => mapsModelViewSvg({ ...m, maps: [] }), /no causal self-attention to draw/);
});
