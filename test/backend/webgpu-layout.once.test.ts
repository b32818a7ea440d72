/**
 * The webgpu layout family (src/backend/webgpu/layout.ts) against its js twins: reduceSum over leading,
 * trailing, middle and all axes (float32 tree sums vs the twin's float64: bounded below), permutes of 2 to 5
 * dims, strided row copies (a repeated run too) of float32, int32 and bool (words on this device),
 * gatherRows with repeats, argmax with ties (the first wins), maskToBias both ways from bool and int32, and
 * the refusal of packed int8 storage.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as K from '../../src/backend/webgpu/layout.ts';
import { rng, uniformArray } from '../helpers/random.ts';
import { type AnyStorage, closeToJs, down, js, out, sameBits, up } from './webgpu-twins.ts';
import { gpuDevice } from './webgpu-twins.ts';

const rand = rng(9);
const randn = (n: number, scale = 1) => uniformArray(rand, n, scale);
const prod = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);

test('webgpu reduceSum: every axis pattern, within float32 summation error of the float64 twin', async () => {
  const cases: [number[], number[]][] = [
    [
      [300, 7],
      [1, 7],
    ],
    [
      [4, 300, 7],
      [4, 1, 7],
    ],
    [
      [5, 3, 200],
      [5, 3, 1],
    ],
    [
      [6, 5, 4],
      [1, 1, 1],
    ],
    [
      [2, 3, 4, 5],
      [2, 1, 4, 1],
    ],
    [[9], [9]],
    [
      [1, 4097],
      [1, 1],
    ],
    [
      [0, 3],
      [1, 3],
    ],
  ];
  for (const [shape, outShape] of cases) {
    const x = randn(prod(shape));
    const ref = new Float32Array(prod(outShape));
    js.reduceSum(x, shape, ref, outShape);
    const o = out(randn(ref.length, 5));
    K.reduceSum(up(x), shape, o, outShape);
    // Each output sums R = size/outputs terms of |x| <= 1 in float32 pairwise steps: error <= R·2^-24·log2(R).
    const r = prod(shape) / Math.max(1, ref.length);
    closeToJs(
      await down(o, ref.length),
      ref,
      `reduceSum ${shape} -> ${outShape}`,
      Math.max(1e-6, r * 2 ** -24 * 13),
      1e-6,
    );
  }
});

test('webgpu permute: 2 to 5 dims, bit for bit', async () => {
  const cases: [number[], number[]][] = [
    [
      [3, 5],
      [1, 0],
    ],
    [
      [4, 3, 7],
      [2, 0, 1],
    ],
    [
      [2, 3, 4, 5],
      [0, 2, 1, 3],
    ],
    [
      [2, 3, 4, 5, 2],
      [4, 3, 2, 1, 0],
    ],
  ];
  for (const [shape, perm] of cases) {
    const x = randn(prod(shape));
    const ref = new Float32Array(x.length);
    js.permute(x, shape, perm, ref);
    const o = out(randn(x.length));
    K.permute(up(x), shape, perm, o);
    sameBits(await down(o, x.length), ref, `permute ${shape} by ${perm}`);
  }
  const ids = Int32Array.from({ length: 24 }, (_, k) => k * 7 - 50);
  const refI = new Int32Array(24);
  js.permute(ids, [2, 3, 4], [1, 2, 0], refI);
  const oi = gpuDevice.alloc('int32', 24);
  K.permute(up(ids, 'int32'), [2, 3, 4], [1, 2, 0], oi);
  sameBits(await down(oi, 24, 'int32'), refI, 'permute of int32');
});

test('webgpu copyRows and gatherRows: strided, repeated and gathered rows of float32, int32 and bool', async () => {
  const x = randn(10 * 8);
  const init = randn(70);
  const ref = init.slice();
  js.copyRows(x, 3, 8, ref, 1, 6, 5, 4);
  const o = out(init);
  K.copyRows(up(x), 3, 8, o, 1, 6, 5, 4);
  sameBits(await down(o, 70), ref, 'copyRows strided');
  const ref0 = init.slice();
  js.copyRows(x, 2, 0, ref0, 0, 7, 10, 7);
  const o0 = out(init);
  K.copyRows(up(x), 2, 0, o0, 0, 7, 10, 7);
  sameBits(await down(o0, 70), ref0, 'copyRows of one repeated run');
  const mask = Uint8Array.from({ length: 13 }, (_, k) => (k % 3 === 0 ? 1 : 0)); // rows read up to element 12
  const refB = new Uint8Array(8);
  js.copyRows(mask, 2, 3, refB, 0, 2, 4, 2);
  const ob = gpuDevice.alloc('bool', 8);
  K.copyRows(up(mask, 'bool'), 2, 3, ob, 0, 2, 4, 2);
  sameBits(await down(ob, 8, 'bool'), refB, 'copyRows of bool');
  const rows = Int32Array.from([3, 3, 9, 0, 5]);
  const refG = new Float32Array(rows.length * 8);
  js.gatherRows(x, rows, refG, 8);
  const og = out(randn(refG.length));
  K.gatherRows(up(x), rows, og, 8);
  sameBits(await down(og, refG.length), refG, 'gatherRows');
});

test('webgpu argmax: the first of equal maxima, rows longer and shorter than a workgroup', async () => {
  for (const cols of [1, 5, 64, 65, 1000]) {
    const rows = 7;
    const x = Float32Array.from(randn(rows * cols), (v) => Math.round(v * 4) / 4); // many ties
    const ref = new Int32Array(rows);
    js.argmax(x, ref, rows, cols);
    const o = gpuDevice.alloc('int32', rows) as AnyStorage;
    K.argmax(up(x), o, rows, cols);
    sameBits(await down(o, rows, 'int32'), ref, `argmax cols ${cols}`);
  }
});

test('webgpu maskToBias: bool and int32 masks, both conventions; packed int8 refused by name', async () => {
  const m = Uint8Array.from({ length: 21 }, (_, k) => (k % 3 === 0 ? 1 : 0));
  const mi = Int32Array.from(m, (v, k) => v * (k + 1));
  for (const block of [0, 1] as const) {
    const ref = new Float32Array(21);
    js.maskToBias(m, ref, 21, block);
    const o = out(randn(21));
    K.maskToBias(up(m, 'bool'), o, 21, block);
    sameBits(await down(o, 21), ref, `bool mask, block when ${block}`);
    const o2 = out(randn(21));
    K.maskToBias(up(mi, 'int32'), o2, 21, block);
    sameBits(await down(o2, 21), ref, `int32 mask, block when ${block}`);
  }
  const q = gpuDevice.alloc('int8', 16);
  assert.throws(() => K.copyRows(q, 0, 4, gpuDevice.alloc('int8', 16), 0, 4, 4, 4), /copyRows of packed int8\/q4/);
});
