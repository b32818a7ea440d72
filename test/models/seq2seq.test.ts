import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decode, F, Generator, manualSeed, models, optim, tensor } from '../../src/index.ts';

test('paper-base: 63,084,544 parameters with a shared 37k vocabulary (paper: ~65M)', () => {
  // nn.Transformer() has 44,140,544; the tied table adds 37,000 × 512 = 18,944,000 once.
  const m = new models.Seq2Seq(models.PAPER_BASE);
  assert.equal(m.numParameters(), 44140544 + 37000 * 512);
});

test('the output projection is the embedding matrix (§3.4): its gradient collects both uses', () => {
  manualSeed(1);
  const m = new models.Seq2Seq({
    ...models.MULTI30K_SMALL,
    vocabSize: 11,
    dModel: 8,
    nhead: 2,
    numEncoderLayers: 1,
    numDecoderLayers: 1,
    dimFeedforward: 16,
    dropout: 0,
  });
  const src = tensor(new Int32Array([4, 5, 6, 0]), [1, 4]);
  const tgt = tensor(new Int32Array([2, 7, 8]), [1, 3]);
  const logits = m.forward(src, tgt);
  assert.deepEqual(logits.shape, [1, 3, 11]);
  assert.equal(Object.keys(m.stateDict()).filter((k) => k.includes('embedding')).length, 1);
  F.sum(logits).backward();
  const g = m.embedding.weight.grad!.toArray();
  assert.ok(
    g.slice(10 * 8).some((x) => x !== 0),
    'row 10 never appears as input, only as an output class',
  );
});

test('a tiny model learns to copy sequences: loss falls by more than half in 200 Adam steps', () => {
  manualSeed(3);
  const cfg = {
    ...models.MULTI30K_SMALL,
    vocabSize: 12,
    dModel: 16,
    nhead: 2,
    numEncoderLayers: 1,
    numDecoderLayers: 1,
    dimFeedforward: 32,
    dropout: 0,
    maxLen: 16,
  };
  const m = new models.Seq2Seq(cfg);
  const opt = new optim.Adam(m.parameters(), { lr: 0.01, betas: [0.9, 0.98], eps: 1e-9 });
  const gen = new Generator(5);
  const B = 8,
    T = 5,
    BOS = 2,
    EOS = 3;
  const batch = () => {
    const src = new Int32Array(B * T),
      tin = new Int32Array(B * (T + 1)),
      tout = new Int32Array(B * (T + 1));
    for (let b = 0; b < B; b++) {
      tin[b * (T + 1)] = BOS;
      for (let t = 0; t < T; t++) {
        const tok = 4 + gen.int(8);
        src[b * T + t] = tok;
        tin[b * (T + 1) + t + 1] = tok;
        tout[b * (T + 1) + t] = tok;
      }
      tout[b * (T + 1) + T] = EOS;
    }
    return [tensor(src, [B, T]), tensor(tin, [B, T + 1]), tensor(tout, [B, T + 1])];
  };
  const losses: number[] = [];
  for (let step = 0; step < 200; step++) {
    const [src, tin, tout] = batch();
    const loss = F.crossEntropy(m.forward(src, tin), tout, { ignoreIndex: cfg.padId, labelSmoothing: 0.1 });
    opt.zeroGrad();
    loss.backward();
    opt.step();
    losses.push(loss.item());
  }
  const first = losses.slice(0, 5).reduce((a, b) => a + b) / 5;
  const last = losses.slice(-5).reduce((a, b) => a + b) / 5;
  assert.ok(last < first / 2, `loss ${first.toFixed(3)} -> ${last.toFixed(3)}`);
});

test('Seq2Seq input errors', () => {
  const m = new models.Seq2Seq({
    ...models.MULTI30K_SMALL,
    vocabSize: 10,
    dModel: 8,
    nhead: 2,
    numEncoderLayers: 1,
    numDecoderLayers: 1,
    dimFeedforward: 8,
  });
  assert.throws(
    () => m.encode(tensor([[1, 2]])),
    /src must be int32 token ids of shape \(B, T\), got float32 \[1, 2\]/,
  );
});

// Separate vocabularies (issue 12's "joint vs separate"): the source has its own table; the
// target's table embeds target ids and is the output projection.
const SEP = {
  ...models.MULTI30K_SMALL,
  vocabSize: 11,
  tgtVocabSize: 7,
  dModel: 8,
  nhead: 2,
  numEncoderLayers: 1,
  numDecoderLayers: 1,
  dimFeedforward: 16,
  dropout: 0,
};

test('separate vocabularies: two tables, logits over the target vocabulary, and a shared model draws the same numbers', () => {
  manualSeed(1);
  const m = new models.Seq2Seq(SEP);
  manualSeed(1);
  const shared = new models.Seq2Seq({ ...SEP, tgtVocabSize: undefined });
  const sd = m.stateDict();
  assert.deepEqual(sd['embedding.weight'].shape, [11, 8]);
  assert.deepEqual(sd['tgtEmbedding.weight'].shape, [7, 8]);
  assert.equal(m.numParameters(), shared.numParameters() + 7 * 8);
  assert.equal(m.targetVocabSize, 7);
  assert.equal(shared.targetVocabSize, 11);
  // The target table is made last, so every other tensor starts as the shared model's.
  for (const [k, v] of Object.entries(shared.stateDict())) assert.deepEqual(sd[k].toArray(), v.toArray(), k);
  assert.deepEqual(sd['tgtEmbedding.weight'].toArray().slice(0, 8), new Array(8).fill(0), 'the padding row is zero');
  const logits = m.forward(tensor(new Int32Array([4, 5, 6, 0]), [1, 4]), tensor(new Int32Array([2, 3, 1]), [1, 3]));
  assert.deepEqual(logits.shape, [1, 3, 7]);
});

test('separate vocabularies: the encoder reads only the source table, the decoder and the output only the target table', () => {
  manualSeed(2);
  const m = new models.Seq2Seq(SEP);
  const src = tensor(new Int32Array([4, 5, 6, 0]), [1, 4]);
  const tgt = tensor(new Int32Array([2, 3, 1]), [1, 3]);
  const memory = m.encode(src).toArray();
  const logits = m.forward(src, tgt).toArray();
  // A source row no source id uses (8), and every target row: the encoder output does not move.
  const e = m.embedding.weight.dataSync<Float32Array>();
  const t = m.tgtEmbedding!.weight.dataSync<Float32Array>();
  e.fill(5, 8 * 8, 9 * 8);
  t.fill(5, 4 * 8, 7 * 8);
  assert.deepEqual(m.encode(src).toArray(), memory);
  assert.notDeepEqual(m.forward(src, tgt).toArray(), logits, 'target rows 4..6 are output classes');
  // Back to the first target table: source rows outside the source ids change nothing at all.
  manualSeed(2);
  const fresh = new models.Seq2Seq(SEP);
  t.set(fresh.tgtEmbedding!.weight.dataSync<Float32Array>());
  assert.deepEqual(m.forward(src, tgt).toArray(), logits);
  // Gradients: the source table only on the source ids' rows, the target table on every output class.
  F.sum(F.logSoftmax(m.forward(src, tgt), -1)).backward();
  const gs = m.embedding.weight.grad!.toArray();
  const rowsWithGrad = (g: number[], n: number) =>
    Array.from({ length: n }, (_, r) => r).filter((r) => g.slice(r * 8, r * 8 + 8).some((x) => x !== 0));
  assert.deepEqual(rowsWithGrad(gs, 11), [4, 5, 6]);
  assert.deepEqual(rowsWithGrad(m.tgtEmbedding!.weight.grad!.toArray(), 7), [0, 1, 2, 3, 4, 5, 6]);
});

test('separate vocabularies: incremental decoding gives the teacher-forced logits; ids are checked against the target vocabulary', () => {
  manualSeed(4);
  const m = new models.Seq2Seq(SEP);
  m.eval();
  const src = tensor(new Int32Array([4, 5, 6, 9]), [1, 4]);
  const tgt = [2, 5, 3];
  const full = m.forward(src, tensor(Int32Array.from(tgt), [1, 3])).toArray();
  const memory = m.encode(src);
  const cache = m.initCache(memory, m.paddingMask(src));
  const steps = tgt.flatMap((id) => m.decodeStep(tensor(new Int32Array([id]), [1, 1]), cache).toArray());
  steps.forEach((x, i) => assert.ok(Math.abs(x - full[i]) < 1e-5, `logit ${i}: ${x} vs ${full[i]}`));
  const r = decode.greedy(m, src, { bosId: 2, eosId: 6, maxLen: 5 });
  assert.ok(r.tokens[0].every((id) => id >= 0 && id < 7));
  assert.throws(
    () => decode.greedy(m, src, { bosId: 2, eosId: 9, maxLen: 5 }),
    /eosId must be an id in \[0, 7\), got 9/,
  );
});
