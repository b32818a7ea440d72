/**
 * The explorer's next-token view and neuron view, in Node: on the PyTorch-written GPT-2 fixture the
 * next-token probabilities are the softmax of PyTorch's last-position logits, the top list sums to
 * the shown mass, temperature / top-k / top-p reshape it as sampling does; the neuron view's
 * products, scores and softmax reproduce the attention row of the model (and of PyTorch).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { io } from '../../src/index.ts';
import { type ByteLevelBpeTokenizer, tokenizerFromJSON } from '../../src/text/index.ts';
import { causalAttention, tokenLabel } from '../../src/viz/gpt-attention.ts';
import { lastLogits, nextTokenView } from '../../src/viz/next-token.ts';
import { neuronView } from '../../src/viz/neuron.ts';
import { assertClose } from '../helpers/assert.ts';

const DIR = new URL('../fixtures/hf-gpt2-tiny/', import.meta.url);
const model = io.readHfGpt2(
  JSON.parse(readFileSync(new URL('config.json', DIR), 'utf8')),
  new Uint8Array(readFileSync(new URL('model.safetensors', DIR))),
);
const expected = io.readSafetensors(new Uint8Array(readFileSync(new URL('expected.safetensors', DIR)))).tensors;
const ids = Array.from(expected.input_ids.dataSync<Int32Array>());
const [, T, V] = expected.logits.shape;
const torchLast = Array.from(expected.logits.dataSync<Float32Array>().subarray((T - 1) * V, T * V));

function softmax(x: number[], t = 1): number[] {
  const m = Math.max(...x);
  const e = x.map((v) => Math.exp((v - m) / t));
  const z = e.reduce((s, v) => s + v, 0);
  return e.map((v) => v / z);
}

test("next-token view: the softmax of the last position's logits, top 20 in order, summing to the shown mass", () => {
  const logits = lastLogits(model, ids);
  assertClose(logits, torchLast, 'last logits vs PyTorch');
  const v = nextTokenView(logits, { temperature: 1, seed: 3 });
  const ref = softmax(torchLast);
  assert.equal(v.top.length, 20);
  assert.equal(v.kept, V);
  for (let i = 0; i < 20; i++) {
    assert.ok(Math.abs(v.top[i].p - ref[v.top[i].id]) < 1e-5, `p of ${v.top[i].id}`);
    if (i > 0) assert.ok(v.top[i].p <= v.top[i - 1].p);
  }
  const best = ref.indexOf(Math.max(...ref));
  assert.equal(v.top[0].id, best);
  assert.ok(Math.abs(v.shownMass - v.top.reduce((s, t) => s + t.p, 0)) < 1e-12);
  // Everything not shown is less probable than the last shown token.
  const shown = new Set(v.top.map((t) => t.id));
  assert.ok(ref.every((p, id) => shown.has(id) || p <= v.top[19].p + 1e-6));
  assert.ok(v.sampledP > 0 && v.sampled >= 0 && v.sampled < V);
});

test('temperature, top-k and top-p reshape the distribution as sampling does', () => {
  const logits = lastLogits(model, ids);
  const cold = nextTokenView(logits, { temperature: 0.5 });
  const ref = softmax(torchLast, 0.5);
  for (const t of cold.top) assert.ok(Math.abs(t.p - ref[t.id]) < 1e-5);
  const k5 = nextTokenView(logits, { temperature: 1, topK: 5 });
  assert.equal(k5.kept, 5);
  assert.ok(Math.abs(k5.shownMass - 1) < 1e-9); // all 5 are shown, renormalised
  assert.ok(k5.top.slice(5).every((t) => t.p === 0));
  const nucleus = nextTokenView(logits, { temperature: 1, topP: 0.5 });
  const sorted = softmax(torchLast).sort((a, b) => b - a);
  let n = 0;
  for (let c = 0; c < 0.5; n++) c += sorted[n];
  assert.equal(nucleus.kept, n);
  const greedy = nextTokenView(logits, { temperature: 0, seed: 9 });
  assert.equal(greedy.sampled, cold.top[0].id);
  assert.equal(greedy.top[0].p, 1);
  // greedy: the distribution at temperature 1 is shown, the pick is its most probable token.
  const shownGreedy = nextTokenView(logits, { temperature: 1, greedy: true, seed: 9 });
  assert.equal(shownGreedy.sampled, shownGreedy.top[0].id);
  assert.equal(shownGreedy.top[0].p, nextTokenView(logits, { temperature: 1 }).top[0].p);
  assert.ok(shownGreedy.top[0].p < 1);
  // The draw follows the seed.
  const draws = new Set(
    Array.from({ length: 40 }, (_, s) => nextTokenView(logits, { temperature: 2, seed: s }).sampled),
  );
  assert.ok(draws.size > 1);
  assert.equal(
    nextTokenView(logits, { temperature: 2, seed: 7 }).sampled,
    nextTokenView(logits, { temperature: 2, seed: 7 }).sampled,
  );
});

test('neuron view: q ⊙ k summed and scaled are the scores whose softmax is the attention row (qkv and PyTorch)', () => {
  const attn = causalAttention(model, ids);
  for (const [layer, head, query] of [
    [0, 0, 0],
    [0, 3, T - 1],
    [1, 2, 4],
    [1, 1, T - 1],
  ]) {
    const nv = neuronView(model, ids, layer, head, query);
    assert.equal(nv.keys.length, query + 1);
    assert.equal(nv.q.length, 8);
    assert.equal(nv.scale, 1 / Math.sqrt(8));
    nv.products.forEach((p, j) => p.forEach((x, c) => assert.equal(x, nv.q[c] * nv.keys[j][c])));
    nv.scores.forEach((s, j) => assert.ok(Math.abs(s - nv.products[j].reduce((a, b) => a + b, 0) * nv.scale) < 1e-9));
    assertClose(
      nv.weights,
      attn[layer][head][query].slice(0, query + 1),
      `qkv row ${layer}/${head}/${query}`,
      1e-5,
      1e-5,
    );
    const torchRow = expected[`attn.${layer}`]
      .dataSync<Float32Array>()
      .subarray((head * T + query) * T, (head * T + query) * T + query + 1);
    assertClose(nv.weights, torchRow, `PyTorch row ${layer}/${head}/${query}`);
  }
  assert.throws(() => neuronView(model, ids, 2, 0, 0), /^Error: neuronView: layer 2 does not exist \(0\.\.1\)$/);
  assert.throws(() => neuronView(model, ids, 0, 0, T), /query 10 is not a position of the 10 tokens/);
});

test('byte-level token labels: spaces as ␣, a lone byte of a character as its hex, <|endoftext|> by name', () => {
  const tok = tokenizerFromJSON(
    JSON.parse(readFileSync(new URL('tokenizer.json', DIR), 'utf8')),
  ) as ByteLevelBpeTokenizer;
  const label = (s: string) => tok.encode(s).map((id) => tokenLabel(tok, id, tok.eosId));
  assert.deepEqual(label(' man'), ['␣man']);
  assert.deepEqual(label('a\tb\n'), ['a', '⇥', 'b', '⏎']);
  assert.deepEqual(label('é'), ['<0xC3>', '<0xA9>']); // no merge joins its two bytes in this small vocabulary
  assert.deepEqual(label('😀'), ['<0xF0>', '<0x9F>', '<0x98>', '<0x80>']);
  assert.equal(tokenLabel(tok, tok.eosId, tok.eosId), '<|endoftext|>');
});
