/**
 * q4 with float16 scales (issue 58, point 5; llama.cpp's Q4_0: 4.5 bits a weight) against torch
 * (test/fixtures/q4-half/, scripts/fixtures/ref_q4_half.py): each block's scale is max|w|/7 rounded
 * to float16 as torch's `.half()` rounds it (to nearest even: the fixture holds ties both ways and subnormal
 * halves), and the values are quantized against that rounded scale, so a weight dequantizes to exactly q·s16.
 * A scale kept in float32 (the layout before) or rounded another way fails the comparison of bits.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { embeddingQ4, quantizeQ4 } from '../../src/backend/js/quantized.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { F, tensor } from '../../src/index.ts';
import { halvesToFloat32, numberToF16Bits } from '../../src/tensor/half.ts';
import { Tensor } from '../../src/tensor/tensor.ts';

const fixture = readSafetensors(readFileSync(join(import.meta.dirname, '../fixtures/q4-half/expected.safetensors')), {
  bytes: true,
}).tensors;
const w = fixture.w!.dataSync() as Float32Array;
const [rows, cols] = fixture.w!.shape as [number, number];
const torchScale = fixture.scale!.dataSync() as Float32Array; // F16, read exactly as float32
const torchQ = fixture.q!.dataSync() as Int8Array;

/** The signed nibble of element e of packed q4 bytes. */
const nibble = (q: Uint8Array, e: number) => (((q[e >> 1]! >> ((e & 1) * 4)) & 15) ^ 8) - 8;

test("quantizeQ4's float16 scales and values are torch's (.half() of max|w|/7, values against the rounded scale)", () => {
  const { q, scale } = quantizeQ4(w, rows, cols);
  assert.ok(scale instanceof Uint16Array, 'the scales are halves');
  assert.deepEqual(Array.from(halvesToFloat32(scale)), Array.from(torchScale), 'the scales, bit for bit');
  assert.deepEqual(
    Array.from({ length: rows * cols }, (_, e) => nibble(q, e)),
    Array.from(torchQ),
    'the values',
  );
  // The fixture reaches the edges: ties to even both ways, subnormal halves, a scale of 0, clamped values.
  assert.ok(torchScale.includes(1) && torchScale.includes(1 + 2 ** -9), 'ties between halves');
  assert.ok(
    torchScale.some((s) => s > 0 && s < 2 ** -14),
    'subnormal halves',
  );
  assert.ok(torchScale.includes(0), 'a scale that underflows to 0');
  // Not float32's scale: rounding to half changed some, and the values follow the rounded one.
  let moved = 0;
  for (let b = 0; b < torchScale.length; b++) {
    let amax = 0;
    for (let i = b * 32; i < b * 32 + 32; i++) amax = Math.max(amax, Math.abs(w[i]!));
    if (Math.fround(amax / 7) !== torchScale[b]) moved++;
  }
  assert.ok(moved > torchScale.length / 2, `${moved} of ${torchScale.length} scales moved by rounding to half`);
});

test('a q4 weight dequantizes to exactly q·s16 (one float32 product), through the kernels and F.dequantizeWeight', () => {
  const { q, scale } = quantizeQ4(w, rows, cols);
  const s = halvesToFloat32(scale);
  const out = new Float32Array(rows * cols);
  embeddingQ4(
    q,
    scale,
    Int32Array.from({ length: rows }, (_, i) => i),
    out,
    cols,
  );
  for (let e = 0; e < rows * cols; e++)
    assert.equal(out[e], Math.fround(torchQ[e]! * s[e >> 5]!), `element ${e}: q·s16 in float32`);
  const pair = F.quantizeWeight(tensor(w, [rows, cols]), 'q4');
  assert.equal(pair.scale.dtype, 'float16');
  assert.deepEqual(Array.from(pair.scale.dataSync() as Uint16Array), Array.from(scale));
  assert.deepEqual(F.dequantizeWeight(pair.values, pair.scale).dataSync(), out);
});

test('quantizeQ4 refuses a block whose scale overflows float16, naming it', () => {
  const big = new Float32Array(64);
  big[40] = 7 * 65520; // max|w|/7 rounds to +∞ in float16
  assert.throws(() => quantizeQ4(big, 1, 64), /quantizeQ4: block 1 of row 0 has max\|w\| 458640, beyond float16/);
  assert.equal(numberToF16Bits(65504), 0x7bff);
  assert.ok(F.quantizeWeight(new Tensor(new Float32Array(64).fill(7 * 65504), [1, 64]), 'q4'));
});
