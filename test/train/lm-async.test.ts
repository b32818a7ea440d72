/**
 * evaluateLmAsync (the Train view's validation loss on a GPU) against evaluateLm on the CPU backends: the same
 * windows and batches, so the same number bit for bit, for every batch size and token limit; the same error on
 * too little data; the model's mode restored.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { manualSeed, models } from '../../src/index.ts';
import { CharTokenizer } from '../../src/text/chars.ts';
import { encodeLines } from '../../src/text/lines.ts';
import { evaluateLm, evaluateLmAsync } from '../../src/train/lm.ts';

const lines = ['a cat sits on the mat.', 'a dog runs in the park.', 'two cats play with a ball.'];
const tok = CharTokenizer.learn(lines);
const data = encodeLines(tok, lines.concat(lines, lines), tok.tokenToId('\n')!);

test('evaluateLmAsync = evaluateLm, number for number', async () => {
  manualSeed(4);
  const model = new models.GPT({ ...models.GPT_TINY, vocabSize: tok.vocabSize, blockSize: 16, nEmbd: 16 });
  for (const options of [{}, { batchSize: 3 }, { batchSize: 2, maxTokens: 40 }, { seqLen: 7, batchSize: 5 }]) {
    assert.ok(model.training);
    assert.equal(
      await evaluateLmAsync(model, data, options),
      evaluateLm(model, data, options),
      JSON.stringify(options),
    );
    assert.ok(model.training, 'the mode is restored');
  }
  await assert.rejects(evaluateLmAsync(model, Int32Array.of(1)), /evaluateLm: need at least 2 tokens, got 1/);
});
