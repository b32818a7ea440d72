/**
 * The encoder pipelines with `{ device: 'webgpu' }` (this file runs in scripts/test.mjs's webgpu pass, Dawn on
 * SwiftShader without a GPU: the cases are the tiny fixture folders of scripts/fixtures/make_hf_encoders.py), against
 * transformers 5.18's numbers and against the js backend in the same process: pooled sentence embeddings (BERT),
 * every token's state (RoBERTa: positions numbered after the padding id), fill-mask's top 5 and the classifier's
 * scores, and `{ dtype: 'q4' }` against the js twin's quantized states.
 *
 * The GPU computes in float32 with tree reductions (LayerNorm, softmax, matmul sums in another order than js):
 * float32 rounding, so the tolerances are the js pass's (2e-6 normalized, 2e-5 states, scores 1e-6) against
 * transformers, and 1e-5 against js. q4: the quantized kernels are the twin's bits (webgpu-quantized.once.test.ts);
 * the float ops between them round differently, which is float32 noise unless an activation lands on the other
 * side of an int8 rounding step (a ~1e-2 move of a state, not seen here): 1e-5 as well.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { getBackend, setBackend } from '../../src/backend/backend.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { pipeline } from '../../src/pipelines/index.ts';
import type { Tensor } from '../../src/tensor/tensor.ts';

assert.equal(getBackend().name, 'webgpu', 'this file runs in the webgpu pass (QKV_BACKEND=webgpu)');

const ROOT = fileURLToPath(new URL('../fixtures/hf-encoders/', import.meta.url));
const dir = (name: string) => join(ROOT, name);
const expected = (name: string) => JSON.parse(readFileSync(join(ROOT, name, 'expected.json'), 'utf8'));
const arrays = (name: string) =>
  readSafetensors(new Uint8Array(readFileSync(join(ROOT, name, 'expected.safetensors')))).tensors;

async function close(actual: Tensor, want: Tensor, tol: number, what: string): Promise<void> {
  assert.deepEqual(actual.shape, want.shape, `${what}: shape`);
  const a = await actual.data<Float32Array>();
  const e = await want.data<Float32Array>();
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - e[i]));
  assert.ok(worst <= tol, `${what}: max |diff| ${worst} > ${tol}`);
}

/** `f()` with the js backend current, the webgpu one current again after. */
async function onJs<T>(f: () => Promise<T>): Promise<T> {
  await setBackend('js');
  try {
    return await f();
  } finally {
    await setBackend('webgpu');
  }
}

test("feature-extraction on webgpu: BERT's pooled embeddings and RoBERTa's states, as transformers and js", async () => {
  const bert = await pipeline('feature-extraction', dir('bert'), { device: 'webgpu' });
  assert.equal(getBackend().name, 'webgpu');
  assert.equal(bert.opened.model.parameters()[0]!.deviceName, 'webgpu', 'the weights live on the GPU');
  const texts = expected('bert').texts as string[];
  const pooled = await bert(texts);
  await close(pooled, arrays('bert').meanNormalized, 2e-6, 'bert mean, normalized, against transformers');
  const js = await onJs(async () => (await pipeline('feature-extraction', dir('bert')))(texts));
  await close(pooled, js, 1e-5, 'bert pooled against js');

  const roberta = await pipeline('feature-extraction', dir('roberta'), { device: 'webgpu' });
  const rTexts = expected('roberta').texts as string[];
  const states = await roberta(rTexts);
  await close(states, arrays('roberta').hidden, 2e-5, 'roberta states against transformers');
  const jsStates = await onJs(async () => (await pipeline('feature-extraction', dir('roberta')))(rTexts));
  await close(states, jsStates, 1e-5, 'roberta states against js');
});

test("fill-mask and text-classification on webgpu: transformers' tokens and scores", async () => {
  const unmask = await pipeline('fill-mask', dir('bert-mlm'), { device: 'webgpu' });
  const e = expected('bert-mlm');
  const got = await unmask(e.masked as string[]);
  e.fillMask.forEach((want: { score: number; token: number; sequence: string }[], i: number) => {
    assert.deepEqual(
      got[i].map((r) => [r.token, r.sequence]),
      want.map((r) => [r.token, r.sequence]),
      `fill-mask ${i}`,
    );
    got[i].forEach((r, k) => assert.ok(Math.abs(r.score - want[k].score) < 1e-6, `fill-mask ${i} score ${k}`));
  });
  const classify = await pipeline('text-classification', dir('distilbert-cls'), { device: 'webgpu' });
  const c = expected('distilbert-cls');
  const all = (await classify(c.texts, { topK: classify.labels.length })) as { label: string; score: number }[][];
  c.classify.forEach((want: { label: string; score: number }[], i: number) => {
    assert.deepEqual(
      all[i].map((r) => r.label),
      want.map((r) => r.label),
      `classify ${i}`,
    );
    all[i].forEach((r, k) => assert.ok(Math.abs(r.score - want[k].score) < 1e-6, `classify ${i} score ${k}`));
  });
});

test("{ dtype: 'q4', device: 'webgpu' }: 4-bit weights on the GPU, the js twin's states", async () => {
  const texts = expected('bert-wide').texts as string[];
  const opts = { pooling: 'none' as const };
  const extract = await pipeline('feature-extraction', dir('bert-wide'), { dtype: 'q4', device: 'webgpu' });
  const w = extract.opened.model.stateDict()['encoder.layers.0.linear1.weight']!;
  assert.deepEqual([w.dtype, w.deviceName], ['q4', 'webgpu']);
  const got = await extract(texts, opts);
  const twin = await onJs(async () =>
    (await pipeline('feature-extraction', dir('bert-wide'), { dtype: 'q4' }))(texts, opts),
  );
  await close(got, twin, 1e-5, 'q4 states against the js twin');
});
