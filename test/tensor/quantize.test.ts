/**
 * Int8 weight storage (src/tensor/quantize.ts): exact expected values on hand-made rows (scale, rounding
 * half to even, zero rows), the error bound on random weights, the safetensors layout (I8 + F32
 * scales [rows, 1], F16 for 1-D), and refusals that name the tensor.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dequantizeInt8, quantizeInt8 } from '../../src/tensor/quantize.ts';
import { readSafetensors, readSafetensorsHeader, writeSafetensors } from '../../src/io/safetensors.ts';
import { loadWeights, SEQ2SEQ_FIELDS } from '../../src/models/load-weights.ts';
import { Seq2Seq } from '../../src/models/seq2seq.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { randn, Tensor } from '../../src/tensor/tensor.ts';
import { noGrad } from '../../src/autograd/grad-mode.ts';

const f32 = (rows: number[][]) => new Tensor(Float32Array.from(rows.flat()), [rows.length, rows[0].length], 'float32');

test('quantizeInt8: scale max|row|/127, values rounded half to even, a zero row has scale 0', () => {
  // Row 0's largest magnitude is 127, so its scale is exactly 1 and the rounding shows as it is.
  const b = new Tensor(Float32Array.from([1, 2]), [2], 'float32');
  const n = new Tensor(Int32Array.from([7]), [1], 'int32');
  const { tensors, dtype } = quantizeInt8({
    w: f32([
      [127, 2.5, -3.5, 0.49],
      [0, 0, 0, 0],
      [-0.5, 0.25, 0.125, 0],
    ]),
    b,
    n,
  });
  assert.deepEqual(dtype, { w: 'I8', w_scale: 'F32', b: 'F16' });
  assert.equal(tensors.w.dtype, 'int32');
  assert.deepEqual(tensors.w_scale.shape, [3, 1]);
  const s = tensors.w_scale.dataSync<Float32Array>();
  assert.deepEqual([...s], [1, 0, Math.fround(0.5 / 127)]);
  // 2.5 → 2 and -3.5 → -4 (half to even: Math.round would give 3 and -3, half away from zero 3), 0.49 → 0;
  // row 2: -0.5/s = -127, 0.25/s ≈ 63.5 (not a tie in float32), 0.125/s ≈ 31.75.
  const q = [...tensors.w.dataSync<Int32Array>()];
  assert.deepEqual(q.slice(0, 8), [127, 2, -4, 0, 0, 0, 0, 0]);
  assert.deepEqual(q.slice(8), [-127, Math.round(0.25 / s[2]), 32, 0]);
  assert.equal(tensors.b, b, 'a 1-D tensor passes through (written as F16)');
  assert.equal(tensors.n, n, 'an integer tensor passes through (its own dtype)');
});

test('dequantizeInt8(quantizeInt8(w)) is q·s as one float32 product, within s/2 of w everywhere', () => {
  manualSeed(11);
  const w = randn([64, 48]);
  w.dataSync<Float32Array>()[5] = 9; // one outlier: its row's scale is larger, the others' are not
  const q = quantizeInt8({ w }).tensors;
  const back = dequantizeInt8(q).w;
  assert.deepEqual(Object.keys(dequantizeInt8(q)), ['w'], 'the scales are dropped');
  const wd = w.dataSync<Float32Array>();
  const qd = q.w.dataSync<Int32Array>();
  const sd = q.w_scale.dataSync<Float32Array>();
  const bd = back.dataSync<Float32Array>();
  for (let i = 0; i < wd.length; i++) {
    const r = Math.floor(i / 48);
    assert.equal(bd[i], Math.fround(qd[i] * sd[r]), `element ${i}`);
    assert.ok(
      Math.abs(bd[i] - wd[i]) <= sd[r] * 0.5 * (1 + 1e-6),
      `element ${i}: ${bd[i]} vs ${wd[i]} (scale ${sd[r]})`,
    );
    assert.ok(qd[i] >= -127 && qd[i] <= 127);
  }
  // Each row's largest magnitude is exactly ±127 steps.
  for (let r = 0; r < 64; r++)
    assert.equal(Math.max(...[...qd.subarray(r * 48, r * 48 + 48)].map(Math.abs)), 127, `row ${r}`);
});

test('on disk: I8 weights with F32 scales [rows, 1], F16 for the rest; read back and dequantized as in memory', () => {
  manualSeed(12);
  const weights = { 'lin.weight': randn([6, 5]), 'lin.bias': randn([6]) };
  const q = quantizeInt8(weights);
  const bytes = writeSafetensors(q.tensors, { dtype: q.dtype });
  const header = readSafetensorsHeader(bytes, bytes.length);
  const entry = (name: string) => header.entries.find((e) => e.name === name);
  assert.equal(entry('lin.weight')?.dtype, 'I8');
  assert.equal(entry('lin.weight_scale')?.dtype, 'F32');
  assert.deepEqual(entry('lin.weight_scale')?.shape, [6, 1]);
  assert.equal(entry('lin.bias')?.dtype, 'F16');
  const read = dequantizeInt8(readSafetensors(bytes).tensors);
  assert.deepEqual(
    [...read['lin.weight'].dataSync<Float32Array>()],
    [...(dequantizeInt8(q.tensors)['lin.weight'].dataSync() as Float32Array)],
  );
  // 30 int8 values, 6 float32 scales and 6 fp16 biases: the data is 30 + 24 + 12 bytes.
  assert.equal(bytes.length - header.dataStart, 30 + 24 + 12);
});

test('a Seq2Seq loads its int8 weights through loadWeights and gives logits close to fp32 (int8 error only)', () => {
  manualSeed(13);
  const config = {
    vocabSize: 40,
    dModel: 16,
    nhead: 2,
    numEncoderLayers: 1,
    numDecoderLayers: 1,
    dimFeedforward: 32,
    dropout: 0,
    activation: 'relu' as const,
    normFirst: false,
    maxLen: 16,
    padId: 0,
  };
  const m = new Seq2Seq(config);
  m.eval();
  const q = quantizeInt8(m.stateDict(), { rest: 'F32' });
  const m2 = new Seq2Seq(config);
  loadWeights(m2, readSafetensors(writeSafetensors(q.tensors, { dtype: q.dtype })).tensors, config, SEQ2SEQ_FIELDS);
  m2.eval();
  const ids = (xs: number[]) => new Tensor(Int32Array.from(xs), [1, xs.length], 'int32');
  const [a, b] = noGrad(() => [
    m.forward(ids([3, 7, 9, 2]), ids([1, 5, 6])),
    m2.forward(ids([3, 7, 9, 2]), ids([1, 5, 6])),
  ]);
  const ad = a.dataSync<Float32Array>();
  const bd = b.dataSync<Float32Array>();
  let worst = 0;
  let differs = false;
  for (let i = 0; i < ad.length; i++) {
    worst = Math.max(worst, Math.abs(ad[i] - bd[i]));
    if (ad[i] !== bd[i]) differs = true;
  }
  assert.ok(differs, 'the int8 model is not bit-identical (it would mean nothing was quantized)');
  assert.ok(worst < 0.05, `logits moved by ${worst}`);
});

test('refusals name the tensor: bad scale shape, negative or NaN scale, values outside int8, a name taken, I8 overflow on write', () => {
  const q = new Tensor(Int32Array.from([1, -2, 3, 4]), [2, 2], 'int32');
  const scales = (xs: number[], shape = [xs.length, 1]) => new Tensor(Float32Array.from(xs), shape, 'float32');
  assert.throws(
    () => dequantizeInt8({ w: q, w_scale: scales([1, 1], [2]) }),
    /int8 weight 'w' \[2, 2\] needs 'w_scale' of shape \[2, 1\].*got \[2\]/,
  );
  assert.throws(() => dequantizeInt8({ w: q, w_scale: scales([1, 1, 1]) }), /needs 'w_scale' of shape \[2, 1\]/);
  assert.throws(
    () => dequantizeInt8({ w: q, w_scale: scales([1, -1]) }),
    /int8 weight 'w': scale -1 at row 1 of 'w_scale' \(expected a finite scale ≥ 0\)/,
  );
  assert.throws(() => dequantizeInt8({ w: q, w_scale: scales([NaN, 1]) }), /scale NaN at row 0/);
  const big = new Tensor(Int32Array.from([1, 300, 3, 4]), [2, 2], 'int32');
  assert.throws(
    () => dequantizeInt8({ w: big, w_scale: scales([1, 1]) }),
    /int8 weight 'w' holds 300 at row 0, column 1, outside int8/,
  );
  assert.throws(() => quantizeInt8({ w: f32([[1, 2]]), w_scale: f32([[1]]) }), /'w_scale' is already a tensor/);
  assert.throws(() => quantizeInt8({ w: f32([[1, NaN]]) }), /'w' holds NaN at row 0, column 1/);
  assert.throws(
    () => writeSafetensors({ w: big }, { dtype: { w: 'I8' } }),
    /tensor 'w' element 1 = 300 does not fit in I8 \[-128, 127\]/,
  );
  // A float tensor beside an int one is not a quantized pair unless the int one is the weight.
  const plain = { w: f32([[1, 2]]), w_scale: f32([[1]]) };
  assert.equal(dequantizeInt8(plain), plain);
});
