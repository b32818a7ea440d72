import { test } from 'node:test';
import assert from 'node:assert/strict';
import { manualSeed, models } from '../../src/index.ts';
import type { Pair } from '../../src/data/batching.ts';
import { averageWeights } from '../../src/train/average.ts';
import { Seq2SeqTrainer, evaluateSeq2Seq } from '../../src/train/trainer.ts';
import { Generator } from '../../src/tensor/random.ts';

const ids = { padId: 0, bosId: 2, eosId: 3 };
const cfg = {
  ...models.MULTI30K_SMALL,
  vocabSize: 14,
  dModel: 16,
  nhead: 2,
  numEncoderLayers: 1,
  numDecoderLayers: 1,
  dimFeedforward: 32,
  dropout: 0.1,
  maxLen: 16,
};

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
  return new Seq2SeqTrainer(model, pairs, ids, { maxTokens: 48, warmup: 10, lrFactor: 0.2, seed: 5 });
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
  const resumed = new Seq2SeqTrainer(new models.Seq2Seq(cfg), pairs, ids, {
    maxTokens: 48,
    warmup: 10,
    lrFactor: 0.2,
    seed: 5,
  });
  resumed.loadState(saved);
  const rest = Array.from({ length: 5 }, () => resumed.step().loss);
  assert.deepEqual(rest, losses.slice(7));
});

test('training lowers the validation loss on a reversal task', () => {
  const pairs = corpus(200, 2);
  const val = corpus(30, 3);
  const t = fresh(pairs);
  const before = evaluateSeq2Seq(t.model, val, ids, 64);
  for (let i = 0; i < 120; i++) t.step();
  const after = evaluateSeq2Seq(t.model, val, ids, 64);
  assert.ok(after < before * 0.75, `val loss ${before.toFixed(3)} -> ${after.toFixed(3)}`);
  // The model's mode comes back as it was (dropout stays on for the next step, off for a model in eval).
  t.model.train();
  evaluateSeq2Seq(t.model, val, ids, 64);
  assert.ok(
    t.model.namedModules().every(([, m]) => m.training),
    'train mode restored',
  );
  t.model.eval();
  evaluateSeq2Seq(t.model, val, ids, 64);
  assert.ok(
    t.model.namedModules().every(([, m]) => !m.training),
    'eval mode kept',
  );
});

test("the learning rate follows the paper's schedule", () => {
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
  assert.deepEqual(
    avg[k].toArray(),
    a[k].toArray().map((x) => Math.fround((x + Math.fround(3 * x)) / 2)),
  );
  assert.throws(() => t.loadState(new Uint8Array(16)), /safetensors:/);
});

test("accum K: one Adam step on the mean of K batches' gradients, the loss their mean; same batches as K steps", () => {
  const pairs = corpus(60, 7);
  const opts = { maxTokens: 48, warmup: 10, lrFactor: 0.2, seed: 5, accum: 2 };
  manualSeed(21);
  const t = new Seq2SeqTrainer(new models.Seq2Seq({ ...cfg, dropout: 0 }), pairs, ids, opts);
  // The expected gradient: each batch's mean-loss gradient, by hand, on a copy of the weights.
  manualSeed(21);
  const ref = new Seq2SeqTrainer(new models.Seq2Seq({ ...cfg, dropout: 0 }), pairs, ids, { ...opts, accum: 1 });
  const grads: Float32Array[][] = [];
  const losses: number[] = [];
  const realStep = ref.optimizer.step.bind(ref.optimizer);
  ref.optimizer.step = () =>
    grads.push(ref.optimizer.params.map((p) => Float32Array.from(p.grad!.dataSync<Float32Array>())));
  for (let k = 0; k < 2; k++) losses.push(ref.step().loss);
  ref.optimizer.step = realStep;
  let seen: Float32Array[] = [];
  const step = t.optimizer.step.bind(t.optimizer);
  t.optimizer.step = () => {
    seen = t.optimizer.params.map((p) => Float32Array.from(p.grad!.dataSync<Float32Array>()));
    step();
  };
  const r = t.step();
  assert.equal(r.step, 1);
  assert.ok(Math.abs(r.loss - (losses[0] + losses[1]) / 2) < 1e-6, `loss ${r.loss} vs ${(losses[0] + losses[1]) / 2}`);
  let checked = 0;
  seen.forEach((g, i) => {
    for (let j = 0; j < g.length; j++) {
      const want = (grads[0][i][j] + grads[1][i][j]) / 2;
      assert.ok(Math.abs(g[j] - want) <= 1e-6 + 1e-5 * Math.abs(want), `param ${i}[${j}]: ${g[j]} vs ${want}`);
      checked++;
    }
  });
  assert.ok(checked > 1000);
  assert.equal(t.position.batchInEpoch, 2, 'two batches consumed by one step');
});

test('weightDecay > 0 is AdamW (decoupled); 0 is Adam; a resumed run must keep accum and weightDecay', () => {
  const pairs = corpus(30, 8);
  manualSeed(21);
  const plain = new Seq2SeqTrainer(new models.Seq2Seq(cfg), pairs, ids, { maxTokens: 48, seed: 5 });
  assert.equal(plain.optimizer.constructor.name, 'Adam');
  manualSeed(21);
  const wd = new Seq2SeqTrainer(new models.Seq2Seq(cfg), pairs, ids, { maxTokens: 48, seed: 5, weightDecay: 0.01 });
  assert.equal(wd.optimizer.constructor.name, 'AdamW');
  assert.equal(wd.optimizer.weightDecay, 0.01);
  // With zero gradients, one AdamW step only decays: p ← p·(1 − lr·wd).
  const p = wd.optimizer.params[0];
  const before = Float32Array.from(p.dataSync<Float32Array>());
  for (const q of wd.optimizer.params) q.grad = null;
  wd.optimizer.zeroGrad(true);
  for (const q of wd.optimizer.params) q.grad = q.clone().mul(0);
  wd.optimizer.lr = 0.5;
  wd.optimizer.step();
  const after = p.dataSync<Float32Array>();
  for (let j = 0; j < 20; j++) assert.ok(Math.abs(after[j] - before[j] * (1 - 0.5 * 0.01)) < 1e-7);
  const saved = plain.saveState();
  manualSeed(1);
  const other = new Seq2SeqTrainer(new models.Seq2Seq(cfg), pairs, ids, { maxTokens: 48, seed: 5, accum: 2 });
  assert.throws(() => other.loadState(saved), /saved accum 1 differs from 2/);
  assert.throws(
    () => new Seq2SeqTrainer(new models.Seq2Seq(cfg), pairs, ids, { accum: 0 }),
    /accum must be a positive integer, got 0/,
  );
  assert.throws(
    () => new Seq2SeqTrainer(new models.Seq2Seq(cfg), pairs, ids, { weightDecay: -1 }),
    /weightDecay must be >= 0, got -1/,
  );
});

test('attentionDropout and activationDropout reach the layers; each defaults to dropout, as torch.nn', () => {
  const m = new models.Seq2Seq({ ...cfg, dropout: 0.3, attentionDropout: 0, activationDropout: 0.05 });
  const enc = m.transformer.encoder.layers.at(0);
  const dec = m.transformer.decoder.layers.at(0);
  assert.equal(enc.selfAttn.dropout, 0);
  assert.equal(dec.multiheadAttn.dropout, 0);
  assert.equal(enc.dropout.p, 0.05);
  assert.equal(dec.dropout.p, 0.05);
  assert.equal(enc.dropout1.p, 0.3);
  assert.equal(dec.dropout3.p, 0.3);
  const d = new models.Seq2Seq({ ...cfg, dropout: 0.2 });
  assert.equal(d.transformer.encoder.layers.at(0).selfAttn.dropout, 0.2);
  assert.equal(d.transformer.decoder.layers.at(0).dropout.p, 0.2);
});

test("startAt(N): a new run at step N of the schedule takes the batch and learning rate step N+1 of a run from 0 would, with Adam's moments empty", () => {
  const pairs = corpus(60, 3);
  for (const accum of [1, 2]) {
    const opts = { maxTokens: 48, warmup: 10, lrFactor: 0.2, seed: 5, accum };
    manualSeed(21);
    const full = new Seq2SeqTrainer(new models.Seq2Seq({ ...cfg, dropout: 0 }), pairs, ids, opts);
    const n = Math.ceil((full.stepsPerEpoch * 1.5) / accum); // past an epoch boundary
    for (let i = 0; i < n; i++) full.step();
    // The new run: other random weights, then the full run's weights at step n (no dropout: the
    // loss depends only on weights and batch, and is computed before the update).
    manualSeed(999);
    const started = new Seq2SeqTrainer(new models.Seq2Seq({ ...cfg, dropout: 0 }), pairs, ids, opts);
    started.model.loadStateDict(full.model.stateDict());
    started.startAt(n);
    assert.equal(started.optimizer.state.step, 0, 'a fresh optimiser');
    const want = full.step();
    const got = started.step();
    assert.deepEqual(got, want, `accum ${accum}: step ${n + 1}`);
    assert.throws(() => started.startAt(3), /already at step/);
  }
  assert.throws(() => fresh(pairs).startAt(-1), /step must be an integer >= 0, got -1/);
});
