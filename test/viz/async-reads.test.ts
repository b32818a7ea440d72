/**
 * The asynchronous twins of the viz functions (what the explorer's model worker runs, on every backend: a GPU's
 * tensors read back only asynchronously) against the synchronous ones on the CPU backends: the same result,
 * number for number (deepStrictEqual: Object.is on every float, key for key). The shipped EN→DE translator
 * (greedy, beam 4), the shipped character GPT (greedy, sampling), the Hugging Face fixtures (hf-gpt2-tiny,
 * marian-tiny), the next-token logits, the neuron view and the flows (a GPT's, a translator fed its own
 * translation and a given target, Marian's).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readHfGpt2Dir, readLm, readMarianDir, readSeq2Seq } from '../../src/folder/node.ts';
import {
  marianWithAttention,
  marianWithAttentionAsync,
  translateWithAttention,
  translateWithAttentionAsync,
} from '../../src/viz/attention-data.ts';
import { flowSubject, textFlow, textFlowAsync, type FlowSubject } from '../../src/viz/flow.ts';
import {
  causalAttention,
  causalAttentionAsync,
  generateWithAttention,
  generateWithAttentionAsync,
} from '../../src/viz/gpt-attention.ts';
import { neuronView, neuronViewAsync } from '../../src/viz/neuron.ts';
import { lastLogits, lastLogitsAsync } from '../../src/viz/next-token.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const de = readSeq2Seq(`${ROOT}models/multi30k-en-de`);
const gpt = readLm(`${ROOT}models/gpt-multi30k-char`);
const gpt2 = readHfGpt2Dir(`${ROOT}test/fixtures/hf-gpt2-tiny`);
const marian = readMarianDir(`${ROOT}test/fixtures/marian-tiny`);

test('translateWithAttentionAsync = translateWithAttention (greedy, beam 4), marianWithAttentionAsync = its twin', async () => {
  for (const beam of [1, 4]) {
    const text = 'A man in a blue shirt is riding a bike.';
    assert.deepStrictEqual(
      await translateWithAttentionAsync(de.model, de.tokenizer, text, { beam }),
      translateWithAttention(de.model, de.tokenizer, text, { beam }),
    );
  }
  // Cut at the length limit (not finished): the maps of an output without EOS.
  assert.deepStrictEqual(
    await translateWithAttentionAsync(de.model, de.tokenizer, 'Two dogs play.', { maxLen: 2 }),
    translateWithAttention(de.model, de.tokenizer, 'Two dogs play.', { maxLen: 2 }),
  );
  for (const beam of [1, 3])
    assert.deepStrictEqual(
      await marianWithAttentionAsync(marian, 'a b c', { beam }),
      marianWithAttention(marian, 'a b c', { beam }),
    );
  await assert.rejects(translateWithAttentionAsync(de.model, de.tokenizer, '  '), /the sentence is empty/);
});

test('generateWithAttentionAsync = generateWithAttention (greedy, sampling; qkv GPT and HF GPT-2)', async () => {
  for (const lm of [gpt, gpt2]) {
    const options = [{ maxTokens: 12 }, { maxTokens: 12, temperature: 0.9, topK: 5, seed: 3, stopAtLineEnd: false }];
    for (const o of options)
      assert.deepStrictEqual(
        await generateWithAttentionAsync(lm, 'A man is', o),
        generateWithAttention(lm, 'A man is', o),
      );
    const ids = [1, 2, 3, 4, 5].map((i) => i % lm.model.config.vocabSize);
    assert.deepStrictEqual(await causalAttentionAsync(lm.model, ids), causalAttention(lm.model, ids));
    assert.deepStrictEqual(await lastLogitsAsync(lm.model, ids), lastLogits(lm.model, ids));
    const last = lm.model.config.nLayer - 1;
    assert.deepStrictEqual(await neuronViewAsync(lm.model, ids, last, 1, 3), neuronView(lm.model, ids, last, 1, 3));
  }
  await assert.rejects(generateWithAttentionAsync(gpt, ''), /the prompt is empty/);
});

test('textFlowAsync = textFlow: a GPT, a translator (its own translation, a given target), Marian', async () => {
  const cases: [FlowSubject, string, string | null][] = [
    [flowSubject({ kind: 'gpt', ...gpt }), 'A dog', null],
    [{ kind: 'seq2seq', ...de }, 'A dog runs.', null],
    [{ kind: 'seq2seq', ...de }, 'A dog runs.', 'Ein Hund'],
    [{ kind: 'marian', marian }, 'a b', null],
  ];
  for (const [subject, text, target] of cases) {
    const a = await textFlowAsync(subject, text, { target, dims: 4 });
    const s = textFlow(subject, text, { target, dims: 4 });
    assert.deepStrictEqual(a.flow, s.flow);
    assert.deepStrictEqual(a.text, s.text);
    for (const id of ['logits', a.flow.stages[3].id]) assert.deepStrictEqual(a.vectors(id), s.vectors(id));
    assert.deepStrictEqual(await a.logits.data(), await s.logits.data());
  }
});
