/**
 * F.linearDequantized, the product a QLoRA step trains through (issue 60): y = x·dequant(W)ᵀ + b over an int8 or q4
 * pair, with the gradient to x (dX = dY·dequant(W)) and to the bias, none to the quantized values. Checked against
 * F.linear on dequantizeWeight's float weight, and the input gradient by finite differences.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, Generator, gradcheck, nn, noGrad, randn, Tensor } from '../../src/index.ts';
import { assertClose } from '../helpers/assert.ts';

const gen = new Generator(60);

/** A weight (out, in) with a spread of magnitudes, as a pair in `dtype`, and its dequantized float form. */
function pair(dtype: 'int8' | 'q4', out: number, inF: number) {
  const w = randn([out, inF], gen);
  const { values, scale } = F.quantizeWeight(w, dtype);
  return { values, scale, deq: F.dequantizeWeight(values, scale) };
}

for (const dtype of ['int8', 'q4'] as const) {
  test(`linearDequantized (${dtype}): the input gradient by finite differences, the bias's too`, () => {
    const { values, scale } = pair(dtype, 5, 64);
    const x = randn([2, 3, 64], gen).requiresGrad_();
    const b = randn([5], gen).requiresGrad_();
    const rep = gradcheck((xx, bb) => F.linearDequantized(xx, values, scale, bb), [x, b], { atol: 1e-3, rtol: 1e-2 });
    assert.ok(rep.ok, JSON.stringify(rep.failure));
  });

  test(`linearDequantized (${dtype}): F.linear on the dequantized weight, forward and backward`, () => {
    const { values, scale, deq } = pair(dtype, 7, 96);
    const x = randn([4, 96], gen).requiresGrad_();
    const b = randn([7], gen);
    const y = F.linearDequantized(x, values, scale, b);
    const xRef = new Tensor(x.dataSync<Float32Array>().slice(), x.shape).requiresGrad_();
    const yRef = F.linear(xRef, deq, b);
    assertClose(y, yRef, 'y', 1e-5, 1e-5);
    const g = randn([4, 7], gen);
    y.backward(g);
    yRef.backward(g);
    assertClose(x.grad!, xRef.grad!, 'dX = dY·dequant(W)', 1e-5, 1e-5);
    assert.equal(values.requiresGrad, false);
    assert.equal(values.grad, null, 'no gradient to the quantized values');
    // The inference kernel quantizes x: it is not this product (and it records nothing).
    const inf = noGrad(() => F.linearQuantized(x, values, scale, b));
    assert.equal(inf.requiresGrad, false);
  });

  test(`a quantized Linear with computeDequantized passes the gradient to its input (${dtype})`, () => {
    const lin = new nn.Linear(64, 6);
    const ref = lin.weight.dataSync<Float32Array>().slice();
    lin.quantize({ dtype });
    const x = randn([3, 64], gen).requiresGrad_();
    assert.equal(lin.forward(x).requiresGrad, false, 'the inference path records no gradient');
    lin.computeDequantized = true;
    const y = lin.forward(x);
    assert.ok(y.requiresGrad);
    F.sum(y).backward();
    // Σ_o dequant(W)[o, i]: the gradient of the sum, from the dequantized weight (close to the float one).
    const deq = F.dequantizeWeight(lin.weight, lin.weightScale!).dataSync<Float32Array>();
    const want = new Float32Array(64);
    for (let o = 0; o < 6; o++) for (let i = 0; i < 64; i++) want[i] += deq[o * 64 + i];
    for (let r = 0; r < 3; r++) assertClose(x.grad!.dataSync<Float32Array>().subarray(r * 64, r * 64 + 64), want, 'dx');
    const far = ref.reduce((m, v, i) => Math.max(m, Math.abs(v - deq[i])), 0);
    assert.ok(far > 0, 'the dequantized weight is not the float one (the layer really is quantized)');
  });
}

test('linearDequantized: errors name the argument', () => {
  const { values, scale } = pair('int8', 3, 8);
  assert.throws(() => F.linearDequantized(randn([2, 7], gen), values, scale), /input last dim must be 8/);
  assert.throws(
    () => F.linearDequantized(randn([2, 8], gen), values, scale, randn([4], gen)),
    /bias must have shape \[3\]/,
  );
  assert.throws(
    () => F.linearDequantized(randn([2, 8], gen), randn([3, 8], gen), scale),
    /values must be 2-D int8 or q4/,
  );
});
