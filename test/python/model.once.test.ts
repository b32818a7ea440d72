/**
 * python/qkv_torch/model.py against qkv: Seq2Seq (post-norm ReLU, pre-norm GELU, separate vocabularies) and GPT (learned
 * and sinusoidal positions) folders written by qkv load with load_state_dict(strict=True) from fp32,
 * fp16, bf16 and int8 files and give qkv's logits; bad folders give one clear line and change nothing.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { dequantizeInt8, quantizeInt8 } from '../../src/tensor/quantize.ts';
import { readSafetensors, writeSafetensors } from '../../src/io/safetensors.ts';
import { GPT, type GPTConfig } from '../../src/models/gpt.ts';
import { Seq2Seq } from '../../src/models/seq2seq.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { requireTool, toolSkip } from '../helpers/tools.ts';
import { python } from './setup.ts';

const skip = toolSkip('torch');
const dir = mkdtempSync(join(tmpdir(), 'qkv-torch-model-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const S2S = {
  vocabSize: 50,
  dModel: 16,
  nhead: 2,
  numEncoderLayers: 2,
  numDecoderLayers: 2,
  dimFeedforward: 24,
  dropout: 0.1,
  activation: 'relu' as const,
  normFirst: false,
  maxLen: 32,
  padId: 0,
};
const GPTC = {
  vocabSize: 40,
  blockSize: 16,
  nLayer: 2,
  nHead: 2,
  nEmbd: 16,
  dropout: 0.1,
  positions: 'learned' as const,
};

function folder(name: string, config: object, weights: Uint8Array): string {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, 'config.json'), JSON.stringify(config));
  writeFileSync(join(d, 'model.safetensors'), weights);
  return d;
}

const ids = (rows: number[][]) => new Tensor(Int32Array.from(rows.flat()), [rows.length, rows[0].length], 'int32');
const src = ids([
  [5, 9, 3, 17, 2],
  [8, 4, 11, 0, 0],
]); // the second row padded
const tgt = ids([
  [1, 12, 7, 30],
  [1, 6, 0, 0],
]);
const gptIds = ids([
  [3, 14, 15, 9, 2, 6],
  [5, 35, 8, 9, 7, 9],
]);

interface Case {
  dir: string;
  expected: Tensor;
}

/** The bytes of a state dict in `dtype`: fp32, fp16, bf16, or qkv's int8 rows with scales (tensor/quantize.ts). */
function weightBytes(state: Record<string, Tensor>, dtype?: 'F16' | 'BF16' | 'I8'): Uint8Array {
  if (dtype !== 'I8') return writeSafetensors(state, dtype ? { dtype } : {});
  const q = quantizeInt8(state);
  return writeSafetensors(q.tensors, { dtype: q.dtype });
}

function seq2seqCase(
  name: string,
  config: typeof S2S & { tgtVocabSize?: number },
  dtype?: 'F16' | 'BF16' | 'I8',
): Case {
  manualSeed(3);
  const m = new Seq2Seq(config);
  const bytes = weightBytes(m.stateDict(), dtype);
  m.loadStateDict(dequantizeInt8(readSafetensors(bytes).tensors)); // qkv's own view of the rounded weights
  m.eval();
  return {
    dir: folder(name, { format: 'qkv-seq2seq', version: 1, model: config }, bytes),
    expected: noGrad(() => m.forward(src, tgt)),
  };
}

function gptCase(name: string, config: GPTConfig, dtype?: 'I8'): Case {
  manualSeed(4);
  const m = new GPT(config);
  const bytes = weightBytes(m.stateDict(), dtype);
  m.loadStateDict(dequantizeInt8(readSafetensors(bytes).tensors));
  m.eval();
  return {
    dir: folder(name, { format: 'qkv-gpt', version: 1, model: config, tokenizer: 'char' }, bytes),
    expected: noGrad(() => m.forward(gptIds)),
  };
}

test("Seq2Seq and GPT folders from qkv (fp32, fp16, bf16, int8) load strictly in PyTorch and give qkv's logits (1e-4)", {
  skip,
}, () => {
  requireTool('torch');
  const cases = [
    seq2seqCase('s2s-f32', S2S),
    seq2seqCase('s2s-f16', S2S, 'F16'),
    seq2seqCase('s2s-bf16', S2S, 'BF16'),
    seq2seqCase('s2s-int8', S2S, 'I8'),
    gptCase('gpt-int8', GPTC, 'I8'),
    seq2seqCase('s2s-prenorm-gelu', { ...S2S, normFirst: true, activation: 'gelu' as never }),
    // Separate vocabularies: a source table of 50 and a target table of 40, tied to the output.
    seq2seqCase('s2s-separate-vocab', { ...S2S, tgtVocabSize: 40 }),
    gptCase('gpt-learned', GPTC),
    gptCase('gpt-sinusoidal', { ...GPTC, positions: 'sinusoidal' }),
    // GPT-2's tanh GELU and LayerNorm ε.
    gptCase('gpt-gelu-tanh', { ...GPTC, activation: 'gelu_tanh', layerNormEps: 1e-6 }),
  ];
  const inS2s = join(dir, 's2s-ids.safetensors');
  const inGpt = join(dir, 'gpt-ids.safetensors');
  writeFileSync(inS2s, writeSafetensors({ src, tgt }));
  writeFileSync(inGpt, writeSafetensors({ ids: gptIds }));
  // One Python process for all folders (torch's import is the slow part).
  const script = `import sys\nfrom qkv_torch.model import main\nfor d, i in zip(sys.argv[1::2], sys.argv[2::2]): main([d, '--logits', i, d + '/logits.safetensors'])`;
  const r = python(['-c', script, ...cases.flatMap((c) => [c.dir, c.dir.includes('gpt') ? inGpt : inS2s])]);
  assert.equal(r.status, 0, r.stderr);
  for (const c of cases) {
    const got = readSafetensors(readFileSync(join(c.dir, 'logits.safetensors'))).tensors.logits;
    assert.deepEqual(got.shape, c.expected.shape, c.dir);
    const a = got.dataSync<Float32Array>();
    const b = c.expected.dataSync<Float32Array>();
    let worst = 0;
    for (let i = 0; i < b.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) - 1e-4 * (1 + Math.abs(b[i])));
    assert.ok(worst <= 0, `${c.dir}: logits differ by more than 1e-4·(1 + |x|)`);
  }
});

test('bad folders: unknown format or field, missing/extra key, wrong shape, bad int8 scales, truncated file: one clear line each, files untouched', {
  skip,
}, () => {
  requireTool('torch');
  manualSeed(5);
  const good = new Seq2Seq(S2S).stateDict();
  const cfg = { format: 'qkv-seq2seq', version: 1, model: S2S };
  const weights = writeSafetensors(good);
  const without = { ...good };
  delete without['transformer.decoder.norm.bias'];
  const wrong = {
    ...good,
    'transformer.encoder.layers.0.linear1.weight': new Tensor(new Float32Array(24 * 15), [24, 15], 'float32'),
  };
  const q = quantizeInt8(good);
  const negScale = {
    ...q.tensors,
    'embedding.weight_scale': new Tensor(new Float32Array(50).fill(-0.01), [50, 1], 'float32'),
  };
  const flatScale = {
    ...q.tensors,
    'embedding.weight_scale': new Tensor(new Float32Array(50).fill(0.01), [50], 'float32'),
  };
  const cases: [string, object, Uint8Array, RegExp][] = [
    [
      'unknown-format',
      { ...cfg, format: 'qkv-bert' },
      weights,
      /config\.json: unknown format "qkv-bert", expected 'qkv-seq2seq' \(qkv train\) or 'qkv-gpt' \(qkv train-lm\)$/,
    ],
    [
      'unknown-field',
      { ...cfg, model: { ...S2S, numLayers: 6 } },
      weights,
      /config\.json: unknown field model\.numLayers for format 'qkv-seq2seq'/,
    ],
    [
      'separate-vocab',
      { ...cfg, model: { ...S2S, tgtVocabSize: 40 } },
      weights,
      /model\.safetensors: missing tensor 'tgtEmbedding\.weight' \(expected shape \[40, 16\]\)$/,
    ],
    [
      'missing-key',
      cfg,
      writeSafetensors(without),
      /model\.safetensors: missing tensor 'transformer\.decoder\.norm\.bias' \(expected shape \[16\]\)$/,
    ],
    [
      'extra-key',
      cfg,
      writeSafetensors({ ...good, 'lm_head.weight': good['embedding.weight'] }),
      /model\.safetensors: unexpected tensor 'lm_head\.weight' \(shape \[50, 16\]\), not part of this model$/,
    ],
    [
      'wrong-shape',
      cfg,
      writeSafetensors(wrong),
      /tensor 'transformer\.encoder\.layers\.0\.linear1\.weight' has shape \[24, 15\], the model expects \[24, 16\]$/,
    ],
    [
      'int8-negative-scale',
      cfg,
      writeSafetensors(negScale, { dtype: q.dtype }),
      /model\.safetensors: int8 weight 'embedding\.weight' has a scale that is negative or not finite: the file is corrupt$/,
    ],
    [
      'int8-scale-shape',
      cfg,
      writeSafetensors(flatScale, { dtype: q.dtype }),
      /model\.safetensors: int8 weight 'embedding\.weight' \[50, 16\] needs 'embedding\.weight_scale' of shape \[rows, 1\], got \[50\]$/,
    ],
    [
      'truncated',
      cfg,
      weights.subarray(0, weights.length - 100),
      /safetensors: .*model\.safetensors: tensor '.*' has data_offsets \[\d+, \d+\] but the data after the header is only \d+ bytes \(truncated file\?\)$/,
    ],
  ];
  const dirs = cases.map(([name, c, w]) => folder(`bad-${name}`, c, w));
  const hash = (d: string) =>
    readdirSync(d)
      .map((f) =>
        createHash('sha256')
          .update(readFileSync(join(d, f)))
          .digest('hex'),
      )
      .join();
  const before = dirs.map(hash);
  // Through the command line: exit status 1 and one line.
  const cli = python(['-m', 'qkv_torch.model', dirs[0]]);
  assert.equal(cli.status, 1);
  assert.equal(cli.stderr.trimEnd().split('\n').length, 1, cli.stderr);
  assert.match(cli.stderr.trimEnd(), cases[0][3]);
  // The rest in one process: each message is one line.
  const script =
    'import sys\nfrom qkv_torch import QkvError\nfrom qkv_torch.model import load_model_dir\nfor d in sys.argv[1:]:\n    try:\n        load_model_dir(d); print("loaded")\n    except QkvError as e:\n        print(e)';
  const r = python(['-c', script, ...dirs]);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.equal(lines.length, cases.length, r.stdout);
  lines.forEach((line, i) => assert.match(line, cases[i][3], cases[i][0]));
  assert.deepEqual(dirs.map(hash), before);
});
