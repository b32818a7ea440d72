/**
 * What the explorer's model worker runs, on the webgpu backend (this file runs in scripts/test.mjs's webgpu
 * pass): the asynchronous viz functions on models moved to the GPU against the synchronous ones on the js
 * backend, in one process. Translation with its attention maps (the shipped EN→DE model, greedy and beam 2;
 * the marian-tiny fixture), generation with its attention (the shipped character GPT, the hf-gpt2-tiny
 * fixture), the next-token logits, the neuron view and the flows (a Llama-family decoder's too); an NLLB
 * translation's maps (issue 59).
 *
 * Token ids must be equal. Numbers are float32 on both sides, in another order of operations (the GPU's tree
 * reductions and WGSL's exp): attention weights (in [0, 1]) and logits agree to 1e-4 + 1e-4·|js|, the
 * tolerance the model path meets against PyTorch (test/parity.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getBackend, setBackend } from '../../src/backend/backend.ts';
import { dirSource, readHfGpt2Dir, readLm, readMarianDir, readSeq2Seq } from '../../src/folder/node.ts';
import { ofKind, openFolderSync } from '../../src/folder/open.ts';
import type { Module } from '../../src/nn/module.ts';
import {
  marianWithAttention,
  marianWithAttentionAsync,
  translateWithAttention,
  translateWithAttentionAsync,
  type AttentionStack,
} from '../../src/viz/attention-data.ts';
import type { FlowRun } from '../../src/viz/flow-core.ts';
import { textFlow, textFlowAsync } from '../../src/viz/flow.ts';
import { generateWithAttention, generateWithAttentionAsync } from '../../src/viz/gpt-attention.ts';
import { neuronView, neuronViewAsync } from '../../src/viz/neuron.ts';
import { m2m100WithAttention, m2m100WithAttentionAsync } from '../../src/viz/seq2seq-hf-attention.ts';
import { lastLogits, lastLogitsAsync } from '../../src/viz/next-token.ts';
import { assertClose } from '../helpers/assert.ts';

assert.equal(getBackend().name, 'webgpu', 'this file runs in the webgpu pass (QKV_BACKEND=webgpu)');

/** Two copies of a folder read on js: one stays there, the other's model moves to the GPU. */
async function both<T extends { model: Module }>(read: () => T): Promise<{ js: T; gpu: T }> {
  await setBackend('js');
  try {
    const js = read();
    const gpu = read();
    gpu.model.to('webgpu');
    return { js, gpu };
  } finally {
    await setBackend('webgpu');
  }
}

/** fn on the js backend (the reference), whatever the current one. */
async function onJs<R>(fn: () => R): Promise<R> {
  await setBackend('js');
  try {
    return fn();
  } finally {
    await setBackend('webgpu');
  }
}

const flat = (s: AttentionStack) => s.flat(3);
const close = (a: AttentionStack, b: AttentionStack, what: string) => {
  assert.equal(a.length, b.length, `${what}: layers`);
  assertClose(flat(a), flat(b), what);
};

const de = await both(() => readSeq2Seq('models/multi30k-en-de'));
const marian = await both(() => readMarianDir('test/fixtures/marian-tiny'));
const gpt = await both(() => readLm('models/gpt-multi30k-char'));
const gpt2 = await both(() => readHfGpt2Dir('test/fixtures/hf-gpt2-tiny'));
// A grouped-query Llama (rotary, RMSNorm, SwiGLU) and an NLLB folder (issues 58 and 59).
const llama = await both(() => readLm('test/fixtures/hf-llama/llama-gqa-tied'));
const nllb = await both(() =>
  ofKind(openFolderSync(dirSource('test/fixtures/hf-seq2seq/nllb'), { ensemble: false }), 'm2m100'),
);

test('a translation and its maps on webgpu: the js ids, maps within 1e-4 (EN→DE greedy and beam 2; Marian)', async () => {
  for (const beam of [1, 2]) {
    const text = 'A dog runs.';
    const got = await translateWithAttentionAsync(de.gpu.model, de.gpu.tokenizer, text, { beam });
    const ref = await onJs(() => translateWithAttention(de.js.model, de.js.tokenizer, text, { beam }));
    assert.equal(de.gpu.model.parameters()[0].deviceName, 'webgpu');
    assert.deepEqual(got.outIds, ref.outIds, `beam ${beam}: ids`);
    assert.equal(got.translation, ref.translation);
    for (const kind of ['encoder', 'decoder', 'cross'] as const) close(got[kind], ref[kind], `beam ${beam}: ${kind}`);
  }
  const got = await marianWithAttentionAsync(marian.gpu, 'a b c', { beam: 2 });
  const ref = await onJs(() => marianWithAttention(marian.js, 'a b c', { beam: 2 }));
  assert.deepEqual(got.outIds, ref.outIds, 'Marian ids');
  for (const kind of ['encoder', 'decoder', 'cross'] as const) close(got[kind], ref[kind], `Marian ${kind}`);
});

test('an NLLB translation and its maps on webgpu: the js ids, maps within 1e-4 (the target language forced)', async () => {
  const options = { beam: 1, srcLang: 'eng_Latn', tgtLang: 'deu_Latn' };
  const got = await m2m100WithAttentionAsync(nllb.gpu, 'A man is riding a bike.', options);
  const ref = await onJs(() => m2m100WithAttention(nllb.js, 'A man is riding a bike.', options));
  assert.deepEqual(got.outIds, ref.outIds);
  close(got.encoder, ref.encoder, 'NLLB encoder');
  close(got.decoder, ref.decoder, 'NLLB decoder');
  close(got.cross, ref.cross, 'NLLB cross');
});

test('a generation and its attention on webgpu: the js tokens, maps within 1e-4 (qkv GPT, HF GPT-2)', async () => {
  for (const lm of [gpt, gpt2]) {
    const got = await generateWithAttentionAsync(lm.gpu, 'A dog', { maxTokens: 8 });
    const ref = await onJs(() => generateWithAttention(lm.js, 'A dog', { maxTokens: 8 }));
    assert.deepEqual(got.ids, ref.ids, 'ids');
    assert.equal(got.continuation, ref.continuation);
    close(got.attention, ref.attention, 'attention');
    assertClose(
      await lastLogitsAsync(lm.gpu.model, got.ids),
      await onJs(() => lastLogits(lm.js.model, ref.ids)),
      'last logits',
    );
    const n = await neuronViewAsync(lm.gpu.model, got.ids, 0, 1, 3);
    const r = await onJs(() => neuronView(lm.js.model, ref.ids, 0, 1, 3));
    assertClose([...n.q, ...n.keys.flat(), ...n.weights], [...r.q, ...r.keys.flat(), ...r.weights], 'neuron view');
  }
});

test('flows on webgpu: the js stages within 1e-4 (a GPT; a translator fed its own translation; a grouped-query Llama)', async () => {
  const numbers = (run: FlowRun) =>
    run.flow.stages.flatMap((s) => [
      ...s.rows.flatMap((r) => [r.mean, r.min, r.max, ...r.head]),
      ...(s.heads ?? []).flatMap((h) => h.weights.flat()),
    ]);
  const cases = [
    { gpu: { kind: 'gpt' as const, lm: gpt.gpu }, js: { kind: 'gpt' as const, lm: gpt.js }, text: 'A dog' },
    { gpu: { kind: 'seq2seq' as const, ...de.gpu }, js: { kind: 'seq2seq' as const, ...de.js }, text: 'A dog runs.' },
    { gpu: { kind: 'gpt' as const, lm: llama.gpu }, js: { kind: 'gpt' as const, lm: llama.js }, text: 'A man in a' },
  ];
  for (const c of cases) {
    const got = await textFlowAsync(c.gpu, c.text, { dims: 4 });
    const ref = await onJs(() => textFlow(c.js, c.text, { dims: 4 }));
    assert.deepEqual(got.text, ref.text);
    assert.deepEqual(
      got.flow.stages.map((s) => s.id),
      ref.flow.stages.map((s) => s.id),
    );
    assert.deepEqual(
      got.flow.stages.flatMap((s) => (s.top ?? []).flat().map((t) => t.id)),
      ref.flow.stages.flatMap((s) => (s.top ?? []).flat().map((t) => t.id)),
      'top tokens',
    );
    assertClose(numbers(got), numbers(ref), `${c.gpu.kind} flow`);
  }
});
