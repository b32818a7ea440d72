/** randn and rand take shapes the way zeros does: randn(2, 3) as randn([2, 3]), same draws. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Generator, manualSeed, rand, randn, zeros } from '../../src/index.ts';

test('randn(2, 3) and rand(2, 3) give the shape zeros(2, 3) gives, with the same draws as the array form', () => {
  assert.deepEqual(randn(2, 3).shape, zeros(2, 3).shape);
  assert.deepEqual(rand(4).shape, [4]);
  manualSeed(11);
  const a = randn(2, 3);
  manualSeed(11);
  const b = randn([2, 3]);
  assert.deepEqual(a.dataSync(), b.dataSync());
  manualSeed(12);
  const c = rand(3, 2);
  manualSeed(12);
  assert.deepEqual(c.dataSync(), rand([3, 2]).dataSync());
  // The array form keeps its generator and bounds.
  const u = rand([1000], new Generator(1), 5, 6);
  assert.ok(Array.from(u.dataSync()).every((x) => x >= 5 && x < 6));
  assert.deepEqual(randn([3], new Generator(2)).dataSync(), randn([3], new Generator(2)).dataSync());
  assert.deepEqual(randn().shape, []);
});

test('bad shapes are named', () => {
  assert.throws(() => randn(2, -1), /shape: invalid dimension -1 in \[2, -1\]/);
  assert.throws(
    // @ts-expect-error a generator after dimensions given as numbers
    () => randn(2, new Generator(1)),
    /randn: with dimensions as numbers \(randn\(2, 3\)\) every argument is a dimension; argument 1 is object/,
  );
  // @ts-expect-error not a shape
  assert.throws(() => rand('2'), /rand: expected a shape \(rand\(2, 3\) or rand\(\[2, 3\]\)\), got string/);
});
