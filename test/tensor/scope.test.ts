/**
 * memoryScope: a scope's float tensors live in the backend's memory (wasm memory when wasm is the
 * default backend) and are released when it ends, except the tensors it returns.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, memoryScope, randn, tensor, type Tensor } from '../../src/index.ts';
import { bytesInUse, isWasmView } from '../../src/backend/wasm/memory.ts';
import { setScopePoisoning } from '../../src/tensor/storage.ts';

const scoped = (process.env.QKV_BACKEND ?? 'wasm') === 'wasm';

test('memoryScope: temporaries are released when the scope ends; the returned tensor is kept and correct', () => {
  const a = randn([64, 64]);
  const b = randn([64, 64]);
  const expected = F.matmul(F.relu(F.add(a, b)), b).toArray();
  const before = bytesInUse();
  let inside = 0;
  let temp: Tensor | null = null;
  setScopePoisoning(true);
  try {
    const out = memoryScope(() => {
      temp = F.relu(F.add(a, b));
      inside = bytesInUse();
      return F.matmul(temp, b);
    });
    assert.deepEqual(out.toArray(), expected);
    if (scoped) {
      assert.ok(isWasmView(out.dataSync<Float32Array>()), 'scoped storage is wasm memory');
      assert.ok(inside >= before + 2 * 64 * 64 * 4, `in use inside ${inside}, before ${before}`);
      // The kept block is still in use; the temporary's is back (and poisoned).
      assert.equal(bytesInUse(), before + 64 * 64 * 4);
      assert.ok(Number.isNaN(temp!.dataSync<Float32Array>()[0]), 'a released block is poisoned in tests');
    } else {
      assert.equal(bytesInUse(), before);
    }
  } finally {
    setScopePoisoning(false);
  }
});

test('memoryScope: nested scopes hand what they return to the outer scope; arrays and objects of tensors are kept', () => {
  const before = bytesInUse();
  const x = tensor([1, 2, 3, 4]);
  const r = memoryScope(() => {
    const inner = memoryScope(() => ({ y: F.mul(x, 2), z: [F.add(x, 1)] }));
    const sum = F.add(inner.y, inner.z[0]!); // both still valid after the inner scope
    return [sum.reshape([2, 2]), 7] as const;
  });
  assert.deepEqual(r[0].tolist(), [
    [4, 7],
    [10, 13],
  ]);
  assert.equal(r[1], 7);
  if (scoped) assert.equal(bytesInUse(), before + 16, 'only the returned tensor (4 floats, one 16-byte block) is held');
});

test('memoryScope: a throwing scope releases everything and rethrows', () => {
  const before = bytesInUse();
  assert.throws(
    () =>
      memoryScope(() => {
        F.exp(randn([100]));
        throw new Error('boom');
      }),
    /boom/,
  );
  assert.equal(bytesInUse(), before);
});
