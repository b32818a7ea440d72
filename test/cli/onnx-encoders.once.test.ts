/**
 * `qkv export --format onnx` of Hugging Face encoder folders (BERT, DistilBERT, RoBERTa, XLM-R; issue 57): one
 * graph, model.onnx (src/io/onnx/encoder.ts), beside the folder's own config and tokenizer files, that ONNX Runtime
 * (onnxruntime-node) runs on the fixture batches of scripts/fixtures/make_hf_encoders.py with qkv's outputs
 * (last_hidden_state, the masked-LM or classification logits, BERT's pooler_output) and transformers 5.18's:
 * the same float32 operations in another order, so 1e-5 to qkv (measured at most 3e-6) and 2e-5 to transformers,
 * the bounds of the pipelines' tests. int8 and q4 exports are held to qkv's quantized model with the bounds of
 * test/io/onnx-quantized.once.test.ts: int8 1e-4 + 1e-4·|x| (the same float32 steps), q4 within 4% of the
 * states' largest magnitude (ONNX Runtime quantizes x per block of 32, qkv per row).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import * as ort from 'onnxruntime-node';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { exportModel } from '../../src/cli/commands/export.ts';
import { readEncoderDir } from '../../src/folder/node.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import type { Encoder } from '../../src/models/encoder.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { tempDir } from '../e2e/tiny-model.ts';
import { qkv, root } from '../helpers/cli.ts';

const F = join(root, 'test/fixtures/hf-encoders');
const work = tempDir('qkv-onnx-encoders-');
const quiet = { log: () => {} };

interface Batch {
  B: number;
  T: number;
  ids: Record<string, number[][]>;
}

function batchOf(name: string): Batch {
  const ids = JSON.parse(readFileSync(join(F, name, 'expected.json'), 'utf8')).ids as Record<string, number[][]>;
  return { B: ids.input_ids.length, T: ids.input_ids[0].length, ids };
}

/** ONNX Runtime's outputs for the batch (the inputs the graph declares, int64). */
async function runOrt(dir: string, b: Batch): Promise<Record<string, Float32Array>> {
  const s = await ort.InferenceSession.create(join(dir, 'model.onnx'));
  const feeds: Record<string, ort.Tensor> = {};
  for (const k of s.inputNames) {
    assert.ok(b.ids[k], `the graph asks for ${k}, the tokenizer gave ${Object.keys(b.ids).join(', ')}`);
    feeds[k] = new ort.Tensor('int64', BigInt64Array.from(b.ids[k].flat(), BigInt), [b.B, b.T]);
  }
  const r = await s.run(feeds);
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.data as Float32Array]));
}

/** qkv's outputs for the batch, named as the graph names them. */
function runQkv(model: Encoder, b: Batch): Record<string, Float32Array> {
  const int = (k: string) => (b.ids[k] ? new Tensor(Int32Array.from(b.ids[k].flat()), [b.B, b.T], 'int32') : null);
  return noGrad(() => {
    const hidden = model.forward({
      inputIds: int('input_ids')!,
      attentionMask: int('attention_mask'),
      tokenTypeIds: model.embeddings.tokenType ? int('token_type_ids') : null,
    }).hidden;
    const out: Record<string, Float32Array> = { last_hidden_state: hidden.dataSync<Float32Array>() };
    const head = model.config.head;
    if (head.kind === 'masked-lm') out.logits = model.maskedLM(hidden).dataSync<Float32Array>();
    if (head.kind === 'classification') out.logits = model.classify(hidden).dataSync<Float32Array>();
    if (head.kind === 'none' && head.pooler) out.pooler_output = model.pool(hidden).dataSync<Float32Array>();
    return out;
  });
}

function worst(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length, 'length');
  let w = 0;
  for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]));
  return w;
}

test("qkv export --format onnx of an encoder folder: model.onnx, onnx.json and the folder's own files", () => {
  const out = join(work, 'bert-onnx');
  const r = qkv(['export', '--format', 'onnx', '--model', join(F, 'bert'), '--out', out]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /wrote .*bert-onnx: model\.onnx \(opset 17, [\d,]+ parameters, fp32 weights\)/);
  assert.deepEqual(readdirSync(out, { recursive: true }).map(String).sort(), [
    '1_Pooling',
    '1_Pooling/config.json',
    'config.json',
    'model.onnx',
    'modules.json',
    'onnx.json',
    'sentence_bert_config.json',
    'tokenizer.json',
    'tokenizer_config.json',
  ]);
  for (const f of ['config.json', 'tokenizer.json', '1_Pooling/config.json'])
    assert.equal(readFileSync(join(out, f), 'utf8'), readFileSync(join(F, 'bert', f), 'utf8'), f);
  const m = JSON.parse(readFileSync(join(out, 'onnx.json'), 'utf8'));
  assert.deepEqual(
    [m.kind, m.graphs, m.numLayers, m.numHeads, m.headDim, m.vocabSize, m.padId],
    ['encoder', { model: 'model.onnx' }, 2, 4, 4, 400, 0],
  );
  // safetensors: a Hugging Face folder is read as it is; refused in one line.
  const s = qkv(['export', '--model', join(F, 'bert'), '--out', join(work, 'bert-copy')]);
  assert.equal(s.status, 1);
  assert.match(s.stderr, /is a Hugging Face folder: qkv reads it as it is .*export it with --format onnx/);
  assert.equal(s.stderr.trim().split('\n').length, 1, s.stderr);
});

const FOLDERS = ['bert', 'bert-mlm', 'bert-cls', 'bert-vocab', 'distilbert', 'distilbert-mlm', 'distilbert-cls'];
FOLDERS.push('roberta', 'roberta-mlm', 'roberta-cls', 'xlm-roberta-mlm', 'xlm-roberta-cls', 'bert-wide');

test("ONNX Runtime on the exports: qkv's states, logits and pooled outputs, and transformers'", async () => {
  for (const name of FOLDERS) {
    const out = join(work, `${name}-fp32`);
    exportModel({ model: join(F, name), out, format: 'onnx', ...quiet });
    const b = batchOf(name);
    const got = await runOrt(out, b);
    const mine = runQkv(readEncoderDir(join(F, name)).model, b);
    assert.deepEqual(Object.keys(got).sort(), Object.keys(mine).sort(), `${name}: outputs`);
    const want = readSafetensors(new Uint8Array(readFileSync(join(F, name, 'expected.safetensors')))).tensors;
    const theirs: Record<string, Tensor | undefined> = {
      last_hidden_state: want.hidden,
      logits: want.logits,
      pooler_output: want.pooler,
    };
    for (const [k, v] of Object.entries(got)) {
      const q = worst(v, mine[k]);
      assert.ok(q <= 1e-5, `${name} ${k}: max |ORT − qkv| ${q}`);
      const t = theirs[k];
      if (t) assert.ok(worst(v, t.dataSync<Float32Array>()) <= 2e-5, `${name} ${k}: max |ORT − transformers|`);
    }
  }
});

test("int8 and q4 exports: ONNX Runtime within the quantized graphs' bounds of qkv's quantized model", async () => {
  const b = batchOf('bert-wide');
  for (const dtype of ['int8', 'q4'] as const) {
    const out = join(work, `bert-wide-${dtype}`);
    exportModel({ model: join(F, 'bert-wide'), out, format: 'onnx', dtype, ...quiet });
    const got = (await runOrt(out, b)).last_hidden_state;
    const model = readEncoderDir(join(F, 'bert-wide')).model.quantize({ dtype });
    const mine = runQkv(model, b).last_hidden_state;
    if (dtype === 'int8') {
      for (let i = 0; i < mine.length; i++)
        assert.ok(
          Math.abs(got[i] - mine[i]) <= 1e-4 + 1e-4 * Math.abs(mine[i]),
          `int8 state ${i}: ${got[i]} ${mine[i]}`,
        );
    } else {
      const max = mine.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
      assert.ok(worst(got, mine) <= 0.04 * max, `q4: max |ORT − qkv| ${worst(got, mine)} > 4% of ${max}`);
    }
  }
});
