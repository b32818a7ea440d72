import { test } from 'node:test';
import assert from 'node:assert/strict';
import { manualSeed, models } from '../../src/index.ts';
import type { Pair } from '../../src/data/batching.ts';
import { Trainer, averageWeights, evaluateLoss } from '../../src/train/trainer.ts';
import { Generator } from '../../src/tensor/random.ts';

const ids = { padId: 0, bosId: 2, eosId: 3 };
const cfg = { ...models.MULTI30K_SMALL, vocabSize: 14, dModel: 16, nhead: 2, numEncoderLayers: 1, numDecoderLayers: 1, dimFeedforward: 32, dropout: 0.1, maxLen: 16 };

function corpus(n: number, seed: number): Pair[] {
  const g = new Generator(seed);
  return Array.from({ length: n }, () => {
    const src = Array.from({ length: 2 + g.int(5) }, () => 4 + g.int(10));
    return { src, tgt: src.slice().reverse() };
  });
}

function fresh(pairs: Pair[]) {
  manualSeed(21);
  const model = new models.Seq2Seq(cfg);
  return new Trainer(model, pairs, ids, { maxTokens: 48, warmup: 10, lrFactor: 0.2, seed: 5 });
}

test('a killed run resumes with --resume and continues with the same losses (dropout on)', () => {
  const pairs = corpus(60, 1);
  const full = fresh(pairs);
  const losses = Array.from({ length: 12 }, () => full.step().loss);
  assert.ok(full.position.epoch >= 1, 'the run crosses an epoch boundary');

  const first = fresh(pairs);
  for (let i = 0; i < 7; i++) first.step();
  const saved = first.saveState();
  // "Kill": a new process would rebuild everything from the config, with other random weights.
  manualSeed(999);
  const resumed = new Trainer(new models.Seq2Seq(cfg), pairs, ids, { maxTokens: 48, warmup: 10, lrFactor: 0.2, seed: 5 });
  resumed.loadState(saved);
  const rest = Array.from({ length: 5 }, () => resumed.step().loss);
  assert.deepEqual(rest, losses.slice(7));
});

test('training lowers the validation loss on a reversal task', () => {
  const pairs = corpus(200, 2);
  const val = corpus(30, 3);
  const t = fresh(pairs);
  const before = evaluateLoss(t.model, val, ids, 64);
  for (let i = 0; i < 120; i++) t.step();
  const after = evaluateLoss(t.model, val, ids, 64);
  assert.ok(after < before * 0.75, `val loss ${before.toFixed(3)} -> ${after.toFixed(3)}`);
});

test('the learning rate follows the paper\'s schedule', () => {
  const t = fresh(corpus(20, 4));
  const lrs = Array.from({ length: 12 }, () => t.step().lr);
  const expected = (s: number) => 0.2 * 16 ** -0.5 * Math.min(s ** -0.5, s * 10 ** -1.5);
  lrs.forEach((lr, i) => assert.equal(lr, expected(i + 1)));
});

test('averageWeights is the element-wise mean; loadState rejects a foreign file', () => {
  const t = fresh(corpus(20, 4));
  const a = t.model.stateDict();
  const b = Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v.mul(3)]));
  const avg = averageWeights([a, b]);
  const k = 'embedding.weight';
  assert.deepEqual(avg[k].toArray(), a[k].toArray().map((x) => Math.fround((x + Math.fround(3 * x)) / 2)));
  assert.throws(() => t.loadState(new Uint8Array(16)), /safetensors:/);
});
