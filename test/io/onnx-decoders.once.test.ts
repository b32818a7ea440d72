/**
 * ONNX export of today's decoders (Llama, Qwen2, Mistral: rotary positions, RMS norm, grouped KV heads, SwiGLU,
 * optional biases, untied heads, the sliding window): the graph runs in ONNX Runtime (onnxruntime-node) and gives
 * qkv's logits within 1e-4 + 1e-4·|x| with an empty and a filled past (whose keys/values hold the KV heads only),
 * for batches 1, 2 and 3; the Hugging Face fixture folders made by transformers (test/fixtures/hf-llama) exported
 * give transformers' logits and greedy continuations through OrtGpt, the engine `--engine onnxruntime` runs; and
 * Debian's ONNX checker (full_check=True) accepts every graph.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { OrtGpt } from '../../src/decode/onnxruntime.ts';
import { readHfGpt2Dir } from '../../src/folder/node.ts';
import { exportGptOnnx } from '../../src/io/onnx/export.ts';
import { gptDecoderGraph } from '../../src/io/onnx/gpt.ts';
import { GPT, type GPTConfig } from '../../src/models/gpt.ts';
import * as F from '../../src/ops/index.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { qkv, root } from '../helpers/cli.ts';
import { int64Tensor, KeptGraphs } from '../helpers/ort.ts';
import { PYTHON, requireTool, toolSkip } from '../helpers/tools.ts';

const BASE = { vocabSize: 53, blockSize: 40, nLayer: 2, nEmbd: 32, dropout: 0, positions: 'rotary' } as const;
const LLAMA = { norm: 'rms', mlp: 'swiglu', dFf: 40, qkvBias: false, outBias: false, mlpBias: false } as const;
const CONFIGS: Record<string, GPTConfig> = {
  'llama, 4 heads over 2 KV heads, tied': { ...BASE, ...LLAMA, nHead: 4, nKVHead: 2, rope: { base: 10000 } },
  'qwen2, q/k/v biases, 4 heads over 1, untied': {
    ...BASE,
    ...LLAMA,
    nHead: 4,
    nKVHead: 1,
    qkvBias: true,
    tiedHead: false,
    rope: { base: 1e6 },
  },
  'llama3 rope scaling, head_dim 16 given': {
    ...BASE,
    ...LLAMA,
    nHead: 4,
    nKVHead: 4,
    headDim: 16,
    rope: {
      base: 500000,
      scaling: {
        type: 'llama3',
        factor: 8,
        lowFreqFactor: 1,
        highFreqFactor: 4,
        originalMaxPositionEmbeddings: 16,
      },
    },
  },
  'mistral, sliding window 4 on layer 1': {
    ...BASE,
    ...LLAMA,
    nHead: 4,
    nKVHead: 2,
    slidingWindow: 4,
    slidingLayers: [1],
    rope: { base: 10000 },
  },
};

let rng = 4242;
function ids(B: number, T: number, V: number): Tensor {
  const d = new Int32Array(B * T);
  for (let i = 0; i < d.length; i++) {
    rng = (rng * 1103515245 + 12345) % 2 ** 31;
    d[i] = rng % V;
  }
  return new Tensor(d, [B, T], 'int32');
}
const i64 = int64Tensor;

/** |a − b| ≤ 1e-4 + 1e-4·|b| everywhere (b: qkv), with the shapes equal. */
function assertClose(got: ort.Tensor, want: Tensor, what: string): void {
  assert.deepEqual([...got.dims], want.shape, `${what}: shape`);
  const a = got.data as Float32Array;
  const b = want.dataSync<Float32Array>();
  for (let i = 0; i < b.length; i++)
    if (!(Math.abs(a[i] - b[i]) <= 1e-4 + 1e-4 * Math.abs(b[i])))
      assert.fail(`${what}: element ${i}: ONNX Runtime ${a[i]}, qkv ${b[i]}`);
}

const graphs = new KeptGraphs('qkv-onnx-decoders-');
const keepFile = (name: string, bytes: Uint8Array) => graphs.keep(name, bytes);

for (const [name, cfg] of Object.entries(CONFIGS)) {
  test(`${name}: logits with an empty and a filled past equal qkv's (batch 1/2/3)`, async () => {
    manualSeed(11);
    const m = new GPT(cfg).eval();
    const s = await ort.InferenceSession.create(keepFile(name, gptDecoderGraph(cfg, m.stateDict())));
    const hk = cfg.nKVHead ?? cfg.nHead;
    const D = cfg.headDim ?? cfg.nEmbd / cfg.nHead;
    for (const [B, T] of [
      [1, 1],
      [2, 9],
      [3, 12],
    ]) {
      const x = ids(B, T, cfg.vocabSize);
      const ref = noGrad(() => m.forward(x));
      const p = Math.max(1, T - 4);
      const feeds: Record<string, ort.Tensor> = { input_ids: i64(F.narrow(x, 1, 0, p)) };
      for (let i = 0; i < cfg.nLayer; i++) {
        const none = new ort.Tensor('float32', new Float32Array(0), [B, hk, 0, D]);
        feeds[`past_key_values.${i}.key`] = feeds[`past_key_values.${i}.value`] = none;
      }
      let out = await s.run(feeds);
      assertClose(out.logits, F.narrow(ref, 1, 0, p), `B ${B}: first ${p} positions`);
      assert.deepEqual([...out['present.0.key'].dims], [B, hk, p, D], 'the cache holds the KV heads only');
      for (let t = p; t < T; t++) {
        const f: Record<string, ort.Tensor> = { input_ids: i64(F.narrow(x, 1, t, 1)) };
        for (let i = 0; i < cfg.nLayer; i++) {
          f[`past_key_values.${i}.key`] = out[`present.${i}.key`];
          f[`past_key_values.${i}.value`] = out[`present.${i}.value`];
        }
        out = await s.run(f);
        assertClose(out.logits, F.narrow(ref, 1, t, 1), `B ${B}: position ${t} with past`);
      }
    }
  });
}

interface Expected {
  cases: { prompt: string; ids: number[]; logits: number[][]; greedy: number[] }[];
}

for (const folder of ['llama-gqa-tied', 'qwen2-bias-untied', 'llama3-rope', 'mistral-window']) {
  test(`${folder} (made by transformers): the export gives transformers' logits and greedy continuation`, async () => {
    const path = join(root, 'test/fixtures/hf-llama', folder);
    const opened = readHfGpt2Dir(path);
    const exp = exportGptOnnx(opened.model.config, opened.model.stateDict(), { dtype: 'fp32', withAttention: false });
    const graph = keepFile(folder, exp.files['decoder_model.onnx']);
    const lm = new OrtGpt(ort, await ort.InferenceSession.create(graph), exp.manifest);
    const expected = JSON.parse(readFileSync(join(path, 'expected.json'), 'utf8')) as Expected;
    for (const c of expected.cases) {
      const logits = await lm.logits(c.ids, true);
      const V = exp.manifest.vocabSize;
      c.logits.forEach((row, t) => {
        for (let v = 0; v < V; v++)
          if (!(Math.abs(logits[t * V + v] - row[v]) <= 2e-5))
            assert.fail(
              `${c.prompt}: position ${t}, id ${v}: ONNX Runtime ${logits[t * V + v]}, transformers ${row[v]}`,
            );
      });
      // Greedy, one id at a time through the cache, as generate() with do_sample false.
      const got: number[] = [];
      let last: Float32Array = logits.slice((c.ids.length - 1) * V, c.ids.length * V);
      for (let n = 0; n < c.greedy.length; n++) {
        const next = last.indexOf(Math.max(...last));
        got.push(next);
        last = await lm.run([next], false);
      }
      assert.deepEqual(got, c.greedy, c.prompt);
    }
  });
}

test('qkv export --format onnx of a Hugging Face decoder folder (and GPT-2’s): --engine onnxruntime generates what qkv generates', () => {
  for (const folder of ['hf-llama/qwen2-bias-untied', 'hf-llama/mistral-window', 'hf-gpt2-tiny']) {
    const out = join(graphs.dir, `${folder.replace('/', '-')}-export`);
    const e = qkv(['export', '--format', 'onnx', '--model', join(root, 'test/fixtures', folder), '--out', out]);
    assert.equal(e.status, 0, e.stderr);
    // The folder's own files go beside the graph (its tokenizer, its generation defaults), the weights do not.
    const own = readdirSync(join(root, 'test/fixtures', folder)).filter((f) => !/^(expected\.|model[.-])/.test(f));
    assert.deepEqual(readdirSync(out).sort(), [...own, 'decoder_model.onnx', 'onnx.json'].sort(), folder);
    for (const f of own)
      assert.deepEqual(readFileSync(join(out, f)), readFileSync(join(root, 'test/fixtures', folder, f)));
    const args = ['--prompt', 'Two dogs play in the snow', '--max-tokens', '12'];
    const a = qkv(['generate', '--model', join(root, 'test/fixtures', folder), ...args]);
    const b = qkv(['generate', '--engine', 'onnxruntime', '--model', out, ...args]);
    assert.equal(b.status, 0, b.stderr);
    assert.match(b.stderr, /12 tokens in .* ONNX Runtime\)/);
    assert.equal(b.stdout, a.stdout, folder);
  }
});

test("Debian's ONNX checker (full_check) accepts every graph", { skip: toolSkip('onnx') }, () => {
  requireTool('onnx');
  assert.ok(graphs.written.length >= 8, `${graphs.written.length} graphs written`);
  const script = 'import onnx, sys\nfor p in sys.argv[1:]: onnx.checker.check_model(onnx.load(p), full_check=True)\n';
  const r = spawnSync(PYTHON, ['-c', script, ...graphs.written], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});
