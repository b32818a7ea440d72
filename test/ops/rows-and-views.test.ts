/**
 * Two per-op savings of a decoding step (issue 51) must change no bit:
 * - linearRows reads rows of a packed weight in place (the GEMM's offset) where F.linear over F.narrow
 *   copies them first: its output and its gradients (input, weight, bias: zero outside the rows) must be
 *   that form's exactly, inside a memoryScope too (wasm memory under the wasm backend);
 * - permute of a tensor whose moved dims all have size 1 (a decoding step's head split) is a view, a
 *   reshape of the same storage, whose values and gradient are the copy's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, Generator, memoryScope, randn, type Tensor } from '../../src/index.ts';
import { linearRows } from '../../src/ops/matmul.ts';

const gen = new Generator(11);
const bits = (t: Tensor | null): number[] | null => t && [...new Uint32Array(Float32Array.from(t.dataSync()).buffer)];

for (const [lead, rows] of [
  [[1, 1], 1],
  [[3, 7], 21],
  [[2, 40], 80],
] as [number[], number][]) {
  for (const [start, length] of [
    [0, 8],
    [8, 8],
    [16, 8],
    [5, 11],
  ]) {
    test(`linearRows over rows [${start}, ${start + length}) of a 24×16 weight, input ${JSON.stringify(lead)}×16 (${rows} rows): F.linear over F.narrow, bit for bit`, () => {
      for (const scoped of [false, true]) {
        const run = <T>(fn: () => T): T => (scoped ? memoryScope(fn) : fn());
        const x = randn([...lead, 16], gen).requiresGrad_();
        const w = randn([24, 16], gen).requiresGrad_();
        const b = randn([24], gen).requiresGrad_();
        const dy = randn([...lead, length], gen);
        const grads = (fn: () => Tensor) =>
          run(() => {
            x.grad = w.grad = b.grad = null;
            const y = fn();
            F.sum(F.mul(y, dy)).backward();
            return { y: bits(y), dx: bits(x.grad), dw: bits(w.grad), db: bits(b.grad) };
          });
        const want = grads(() => F.linear(x, F.narrow(w, 0, start, length), F.narrow(b, 0, start, length)));
        const got = grads(() => linearRows(x, w, b, start, length));
        assert.deepEqual(got, want, scoped ? 'in a memoryScope' : 'outside any scope');
        const noBias = grads(() => linearRows(x, w, null, start, length));
        assert.deepEqual(noBias.dw, grads(() => F.linear(x, F.narrow(w, 0, start, length))).dw, 'without bias');
      }
    });
  }
}

test('linearRows refuses a row range outside the weight, and a bias of the wrong length, in one line', () => {
  const x = randn([2, 4], gen);
  const w = randn([6, 4], gen);
  assert.throws(
    () => linearRows(x, w, null, 4, 3),
    /^Error: linearRows: rows \[4, 7\) are out of bounds for weight of 6 rows$/,
  );
  assert.throws(() => linearRows(x, w, null, 0, 0), /linearRows: rows \[0, 0\) are out of bounds/);
  assert.throws(() => linearRows(x, w, randn([3], gen), 0, 3), /linearRows: bias must have shape \[6\], got \[3\]/);
  assert.throws(() => linearRows(randn([2, 5], gen), w, null, 0, 3), /linearRows: input last dim must be 4/);
});

for (const [shape, perm] of [
  [
    [3, 1, 4, 5],
    [0, 2, 1, 3],
  ],
  [
    [1, 4, 1, 5],
    [2, 1, 3, 0],
  ],
  [
    [3, 4, 1, 1],
    [0, 1, 3, 2],
  ],
] as [number[], number[]][]) {
  test(`permute ${JSON.stringify(perm)} of ${JSON.stringify(shape)} moves only dims of size 1: a view, values and gradient as the copy's`, () => {
    const x = randn(shape, gen).requiresGrad_();
    const y = F.permute(x, perm);
    assert.equal(y.storage, x.storage, 'the same storage');
    assert.deepEqual(
      y.shape,
      perm.map((d) => shape[d]),
    );
    assert.deepEqual(bits(y), bits(x));
    const dy = randn(y.shape, gen);
    F.sum(F.mul(y, dy)).backward();
    assert.deepEqual(bits(x.grad), bits(dy));
  });
}

test('permute that moves a dim of size > 1 still copies, in the permuted order', () => {
  const x = randn([2, 1, 3], gen);
  const y = F.permute(x, [2, 1, 0]);
  assert.notEqual(y.storage, x.storage);
  const xs = x.dataSync();
  const ys = y.dataSync();
  for (let i = 0; i < 3; i++) for (let j = 0; j < 2; j++) assert.equal(ys[i * 2 + j], xs[j * 3 + i]);
});
