import { test } from 'node:test';
import assert from 'node:assert/strict';
import { epochOrder, makeBatch, planBatches, type Pair } from '../../src/data/batching.ts';

const pairs: Pair[] = [
  { src: [5, 6, 7], tgt: [8, 9] },
  { src: [5], tgt: [8, 9, 10, 11] },
  { src: [6, 6], tgt: [9] },
  { src: [7, 7, 7, 7, 7, 7], tgt: [10, 10, 10] },
  { src: [5, 5], tgt: [8] },
];
const ids = { padId: 0, bosId: 2, eosId: 3 };

test('planBatches: every pair exactly once, each batch within the padded token budget', () => {
  const batches = planBatches(pairs, 8);
  assert.deepEqual(batches.flat().sort(), [0, 1, 2, 3, 4]);
  for (const b of batches) {
    const len = Math.max(...b.map((i) => Math.max(pairs[i].src.length, pairs[i].tgt.length + 1)));
    assert.ok(len * b.length <= 8, `batch ${b} uses ${len * b.length}`);
  }
  // Sorted by target length: the two one-token targets share the first batch.
  assert.deepEqual(batches[0], [2, 4]);
  assert.throws(() => planBatches(pairs, 5), /pair 3 needs 6 tokens, more than maxTokens 5/);
});

test('makeBatch: BOS-shifted decoder input, EOS-terminated target, padding, token count', () => {
  const b = makeBatch(pairs, [0, 2], ids);
  assert.deepEqual(b.src.shape, [2, 3]);
  assert.deepEqual(b.src.toArray(), [5, 6, 7, 6, 6, 0]);
  assert.deepEqual(b.tgtIn.toArray(), [2, 8, 9, 2, 9, 0]);
  assert.deepEqual(b.tgtOut.toArray(), [8, 9, 3, 9, 3, 0]);
  assert.equal(b.targetTokens, 5);
});

test('epochOrder: a permutation, repeatable per (seed, epoch), different across epochs', () => {
  const a = epochOrder(50, 1, 0);
  assert.deepEqual(
    [...a].sort((x, y) => x - y),
    Array.from({ length: 50 }, (_, i) => i),
  );
  assert.deepEqual(epochOrder(50, 1, 0), a);
  assert.notDeepEqual(epochOrder(50, 1, 1), a);
  assert.notDeepEqual(epochOrder(50, 2, 0), a);
});
