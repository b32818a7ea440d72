import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Generator, manualSeed, ones, rand, randn, tensor, zeros, arange } from '../../src/index.ts';
import { allocFloat32, defaultDevice } from '../../src/tensor/storage.ts';
import { Tensor } from '../../src/tensor/tensor.ts';

test('tensor() infers shape and dtype from nested arrays; flat data with a shape', () => {
  const t = tensor([
    [1, 2, 3],
    [4, 5, 6],
  ]);
  assert.deepEqual(t.shape, [2, 3]);
  assert.equal(t.dtype, 'float32');
  assert.deepEqual(t.tolist(), [
    [1, 2, 3],
    [4, 5, 6],
  ]);
  const b = tensor([[true, false]]);
  assert.equal(b.dtype, 'bool');
  assert.deepEqual(b.toArray(), [1, 0]);
  const ids = tensor(new Int32Array([3, 1, 2, 0]), [2, 2]);
  assert.equal(ids.dtype, 'int32');
  assert.deepEqual(tensor([1, 2, 3, 4, 5, 6], [3, -1]).shape, [3, 2]);
  assert.equal(tensor(7).item(), 7);
  assert.throws(() => tensor([[1, 2], [3]]), /ragged nested array/);
  assert.throws(() => tensor([1, 2, 3], [2, 2]), /shape \[2, 2\] is invalid for a tensor of 3 elements/);
});

test('reshape is a view over the same storage; -1 is inferred', () => {
  const t = arange(12);
  const v = t.reshape(3, -1);
  assert.deepEqual(v.shape, [3, 4]);
  assert.equal(v.dataSync(), t.dataSync());
  v.dataSync()[5] = 100;
  assert.equal(t.dataSync()[5], 100);
  assert.throws(() => t.reshape(5, -1), /shape \[5, -1\] is invalid for a tensor of 12 elements/);
  assert.throws(() => t.reshape(-1, -1), /only one dimension can be -1/);
});

test('zeros/ones/rand/randn: shapes, ranges, seeded determinism', () => {
  assert.deepEqual(zeros(2, 3).toArray(), [0, 0, 0, 0, 0, 0]);
  assert.deepEqual(ones([2]).toArray(), [1, 1]);
  manualSeed(42);
  const a = randn([1000]);
  manualSeed(42);
  const b = randn([1000]);
  assert.deepEqual(a.toArray(), b.toArray());
  const m = a.toArray().reduce((s, x) => s + x, 0) / 1000;
  const v = a.toArray().reduce((s, x) => s + (x - m) ** 2, 0) / 1000;
  assert.ok(Math.abs(m) < 0.1 && Math.abs(v - 1) < 0.15, `normal moments mean ${m} var ${v}`);
  const u = rand([1000], new Generator(1)).toArray();
  assert.ok(u.every((x) => x >= 0 && x < 1));
  assert.notDeepEqual(rand([5], new Generator(1)).toArray(), rand([5], new Generator(2)).toArray());
});

test('generator state round-trips (for resumable training)', () => {
  const g = new Generator(9);
  g.normal();
  const s = g.getState();
  const x = [g.normal(), g.uniform(), g.normal()];
  const h = new Generator(0);
  h.setState(s);
  assert.deepEqual([h.normal(), h.uniform(), h.normal()], x);
});

test('fillUint32 continues the same stream as nextUint32 (dropout masks use it)', () => {
  const a = new Generator(7);
  const b = new Generator(7);
  a.nextUint32();
  b.nextUint32();
  const bulk = new Uint32Array(1001);
  b.fillUint32(bulk);
  const one = Array.from({ length: 1001 }, () => a.nextUint32());
  assert.deepEqual(Array.from(bulk), one);
  assert.deepEqual(b.getState(), a.getState());
  // xoshiro128** from seed state (1, 2, 3, 4): the reference implementation's first outputs.
  const r = new Generator(0);
  r.setState([1, 2, 3, 4, Number.NaN]);
  const ref = new Uint32Array(4);
  r.fillUint32(ref);
  assert.deepEqual(Array.from(ref), [11520, 0, 5927040, 70819200]);
});

test('requiresGrad only on float tensors', () => {
  assert.throws(
    () => tensor(new Int32Array([1]), [1]).requiresGrad_(),
    /only float32 tensors can require gradients, this one is int32/,
  );
});

test("a tensor's shape is frozen, and a copy unless the given shape was frozen already", () => {
  const dims = [2, 3];
  const t = Tensor.fromStorage(defaultDevice(), allocFloat32(defaultDevice(), 6), dims, 'float32');
  assert.ok(Object.isFrozen(t.shape));
  assert.notEqual(t.shape, dims);
  dims[0] = 5;
  assert.deepEqual(t.shape, [2, 3]);
  assert.equal(t.size, 6);
  const u = Tensor.fromStorage(t.device, t.storage, t.shape, 'float32');
  assert.equal(u.shape, t.shape);
  const v = new Tensor(new Float32Array(6), [2, 3], 'float32');
  assert.ok(Object.isFrozen(v.shape));
  assert.deepEqual(v.shape, [2, 3]);
  assert.throws(() => (t.shape as number[]).push(1));
});
