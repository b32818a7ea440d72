import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, manualSeed, models, noGrad, tensor, type Tensor } from '../../src/index.ts';
import { beamSearch, greedy, lengthPenalty } from '../../src/decode/index.ts';

const PAD = 0,
  BOS = 1,
  EOS = 2;

function tiny(seed: number, vocabSize = 9, extra: Partial<models.Seq2SeqConfig> = {}): models.Seq2Seq {
  manualSeed(seed);
  return new models.Seq2Seq({
    ...models.MULTI30K_SMALL,
    vocabSize,
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

test('greedy: identical tokens with and without the KV cache, over seeds; a mix of EOS and maxLen stops', () => {
  let eos = 0,
    cut = 0;
  for (const seed of [1, 2, 3, 4]) {
    const m = tiny(seed);
    const a = greedy(m, SRC, opts);
    const b = greedy(m, SRC, { ...opts, useCache: false });
    assert.deepEqual(a.tokens, b.tokens, `seed ${seed}`);
    assert.deepEqual([...a.ids.dataSync()], [...b.ids.dataSync()]);
    a.logProbs.forEach((x, i) => assert.ok(Math.abs(x - b.logProbs[i]) < 1e-4));
    for (const f of a.finished) f ? eos++ : cut++;
    assert.equal(m.training, true, 'training mode restored');
  }
  assert.ok(eos > 0 && cut > 0, `${eos} sentences ended at EOS, ${cut} at maxLen`);
});

test('beam search: identical with and without the KV cache; beam 1 equals greedy', () => {
  for (const seed of [1, 2, 3]) {
    const m = tiny(seed);
    const a = beamSearch(m, SRC, { ...opts, beamSize: 4 });
    const b = beamSearch(m, SRC, { ...opts, beamSize: 4, useCache: false });
    assert.deepEqual(a.tokens, b.tokens, `seed ${seed}`);
    assert.deepEqual(
      a.hypotheses.map((p) => p.map((h) => h.tokens)),
      b.hypotheses.map((p) => p.map((h) => h.tokens)),
    );
    a.scores.forEach((x, i) => assert.ok(Math.abs(x - b.scores[i]) < 1e-4));
    const g = greedy(m, SRC, opts);
    const b1 = beamSearch(m, SRC, { ...opts, beamSize: 1 });
    assert.deepEqual(b1.tokens, g.tokens, `seed ${seed}: beam 1`);
    assert.deepEqual(b1.finished, g.finished);
    assert.deepEqual([...b1.ids.dataSync()], [...g.ids.dataSync()]);
    b1.logProbs.forEach((x, i) => assert.equal(x, g.logProbs[i]));
  }
});

/** Sum of log-probabilities of each continuation (teacher-forced), padding id excluded as in decoding. */
function scoreAll(m: models.Seq2Seq, src: Tensor, seqs: number[][]): number[] {
  return noGrad(() => {
    m.eval();
    const out: number[] = [];
    for (const y of seqs) {
      const tin = ids([[BOS, ...y.slice(0, -1)]]);
      const lp = F.logSoftmax(m.forward(src, tin), -1).dataSync();
      const V = m.config.vocabSize;
      out.push(y.reduce((s, tok, t) => s + lp[t * V + tok], 0));
    }
    m.train();
    return out;
  });
}

test('beam search with a beam wider than the search space returns the exact optimum (brute force, vocab 5, maxLen 4)', () => {
  const maxLen = 4;
  // Every output: n−1 ids from {BOS, 3, 4} then EOS (n <= 4), or 4 such ids cut at maxLen.
  const body = [1, 3, 4];
  const seqs: number[][] = [];
  const ended: boolean[] = [];
  const grow = (prefix: number[]): void => {
    if (prefix.length < maxLen) {
      seqs.push([...prefix, EOS]);
      ended.push(true);
      for (const t of body) grow([...prefix, t]);
    } else {
      seqs.push(prefix);
      ended.push(false);
    }
  };
  grow([]);
  assert.equal(seqs.length, 1 + 3 + 9 + 27 + 81);
  let beamBeatsGreedy = 0;
  let emptyWouldWin = 0;
  // Random models, two with the shared embedding scaled up: peaked distributions, where pruning by
  // the best reachable score matters.
  for (const [seed, sharpen, row] of [
    [21, 1, [3, 4, 3]],
    [22, 1, [4, 4, 1, 3]],
    [23, 3, [3]],
    [24, 3, [4, 3, 3, 4, 1]],
    [25, 5, [3, 3]],
    [26, 5, [4, 1]],
  ] as const) {
    const m = tiny(seed, 5);
    m.embedding.weight.dataSync().forEach((x, i, a) => (a[i] = x * sharpen));
    const src = ids([[...row]]);
    const lps = scoreAll(m, src, seqs);
    for (const alpha of [0, 0.6, 2, 5]) {
      // minLen 0 allows the empty output [EOS]; the default, 1, forbids it.
      for (const minLen of [0, 1]) {
        const allowed = (i: number) => !(ended[i] && seqs[i].length - 1 < minLen);
        const scores = lps.map((lp, i) => (allowed(i) ? lp / lengthPenalty(seqs[i].length, alpha) : -Infinity));
        const best = scores.indexOf(Math.max(...scores));
        if (minLen === 0 && seqs[best].length === 1) emptyWouldWin++;
        const o = { bosId: BOS, eosId: EOS, maxLen, lengthPenalty: alpha, ...(minLen === 0 ? { minLen } : {}) };
        const r = beamSearch(m, src, { ...o, beamSize: 200 });
        const want = ended[best] ? seqs[best].slice(0, -1) : seqs[best];
        assert.deepEqual(r.tokens[0], want, `seed ${seed} α ${alpha} minLen ${minLen}`);
        assert.equal(r.finished[0], ended[best]);
        assert.ok(Math.abs(r.scores[0] - scores[best]) < 1e-4, `${r.scores[0]} vs ${scores[best]}`);
        if (minLen === 1) assert.ok(r.tokens[0].length >= 1, 'never empty by default');
        // Narrower beams and greedy never beat the optimum; count where beam 4 beats greedy.
        const b4 = beamSearch(m, src, { ...o, beamSize: 4 });
        const g = greedy(m, src, { bosId: BOS, eosId: EOS, maxLen, ...(minLen === 0 ? { minLen } : {}) });
        const gScore = g.logProbs[0] / lengthPenalty(g.ids.shape[1], alpha);
        assert.ok(b4.scores[0] <= scores[best] + 1e-6 && gScore <= scores[best] + 1e-6);
        if (b4.scores[0] > gScore + 1e-6) beamBeatsGreedy++;
      }
    }
  }
  assert.ok(beamBeatsGreedy > 0, 'beam 4 finds a better length-penalised hypothesis than greedy somewhere');
  assert.ok(emptyWouldWin > 0, 'somewhere the empty output is the unconstrained optimum, so minLen matters');
});

test('decoding a sentence alone equals decoding it in a padded batch (greedy and beam)', () => {
  const m = tiny(5);
  const g = greedy(m, SRC, opts);
  const b = beamSearch(m, SRC, { ...opts, beamSize: 3 });
  for (let i = 0; i < SRC.shape[0]; i++) {
    const row = [...SRC.dataSync().subarray(i * 5, (i + 1) * 5)].filter((x) => x !== PAD);
    const alone = ids([row]);
    assert.deepEqual(greedy(m, alone, opts).tokens[0], g.tokens[i], `greedy row ${i}`);
    const bi = beamSearch(m, alone, { ...opts, beamSize: 3 });
    assert.deepEqual(bi.tokens[0], b.tokens[i], `beam row ${i}`);
    assert.ok(Math.abs(bi.scores[0] - b.scores[i]) < 1e-4);
  }
});

/**
 * A model whose decoder output is a constant, 10·E[tok] (final LayerNorm weight 0): it always predicts
 * `tok` when E[tok]·E[tok] beats every other E[v]·E[tok] (true for 2 and 6 with this seed, checked below).
 */
function constant(tok: number, maxLen = 64): models.Seq2Seq {
  const m = tiny(7, 9, { maxLen });
  const norm = m.transformer.decoder.norm!;
  norm.weight!.dataSync().fill(0);
  const d = m.config.dModel;
  for (let j = 0; j < d; j++) norm.bias!.dataSync()[j] = 10 * m.embedding.weight.dataSync()[tok * d + j];
  return m;
}

test('maxLen: default is each source length + 50, capped by the position table; an explicit maxLen is respected', () => {
  const src = ids([
    [3, 4, 5],
    [3, 4, 0],
  ]);
  const m = constant(6);
  for (const useCache of [true, false]) {
    const g = greedy(m, src, { bosId: BOS, eosId: EOS, useCache });
    assert.deepEqual(
      g.tokens.map((t) => t.length),
      [53, 52],
    );
    assert.deepEqual(g.finished, [false, false]);
    assert.ok(g.tokens[0].every((t) => t === 6));
    assert.deepEqual([...g.ids.dataSync().subarray(2 * 53 - 1)], [PAD], 'the shorter row is padded');
  }
  const b = beamSearch(m, src, { bosId: BOS, eosId: EOS, beamSize: 2 });
  assert.deepEqual(
    b.tokens.map((t) => t.length),
    [53, 52],
  );
  assert.deepEqual(
    greedy(constant(6, 40), src, { bosId: BOS, eosId: EOS }).tokens.map((t) => t.length),
    [40, 40],
  );
  assert.deepEqual(greedy(m, src, { bosId: BOS, eosId: EOS, maxLen: 3 }).tokens, [
    [6, 6, 6],
    [6, 6, 6],
  ]);
  assert.deepEqual(
    beamSearch(tiny(3), SRC, { ...opts, maxLen: 5 }).tokens.map((t) => t.length <= 5),
    [true, true, true, true],
  );
  const none = greedy(m, src, { bosId: BOS, eosId: EOS, maxLen: 0 });
  assert.deepEqual(none.tokens, [[], []]);
  assert.deepEqual(none.ids.shape, [2, 0]);
});

test('EOS: a sentence that emits EOS stops; its ids end in EOS then padding, its tokens exclude it', () => {
  const m = constant(EOS);
  for (const r of [greedy(m, SRC, { ...opts, minLen: 0 }), beamSearch(m, SRC, { ...opts, beamSize: 4, minLen: 0 })]) {
    assert.deepEqual(r.tokens, [[], [], [], []]);
    assert.deepEqual(r.finished, [true, true, true, true]);
    assert.deepEqual(r.ids.shape, [4, 1]);
    assert.deepEqual([...r.ids.dataSync()], [EOS, EOS, EOS, EOS]);
  }
  // The default minLen 1 holds EOS off for one id, then it comes.
  for (const r of [greedy(m, SRC, opts), beamSearch(m, SRC, { ...opts, beamSize: 4 })]) {
    assert.ok(r.tokens.every((t) => t.length === 1) && r.finished.every(Boolean));
  }
  assert.throws(() => greedy(m, SRC, { ...opts, minLen: -1 }), /decode: minLen must be a non-negative integer, got -1/);
  // Mixed lengths: the ids of finished rows are EOS then padding; other rows run on.
  const g = greedy(tiny(2), SRC, opts);
  const T = g.ids.shape[1];
  g.tokens.forEach((t, i) => {
    const row = [...g.ids.dataSync().subarray(i * T, (i + 1) * T)];
    const want = g.finished[i] ? [...t, EOS] : t;
    assert.deepEqual(row, [...want, ...new Array<number>(T - want.length).fill(PAD)]);
    assert.ok(!t.includes(EOS) && !t.includes(PAD));
  });
});

test('beam search: the pool is sorted by length-penalised score, lengths counted with EOS', () => {
  const m = tiny(4);
  const r = beamSearch(m, SRC, { ...opts, beamSize: 4, lengthPenalty: 0.6 });
  for (const [i, pool] of r.hypotheses.entries()) {
    assert.ok(pool.length >= 1 && pool.length <= 4);
    for (let j = 1; j < pool.length; j++) assert.ok(pool[j - 1].score >= pool[j].score);
    for (const h of pool) {
      const len = h.tokens.length + (h.finished ? 1 : 0);
      assert.ok(Math.abs(h.score - h.logProb / ((5 + len) / 6) ** 0.6) < 1e-9);
    }
    assert.deepEqual(r.tokens[i], pool[0].tokens);
  }
  assert.equal(lengthPenalty(1, 0.6), 1);
  assert.ok(Math.abs(lengthPenalty(7, 0.6) - 2 ** 0.6) < 1e-12);
});

test('decode input errors', () => {
  const m = tiny(1);
  assert.throws(
    () => greedy(m, tensor([[1, 2]]), opts),
    /src must be int32 token ids of shape \(B, S\), got float32 \[1, 2\]/,
  );
  assert.throws(() => greedy(m, SRC, { ...opts, eosId: 9 }), /eosId must be an id in \[0, 9\), got 9/);
  assert.throws(() => greedy(m, SRC, { ...opts, eosId: PAD }), /eosId must differ from the padding id 0/);
  assert.throws(() => greedy(m, SRC, { ...opts, maxLen: -1 }), /maxLen must be a non-negative integer, got -1/);
  assert.throws(() => beamSearch(m, SRC, { ...opts, beamSize: 0 }), /beamSize must be a positive integer, got 0/);
});
