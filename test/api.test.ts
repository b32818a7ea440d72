/**
 * The package as a user imports it: `import { nn, io } from 'qkv'` resolves through package.json
 * "exports" to the built dist/ (npm test builds first). Mirrors the held-out check.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { F, io, nn, tensor, type Tensor, zeros, ones, randn, rand, noGrad, gradcheck } from 'qkv';

test('public API exports', () => {
  for (const f of [tensor, zeros, ones, randn, rand, noGrad, gradcheck]) assert.equal(typeof f, 'function');
  assert.equal(typeof F.scaledDotProductAttention, 'function');
  assert.equal(typeof io.readSafetensors, 'function');
  assert.equal(typeof nn.Transformer, 'function');
});

test('held-out style case: MHA with kdim/vdim from a safetensors fixture, via the built package', () => {
  const bytes = new Uint8Array(readFileSync(new URL('./fixtures/mha_kdim_vdim_kpm.safetensors', import.meta.url)));
  const { tensors } = io.readSafetensors(bytes);
  const params: Record<string, Tensor> = {};
  for (const [k, v] of Object.entries(tensors)) if (k.startsWith('params.')) params[k.slice(7)] = v;
  const mha = new nn.MultiheadAttention(32, 4, { kdim: 24, vdim: 40, batchFirst: true });
  mha.loadStateDict(params, { strict: true });
  const q = tensors['inputs.query'].requiresGrad_();
  const k = tensors['inputs.key'];
  const v = tensors['inputs.value'];
  const { output, weights } = mha.forward(q, k, v, {
    keyPaddingMask: tensors['inputs.keyPaddingMask'],
    needWeights: true,
    averageAttnWeights: false,
  });
  output.mul(tensors['R.output']).sum().add(weights!.mul(tensors['R.weights']).sum()).backward();
  const close = (a: Tensor, b: Tensor) =>
    a.toArray().every((x, i) => Math.abs(x - b.dataSync()[i]) <= 1e-4 + 1e-4 * Math.abs(b.dataSync()[i]));
  assert.ok(close(output, tensors['outputs.output']));
  for (const [name, p] of Object.entries(mha.stateDict()))
    assert.ok(close(p.grad!, tensors[`grads.params.${name}`]), name);
  assert.ok(close(q.grad!, tensors['grads.inputs.query']));
});
