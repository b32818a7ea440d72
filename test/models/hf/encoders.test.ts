/**
 * Hugging Face BERT, DistilBERT, RoBERTa and XLM-R checkpoints on qkv's Encoder (models/encoder.ts,
 * models/hf/bert.ts) against scripts/fixtures/make_hf_encoders.py: folders saved by transformers 5.18 itself
 * (random weights, every head), and what transformers computes on a padded batch (and on pairs, with token
 * type ids): the base model's states, BERT's pooler, masked-LM logits and classification logits, at float32
 * tolerances, on the backend this pass runs (js, wasm).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { noGrad } from '../../../src/autograd/grad-mode.ts';
import { readSafetensors } from '../../../src/io/safetensors.ts';
import { Encoder, positionIds } from '../../../src/models/encoder.ts';
import { encoderConfigFromHf, encoderStateDict, hasPooler, type HeadKind } from '../../../src/models/hf/bert.ts';
import { withoutInit } from '../../../src/nn/init.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';

const ROOT = fileURLToPath(new URL('../../fixtures/hf-encoders/', import.meta.url));

interface Expected {
  ids: { input_ids: number[][]; attention_mask: number[][]; token_type_ids?: number[][] };
  pairIds?: { input_ids: number[][]; attention_mask: number[][]; token_type_ids: number[][] };
}

function folder(name: string) {
  const dir = join(ROOT, name);
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
  const tensors = readSafetensors(new Uint8Array(readFileSync(join(dir, 'model.safetensors')))).tensors;
  const expected: Expected = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8'));
  const arrays = readSafetensors(new Uint8Array(readFileSync(join(dir, 'expected.safetensors')))).tensors;
  return { config, tensors, expected, arrays };
}

function load(name: string, head: HeadKind = 'auto') {
  const f = folder(name);
  const hf = encoderConfigFromHf(f.config, head);
  if (hf.model.head.kind === 'none') hf.model.head.pooler = hasPooler(Object.keys(f.tensors), hf.family);
  const model = withoutInit(() => new Encoder(hf.model));
  model.loadStateDict(encoderStateDict(f.tensors, hf.family, hf.model));
  model.eval();
  return { ...f, hf, model };
}

function int(rows: number[][]): Tensor {
  return new Tensor(Int32Array.from(rows.flat()), [rows.length, rows[0].length], 'int32');
}

function close(actual: Tensor, expected: Tensor, tol: number, what: string): void {
  assert.deepEqual(actual.shape, expected.shape, `${what}: shape`);
  const a = actual.dataSync<Float32Array>();
  const e = expected.dataSync<Float32Array>();
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - e[i]));
  assert.ok(worst <= tol, `${what}: max |diff| ${worst} > ${tol}`);
}

function run(model: Encoder, ids: Expected['ids']) {
  return model.forward({
    inputIds: int(ids.input_ids),
    attentionMask: int(ids.attention_mask),
    tokenTypeIds: ids.token_type_ids && model.embeddings.tokenType ? int(ids.token_type_ids) : null,
  }).hidden;
}

const TOL = 2e-5;

for (const name of ['bert', 'distilbert', 'roberta']) {
  test(`${name}: the bare model's states on a padded batch equal transformers'`, () => {
    const { model, expected, arrays } = load(name);
    noGrad(() => close(run(model, expected.ids), arrays.hidden, TOL, `${name} hidden`));
  });
}

test("bert: the pooler's output and the states of sentence pairs (token type ids) equal transformers'", () => {
  const { model, expected, arrays } = load('bert');
  assert.ok(model.pooler, 'a BertModel checkpoint with pooler weights builds the pooler');
  noGrad(() => {
    close(model.pool(run(model, expected.ids)), arrays.pooler, TOL, 'pooler');
    close(run(model, expected.pairIds!), arrays.pairHidden, TOL, 'pair hidden');
  });
});

for (const name of ['bert', 'distilbert', 'roberta', 'xlm-roberta']) {
  test(`${name}-mlm: masked-LM logits and the base model's states equal transformers'`, () => {
    const { model, expected, arrays } = load(`${name}-mlm`);
    assert.equal(model.config.head.kind, 'masked-lm');
    noGrad(() => {
      const hidden = run(model, expected.ids);
      close(hidden, arrays.hidden, TOL, 'hidden');
      close(model.maskedLM(hidden), arrays.logits, 1e-4, 'logits');
    });
  });

  test(`${name}-cls: classification logits equal transformers'`, () => {
    const { model, expected, arrays } = load(`${name}-cls`);
    assert.equal(model.config.head.kind, 'classification');
    noGrad(() => close(model.classify(run(model, expected.ids)), arrays.logits, TOL, 'logits'));
  });
}

test('a masked-LM checkpoint opens as the bare model (its head left unread), without a pooler', () => {
  const { model, expected, arrays } = load('roberta-mlm', 'none');
  assert.equal(model.pooler, null);
  noGrad(() => close(run(model, expected.ids), arrays.hidden, TOL, 'hidden'));
});

test("RoBERTa's position ids: after the padding id, padding keeps it (create_position_ids_from_input_ids)", () => {
  assert.deepEqual(
    Array.from(positionIds([0, 5, 6, 2, 1, 1, 0, 7, 2, 1, 1, 1], 2, 6, 'after-padding', 1)),
    [2, 3, 4, 5, 1, 1, 2, 3, 4, 1, 1, 1],
  );
  assert.deepEqual(Array.from(positionIds([9, 9, 9], 1, 3, 'absolute', 0)), [0, 1, 2]);
});

test('config.json and weights that do not fit are refused in one line naming what', () => {
  const f = folder('bert-mlm');
  assert.throws(
    () => encoderConfigFromHf({ ...f.config, hidden_act: 'gelu_new' }),
    /config\.json: hidden_act "gelu_new" is not supported/,
  );
  assert.throws(
    () => encoderConfigFromHf({ ...f.config, position_embedding_type: 'relative_key' }),
    /position_embedding_type "relative_key" is not supported/,
  );
  assert.throws(() => encoderConfigFromHf({ ...f.config, model_type: 'albert' }), /model_type "albert" is not one of/);
  const hf = encoderConfigFromHf(f.config);
  const { 'cls.predictions.bias': _, ...missing } = f.tensors;
  assert.throws(() => encoderStateDict(missing, 'bert', hf.model), /missing tensor cls\.predictions\.bias/);
  assert.throws(
    () => encoderStateDict({ ...f.tensors, 'bert.extra.weight': f.tensors['cls.predictions.bias'] }, 'bert', hf.model),
    /unexpected tensor bert\.extra\.weight/,
  );
  const untied = {
    ...f.tensors,
    'cls.predictions.decoder.weight': f.tensors['bert.embeddings.position_embeddings.weight'],
  };
  assert.throws(() => encoderStateDict(untied, 'bert', hf.model), /cls\.predictions\.decoder\.weight: expected shape/);
});
