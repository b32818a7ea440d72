// The searches on hand-made next-token distributions (no model): exact expectations.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { beamSearchSteps, greedySearch, lengthPenalty, type Stepper } from '../../src/decode/index.ts';

const PAD = 0,
  BOS = 1,
  EOS = 2;

/** Distribution over ids given the generated prefix (BOS excluded); counts steps. */
class TableStepper implements Stepper {
  private prefixes: number[][];
  steps = 0;
  constructor(
    readonly vocabSize: number,
    private readonly dist: (prefix: number[], sentence: number) => number[],
    sentences = 1,
  ) {
    this.prefixes = Array.from({ length: sentences }, (_, s) => [-1 - s]); // a sentence marker, then the ids
  }
  get rows(): number {
    return this.prefixes.length;
  }
  step(last: Int32Array): Float32Array {
    this.steps++;
    const V = this.vocabSize;
    const out = new Float32Array(this.rows * V);
    this.prefixes.forEach((p, r) => {
      p.push(last[r]);
      const probs = this.dist(p.slice(2), -1 - p[0]); // without the marker and BOS
      for (let v = 0; v < V; v++) out[r * V + v] = v === PAD ? -Infinity : Math.log(probs[v]);
    });
    return out;
  }
  reorder(rows: Int32Array): void {
    this.prefixes = Array.from(rows, (r) => this.prefixes[r].slice());
  }
}

// minLen 0: these cases allow the empty output, to test the search itself (the default is 1).
const ids = { bosId: BOS, eosId: EOS, padId: PAD, minLen: 0 };

test('by default (minLen 1) EOS cannot come first, in greedy and beam search; minLen 2 holds it off longer', () => {
  // EOS is by far the likeliest first id, and 3 is certain-ish after it.
  const dist = (p: number[]): number[] => (p.length === 0 ? [0, 0.05, 0.9, 0.05] : [0, 0.1, 0.6, 0.3]);
  const plain = { bosId: BOS, eosId: EOS, padId: PAD };
  const g = greedySearch(new TableStepper(4, dist), [10], plain);
  assert.deepEqual(g.tokens, [[1]], 'greedy: the best id other than EOS, then EOS');
  assert.equal(g.finished[0], true);
  for (const k of [1, 4]) {
    const b = beamSearchSteps(new TableStepper(4, dist), [10], { ...plain, beamSize: k, lengthPenalty: 0.6 });
    assert.ok(b.tokens[0].length >= 1, `beam ${k}: not empty`);
    assert.ok(
      b.hypotheses[0].every((h) => h.tokens.length >= 1),
      `beam ${k}: no empty hypothesis in the pool`,
    );
  }
  assert.deepEqual(
    beamSearchSteps(new TableStepper(4, dist), [10], { ...ids, beamSize: 4, lengthPenalty: 0.6 }).tokens,
    [[]],
    'minLen 0: empty wins',
  );
  assert.deepEqual(greedySearch(new TableStepper(4, dist), [10], { ...plain, minLen: 2 }).tokens, [[1, 3]]);
});

test('beam beats greedy on a constructed case: the likelier first word leads nowhere', () => {
  // Step 1: 4 (0.5) or 3 (0.4). After 3, EOS is near certain; after 4, EOS has 0.3.
  const dist = (p: number[]): number[] =>
    p.length === 0
      ? [0, 0.05, 0.05, 0.4, 0.5]
      : p[0] === 3
        ? [0, 0.005, 0.985, 0.005, 0.005]
        : [0, 0.25, 0.3, 0.2, 0.25];
  const g = greedySearch(new TableStepper(5, dist), [10], ids);
  assert.deepEqual(g.tokens, [[4]]);
  assert.ok(Math.abs(g.logProbs[0] - Math.log(0.5 * 0.3)) < 1e-6);
  const b = beamSearchSteps(new TableStepper(5, dist), [10], { ...ids, beamSize: 2, lengthPenalty: 0 });
  assert.deepEqual(b.tokens, [[3]]);
  assert.ok(Math.abs(b.scores[0] - Math.log(0.4 * 0.985)) < 1e-6);
  assert.ok(b.scores[0] > g.logProbs[0]);
  assert.deepEqual(
    beamSearchSteps(new TableStepper(5, dist), [10], { ...ids, beamSize: 1, lengthPenalty: 0 }).tokens,
    [[4]],
    'beam 1 = greedy',
  );
});

test('beam search stops early once no live hypothesis can beat the best finished one', () => {
  const dist = (): number[] => [0, 0.004, 0.99, 0.003, 0.003];
  const s = new TableStepper(5, dist);
  const r = beamSearchSteps(s, [50], { ...ids, beamSize: 4, lengthPenalty: 0.6 });
  assert.deepEqual(r.tokens, [[]]);
  assert.equal(s.steps, 1, 'best live bound log(0.004)/lp(50) < log(0.99)');
});

test('the stopping bound uses the largest penalty up to maxLen: a long hypothesis can still win (α = 5)', () => {
  // EOS right away scores log 0.6 = −0.51. Starting with 3 costs log 0.2 but then 3, 3, EOS are
  // near certain: log(0.2·0.99³)/lp(4) = −0.217 wins, though −1.61/lp(2) = −0.75 < −0.51 after step 1.
  const dist = (p: number[]): number[] => {
    if (p.length === 0) return [0, 0.2, 0.6, 0.2];
    if (p[0] !== 3) return [0, 0.3, 0.4, 0.3];
    return p.length < 3 ? [0, 0.005, 0.005, 0.99] : [0, 0.005, 0.99, 0.005];
  };
  const r = beamSearchSteps(new TableStepper(4, dist), [6], { ...ids, beamSize: 4, lengthPenalty: 5 });
  assert.deepEqual(r.tokens, [[3, 3, 3]]);
  assert.equal(r.finished[0], true);
  assert.ok(Math.abs(r.scores[0] - Math.log(0.2 * 0.99 ** 3) / lengthPenalty(4, 5)) < 1e-6);
  assert.deepEqual(
    r.hypotheses[0].slice(0, 2).map((h) => h.tokens),
    [[3, 3, 3], []],
    'the pool, best first',
  );
});

test('sentences in a batch are searched independently; maxLen per sentence; ids padded', () => {
  // Sentence 0 says EOS at once; sentence 1 never does.
  const dist = (_p: number[], s: number): number[] => (s === 0 ? [0, 0.1, 0.8, 0.1] : [0, 0.1, 0.1, 0.8]);
  for (const k of [1, 3]) {
    const r =
      k === 1
        ? greedySearch(new TableStepper(4, dist, 2), [5, 3], ids)
        : beamSearchSteps(new TableStepper(4, dist, 2), [5, 3], { ...ids, beamSize: k });
    assert.deepEqual(r.tokens, [[], [3, 3, 3]], `beam ${k}`);
    assert.deepEqual(r.finished, [true, false]);
    assert.deepEqual([...r.ids.dataSync()], [EOS, PAD, PAD, 3, 3, 3]);
  }
});
