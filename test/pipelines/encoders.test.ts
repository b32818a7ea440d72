/**
 * The encoder pipelines (feature-extraction, fill-mask, text-classification) and the folder door on Hugging
 * Face encoder folders saved by transformers 5.18 (scripts/fixtures/make_hf_encoders.py), against what
 * transformers computes: sentence-transformers' mean pooling and normalizing (computed in the script with torch
 * as sentence_transformers.models.Pooling does), pipeline('fill-mask', top_k=5) and
 * pipeline('text-classification') results, on the backend this pass runs. Folders of another kind are refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getBackend, setBackend } from '../../src/backend/backend.ts';
import { dirSource } from '../../src/folder/node.ts';
import { ofKind, openFolder } from '../../src/folder/open.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { featureExtractionPipeline } from '../../src/pipelines/feature-extraction.ts';
import { pipeline, type PipelineWarning } from '../../src/pipelines/index.ts';
import type { Tensor } from '../../src/tensor/tensor.ts';

const ROOT = fileURLToPath(new URL('../fixtures/hf-encoders/', import.meta.url));
const dir = (name: string) => join(ROOT, name);
const expected = (name: string) => JSON.parse(readFileSync(join(ROOT, name, 'expected.json'), 'utf8'));
const arrays = (name: string) =>
  readSafetensors(new Uint8Array(readFileSync(join(ROOT, name, 'expected.safetensors')))).tensors;

/** How far wasm's q4 states may be from the js twin's (see the q4 test; 5e-7 seen). */
const JS_TWIN = 1e-5;

async function close(actual: Tensor, want: Tensor, tol: number, what: string): Promise<void> {
  assert.deepEqual(actual.shape, want.shape, `${what}: shape`);
  const a = await actual.data<Float32Array>();
  const e = want.dataSync<Float32Array>();
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - e[i]));
  assert.ok(worst <= tol, `${what}: max |diff| ${worst} > ${tol}`);
}

test("feature-extraction: the folder's sentence-transformers pooling (mean, normalized) by default, mean and cls", async () => {
  const extract = await pipeline('feature-extraction', dir('bert'));
  assert.deepEqual(extract.opened.embedding, { pooling: 'mean', normalize: true, from: 'modules.json' });
  const e = expected('bert');
  const x = arrays('bert');
  await close(await extract(e.texts), x.meanNormalized, 2e-6, 'default (modules.json: mean, Normalize)');
  await close(await extract(e.texts, { pooling: 'mean', normalize: false }), x.mean, 2e-5, 'mean');
  await close(await extract(e.texts, { pooling: 'cls', normalize: false }), x.cls, 2e-5, 'cls');
  const one = await extract(e.texts[1]);
  assert.deepEqual(one.shape, [1, 16]);
});

test('feature-extraction without modules.json: every token state (pooling none), from a masked-LM folder too', async () => {
  for (const name of ['distilbert', 'roberta', 'xlm-roberta-mlm', 'bert-wide']) {
    const extract = await pipeline('feature-extraction', dir(name));
    assert.deepEqual(extract.opened.embedding, { pooling: 'none', normalize: false, from: 'default' });
    const e = expected(name);
    await close(await extract(e.texts), arrays(name).hidden, 2e-5, `${name} hidden`);
  }
});

test("fill-mask: the top 5 as transformers' pipeline gives them", async () => {
  for (const name of ['bert-mlm', 'distilbert-mlm', 'roberta-mlm', 'xlm-roberta-mlm']) {
    const unmask = await pipeline('fill-mask', dir(name));
    const e = expected(name);
    const got = await unmask(e.masked as string[]);
    e.fillMask.forEach((want: { score: number; token: number; token_str: string; sequence: string }[], i: number) => {
      assert.deepEqual(
        got[i].map((r) => [r.token, r.token_str, r.sequence]),
        want.map((r) => [r.token, r.token_str, r.sequence]),
        `${name} ${i}`,
      );
      got[i].forEach((r, k) => assert.ok(Math.abs(r.score - want[k].score) < 1e-6, `${name} ${i} score ${k}`));
    });
    assert.equal((await unmask(e.masked[0], { topK: 2 })).length, 2);
    await assert.rejects(
      unmask('no mask here'),
      /fill-mask: input 0: expected the mask token (\[MASK\]|<mask>) once, found it 0 times/,
    );
  }
});

test("text-classification: labels and scores as transformers' pipeline (softmax; sigmoid for multi-label)", async () => {
  for (const name of ['bert-cls', 'distilbert-cls', 'roberta-cls', 'xlm-roberta-cls']) {
    const classify = await pipeline('text-classification', dir(name));
    const e = expected(name);
    const all = (await classify(e.texts, { topK: classify.labels.length })) as { label: string; score: number }[][];
    const top1 = (await classify(e.texts)) as { label: string; score: number }[];
    const same = (a: { label: string; score: number }[], b: { label: string; score: number }[], what: string) => {
      assert.deepEqual(
        a.map((r) => r.label),
        b.map((r) => r.label),
        what,
      );
      a.forEach((r, k) =>
        assert.ok(Math.abs(r.score - b[k].score) < 1e-6, `${what} score ${k}: ${r.score} ${b[k].score}`),
      );
    };
    e.classify.forEach((want: { label: string; score: number }[], i: number) => same(all[i], want, `${name} ${i}`));
    same(top1, e.top1, `${name} top1`);
  }
});

test('a long text is cut to the model length with a warning; the signal cancels a call', async () => {
  const extract = await pipeline('feature-extraction', dir('bert'));
  const warnings: PipelineWarning[] = [];
  const long = 'a man rides a bike down the street '.repeat(10);
  const out = await extract([long], { onWarning: (w) => warnings.push(w) });
  assert.deepEqual(out.shape, [1, 16]);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0].message, /^feature-extraction: input 0: \d+ tokens, truncated to 24$/);
  const ac = new AbortController();
  ac.abort(new Error('stop'));
  await assert.rejects(extract('a dog', { signal: ac.signal }), /stop/);
  await assert.rejects(
    extract('a dog', { pooling: 'max' as 'mean' }),
    /pooling: expected 'mean', 'cls' or 'none', got string 'max'/,
  );
});

test('the door: encoder folders open by model_type; other kinds and model_types are refused by name', async () => {
  const opened = await openFolder(dirSource(dir('bert-vocab')));
  assert.equal(opened.kind, 'hf-encoder');
  await assert.rejects(
    pipeline('fill-mask', fileURLToPath(new URL('../fixtures/hf-gpt2-tiny/', import.meta.url))),
    /describes a Hugging Face GPT-2 model; 'fill-mask' takes a Hugging Face encoder folder/,
  );
  const config = JSON.parse(readFileSync(join(ROOT, 'bert', 'config.json'), 'utf8'));
  await assert.rejects(
    openFolder(new Map([['config.json', JSON.stringify({ ...config, model_type: 'albert' })]])),
    /model_type 'albert' is not supported \(qkv reads .*'bert', 'roberta'/,
  );
  await assert.rejects(
    pipeline('text-classification', dir('bert-mlm')),
    /bert-mlm\/model\.safetensors: missing tensor bert\.pooler\.dense\.weight/,
  );
});

test("{ dtype: 'q8' } quantizes the encoder at load and stays near fp32", async () => {
  const extract = await pipeline('feature-extraction', dir('bert'), { dtype: 'q8' });
  const e = expected('bert');
  await close(await extract(e.texts), arrays('bert').meanNormalized, 0.1, 'q8 embeddings');
});

test("{ dtype: 'q4' }: 4-bit layers and int8 tables, the embeddings module.quantize gives, the js twin's", async () => {
  const e = expected('bert-wide');
  const opts = { pooling: 'none' as const };
  const extract = await pipeline('feature-extraction', dir('bert-wide'), { dtype: 'q4' });
  const sd = extract.opened.model.stateDict();
  assert.equal(sd['encoder.layers.1.linear1.weight']!.dtype, 'q4');
  assert.equal(sd['encoder.layers.0.self_attn.in_proj_weight']!.dtype, 'q4');
  assert.equal(sd['embeddings.word.weight']!.dtype, 'int8');
  assert.equal(sd['embeddings.norm.weight']!.dtype, 'float32');
  const got = await extract(e.texts, opts);
  // The pipeline option is module.quantize at load: the same numbers, bit for bit, on this backend.
  const opened = ofKind(await openFolder(dirSource(dir('bert-wide')), { head: 'none' }), 'hf-encoder');
  opened.model.quantize({ dtype: 'q4' });
  assert.deepEqual(await got.data(), await (await featureExtractionPipeline(opened)(e.texts, opts)).data());
  // The js twin (the quantized kernels' oracle): bit for bit on js; on wasm the quantized kernels are the twin's
  // bits (test/backend/wasm-quantized.test.ts) but the float ops around them round differently (float32 noise;
  // an activation rounded to the other int8 step would move a state by ~1e-2, and is not seen here).
  const here = getBackend().name;
  let twin: Tensor;
  try {
    twin = await (await pipeline('feature-extraction', dir('bert-wide'), { dtype: 'q4', device: 'js' }))(e.texts, opts);
  } finally {
    await setBackend(here);
  }
  await close(got, twin, here === 'js' ? 0 : JS_TWIN, `q4 hidden against the js twin on ${here}`);
  // No bound to transformers' float32 states is asked: 4-bit rounding of these random N(0, 0.3²) weights moves
  // the states by 0.29 of their norm, as far as another text's states are (0.34), so such a bound would not
  // tell a right q4 model from a wrong one. The twin is held to a float64 evaluation of its definition instead.
});
