import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, Generator, manualSeed, models, optim, tensor } from '../../src/index.ts';

test('paper-base: 63,084,544 parameters with a shared 37k vocabulary (paper: ~65M)', () => {
  // nn.Transformer() has 44,140,544; the tied table adds 37,000 × 512 = 18,944,000 once.
  const m = new models.Seq2Seq(models.PAPER_BASE);
  assert.equal(m.numParameters(), 44140544 + 37000 * 512);
});

test('the output projection is the embedding matrix (§3.4): its gradient collects both uses', () => {
  manualSeed(1);
  const m = new models.Seq2Seq({ ...models.MULTI30K_SMALL, vocabSize: 11, dModel: 8, nhead: 2, numEncoderLayers: 1, numDecoderLayers: 1, dimFeedforward: 16, dropout: 0 });
  const src = tensor(new Int32Array([4, 5, 6, 0]), [1, 4]);
  const tgt = tensor(new Int32Array([2, 7, 8]), [1, 3]);
  const logits = m.forward(src, tgt);
  assert.deepEqual(logits.shape, [1, 3, 11]);
  assert.equal(Object.keys(m.stateDict()).filter((k) => k.includes('embedding')).length, 1);
  F.sum(logits).backward();
  const g = m.embedding.weight.grad!.toArray();
  assert.ok(g.slice(10 * 8).some((x) => x !== 0), 'row 10 never appears as input, only as an output class');
});

test('a tiny model learns to copy sequences: loss falls by more than half in 200 Adam steps', () => {
  manualSeed(3);
  const cfg = { ...models.MULTI30K_SMALL, vocabSize: 12, dModel: 16, nhead: 2, numEncoderLayers: 1, numDecoderLayers: 1, dimFeedforward: 32, dropout: 0, maxLen: 16 };
  const m = new models.Seq2Seq(cfg);
  const opt = new optim.Adam(m.parameters(), { lr: 0.01, betas: [0.9, 0.98], eps: 1e-9 });
  const gen = new Generator(5);
  const B = 8, T = 5, BOS = 2, EOS = 3;
  const batch = () => {
    const src = new Int32Array(B * T), tin = new Int32Array(B * (T + 1)), tout = new Int32Array(B * (T + 1));
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
  const m = new models.Seq2Seq({ ...models.MULTI30K_SMALL, vocabSize: 10, dModel: 8, nhead: 2, numEncoderLayers: 1, numDecoderLayers: 1, dimFeedforward: 8 });
  assert.throws(() => m.encode(tensor([[1, 2]])), /src must be int32 token ids of shape \(B, T\), got float32 \[1, 2\]/);
});
