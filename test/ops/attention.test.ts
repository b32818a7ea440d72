import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, Generator, nn, noGrad, randn, tensor } from '../../src/index.ts';
import { assertClose } from '../helpers/assert.ts';

const gen = new Generator(11);

test('fused attention and the weights path agree (values and gradients), with every mask kind', () => {
  const shapes = [
    [2, 3, 5, 8, 7, 6],
    [1, 1, 1, 4, 1, 4],
    [3, 2, 13, 5, 13, 3],
  ];
  for (const [B, H, L, D, S, Dv] of shapes) {
    for (const variant of ['none', 'causal', 'float', 'bool'] as const) {
      const q = randn([B, H, L, D], gen),
        k = randn([B, H, S, D], gen),
        v = randn([B, H, S, Dv], gen);
      const R = randn([B, H, L, Dv], gen);
      const mask =
        variant === 'float'
          ? randn([L, S], gen)
          : variant === 'bool'
            ? tensor(
                Array.from({ length: B * L * S }, (_, i) => i % S === 0 || i % 3 !== 0),
                [B, 1, L, S],
                { dtype: 'bool' },
              )
            : null;
      const opts = { attnMask: mask, isCausal: variant === 'causal' };
      const grads = (needWeights: boolean) => {
        const [qq, kk, vv] = [q.clone().requiresGrad_(), k.clone().requiresGrad_(), v.clone().requiresGrad_()];
        const { output } = F.attention(qq, kk, vv, { ...opts, needWeights });
        F.sum(F.mul(output, R)).backward();
        return [output, qq.grad!, kk.grad!, vv.grad!];
      };
      const fused = grads(false);
      const visible = grads(true);
      for (let i = 0; i < 4; i++)
        assertClose(fused[i], visible[i], `${variant} ${[B, H, L, D, S, Dv]} tensor ${i}`, 1e-5, 1e-4);
    }
  }
});

test('mask conventions: F (bool TRUE = attend) and nn.MultiheadAttention (bool TRUE = blocked) are opposite', () => {
  const q = randn([1, 1, 2, 4], gen),
    k = randn([1, 1, 3, 4], gen),
    v = randn([1, 1, 3, 2], gen);
  const allow = tensor([
    [true, true, false],
    [true, false, false],
  ]);
  const block = tensor([
    [false, false, true],
    [false, true, true],
  ]);
  const a = F.attention(q, k, v, { attnMask: allow, needWeights: true }).weights!.toArray();
  assert.equal(a[2], 0);
  assert.equal(a[4], 0);
  assert.equal(a[5], 0);
  const mha = new nn.MultiheadAttention(4, 1, { batchFirst: true });
  const x = randn([1, 2, 4], gen),
    m = randn([1, 3, 4], gen);
  const w = mha.forward(x, m, m, { attnMask: block }).weights!.toArray();
  assert.deepEqual([w[2], w[4], w[5]], [0, 0, 0]);
  assert.ok(w[0] > 0 && w[3] === 1);
});

test('self-attention with one tensor for query, key and value uses the packed projection and matches separate inputs', () => {
  const mha = new nn.MultiheadAttention(12, 3);
  const x = randn([4, 2, 12], gen);
  const a = x.clone().requiresGrad_();
  const same = mha.forward(a, a, a);
  F.sum(F.mul(same.output, same.output)).backward();
  const gPacked = mha.inProjWeight!.grad!.clone();
  mha.zeroGrad();
  const [b1, b2, b3] = [x.clone().requiresGrad_(), x.clone().requiresGrad_(), x.clone().requiresGrad_()];
  const sep = mha.forward(b1, b2, b3);
  F.sum(F.mul(sep.output, sep.output)).backward();
  assertClose(same.output, sep.output, 'output');
  assertClose(same.weights!, sep.weights!, 'weights');
  assertClose(gPacked, mha.inProjWeight!.grad!, 'in_proj_weight grad', 1e-5, 1e-4);
  assertClose(a.grad!, F.add(F.add(b1.grad!, b2.grad!), b3.grad!), 'input grad = sum of the three');
});

test('causal attention with S > L aligns queries to the end (incremental decoding)', () => {
  const q = randn([1, 1, 5, 4], gen),
    k = randn([1, 1, 5, 4], gen),
    v = randn([1, 1, 5, 3], gen);
  const full = F.scaledDotProductAttention(q, k, v, { isCausal: true });
  const last = F.scaledDotProductAttention(q.narrow(2, 3, 2), k, v, { isCausal: true });
  assertClose(last, full.narrow(2, 3, 2), 'last two queries against all keys');
});

test('attention errors name the argument and the shapes', () => {
  const q = randn([2, 3, 4], gen);
  assert.throws(
    () => F.scaledDotProductAttention(q, randn([2, 5, 3], gen), randn([2, 5, 4], gen)),
    /key last dim must equal query's 4/,
  );
  assert.throws(
    () => F.scaledDotProductAttention(q, randn([2, 5, 4], gen), randn([2, 6, 4], gen)),
    /value must have 5 positions/,
  );
  assert.throws(
    () =>
      F.scaledDotProductAttention(q, randn([2, 5, 4], gen), randn([2, 5, 4], gen), { attnMask: randn([4, 5], gen) }),
    /attnMask of shape \[4, 5\] cannot be broadcast to the attention shape \[2, 3, 5\]/,
  );
  assert.throws(
    () => F.scaledDotProductAttention(q, randn([3, 5, 4], gen), randn([3, 5, 4], gen)),
    /key batch dims \[3\] must equal query's \[2\]/,
  );
});

test("weights from the fused kernel (inference) equal the differentiable path's weights", () => {
  const q = randn([2, 2, 4, 3], gen),
    k = randn([2, 2, 6, 3], gen),
    v = randn([2, 2, 6, 5], gen);
  const attnMask = tensor(
    Array.from({ length: 4 * 6 }, (_, i) => i % 5 !== 1),
    [4, 6],
    { dtype: 'bool' },
  );
  const inference = noGrad(() => F.attention(q, k, v, { attnMask, isCausal: true, needWeights: true }));
  const qq = q.clone().requiresGrad_();
  const training = F.attention(qq, k, v, { attnMask, isCausal: true, needWeights: true });
  assert.equal(inference.output.gradFn, null);
  assert.notEqual(training.weights!.gradFn, null);
  assertClose(inference.weights!, training.weights!, 'weights', 1e-6, 1e-5);
  assertClose(inference.output, training.output, 'output', 1e-6, 1e-5);
});
