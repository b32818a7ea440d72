/** gatherRows, the one row gather every KV cache reorders with (qkv's decoder cache and ONNX Runtime's). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gatherRows } from '../../src/nn/kv-cache.ts';
import { Tensor } from '../../src/tensor/tensor.ts';

test('gatherRows keeps, repeats and drops rows along dim 0, for float32 and int32 alike', () => {
  const f = new Tensor(
    Float32Array.from({ length: 3 * 2 * 2 }, (_, i) => i + 0.5),
    [3, 2, 2],
    'float32',
  );
  const g = gatherRows(f, Int32Array.from([2, 2, 0]));
  assert.deepEqual(g.shape, [3, 2, 2]);
  assert.equal(g.dtype, 'float32');
  assert.deepEqual([...g.dataSync()], [8.5, 9.5, 10.5, 11.5, 8.5, 9.5, 10.5, 11.5, 0.5, 1.5, 2.5, 3.5]);
  const m = new Tensor(Int32Array.from([1, 0, 0, 1, 1, 1]), [3, 2], 'int32');
  const h = gatherRows(m, Int32Array.from([1]));
  assert.deepEqual(h.shape, [1, 2]);
  assert.equal(h.dtype, 'int32');
  assert.ok(h.dataSync() instanceof Int32Array);
  assert.deepEqual([...h.dataSync()], [0, 1]);
  assert.deepEqual(gatherRows(m, new Int32Array(0)).shape, [0, 2]);
  // A copy: writing to the gathered rows leaves the source alone.
  g.dataSync()[0] = -1;
  assert.equal(f.dataSync()[8], 8.5);
});
