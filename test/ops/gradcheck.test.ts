/** Finite-difference checks of every differentiable op (float32, central differences). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, Generator, gradcheck, randn, tensor, type Tensor } from '../../src/index.ts';

const gen = new Generator(7);
const r = (...shape: number[]) => randn(shape, gen).requiresGrad_();
const pos = (...shape: number[]) => {
  const t = randn(shape, gen);
  for (let i = 0; i < t.size; i++) t.dataSync()[i] = 0.5 + Math.abs(t.dataSync()[i]);
  return t.requiresGrad_();
};

function check(name: string, fn: (...xs: Tensor[]) => Tensor, inputs: Tensor[], atol = 1e-2): void {
  test(`gradcheck: ${name}`, () => {
    const rep = gradcheck(fn, inputs, { atol, rtol: 1e-2 });
    assert.ok(rep.ok, `${name}: ${JSON.stringify(rep.failure)}`);
  });
}

check('add broadcast', (a, b) => F.add(a, b), [r(2, 3, 4), r(3, 1)]);
check('sub broadcast', (a, b) => F.sub(a, b), [r(4), r(2, 4)]);
check('mul broadcast', (a, b) => F.mul(a, b), [r(2, 1, 3), r(4, 1)]);
check('div broadcast', (a, b) => F.div(a, b), [r(2, 3), pos(3)]);
check('scalar ops', (a) => F.div(F.sub(2, F.mul(F.add(a, 1), 3)), 4), [r(5)]);
check('scalar / tensor', (a) => F.div(1, a), [pos(5)]);
check('neg exp log sqrt', (a) => F.sqrt(F.log(F.exp(F.neg(F.neg(a))))), [pos(6)]);
check('tanh sigmoid', (a) => F.mul(F.tanh(a), F.sigmoid(a)), [r(7)]);
check('pow', (a) => F.pow(a, 3), [r(5)]);
check('relu', (a) => F.relu(a), [r(3, 5)]);
check('gelu', (a) => F.gelu(a), [r(3, 5)]);
check("gelu approximate 'tanh'", (a) => F.gelu(a, 'tanh'), [r(3, 5)]);
check('sum dims', (a) => F.sum(a, [0, 2], true), [r(2, 3, 4)]);
check('mean', (a) => F.mean(a, -1), [r(3, 4)]);
check('mean all', (a) => F.mean(a), [r(3, 4)]);
check('matmul 2-D', (a, b) => F.matmul(a, b), [r(3, 4), r(4, 5)]);
check('matmul broadcast batch', (a, b) => F.matmul(a, b), [r(2, 1, 3, 4), r(3, 4, 2)]);
check('matmul vector', (a, b) => F.matmul(a, b), [r(4), r(2, 4, 3)]);
check('linear', (x, w, b) => F.linear(x, w, b), [r(2, 3, 5), r(4, 5), r(4)]);
check('softmax last', (a) => F.softmax(a), [r(3, 6)]);
check('softmax dim 0', (a) => F.softmax(a, 0), [r(3, 4, 2)]);
check('logSoftmax', (a) => F.logSoftmax(a, 1), [r(2, 5, 3)]);
check('layerNorm', (x, w, b) => F.layerNorm(x, [6], w, b, 1e-5), [r(3, 6), r(6), r(6)]);
check('layerNorm no affine, 2 dims', (x) => F.layerNorm(x, [2, 3]), [r(4, 2, 3)]);
check('permute', (a) => F.permute(a, [2, 0, 1]), [r(2, 3, 4)]);
check('transpose', (a) => F.transpose(a, 0, -1), [r(2, 3, 4)]);
check('narrow / cat / split', (a, b) => F.cat([F.narrow(a, 1, 1, 2), ...F.split(b, [1, 2], 1)], 1), [r(2, 4), r(2, 3)]);
check('stack / chunk', (a) => F.stack(F.chunk(a, 2, 0), 1), [r(4, 3)]);
check('reshape view', (a) => a.reshape(6, -1).mul(a.reshape(6, 2)), [r(3, 4)]);
check('maskedFill', (a) => F.maskedFill(a, tensor([true, false, true]), -2), [r(2, 3)]);
check('expand', (a) => F.expand(a, [3, 2, 4]), [r(2, 1)]);
check('embedding (repeated ids)', (w) => F.embedding(tensor(new Int32Array([1, 3, 3, 0]), [2, 2]), w), [r(5, 3)]);
check(
  'crossEntropy smoothing + ignore',
  (x) => F.crossEntropy(x, tensor(new Int32Array([2, 0, 4, 1]), [4]), { ignoreIndex: 1, labelSmoothing: 0.1 }),
  [r(4, 6)],
);
check(
  'crossEntropy sum, 3-D',
  (x) => F.crossEntropy(x, tensor(new Int32Array([0, 1, 2, 3, 4, 0]), [2, 3]), { reduction: 'sum' }),
  [r(2, 3, 5)],
);
check('crossEntropy none', (x) => F.crossEntropy(x, tensor(new Int32Array([3, 1]), [2]), { reduction: 'none' }), [
  r(2, 4),
]);
check('dropout (fixed stream)', (x) => F.dropout(x, 0.3, true, new Generator(3)), [r(4, 5)]);
check('attention fused', (q, k, v) => F.scaledDotProductAttention(q, k, v), [
  r(2, 2, 3, 4),
  r(2, 2, 5, 4),
  r(2, 2, 5, 3),
]);
check(
  'attention fused causal + float mask',
  (q, k, v, m) => F.scaledDotProductAttention(q, k, v, { isCausal: true, attnMask: m.detach() }),
  [r(1, 2, 4, 4), r(1, 2, 6, 4), r(1, 2, 6, 2), randn([4, 6], gen)],
);
check(
  'attention fused bool mask',
  (q, k, v) =>
    F.scaledDotProductAttention(q, k, v, {
      attnMask: tensor([
        [true, false, true],
        [true, true, false],
      ]),
    }),
  [r(3, 2, 4), r(3, 3, 4), r(3, 3, 4)],
);
check(
  'attention with weights',
  (q, k, v) => {
    const { output, weights } = F.attention(q, k, v, { needWeights: true, isCausal: true });
    return F.cat([output, weights!], -1);
  },
  [r(2, 4, 3), r(2, 4, 3), r(2, 4, 5)],
);

test("gelu approximate 'tanh' is GPT-2's gelu_new, value for value", () => {
  const xs = [-5, -2.5, -1, -0.3, 0, 0.2, 1, 1.7, 4];
  const y = F.gelu(tensor(xs), 'tanh').dataSync();
  xs.forEach((x, i) => {
    const want = 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
    assert.ok(Math.abs(y[i] - want) < 1e-6, `gelu_new(${x}) = ${y[i]}, expected ${want}`);
  });
  assert.throws(
    () => F.gelu(tensor([1]), 'fast' as never),
    /^Error: gelu: approximate must be 'none' or 'tanh', got 'fast'$/,
  );
});
