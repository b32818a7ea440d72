import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Generator, manualSeed, models } from '../../src/index.ts';
import { generate } from '../../src/decode/gpt.ts';
import { sampleToken, samplingDistribution, type SamplingOptions } from '../../src/decode/sample.ts';

// A known distribution, scattered over ids so that "allowed" is not simply "the first k":
// id 5: 0.40, id 0: 0.25, id 3: 0.15, id 6: 0.10, id 1: 0.05, id 4: 0.03, id 2: 0.02.
const P: Record<number, number> = { 5: 0.4, 0: 0.25, 3: 0.15, 6: 0.1, 1: 0.05, 4: 0.03, 2: 0.02 };
const logits = Float32Array.from({ length: 7 }, (_, id) => Math.log(P[id]) + 3); // any shift: softmax ignores it

/** The expected distribution: p^(1/T) over the allowed ids, renormalised. */
function expected(allowed: number[], temperature = 1): number[] {
  const w = Array.from({ length: 7 }, (_, id) => (allowed.includes(id) ? P[id] ** (1 / temperature) : 0));
  const s = w.reduce((a, b) => a + b, 0);
  return w.map((x) => x / s);
}

const cases: [string, SamplingOptions, number[]][] = [
  ['plain', {}, expected([5, 0, 3, 6, 1, 4, 2])],
  ['temperature 2', { temperature: 2 }, expected([5, 0, 3, 6, 1, 4, 2], 2)],
  ['top-k 3', { topK: 3 }, expected([5, 0, 3])],
  ['top-p 0.6 (0.40 + 0.25 reach it)', { topP: 0.6 }, expected([5, 0])],
  ['top-p 0.85 (needs 0.40 + 0.25 + 0.15 + 0.10)', { topP: 0.85 }, expected([5, 0, 3, 6])],
  ['temperature 0.5, top-k 4, top-p 0.9', { temperature: 0.5, topK: 4, topP: 0.9 }, expected([5, 0, 3], 0.5)],
];

for (const [name, opts, want] of cases) {
  test(`sampling (${name}): the distribution is the renormalised one, and 20,000 draws follow it`, () => {
    const p = samplingDistribution(logits, opts);
    p.forEach((x, id) => assert.ok(Math.abs(x - want[id]) < 1e-6, `p[${id}] = ${x}, expected ${want[id]}`));
    const n = 20000;
    const counts = new Array<number>(7).fill(0);
    const g = new Generator(123);
    for (let i = 0; i < n; i++) counts[sampleToken(logits, opts, g)]++;
    counts.forEach((c, id) => {
      if (want[id] === 0) assert.equal(c, 0, `id ${id} is filtered out but was drawn ${c} times`);
      else {
        // Binomial count: within 5 standard deviations (a false alarm has probability < 1e-6).
        const sd = Math.sqrt(n * want[id] * (1 - want[id]));
        assert.ok(
          Math.abs(c - n * want[id]) <= 5 * sd + 1,
          `id ${id}: ${c} draws, expected ${(n * want[id]).toFixed(0)} ± ${(5 * sd).toFixed(0)}`,
        );
      }
    });
  });
}

test('temperature 0 is greedy and draws nothing; top-k ties go to the lower id', () => {
  const g = new Generator(1);
  const before = g.getState();
  assert.equal(sampleToken(logits, { temperature: 0, topK: 3 }, g), 5);
  assert.deepEqual(g.getState(), before, 'no random draw');
  assert.deepEqual([...samplingDistribution([1, 2, 2, 2, 0], { topK: 2 })], [0, 0.5, 0.5, 0, 0]);
  assert.deepEqual([...samplingDistribution([0, -Infinity, 0], {})], [0.5, 0, 0.5]);
});

test('sampling is deterministic under a seed: same seed, same tokens; another seed, other tokens', () => {
  const draw = (seed: number) => {
    const g = new Generator(seed);
    return Array.from({ length: 50 }, () => sampleToken(logits, { temperature: 1.5 }, g));
  };
  assert.deepEqual(draw(7), draw(7));
  assert.notDeepEqual(draw(7), draw(8));
  manualSeed(5);
  const m = new models.GPT({
    vocabSize: 17,
    blockSize: 16,
    nLayer: 1,
    nHead: 2,
    nEmbd: 8,
    dropout: 0,
    positions: 'learned',
  });
  const run = (seed: number) => generate(m, [1, 2], { maxTokens: 20, temperature: 1, topP: 0.95, seed }).ids;
  assert.deepEqual(run(3), run(3));
  assert.notDeepEqual(run(3), run(4));
  const g = new Generator(3);
  assert.deepEqual(
    generate(m, [1, 2], { maxTokens: 20, temperature: 1, topP: 0.95, generator: g }).ids,
    run(3),
    'seed = a fresh Generator(seed)',
  );
});

test('bad sampling options are named', () => {
  const g = new Generator(0);
  assert.throws(() => sampleToken(logits, { temperature: -1 }, g), /temperature must be a finite number >= 0, got -1/);
  assert.throws(() => sampleToken(logits, { topK: 0 }, g), /topK must be a positive integer, got 0/);
  assert.throws(() => sampleToken(logits, { topP: 1.5 }, g), /topP must be in \(0, 1\], got 1.5/);
  assert.throws(() => samplingDistribution([1, Number.NaN]), /logit 1 is NaN/);
});
