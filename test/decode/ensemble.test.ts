// Ensembles: the next-token distribution is the mean of the members' probabilities, checked on
// hand-made tables (exact numbers) and on real models against a teacher-forced reference.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, manualSeed, models, noGrad, tensor, type Tensor } from '../../src/index.ts';
import { beamSearch, EnsembleStepper, greedy, greedySearch, type Stepper } from '../../src/decode/index.ts';

const PAD = 0,
  BOS = 1,
  EOS = 2;

/** One row of fixed distributions per step (rows beyond the first copy it). */
class FixedStepper implements Stepper {
  rows: number;
  steps = 0;
  reorders: number[][] = [];
  constructor(
    readonly vocabSize: number,
    private readonly probs: number[][],
    rows = 1,
  ) {
    this.rows = rows;
  }
  step(): Float32Array {
    const p = this.probs[Math.min(this.steps++, this.probs.length - 1)];
    const out = new Float32Array(this.rows * this.vocabSize);
    for (let r = 0; r < this.rows; r++)
      for (let v = 0; v < this.vocabSize; v++) out[r * this.vocabSize + v] = v === PAD ? -Infinity : Math.log(p[v]);
    return out;
  }
  reorder(rows: Int32Array): void {
    this.reorders.push([...rows]);
    this.rows = rows.length;
  }
}

test('EnsembleStepper: the log of the mean probability, −∞ where every member rules an id out; every member reordered', () => {
  const a = new FixedStepper(5, [[0, 0.1, 0.1, 0.78, 0.02]], 2);
  const b = new FixedStepper(5, [[0, 0.1, 0.3, 0.0, 0.6]], 2);
  const e = new EnsembleStepper([a, b]);
  assert.equal(e.rows, 2);
  assert.equal(e.vocabSize, 5);
  const lp = e.step(new Int32Array([BOS, BOS]));
  const want = [-Infinity, Math.log(0.1), Math.log(0.2), Math.log(0.39), Math.log(0.31)];
  for (let r = 0; r < 2; r++) {
    for (let v = 0; v < 5; v++) {
      const got = lp[r * 5 + v];
      if (want[v] === -Infinity) assert.equal(got, -Infinity, `id ${v}`);
      else assert.ok(Math.abs(got - want[v]) < 1e-6, `row ${r} id ${v}: ${got} against ${want[v]}`);
    }
  }
  // Mean of probabilities, not of log-probabilities: id 3 (0.78 and 0) still wins; averaged logs would give −∞.
  assert.ok(Number.isFinite(lp[3]));
  e.reorder(new Int32Array([1, 1, 0]));
  assert.deepEqual(a.reorders, [[1, 1, 0]]);
  assert.deepEqual(b.reorders, [[1, 1, 0]]);
  assert.equal(e.rows, 3);
});

test('EnsembleStepper: greedy follows the mean, which neither member alone would choose', () => {
  // Step 1: a prefers 3 and b prefers 4 (0.38 each), both give 5 0.37: on the mean (0.29, 0.29, 0.37) 5 wins.
  const a = [
    [0, 0, 0.05, 0.38, 0.2, 0.37],
    [0, 0, 1, 0, 0, 0],
  ];
  const b = [
    [0, 0, 0.05, 0.2, 0.38, 0.37],
    [0, 0, 1, 0, 0, 0],
  ];
  const opts = { bosId: BOS, eosId: EOS, padId: PAD };
  assert.deepEqual(greedySearch(new FixedStepper(6, a), [5], opts).tokens, [[3]]);
  assert.deepEqual(greedySearch(new FixedStepper(6, b), [5], opts).tokens, [[4]]);
  const both = greedySearch(new EnsembleStepper([new FixedStepper(6, a), new FixedStepper(6, b)]), [5], opts);
  assert.deepEqual(both.tokens, [[5]]);
  assert.ok(Math.abs(both.logProbs[0] - Math.log(0.37)) < 1e-6, `${both.logProbs[0]}`);
});

test('EnsembleStepper: members must agree on vocabulary and rows, and there must be one', () => {
  assert.throws(() => new EnsembleStepper([]), /at least one stepper, got none/);
  assert.throws(
    () => new EnsembleStepper([new FixedStepper(5, [[]]), new FixedStepper(6, [[]])]),
    /member 2 has a vocabulary of 6, member 1 of 5/,
  );
  assert.throws(
    () => new EnsembleStepper([new FixedStepper(5, [[]], 2), new FixedStepper(5, [[]], 3)]),
    /member 2 decodes 3 rows, member 1 2/,
  );
});

function tiny(seed: number, extra: Partial<models.Seq2SeqConfig> = {}): models.Seq2Seq {
  manualSeed(seed);
  return new models.Seq2Seq({
    ...models.MULTI30K_SMALL,
    vocabSize: 9,
    dModel: 16,
    nhead: 2,
    numEncoderLayers: 1,
    numDecoderLayers: 2,
    dimFeedforward: 24,
    dropout: 0.1,
    maxLen: 64,
    padId: PAD,
    ...extra,
  });
}

const ids = (rows: number[][]): Tensor => tensor(new Int32Array(rows.flat()), [rows.length, rows[0].length]);
const SRC = ids([
  [3, 4, 5, 6, 7],
  [8, 3, 0, 0, 0],
  [5, 5, 6, 0, 0],
  [7, 0, 0, 0, 0],
]);
const opts = { bosId: BOS, eosId: EOS, maxLen: 12 };

test('an ensemble of one model is that model; of a model with itself, the same search', () => {
  const m = tiny(1);
  const alone = beamSearch(m, SRC, { ...opts, beamSize: 4 });
  const one = beamSearch([m], SRC, { ...opts, beamSize: 4 });
  assert.deepEqual(one.tokens, alone.tokens);
  assert.deepEqual(one.scores, alone.scores);
  const twice = beamSearch([m, m], SRC, { ...opts, beamSize: 4 });
  assert.deepEqual(twice.tokens, alone.tokens);
  twice.scores.forEach((s, i) => assert.ok(Math.abs(s - alone.scores[i]) < 1e-5, `${s} against ${alone.scores[i]}`));
});

test('a two-model ensemble: greedy picks the argmax of the mean of teacher-forced probabilities at every step; cache or not', () => {
  const members = [tiny(3), tiny(5)]; // seeds whose ensemble differs from each member, with EOS and maxLen stops
  const g = greedy(members, SRC, opts);
  const full = greedy(members, SRC, { ...opts, useCache: false });
  assert.deepEqual(g.tokens, full.tokens);
  const alone = members.map((m) => greedy(m, SRC, opts).tokens);
  assert.notDeepEqual(g.tokens, alone[0], 'the ensemble differs from member 1 (else this test shows little)');
  assert.notDeepEqual(g.tokens, alone[1], 'and from member 2');
  noGrad(() => {
    for (const m of members) m.eval();
    for (let b = 0; b < SRC.shape[0]; b++) {
      const src = F.narrow(SRC, 0, b, 1);
      const out = [...g.ids.dataSync().subarray(b * g.ids.shape[1], (b + 1) * g.ids.shape[1])];
      const n = g.tokens[b].length + (g.finished[b] ? 1 : 0);
      const tgtIn = ids([[BOS, ...out.slice(0, n - 1)]]);
      // Per member: log-probabilities of every position, from the whole prefix at once.
      const lps = members.map((m) => {
        const pad = m.paddingMask(src);
        return F.logSoftmax(m.generator(m.decode(tgtIn, m.encode(src, pad), pad)), -1).dataSync() as Float32Array;
      });
      const V = 9;
      let sum = 0;
      for (let t = 0; t < n; t++) {
        const mean = Array.from({ length: V }, (_, v) =>
          v === PAD ? -1 : (Math.exp(lps[0][t * V + v]) + Math.exp(lps[1][t * V + v])) / 2,
        );
        if (t === 0) mean[EOS] = -1; // minLen 1
        const best = mean.indexOf(Math.max(...mean));
        assert.equal(out[t], best, `sentence ${b} step ${t + 1}`);
        sum += Math.log(mean[best]);
      }
      assert.ok(Math.abs(sum - g.logProbs[b]) < 1e-4, `sentence ${b}: log-probability ${g.logProbs[b]} against ${sum}`);
    }
  });
});

test('ensemble members must share vocabularies and padding', () => {
  assert.throws(
    () => greedy([tiny(1), tiny(2, { vocabSize: 10 })], SRC, opts),
    /ensemble member 2 has a source vocabulary of 10, member 1 9/,
  );
  assert.throws(
    () => greedy([tiny(1), tiny(2, { tgtVocabSize: 7 })], SRC, opts),
    /ensemble member 2 has a target vocabulary of 7, member 1 9/,
  );
  assert.throws(() => greedy([], SRC, opts), /at least one model, got an empty list/);
});
