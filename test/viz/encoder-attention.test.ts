/**
 * The explorer's encoder views (issue 57, point 5; src/viz/encoder-attention.ts) on the masked-LM folders of
 * scripts/fixtures/make_hf_encoders.py, against transformers (scripts/fixtures/make_hf_encoder_attention.py):
 * every layer's attention per head over a padded batch's rows (the shorter text padded as `padTo` pads it) equal
 * `output_attentions` (eager); the tokens marked special and padding; the neuron view's softmax equal to the
 * heatmap's row; fill-mask's candidates equal pipeline('fill-mask')'s, and its mask row the attention's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dirSource } from '../../src/folder/node.ts';
import { ofKind, openFolder } from '../../src/folder/open.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import {
  encoderAttentionAsync,
  encoderMaps,
  encoderNeuronViewAsync,
  fillMaskWithAttention,
  positionMaps,
} from '../../src/viz/encoder-attention.ts';
import { flowSubject, textFlowAsync } from '../../src/viz/flow.ts';
import { Tensor } from '../../src/tensor/tensor.ts';

const ROOT = fileURLToPath(new URL('../fixtures/hf-encoders/', import.meta.url));
const FOLDERS = ['bert-mlm', 'distilbert-mlm', 'roberta-mlm', 'xlm-roberta-mlm'];
const open = async (name: string) =>
  ofKind(await openFolder(dirSource(join(ROOT, name)), { ensemble: false }), 'hf-encoder');
const json = (name: string, file: string) => JSON.parse(readFileSync(join(ROOT, name, file), 'utf8'));

test("every layer's attention per head, padded rows included, equals transformers' output_attentions", async () => {
  for (const name of FOLDERS) {
    const enc = await open(name);
    const want = readSafetensors(new Uint8Array(readFileSync(join(ROOT, name, 'attention.safetensors')))).tensors;
    const { texts } = json(name, 'attention.json') as { texts: string[] };
    const [B, T] = want.input_ids.shape;
    const ids = want.input_ids.dataSync<Int32Array>();
    const mask = want.attention_mask.dataSync<Int32Array>();
    for (let b = 0; b < B; b++) {
      const a = await encoderAttentionAsync(enc, texts[b], { padTo: T });
      assert.deepEqual(a.ids, Array.from(ids.subarray(b * T, (b + 1) * T)), `${name} ${b}: ids`);
      assert.deepEqual(
        a.roles.map((r) => r === 'padding'),
        Array.from(mask.subarray(b * T, (b + 1) * T), (m) => m === 0),
        `${name} ${b}: padding`,
      );
      assert.equal(a.attention.length, enc.model.config.numLayers);
      let worst = 0;
      a.attention.forEach((layer, l) => {
        const w = want[`layer${l}`];
        const [, H] = w.shape;
        const d = w.dataSync<Float32Array>();
        assert.equal(layer.length, H);
        layer.forEach((head, hd) =>
          head.forEach((row, i) =>
            row.forEach((v, j) => {
              worst = Math.max(worst, Math.abs(v - d[((b * H + hd) * T + i) * T + j]));
            }),
          ),
        );
      });
      assert.ok(worst <= 2e-6, `${name} ${b}: max |diff| ${worst}`);
    }
  }
});

test('tokens are labelled as written and marked: special tokens, text, padding', async () => {
  const bert = await encoderAttentionAsync(await open('bert-mlm'), 'Two dogs play.', { padTo: 9 });
  assert.equal(bert.tokens[0], '[CLS]');
  assert.equal(bert.roles[0], 'special');
  const sep = bert.tokens.indexOf('[SEP]');
  assert.equal(bert.roles[sep], 'special');
  assert.deepEqual(bert.roles.slice(1, sep), new Array(sep - 1).fill('text'));
  assert.deepEqual(bert.tokens.slice(sep + 1), new Array(9 - sep - 1).fill('[PAD]'));
  assert.deepEqual(bert.roles.slice(sep + 1), new Array(9 - sep - 1).fill('padding'));
  // A padding key is never attended to.
  for (const layer of bert.attention)
    for (const head of layer) for (const row of head) for (let j = sep + 1; j < 9; j++) assert.equal(row[j], 0);
  const roberta = await encoderAttentionAsync(await open('roberta-mlm'), 'Two dogs play.');
  assert.equal(roberta.tokens[0], '<s>');
  assert.equal(roberta.tokens.at(-1), '</s>');
  assert.equal(roberta.tokens[2], '␣dog', 'a byte-level piece with its space as ␣');
  assert.ok(roberta.tokens.every((t) => !t.includes('Ġ')));
  assert.equal(encoderMaps(roberta).causal, false);
  await assert.rejects(encoderAttentionAsync(await open('bert-mlm'), '  '), /the text is empty/);
});

test("the neuron view's softmax is the heatmap's row; padding keys score -Infinity", async () => {
  for (const name of ['bert-mlm', 'roberta-mlm']) {
    const enc = await open(name);
    const a = await encoderAttentionAsync(enc, 'A man in a blue shirt.', { padTo: 12 });
    const real = a.roles.filter((r) => r !== 'padding').length;
    for (const [layer, head, query] of [
      [0, 0, 0],
      [1, 3, 4],
    ]) {
      const nv = await encoderNeuronViewAsync(enc, 'A man in a blue shirt.', layer, head, query, { padTo: 12 });
      assert.equal(nv.keys.length, 12);
      nv.weights.forEach((w, j) =>
        assert.ok(Math.abs(w - a.attention[layer][head][query][j]) < 1e-6, `${name} ${layer}/${head}/${query}/${j}`),
      );
      assert.ok(nv.scores.slice(real).every((s) => s === -Infinity));
    }
  }
});

test("fill-mask: the pipeline's candidates (transformers' pipeline('fill-mask')), and the mask's attention", async () => {
  for (const name of FOLDERS) {
    const enc = await open(name);
    const e = json(name, 'expected.json') as {
      masked: string[];
      fillMask: { score: number; token: number; token_str: string; sequence: string }[][];
    };
    const f = await fillMaskWithAttention(enc, e.masked[0], 5);
    assert.deepEqual(
      f.results.map((r) => [r.token, r.token_str, r.sequence]),
      e.fillMask[0].map((r) => [r.token, r.token_str, r.sequence]),
      name,
    );
    f.results.forEach((r, k) => assert.ok(Math.abs(r.score - e.fillMask[0][k].score) < 1e-6, `${name} score ${k}`));
    assert.equal(f.attention.tokens[f.maskAt], f.maskToken);
    assert.equal(f.attention.roles[f.maskAt], 'special');
    const m = positionMaps(f.attention, f.maskAt);
    const { numLayers, nhead } = enc.model.config;
    assert.equal(m.rows.length, numLayers * nhead);
    assert.equal(m.rows[nhead + 1], 'L2 H2');
    assert.deepEqual(m.maps[0][0][nhead + 1], f.attention.attention[1][1][f.maskAt]);
  }
});

test("an encoder's flow: the model's own pass, stage by stage (states, attention, masked-LM logits)", async () => {
  for (const name of ['bert-mlm', 'roberta-mlm', 'distilbert-mlm']) {
    const enc = await open(name);
    const text = 'A man in a blue shirt.';
    const run = await textFlowAsync(flowSubject(enc), text, { dims: 4 });
    const c = enc.model.config;
    assert.equal(run.flow.model, 'encoder');
    const ids = run.flow.axes.tokens!.ids;
    const a = await encoderAttentionAsync(enc, text);
    assert.deepEqual(ids, a.ids);
    assert.deepEqual(run.flow.axes.tokens!.tokens, a.tokens);
    const T = ids.length;
    // The last layer's output and the logits equal Encoder.forward's and maskedLM's, bit for bit.
    const inputs = { inputIds: new Tensor(Int32Array.from(ids), [1, T], 'int32') };
    const hidden = enc.model.forward(inputs).hidden;
    const last = run.vectors(`layer.${c.numLayers - 1}.norm2`).flat();
    assert.deepEqual(last, Array.from(hidden.dataSync<Float32Array>()), `${name}: states`);
    assert.deepEqual(
      Array.from(run.logits.dataSync<Float32Array>()),
      Array.from(enc.model.maskedLM(hidden).dataSync<Float32Array>()),
      `${name}: logits`,
    );
    const attn = run.flow.stages.find((s) => s.id === 'layer.1.attn')!;
    assert.equal(attn.causal, false);
    attn.heads!.forEach((h, hd) => assert.deepEqual(h.weights, a.attention[1][hd], `${name}: head ${hd}`));
    assert.deepEqual(
      run.flow.stages.map((s) => s.id).slice(0, 4),
      name === 'distilbert-mlm' ? ['embed', 'pos', 'input', 'layer.0.attn'] : ['embed', 'type', 'pos', 'input'],
    );
  }
  await assert.rejects(textFlowAsync(flowSubject(await open('bert-mlm')), 'x', { target: 'y' }), /has no target/);
});
