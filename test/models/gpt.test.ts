import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, manualSeed, memoryScope, models, noGrad, tensor, type Tensor } from '../../src/index.ts';
import { generate } from '../../src/decode/gpt.ts';
import { assertClose } from '../helpers/assert.ts';

const { GPT, gptParameterCount } = models;
type GPTConfig = models.GPTConfig;

const cfg = (over: Partial<GPTConfig> = {}): GPTConfig => ({
  vocabSize: 23,
  blockSize: 12,
  nLayer: 2,
  nHead: 2,
  nEmbd: 16,
  dropout: 0,
  positions: 'learned',
  ...over,
});
const ids = (rows: number[][]): Tensor => tensor(new Int32Array(rows.flat()), [rows.length, rows[0].length]);
/** Rows 0..t−1 of position-major logits (B, T, V) of batch row b, as a flat array. */
const prefix = (logits: Tensor, b: number, t: number): Float32Array => {
  const [, T, V] = logits.shape;
  return logits.dataSync<Float32Array>().slice(b * T * V, b * T * V + t * V);
};

test('GPT-2 124M has 124,439,808 parameters; the formula matches numParameters() for both position kinds', () => {
  assert.equal(gptParameterCount(models.GPT2_124M), 124439808);
  for (const positions of ['learned', 'sinusoidal'] as const) {
    for (const c of [
      cfg({ positions }),
      { ...models.GPT_TINY, positions },
      { ...models.GPT_SMALL, vocabSize: 91, positions },
    ]) {
      assert.equal(new GPT(c).numParameters(), gptParameterCount(c), `${positions} ${c.nEmbd}`);
    }
  }
});

test('state-dict names are GPT-2 module paths with torch.nn layers inside; no lm_head (tied)', () => {
  const m = new GPT(cfg({ nLayer: 1 }));
  assert.deepEqual(Object.keys(m.stateDict()), [
    'wte.weight',
    'wpe.weight',
    'h.0.ln_1.weight',
    'h.0.ln_1.bias',
    'h.0.attn.in_proj_weight',
    'h.0.attn.in_proj_bias',
    'h.0.attn.out_proj.weight',
    'h.0.attn.out_proj.bias',
    'h.0.ln_2.weight',
    'h.0.ln_2.bias',
    'h.0.mlp.c_fc.weight',
    'h.0.mlp.c_fc.bias',
    'h.0.mlp.c_proj.weight',
    'h.0.mlp.c_proj.bias',
    'ln_f.weight',
    'ln_f.bias',
  ]);
  assert.ok(!('wpe.weight' in new GPT(cfg({ positions: 'sinusoidal' })).stateDict()), 'sinusoids are not saved');
});

for (const positions of ['learned', 'sinusoidal'] as const) {
  test(`causal (${positions} positions): changing a later token leaves every earlier position's logits unchanged`, () => {
    manualSeed(1);
    const m = new GPT(cfg({ positions })).eval();
    const a = [
      [3, 7, 1, 9, 4, 4, 12, 5],
      [8, 2, 2, 6, 0, 11, 3, 1],
    ];
    noGrad(() => {
      const base = m.forward(ids(a));
      for (const t of [1, 4, 7]) {
        const b = a.map((r) => r.slice());
        b[0][t] = (b[0][t] + 5) % 23;
        const changed = m.forward(ids(b));
        assert.deepEqual(prefix(changed, 0, t), prefix(base, 0, t), `positions < ${t} of the changed row`);
        assert.deepEqual(prefix(changed, 1, 8), prefix(base, 1, 8), 'the other row');
        const V = 23;
        const at = (l: Tensor) => l.dataSync<Float32Array>().slice(t * V, (t + 1) * V);
        assert.notDeepEqual(at(changed), at(base), `position ${t} itself does see the change`);
      }
    });
  });
}

test('the output projection is wte: its gradient collects the rows that appear only as outputs', () => {
  manualSeed(2);
  const m = new GPT(cfg());
  F.sum(m.forward(ids([[1, 2, 3]]))).backward();
  const g = m.wte.weight.grad!.dataSync<Float32Array>();
  const row = (r: number) => g.slice(r * 16, (r + 1) * 16);
  assert.ok(
    row(20).some((x) => x !== 0),
    'id 20 is never an input',
  );
});

for (const positions of ['learned', 'sinusoidal'] as const) {
  test(`KV cache (${positions}): prefill + one token per call gives the logits of the full forward`, () => {
    manualSeed(3);
    const m = new GPT(cfg({ positions, dropout: 0.1 })).eval();
    const seq = [
      [4, 9, 2, 17, 8, 1, 1, 13, 22, 0],
      [5, 5, 6, 7, 2, 19, 3, 3, 8, 10],
    ];
    noGrad(() => {
      const full = m.forward(ids(seq)); // (2, 10, 23)
      const cache = m.initCache();
      const pre = m.forwardCached(ids(seq.map((r) => r.slice(0, 4))), cache).logits; // 4 positions at once
      assertClose(pre, F.narrow(full, 1, 0, 4), 'prefill', 1e-5, 1e-4);
      for (let t = 4; t < 10; t++) {
        const step = m.forwardCached(ids(seq.map((r) => [r[t]])), cache).logits;
        assertClose(step, F.narrow(full, 1, t, 1), `position ${t}`, 1e-5, 1e-4);
      }
      assert.equal(cache.length, 10);
      assert.deepEqual(cache.layers[1].k!.shape, [2, 2, 10, 8], 'keys (B, nHead, t, headDim)');
      assert.throws(
        () =>
          m.forwardCached(
            ids([
              [1, 2, 3],
              [1, 2, 3],
            ]),
            cache,
          ),
        /positions 10\.\.12 exceed the context of blockSize 12/,
      );
    });
  });
}

test('attention weights for inspection: a prefill with needWeights gives per-block (B, nHead, T, T) causal weights', () => {
  manualSeed(5);
  const m = new GPT(cfg()).eval();
  noGrad(() => {
    const { weights } = m.forwardCached(ids([[3, 1, 4, 1, 5, 9]]), m.initCache(), { needWeights: true });
    assert.equal(weights!.length, 2);
    for (const w of weights!) {
      assert.deepEqual(w.shape, [1, 2, 6, 6]);
      const d = w.dataSync<Float32Array>();
      for (let h = 0; h < 2; h++) {
        for (let i = 0; i < 6; i++) {
          const row = d.slice((h * 6 + i) * 6, (h * 6 + i + 1) * 6);
          assert.ok(
            row.slice(i + 1).every((x) => x === 0),
            `head ${h} row ${i} sees no later position`,
          );
          assert.ok(Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-5, 'rows sum to 1');
        }
      }
    }
  });
});

test('generation: the KV cache gives the same tokens and logits as recomputing, also past the context length', () => {
  manualSeed(4);
  const m = new GPT(cfg());
  // 30 tokens from a 3-token prompt with blockSize 12: the context is cut to its last 6 tokens twice.
  for (const opts of [
    { temperature: 0 },
    { temperature: 1.3, topK: 10, seed: 7 },
    { temperature: 1, topP: 0.9, seed: 8 },
  ]) {
    const cached = generate(m, [1, 2, 3], { maxTokens: 30, ...opts });
    const full = generate(m, [1, 2, 3], { maxTokens: 30, ...opts, useCache: false });
    assert.deepEqual(cached.ids, full.ids, JSON.stringify(opts));
    cached.logits.forEach((l, i) => assertClose(l, full.logits[i], `step ${i}`, 1e-5, 1e-4));
  }
  assert.equal(m.training, true, 'the model is back in training mode');
});

test('a KV cache that owns its storage: steps in a memoryScope give the bits of a plain cache; release() empties it', () => {
  const bits = (t: Tensor) => [...new Uint32Array(Float32Array.from(t.dataSync()).buffer)];
  manualSeed(6);
  const m = new GPT(cfg({ activation: 'gelu_tanh' })).eval();
  noGrad(() => {
    const plain = m.initCache();
    const owned = m.initCache().ownStorage();
    // A prefill of 3 positions, then one position at a time, in two rows.
    for (const feed of [
      ids([
        [1, 2, 3],
        [4, 5, 6],
      ]),
      ids([[7], [8]]),
      ids([[9], [1]]),
      ids([[2], [2]]),
    ]) {
      const want = bits(m.forwardCached(feed, plain).logits);
      // The scope's blocks are released (NaN-filled under QKV_POISON_SCOPES=1) after each step: a cache left in
      // them would read NaN at the next step.
      assert.deepEqual(
        memoryScope(() => bits(m.forwardCached(feed, owned).logits)),
        want,
      );
    }
    assert.equal(owned.length, 6);
    plain.layers.forEach((l, i) => {
      assert.deepEqual(bits(owned.layers[i]!.k!), bits(l.k!), `layer ${i} keys`);
      assert.deepEqual(bits(owned.layers[i]!.v!), bits(l.v!), `layer ${i} values`);
    });
    owned.release();
    assert.equal(owned.length, 0);
    assert.ok(owned.layers.every((l) => l.k === null && l.v === null));
  });
});

test('bad configs and inputs are named', () => {
  assert.throws(() => new GPT(cfg({ nEmbd: 10, nHead: 4 })), /GPT: nEmbd 10 is not divisible by nHead 4/);
  assert.throws(
    () => new GPT(cfg({ positions: 'alibi' as never })),
    /positions must be 'learned', 'sinusoidal' or 'rotary'/,
  );
  assert.throws(
    () => new GPT(cfg({ nKVHead: 3 })),
    /nHead 2 is not divisible by nKVHead 3|nHead 4 is not divisible by nKVHead 3/,
  );
  const m = new GPT(cfg());
  assert.throws(
    () => m.forward(ids([Array.from({ length: 13 }, () => 1)])),
    /positions 0\.\.12 exceed the context of blockSize 12/,
  );
  assert.throws(() => m.forward(tensor([[1, 2]])), /ids must be int32 token ids of shape \(B, T\), got float32/);
  assert.throws(() => generate(m, [], { maxTokens: 3 }), /the prompt is empty/);
  assert.throws(
    () =>
      generate(
        m,
        Array.from({ length: 13 }, () => 1),
        { maxTokens: 3 },
      ),
    /the prompt has 13 tokens, more than the context of 12/,
  );
  assert.throws(() => generate(m, [1, 99], { maxTokens: 3 }), /prompt token 99 is not an id in \[0, 23\)/);
});
