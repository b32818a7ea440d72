/**
 * A third backend as a contributor would add one (docs/design-backends.md): its own device, whose storage
 * handles are boxes, not typed arrays, and the js kernels unwrapping them. Anything above the backends that
 * still treats a tensor's storage as an array (indexes it, takes a subarray, writes into what a read gave
 * back) breaks here, so autograd, nn, models, optim and decoding running on it and matching the js backend
 * exactly is the proof that values cross only through the contract.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type Backend,
  getBackend,
  hostBackend,
  KERNEL_NAMES,
  registerBackend,
  setBackend,
} from '../../src/backend/backend.ts';
import { jsBackend } from '../../src/backend/js/index.ts';
import { greedy } from '../../src/decode/search.ts';
import { F, models, optim, tensor } from '../../src/index.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { type Device, hostArray, type Storage, type TypedData } from '../../src/tensor/storage.ts';

class Box {
  constructor(readonly a: TypedData) {}
}
const box = (s: Storage): TypedData => {
  if (!(s instanceof Box)) throw new Error('handles backend: got storage that is not one of its boxes');
  return s.a;
};

let syncReads = 0;
const device: Device = {
  name: 'handles',
  alloc: (dtype, n) => new Box(hostArray(dtype, n)) as never,
  fromHost: (values) => new Box(values.slice()) as never,
  write: (s, _dtype, values, offset = 0) => (box(s) as Float32Array).set(values as Float32Array, offset),
  fill: (s, _dtype, value, n) => void (box(s) as Float32Array).fill(value, 0, n),
  copy: (src, dst, _dtype, n) => (box(dst) as Float32Array).set((box(src) as Float32Array).subarray(0, n)),
  read: async (s, _dtype, n) => box(s).slice(0, n),
  // A copy, never the storage: code that writes into what it read changes nothing, and the results differ.
  readSync: (s, _dtype, n) => {
    syncReads++;
    return box(s).slice(0, n);
  },
  free() {},
};

function unwrap(a: unknown): unknown {
  if (a instanceof Box) return a.a;
  if (a && typeof a === 'object' && 'bias' in a && (a as { bias: unknown }).bias) {
    const p = a as { bias: { data: unknown } };
    return { ...p, bias: { ...p.bias, data: unwrap(p.bias.data) } };
  }
  return a;
}

const js = hostBackend(jsBackend);
const kernels = Object.fromEntries(
  KERNEL_NAMES.map((k) => [k, (...args: unknown[]) => (js[k] as (...a: unknown[]) => unknown)(...args.map(unwrap))]),
);
const handles = { name: 'handles', device, ...kernels } as unknown as Backend;
registerBackend(handles);

function run(backend: string) {
  const before = getBackend().name;
  setBackend(backend);
  try {
    manualSeed(11);
    const m = new models.Seq2Seq({
      ...models.MULTI30K_SMALL,
      vocabSize: 14,
      dModel: 16,
      nhead: 2,
      numEncoderLayers: 1,
      numDecoderLayers: 1,
      dimFeedforward: 32,
      dropout: 0.1,
      maxLen: 16,
    });
    const opt = new optim.Adam(m.parameters(), { lr: 0.01 });
    const src = tensor(new Int32Array([4, 5, 6, 7, 0, 8, 9, 10, 11, 12]), [2, 5]);
    const tin = tensor(new Int32Array([2, 4, 5, 6, 2, 8, 9, 0]), [2, 4]);
    const tout = tensor(new Int32Array([4, 5, 6, 3, 8, 9, 3, 0]), [2, 4]);
    const losses: number[] = [];
    for (let step = 0; step < 3; step++) {
      opt.zeroGrad();
      const loss = F.crossEntropy(m.forward(src, tin), tout, { ignoreIndex: 0, labelSmoothing: 0.1 });
      loss.backward();
      opt.step();
      losses.push(loss.item());
    }
    m.eval();
    const decoded = greedy(m, src, { bosId: 2, eosId: 3, maxLen: 6 });
    const params = m.parameters().map((p) => Array.from(p.dataSync()));
    return { losses, params, ids: Array.from(decoded.ids.dataSync()), device: m.parameters()[0]!.device.name };
  } finally {
    setBackend(before);
  }
}

test('a backend whose storage is not typed arrays trains, decodes and matches js exactly', () => {
  const ref = run('js');
  syncReads = 0;
  const got = run('handles');
  assert.equal(got.device, 'handles', 'parameters live on the handles device');
  assert.deepEqual(got.losses, ref.losses, 'losses');
  assert.deepEqual(got.params, ref.params, 'parameters after 3 Adam steps');
  assert.deepEqual(got.ids, ref.ids, 'greedy ids');
  assert.ok(syncReads > 0, 'reads went through the device');
});

test('an op on tensors of two devices is refused naming both', () => {
  const a = tensor([1, 2, 3]);
  setBackend('handles');
  try {
    const b = tensor([1, 2, 3]);
    assert.throws(() => F.add(a, b), /is on device 'cpu' but backend 'handles' computes on 'handles'/);
    assert.deepEqual(Array.from(F.add(a.to('handles'), b).dataSync()), [2, 4, 6]);
  } finally {
    setBackend('js');
  }
});

test('t.to and module.to move storage between devices, values identical', async () => {
  setBackend('js');
  const t = tensor([1.5, -2, 3]);
  const h = t.to('handles');
  assert.equal(h.deviceName, 'handles');
  assert.deepEqual(Array.from(await h.data()), [1.5, -2, 3]);
  assert.equal(h.to('js').deviceName, 'cpu');
  assert.equal(t.to('wasm'), t, 'js and wasm share the cpu device: no copy');
  const lin = new (await import('../../src/nn/index.ts')).Linear(3, 2);
  const before = lin.parameters().map((p) => Array.from(p.dataSync()));
  lin.to('handles');
  assert.ok(lin.parameters().every((p) => p.deviceName === 'handles'));
  assert.deepEqual(
    lin.parameters().map((p) => Array.from(p.dataSync())),
    before,
  );
});

test('dataSync names the asynchronous read on a device that cannot read synchronously', async () => {
  const { readSync, ...rest } = device;
  void readSync;
  const asyncOnly: Device = { ...rest, name: 'async-only' };
  const t = new (await import('../../src/tensor/tensor.ts')).Tensor(
    { device: asyncOnly, storage: asyncOnly.fromHost(new Float32Array([1, 2]), 'float32') },
    [2],
    'float32',
  );
  assert.throws(
    () => t.dataSync(),
    /^Error: dataSync: a float32 tensor on device 'async-only' can only be read asynchronously: use await t\.data\(\)$/,
  );
  assert.deepEqual(Array.from(await t.data()), [1, 2]);
});
