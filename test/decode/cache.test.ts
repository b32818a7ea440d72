import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, manualSeed, memoryScope, models, noGrad, tensor, type Tensor } from '../../src/index.ts';
import { logProbs } from '../../src/decode/stepper.ts';
import { assertClose } from '../helpers/assert.ts';

const PAD = 0,
  BOS = 1;

function tiny(normFirst: boolean, activation: 'relu' | 'gelu', seed: number): models.Seq2Seq {
  manualSeed(seed);
  const m = new models.Seq2Seq({
    ...models.MULTI30K_SMALL,
    vocabSize: 13,
    dModel: 16,
    nhead: 4,
    numEncoderLayers: 2,
    numDecoderLayers: 2,
    dimFeedforward: 24,
    dropout: 0.1,
    activation,
    normFirst,
    maxLen: 32,
    padId: PAD,
  });
  return m.eval();
}

const ids = (rows: number[][]): Tensor => tensor(new Int32Array(rows.flat()), [rows.length, rows[0].length]);
// Padded sources of different lengths; a target row that ends in padding.
const SRC = ids([
  [4, 5, 6, 7, 8, 9],
  [10, 11, 0, 0, 0, 0],
  [3, 12, 7, 0, 0, 0],
]);
const TGT = ids([
  [BOS, 4, 5, 6, 7, 8, 9],
  [BOS, 10, 2, 0, 0, 0, 0],
  [BOS, 3, 3, 12, 11, 4, 2],
]);

/** Column t of (B, T) ids as (B, 1). */
const column = (t: Tensor, j: number): Tensor => F.narrow(t, 1, j, 1);

for (const [normFirst, act] of [
  [false, 'relu'],
  [true, 'gelu'],
  [false, 'gelu'],
  [true, 'relu'],
] as const) {
  test(`KV cache (${normFirst ? 'pre' : 'post'}-norm, ${act}): step-by-step logits equal the teacher-forced forward at every position`, () => {
    const m = tiny(normFirst, act, 11);
    noGrad(() => {
      const full = m.forward(SRC, TGT); // (3, 7, 13)
      const pad = m.paddingMask(SRC);
      const cache = m.initCache(m.encode(SRC, pad), pad);
      const [B, T] = TGT.shape;
      for (let t = 0; t < T; t++) {
        assert.equal(cache.length, t);
        const step = m.decodeStep(column(TGT, t), cache); // (B, vocab)
        assertClose(step, F.narrow(full, 1, t, 1).reshape(B, 13), `position ${t}`, 1e-5, 1e-4);
      }
      assert.equal(cache.layers[0].selfK!.shape.join(), [B, 4, T, 4].join(), 'self keys (B, h, t, dK)');
      assert.equal(cache.layers[1].memoryK.shape.join(), [B, 4, 6, 4].join(), 'memory keys (B, h, S, dK)');
    });
  });
}

test('KV cache: feeding several positions per call (causal among them) equals one at a time', () => {
  const m = tiny(true, 'gelu', 12);
  noGrad(() => {
    const full = m.forward(SRC, TGT);
    const pad = m.paddingMask(SRC);
    const cache = m.initCache(m.encode(SRC, pad), pad);
    const a = m.decodeIncremental(F.narrow(TGT, 1, 0, 3), cache).logits;
    const b = m.decodeIncremental(F.narrow(TGT, 1, 3, 4), cache).logits;
    assertClose(F.cat([a, b], 1), full, 'chunks 3 + 4', 1e-5, 1e-4);
  });
});

test('KV cache: reorder keeps, repeats and drops rows like running the selected sentences alone', () => {
  const m = tiny(false, 'relu', 13);
  noGrad(() => {
    const pad = m.paddingMask(SRC);
    const cache = m.initCache(m.encode(SRC, pad), pad);
    m.decodeIncremental(F.narrow(TGT, 1, 0, 3), cache);
    cache.reorder([2, 2, 0]); // sentence 1 dropped, sentence 2 twice (new sources: cross keys gathered)
    assert.deepEqual([...cache.rowSource], [2, 2, 0]);
    const memK = cache.layers[0].memoryK;
    cache.reorder([1, 0, 2]); // beams swapped within the same sources: cross keys untouched
    assert.equal(cache.layers[0].memoryK, memK);
    const picked = [2, 2, 0];
    const sel = (t: Tensor): Tensor =>
      F.cat(
        picked.map((r) => F.narrow(t, 0, r, 1)),
        0,
      );
    const full = m.forward(sel(SRC), sel(TGT));
    const step = m.decodeIncremental(F.narrow(sel(TGT), 1, 3, 4), cache).logits;
    assertClose(step, F.narrow(full, 1, 3, 4), 'after reorder', 1e-5, 1e-4);
    assert.throws(() => cache.reorder([3]), /row 3 is out of range for batch size 3/);
  });
});

test('KV cache: optional per-layer, per-head attention weights of the new position', () => {
  const m = tiny(false, 'relu', 14);
  noGrad(() => {
    const pad = m.paddingMask(SRC);
    const cache = m.initCache(m.encode(SRC, pad), pad);
    m.decodeIncremental(F.narrow(TGT, 1, 0, 2), cache);
    const r = m.decodeIncremental(column(TGT, 2), cache, { needWeights: true });
    assert.equal(r.selfWeights!.length, 2);
    assert.deepEqual(r.selfWeights![1].shape, [3, 4, 1, 3]);
    assert.deepEqual(r.crossWeights![0].shape, [3, 4, 1, 6]);
    const cw = r.crossWeights![0].dataSync();
    for (let h = 0; h < 4; h++) {
      const row = (b: number) => [...cw.subarray((b * 4 + h) * 6, (b * 4 + h + 1) * 6)];
      assert.ok(Math.abs(row(1).reduce((x, y) => x + y) - 1) < 1e-5);
      assert.deepEqual(row(1).slice(2), [0, 0, 0, 0], 'source padding gets no attention');
    }
    // Row 1's target is [BOS, 10, 2, PAD...]: no weights requested here, cache still grows.
    assert.equal(m.decodeIncremental(column(TGT, 3), cache).selfWeights, null);
    assert.equal(cache.length, 4);
  });
});

test('KV cache input errors', () => {
  const m = tiny(false, 'relu', 15);
  noGrad(() => {
    const pad = m.paddingMask(SRC);
    const cache = m.initCache(m.encode(SRC, pad), pad);
    assert.throws(() => m.decodeStep(ids([[1, 2]]), cache), /decodeStep takes one id per row \(B, 1\), got \[1, 2\]/);
    assert.throws(() => m.decodeStep(ids([[1], [2]]), cache), /tgt must be \(N, L, E\) with N = 3/);
    cache.length = 31;
    assert.throws(() => m.decodeIncremental(F.narrow(TGT, 1, 0, 2), cache), /positions 31\.\.32 exceed maxLen 32/);
  });
});

test('KV cache: steps in a memoryScope (as CachedStepper runs them) give the same bits, and the cache outlives the scopes', () => {
  const bits = (t: Tensor) => [...new Uint32Array(Float32Array.from(t.dataSync()).buffer)];
  const m = tiny(false, 'relu', 12);
  noGrad(() => {
    const pad = m.paddingMask(SRC);
    const memory = m.encode(SRC, pad);
    const plain = m.initCache(memory, pad);
    const scoped = m.initCache(memory, pad);
    for (let t = 0; t < TGT.shape[1]; t++) {
      const want = bits(m.decodeStep(column(TGT, t), plain));
      // Kept as numbers: the logits themselves are the scope's (NaN-filled when released, in the tests).
      const got = memoryScope(() => bits(m.decodeStep(column(TGT, t), scoped)));
      assert.deepEqual(got, want, `position ${t}`);
    }
    assert.deepEqual(bits(scoped.layers[1].selfV!), bits(plain.layers[1].selfV!));
    assert.deepEqual(bits(scoped.tgtKeyPaddingMask!), bits(plain.tgtKeyPaddingMask!));
  });
});

test('KV cache: a step under noGrad records no graph, though the parameters require gradients', () => {
  const m = tiny(true, 'gelu', 13);
  assert.ok(m.parameters().every((p) => p.requiresGrad));
  noGrad(() => {
    const pad = m.paddingMask(SRC);
    const cache = m.initCache(m.encode(SRC, pad), pad);
    for (let t = 0; t < 3; t++) {
      const logits = m.decodeStep(column(TGT, t), cache);
      assert.equal(logits.gradFn, null);
      assert.equal(logits.requiresGrad, false);
    }
    for (const l of cache.layers)
      for (const t of [l.selfK!, l.selfV!, l.memoryK, l.memoryV]) assert.equal(t.gradFn, null);
  });
});

test('logProbs: −∞ logits (masked tokens) pass, a NaN stops decoding naming the first bad value, inside a memoryScope too', () => {
  const row = (xs: number[]) => tensor(Float32Array.from(xs), [1, xs.length]);
  for (const scoped of [false, true]) {
    const run = <T>(fn: () => T): T => (scoped ? memoryScope(fn) : fn());
    const lp = run(() => logProbs(row([0, -Infinity, Math.log(3), -Infinity]), 0, 1, scoped));
    assert.deepEqual(
      [...lp].map((v) => (Number.isFinite(v) ? Math.round(v * 1e4) / 1e4 : v)),
      [-Infinity, -Infinity, Math.round(Math.log(3 / 4) * 1e4) / 1e4, -Infinity],
    );
    assert.throws(
      () => run(() => logProbs(row([0, 1, Number.NaN, 2]), 0, 7, scoped)),
      /^Error: decoding step 7: the model's output is not finite \(NaN for token 0 of row 0\)/,
    );
    assert.throws(() => run(() => logProbs(row([0, Infinity]), -1, 2, scoped)), /decoding step 2: .* not finite/);
  }
});

test('KV cache that owns its storage: the same bits as one that does not, through scoped steps and reorders; release() ends it', () => {
  const bits = (t: Tensor) => [...new Uint32Array(Float32Array.from(t.dataSync()).buffer)];
  const m = tiny(true, 'relu', 14);
  noGrad(() => {
    const pad = m.paddingMask(SRC);
    const memory = m.encode(SRC, pad);
    const plain = m.initCache(memory, pad);
    const owned = m.initCache(memory, pad).ownStorage();
    const orders = [
      [0, 1, 2],
      [2, 2, 0, 1],
      [1, 3, 0],
      [0, 0, 2, 1],
      [3, 1],
    ];
    for (let t = 0; t < 5; t++) {
      const col = F.narrow(TGT, 1, t, 1);
      const rows = plain.batchSize;
      const tok = ids(Array.from({ length: rows }, (_, r) => [col.dataSync()[r % 3]!]));
      const want = bits(m.decodeStep(tok, plain));
      assert.deepEqual(
        memoryScope(() => bits(m.decodeStep(tok, owned))),
        want,
        `step ${t}`,
      );
      plain.reorder(orders[t]!);
      owned.reorder(orders[t]!);
    }
    for (const [a, b] of plain.layers.map((l, i) => [l, owned.layers[i]!] as const)) {
      assert.deepEqual(bits(b.selfK!), bits(a.selfK!));
      assert.deepEqual(bits(b.memoryV), bits(a.memoryV));
    }
    owned.release();
    assert.throws(() => owned.reorder([0]), /^Error: TransformerDecoderCache\.reorder: the cache was released/);
    assert.throws(
      () => m.decodeStep(ids([[4], [4]]), owned),
      /TransformerDecoderCache\.appendTargetPadding: the cache was released/,
    );
  });
});
