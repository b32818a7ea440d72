/**
 * Paired bootstrap (Koehn 2004). The resampled scores are checked against corpusBleu run on the
 * resampled sentences themselves (a path that never sees the summed statistics), and the p-value
 * against the cases whose answer is known: identical systems, a system better on every sentence,
 * and two systems that are mirror images of each other.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { readParallel } from '../../src/cli/corpus.ts';
import { corpusBleu, pairedBootstrap, segmentStatistics, segmentsBleu } from '../../src/text/index.ts';
import { Generator } from '../../src/tensor/random.ts';

const refs = readParallel(fileURLToPath(new URL('../../data/multi30k', import.meta.url)), 'val', 'en', 'de').tgt.slice(
  0,
  200,
);
/** Drop the last word of the chosen lines: worse there, identical elsewhere. */
const damaged = (pick: (i: number) => boolean) =>
  refs.map((r, i) => (pick(i) ? r.split(' ').slice(0, -1).join(' ') : r));

test('segmentsBleu over segment statistics gives corpusBleu exactly, on the full set and on a resample', () => {
  const hyps = damaged((i) => i % 3 === 0);
  const segs = segmentStatistics(hyps, refs);
  assert.equal(String(segmentsBleu(segs)), String(corpusBleu(hyps, refs)));
  const g = new Generator(7);
  const idx = refs.map(() => g.int(refs.length));
  const direct = corpusBleu(
    idx.map((i) => hyps[i]),
    idx.map((i) => refs[i]),
  );
  assert.equal(segmentsBleu(segs, idx).score, direct.score);
  assert.deepEqual(segmentsBleu(segs, idx).counts, direct.counts);
  assert.throws(() => segmentsBleu([]), /no segment statistics given/);
});

test('one resample: Δ is corpusBleu(system) − corpusBleu(baseline) on the sentences the given stream draws', () => {
  const base = damaged((i) => i % 2 === 0);
  const sys = damaged((i) => i % 5 === 0);
  const draw = new Generator(99);
  const r = pairedBootstrap(base, sys, refs, { samples: 1, random: () => draw.uniform() });
  const g = new Generator(99);
  const idx = refs.map(() => g.int(refs.length));
  const pick = (xs: string[]) => idx.map((i) => xs[i]);
  const delta = corpusBleu(pick(sys), pick(refs)).score - corpusBleu(pick(base), pick(refs)).score;
  assert.ok(Math.abs(r.delta95[0] - delta) < 1e-9, `${r.delta95[0]} != ${delta}`);
  assert.equal(r.delta95[1], r.delta95[0]);
  assert.equal(r.wins, delta > 0 ? 1 : 0);
  assert.equal(r.baseline, corpusBleu(base, refs).score);
  assert.equal(r.system, corpusBleu(sys, refs).score);
});

test('identical systems never win (p 1); a system better on every damaged line always wins (p 1/1001)', () => {
  const base = damaged((i) => i % 2 === 0);
  const same = pairedBootstrap(base, base, refs);
  assert.equal(same.wins, 0);
  assert.equal(same.p, 1);
  assert.deepEqual(same.delta95, [0, 0]);
  const better = pairedBootstrap(base, refs, refs);
  assert.equal(better.samples, 1000);
  assert.equal(better.wins, 1000);
  assert.equal(better.p, 1 / 1001);
  assert.ok(better.delta95[0] > 0);
});

test('mirror-image systems (each damaged where the other is not): no significance either way', () => {
  const a = damaged((i) => i % 2 === 0);
  const b = damaged((i) => i % 2 === 1);
  const ab = pairedBootstrap(a, b, refs);
  const ba = pairedBootstrap(b, a, refs);
  assert.ok(ab.p > 0.1 && ba.p > 0.1, `p ${ab.p} and ${ba.p}`);
  assert.ok(ab.delta95[0] < 0 && ab.delta95[1] > 0, `the 95% interval of Δ holds 0: ${ab.delta95}`);
  // The same stream resamples both directions alike, so each resample's Δ flips sign: wins + wins + ties = samples.
  assert.ok(ab.wins + ba.wins <= 1000 && ab.wins + ba.wins > 950, `${ab.wins} + ${ba.wins}`);
  assert.deepEqual(pairedBootstrap(a, b, refs), ab, 'the default stream is seeded: the same answer twice');
  assert.notDeepEqual(pairedBootstrap(a, b, refs, { seed: 1 }).delta95, ab.delta95, 'and the seed is used');
});

test('bad input is named', () => {
  assert.throws(() => pairedBootstrap(['a'], ['a', 'b'], ['a']), /the baseline has 1 lines but the system has 2/);
  assert.throws(() => pairedBootstrap([], [], []), /no sentences/);
  assert.throws(
    () => pairedBootstrap(['a'], ['a'], ['a'], { samples: 0 }),
    /samples must be a positive integer, got 0/,
  );
});
