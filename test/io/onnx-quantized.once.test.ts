/**
 * Quantized ONNX exports (issue 50, point 5): a model quantized by module.quantize exports to graphs of
 * standard quantized operators that ONNX Runtime (onnxruntime-node) runs with qkv's outputs to a stated bound.
 *
 * - int8: every weight product is MatMulInteger (int8 x int8 -> int32) on x quantized in the graph per row as
 *   qkv quantizes it, then float(acc)·(sx·s): the same float32 operations, so the bound is the fp32 export's,
 *   1e-4 + 1e-4·|x| (measured: 6e-8 on the logits).
 * - q4: com.microsoft MatMulNBits (4 bits, blocks of 32, accuracy_level 4), whose int8 quantization of x is
 *   ONNX Runtime's own (per block) where qkv's is per row: the outputs agree within 4% of their largest
 *   magnitude (measured at most 1.7%; about the same with accuracy_level 0, x not quantized at all: the gap is
 *   qkv's own rounding of x), and the logits are five times closer to the q4 model's than to the float model's
 *   (measured 8.6 times: the check that the nibbles, zero point and scales are read as qkv writes them).
 * Tables stay int8 in both (gathered from the one transposed table the tied output projection multiplies),
 * and Debian's ONNX checker accepts the int8 graphs (MatMulNBits is ONNX Runtime's, outside the standard).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import * as ort from 'onnxruntime-node';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { gptDecoderGraph } from '../../src/io/onnx/gpt.ts';
import { seq2seqDecoderGraph, seq2seqEncoderGraph } from '../../src/io/onnx/seq2seq.ts';
import { GPT, type GPTConfig } from '../../src/models/gpt.ts';
import { Seq2Seq, type Seq2SeqConfig } from '../../src/models/seq2seq.ts';
import * as F from '../../src/ops/index.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { tempDir } from '../e2e/tiny-model.ts';
import { PYTHON, requireTool, toolSkip } from '../helpers/tools.ts';

const PAD = 0;
const S2S: Seq2SeqConfig = {
  vocabSize: 61,
  dModel: 64,
  nhead: 4,
  numEncoderLayers: 2,
  numDecoderLayers: 2,
  dimFeedforward: 96,
  dropout: 0,
  activation: 'relu',
  normFirst: false,
  maxLen: 40,
  padId: PAD,
};
const GPTC: GPTConfig = {
  vocabSize: 45,
  blockSize: 32,
  nLayer: 2,
  nHead: 4,
  nEmbd: 64,
  dropout: 0,
  positions: 'learned',
};

let seed = 4321;
const rand = (n: number) => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed % n;
};
/** (B, T) random ids in [1, V); row b keeps lens[b] tokens, then padding. */
function ids(B: number, T: number, V: number, lens: number[] = Array(B).fill(T)): Tensor {
  const d = new Int32Array(B * T);
  for (let b = 0; b < B; b++) for (let t = 0; t < lens[b]!; t++) d[b * T + t] = 1 + rand(V - 1);
  return new Tensor(d, [B, T], 'int32');
}
const i64 = (t: Tensor) =>
  new ort.Tensor(
    'int64',
    BigInt64Array.from(t.dataSync<Int32Array>(), (x) => BigInt(x)),
    t.shape,
  );
const keep = (t: Tensor) =>
  new ort.Tensor(
    'int64',
    BigInt64Array.from(t.dataSync<Int32Array>(), (x) => (x === PAD ? 0n : 1n)),
    t.shape,
  );

/** max |ORT − qkv| and max |qkv|, the shapes equal. */
function diff(got: ort.Tensor, want: Tensor, what: string): { worst: number; scale: number; within: boolean } {
  assert.deepEqual([...got.dims], want.shape, `${what}: shape`);
  const a = got.data as Float32Array;
  const b = want.dataSync<Float32Array>();
  let worst = 0;
  let scale = 0;
  let within = true;
  for (let i = 0; i < b.length; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    if (!(d <= 1e-4 + 1e-4 * Math.abs(b[i]!))) within = false;
    worst = Math.max(worst, d);
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return { worst, scale, within };
}

/** The stated bound: int8 as the fp32 export (elementwise 1e-4 + 1e-4·|x|), q4 4% of max|qkv|. */
function assertBound(dtype: 'int8' | 'q4', got: ort.Tensor, want: Tensor, what: string): void {
  const d = diff(got, want, what);
  if (dtype === 'int8') assert.ok(d.within, `${what}: int8 max |ORT − qkv| ${d.worst} beyond 1e-4 + 1e-4·|x|`);
  else assert.ok(d.worst <= 0.04 * d.scale, `${what}: q4 max |ORT − qkv| ${d.worst}, max |qkv| ${d.scale}`);
}

/** How many nodes of `op` a graph holds (node names are `${op}_${index}`). */
const count = (bytes: Uint8Array, op: string) =>
  (
    Buffer.from(bytes)
      .toString('latin1')
      .match(new RegExp(`${op}_\\d+`, 'g')) ?? []
  ).length;

const dir = tempDir('qkv-onnx-quantized-');
const standard: string[] = [];
function session(name: string, bytes: Uint8Array, dtype: 'int8' | 'q4'): Promise<ort.InferenceSession> {
  if (dtype === 'int8') {
    const p = join(dir, `${name}.onnx`);
    writeFileSync(p, bytes);
    standard.push(p);
  }
  return ort.InferenceSession.create(bytes);
}

for (const dtype of ['int8', 'q4'] as const) {
  test(`GPT ${dtype}: ${dtype === 'int8' ? 'MatMulInteger' : 'MatMulNBits'} graph, logits with an empty and a filled past within the bound of qkv's`, async () => {
    manualSeed(8);
    const float = new GPT(GPTC).eval();
    const m = new GPT(GPTC).eval();
    m.loadStateDict(float.stateDict());
    m.quantize({ dtype });
    const bytes = gptDecoderGraph(GPTC, m.stateDict(), { dtype });
    const perLayer = 4; // in_proj, out_proj, c_fc, c_proj
    if (dtype === 'int8') assert.equal(count(bytes, 'MatMulInteger'), perLayer * GPTC.nLayer + 1, 'and the tied head');
    else {
      assert.equal(count(bytes, 'MatMulNBits'), perLayer * GPTC.nLayer);
      assert.equal(count(bytes, 'MatMulInteger'), 1, 'the int8 tied head');
    }
    const s = await session(`gpt-${dtype}`, bytes, dtype);
    const dK = GPTC.nEmbd / GPTC.nHead;
    for (const [B, T] of [
      [1, 1],
      [3, 9],
    ] as const) {
      const x = ids(B, T, GPTC.vocabSize);
      const ref = noGrad(() => m.forward(x));
      const p = Math.max(1, T - 3);
      const feeds: Record<string, ort.Tensor> = { input_ids: i64(F.narrow(x, 1, 0, p)) };
      for (let i = 0; i < GPTC.nLayer; i++)
        feeds[`past_key_values.${i}.key`] = feeds[`past_key_values.${i}.value`] = new ort.Tensor(
          'float32',
          new Float32Array(0),
          [B, GPTC.nHead, 0, dK],
        );
      let out = await s.run(feeds);
      assertBound(dtype, out.logits, F.narrow(ref, 1, 0, p), `B ${B}: first ${p} positions`);
      if (dtype === 'q4' && T > 1) {
        // Five times closer to qkv's q4 model than to the float one (measured 8.6 times).
        const toFloat = diff(
          out.logits,
          F.narrow(
            noGrad(() => float.forward(x)),
            1,
            0,
            p,
          ),
          'float',
        );
        const toQ4 = diff(out.logits, F.narrow(ref, 1, 0, p), 'q4');
        assert.ok(toQ4.worst * 5 < toFloat.worst, `ORT−qkv q4 ${toQ4.worst}, ORT−float ${toFloat.worst}`);
      }
      for (let t = p; t < T; t++) {
        const f: Record<string, ort.Tensor> = { input_ids: i64(F.narrow(x, 1, t, 1)) };
        for (let i = 0; i < GPTC.nLayer; i++) {
          f[`past_key_values.${i}.key`] = out[`present.${i}.key`]!;
          f[`past_key_values.${i}.value`] = out[`present.${i}.value`]!;
        }
        out = await s.run(f);
        assertBound(dtype, out.logits, F.narrow(ref, 1, t, 1), `B ${B}: position ${t} with past`);
      }
    }
  });

  test(`Seq2Seq ${dtype}: encoder, decoder and decoder-with-past (cross-attention's q/k/v rows) within the bound of qkv's`, async () => {
    manualSeed(9);
    const m = new Seq2Seq(S2S).eval().quantize({ dtype });
    const sd = m.stateDict();
    const o = { dtype };
    const enc = await session(`enc-${dtype}`, seq2seqEncoderGraph(S2S, sd, o), dtype);
    const dec = await session(`dec-${dtype}`, seq2seqDecoderGraph(S2S, sd, false, o), dtype);
    const decPast = await session(`decpast-${dtype}`, seq2seqDecoderGraph(S2S, sd, true, o), dtype);
    const [B, S, T] = [3, 7, 5];
    const src = ids(B, S, S2S.vocabSize, [7, 4, 2]);
    const tgt = ids(B, T, S2S.vocabSize);
    const e = await enc.run({ input_ids: i64(src), attention_mask: keep(src) });
    const { memory, full } = noGrad(() => ({ memory: m.encode(src), full: m.forward(src, tgt) }));
    assertBound(dtype, e.last_hidden_state!, memory, 'encoder output');
    const p = 2;
    let out = await dec.run({
      input_ids: i64(F.narrow(tgt, 1, 0, p)),
      encoder_attention_mask: keep(src),
      encoder_hidden_states: e.last_hidden_state!,
    });
    assertBound(dtype, out.logits!, F.narrow(full, 1, 0, p), `first ${p} positions`);
    const cross = Object.fromEntries(
      Object.entries(out)
        .filter(([k]) => k.includes('.encoder.'))
        .map(([k, v]) => [k.replace('present', 'past_key_values'), v]),
    );
    for (let t = p; t < T; t++) {
      const feeds: Record<string, ort.Tensor> = {
        input_ids: i64(F.narrow(tgt, 1, t, 1)),
        encoder_attention_mask: keep(src),
        ...cross,
      };
      for (let i = 0; i < S2S.numDecoderLayers; i++) {
        feeds[`past_key_values.${i}.decoder.key`] = out[`present.${i}.decoder.key`]!;
        feeds[`past_key_values.${i}.decoder.value`] = out[`present.${i}.decoder.value`]!;
      }
      out = await decPast.run(feeds);
      assertBound(dtype, out.logits!, F.narrow(full, 1, t, 1), `position ${t} with past`);
    }
  });
}

test('ONNX checker (full_check=True) accepts the int8 graphs', { skip: toolSkip('onnx') }, () => {
  requireTool('onnx');
  assert.equal(standard.length, 4, 'the GPT and the three Seq2Seq graphs above');
  const script =
    'import sys, onnx\nfor p in sys.argv[1:]:\n    onnx.checker.check_model(p, full_check=True)\n    print("ok", p)';
  const r = spawnSync(PYTHON, ['-c', script, ...standard], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim().split('\n').length, standard.length, r.stdout);
});
