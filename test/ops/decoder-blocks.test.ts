/**
 * The decoder building blocks of Llama, Qwen2 and Mistral (F.rmsNorm, F.swiglu, F.rotaryEmbedding with
 * nn.RotaryEmbedding's tables, grouped-query attention) against PyTorch 2.13 and transformers 5.18
 * (scripts/fixtures/make_decoder_blocks.py): values and the gradients of sum(out · g); and by finite differences.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { F, Generator, gradcheck, nn, randn, type Tensor } from '../../src/index.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { ropeInverseFrequencies } from '../../src/nn/rotary.ts';
import { assertClose } from '../helpers/assert.ts';

const DIR = new URL('../fixtures/decoder-blocks/', import.meta.url);
const load = (name: string): Record<string, Tensor> =>
  readSafetensors(new Uint8Array(readFileSync(new URL(`${name}.safetensors`, DIR)))).tensors;

/** out and the gradients of sum(out · g) for the named inputs, against the fixture's. */
function against(
  name: string,
  inputs: string[],
  f: (...xs: Tensor[]) => Tensor,
  tol = { atol: 1e-5, rtol: 1e-5 },
): void {
  const fx = load(name);
  const xs = inputs.map((k) => fx[k].clone().requiresGrad_());
  const out = f(...xs);
  assertClose(out, fx.out, `${name}: out`, tol.atol, tol.rtol);
  F.sum(F.mul(out, fx.g)).backward();
  inputs.forEach((k, i) => assertClose(xs[i].grad!, fx[`d_${k}`], `${name}: d_${k}`, tol.atol, tol.rtol));
}

test('F.rmsNorm and nn.RMSNorm match torch.nn.functional.rms_norm (values, dx, dweight)', () => {
  against('rms_norm', ['x', 'weight'], (x, w) => F.rmsNorm(x, [12], w, 1e-6));
  const norm = new nn.RMSNorm(12, { eps: 1e-6 });
  const fx = load('rms_norm');
  norm.weight!.write(fx.weight.dataSync());
  assertClose(norm.forward(fx.x), fx.out, 'nn.RMSNorm');
  assert.deepEqual(Object.keys(norm.stateDict()), ['weight']);
});

test('F.swiglu matches silu(gate) · up (values and both gradients)', () => {
  against('swiglu', ['gate', 'up'], (g, u) => F.swiglu(g, u));
});

for (const name of ['rotary_default', 'rotary_llama3']) {
  test(`nn.RotaryEmbedding's frequencies and tables, F.rotaryEmbedding: ${name} as transformers`, () => {
    const fx = load(name);
    const [, , T, D] = fx.q.shape;
    const llama3 = name === 'rotary_llama3';
    const rope = new nn.RotaryEmbedding(D, {
      base: llama3 ? 500000 : 10000,
      scaling: llama3
        ? { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 32 }
        : { type: 'default' },
    });
    // float32 steps as transformers: θ to a float32 ulp (pow rounds once in float64 here), the tables likewise.
    assertClose(rope.inverseFrequencies, fx.inv_freq, `${name}: inv_freq`, 0, 2e-7);
    const offset = llama3 ? 0 : 5;
    const { cos, sin } = rope.tables(offset, T);
    // cos(t·θ) with t·θ up to 40 rad: one float32 ulp of the angle (4e-6) moves cos by as much.
    assertClose(cos, fx.cos, `${name}: cos`, 1e-5, 0);
    assertClose(sin, fx.sin, `${name}: sin`, 1e-5, 0);
    // The kernel on transformers' own tables: exact to float32 rounding of two products and a sum.
    against(name, ['q'], (q) => F.rotaryEmbedding(q, fx.cos, fx.sin), { atol: 1e-6, rtol: 1e-6 });
    assertClose(rope.forward(fx.q, offset), fx.out, `${name}: RotaryEmbedding.forward`, 5e-5, 1e-5);
  });
}

for (const name of ['gqa_plain', 'gqa_causal']) {
  test(`scaledDotProductAttention(enableGqa) matches torch's (values and dq, dk, dv): ${name}`, () => {
    const causal = name === 'gqa_causal';
    against(name, ['q', 'k', 'v'], (q, k, v) =>
      F.scaledDotProductAttention(q, k, v, { isCausal: causal, enableGqa: true }),
    );
    // The path with weights (visible, differentiable) says the same.
    against(
      name,
      ['q', 'k', 'v'],
      (q, k, v) => F.attention(q, k, v, { isCausal: causal, enableGqa: true, needWeights: true }).output,
    );
  });
}

test('enableGqa refuses head counts that do not divide, naming them', () => {
  const q = randn([1, 4, 2, 3]);
  const k = randn([1, 3, 2, 3]);
  assert.throws(
    () => F.scaledDotProductAttention(q, k, k, { enableGqa: true }),
    /4 heads are not a multiple of the key's 3/,
  );
  assert.throws(() => F.scaledDotProductAttention(q, k, k), /key batch dims \[1, 3\] must equal query's \[1, 4\]/);
});

test('RotaryEmbedding and rmsNorm refuse bad arguments by name', () => {
  assert.throws(() => new nn.RotaryEmbedding(7), /dim must be a positive even integer, got 7/);
  assert.throws(() => F.rmsNorm(randn([2, 3]), [4]), /does not end with normalizedShape \[4\]/);
  const x = randn([2, 3, 4]);
  assert.throws(() => F.rotaryEmbedding(x, randn([3, 1]), randn([3, 2])), /cos must be \(3, 2\)/);
});

test('ropeInverseFrequencies: linear scaling divides every frequency by the factor', () => {
  const plain = ropeInverseFrequencies(8, 10000);
  const linear = ropeInverseFrequencies(8, 10000, { type: 'linear', factor: 4 });
  for (let i = 0; i < 4; i++) assert.equal(linear[i], Math.fround(plain[i] / 4));
});

const gen = new Generator(58);
const r = (...shape: number[]) => randn(shape, gen).requiresGrad_();
const check = (name: string, fn: (...xs: Tensor[]) => Tensor, inputs: Tensor[]) =>
  test(`gradcheck: ${name}`, () => {
    const rep = gradcheck(fn, inputs, { atol: 1e-2, rtol: 1e-2 });
    assert.ok(rep.ok, `${name}: ${JSON.stringify(rep.failure)}`);
  });
check('rmsNorm', (x, w) => F.rmsNorm(x, [6], w, 1e-6), [r(3, 6), r(6)]);
check('rmsNorm without weight', (x) => F.rmsNorm(x, [5]), [r(4, 5)]);
check('swiglu', (g, u) => F.swiglu(g, u), [r(3, 5), r(3, 5)]);
const rope = new nn.RotaryEmbedding(6, { base: 100 });
check('rotaryEmbedding', (x) => rope.forward(x, 3), [r(2, 4, 6)]);
check('grouped-query attention (fused)', (q, k, v) => F.scaledDotProductAttention(q, k, v, { enableGqa: true }), [
  r(1, 4, 3, 2),
  r(1, 2, 5, 2),
  r(1, 2, 5, 2),
]);
check(
  'grouped-query attention (causal)',
  (q, k, v) => F.scaledDotProductAttention(q, k, v, { enableGqa: true, isCausal: true }),
  [r(2, 3, 4, 2), r(2, 1, 4, 2), r(2, 1, 4, 2)],
);
