/**
 * split/chunk fill one gradient buffer for their input, each piece its slice (src/ops/shape.ts),
 * instead of summing zero-padded copies: the gradient must still be exactly what the sum gives,
 * with pieces no gradient reaches, an input with other consumers, and backward called twice.
 * Each loss below is Σ w·piece (+ c·x), so the gradient is known exactly: the weights laid out as
 * the pieces cut x (+ c).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, Generator, memoryScope, randn, type Tensor } from '../../src/index.ts';

const gen = new Generator(5);

/** Σ weights·t, with weights of t's shape drawn here; returns the loss and the weights. */
function weighted(t: Tensor): { loss: Tensor; w: Float32Array } {
  const w = randn(t.shape, gen);
  return { loss: F.sum(F.mul(t, w)), w: w.dataSync<Float32Array>() };
}

/** The weights of each piece (null: piece unused) laid back into x's layout, along dim d. */
function layout(shape: number[], d: number, sizes: number[], ws: (Float32Array | null)[]): Float32Array {
  const outer = shape.slice(0, d).reduce((a, b) => a * b, 1);
  const inner = shape.slice(d + 1).reduce((a, b) => a * b, 1);
  const size = shape[d]!;
  const out = new Float32Array(outer * size * inner);
  let start = 0;
  sizes.forEach((s, i) => {
    const w = ws[i];
    if (w)
      for (let o = 0; o < outer; o++)
        for (let j = 0; j < s * inner; j++) out[(o * size + start) * inner + j] = w[o * s * inner + j]!;
    start += s;
  });
  return out;
}

for (const [shape, d, sizes] of [
  [[4, 6, 9], 2, [3, 3, 3]],
  [[4, 6, 9], 1, [1, 2, 3]],
  [[5, 3], 0, [2, 3]],
] as [number[], number, number[]][]) {
  test(`split ${JSON.stringify(sizes)} of ${JSON.stringify(shape)} along dim ${d}: gradient is each piece's slice, exactly`, () => {
    for (const unused of [-1, 0, sizes.length - 1]) {
      const x = randn(shape, gen).requiresGrad_();
      const pieces = F.split(x, sizes, d);
      pieces.forEach((p, i) => {
        assert.deepEqual(
          [...p.dataSync()],
          [
            ...F.narrow(
              x,
              d,
              sizes.slice(0, i).reduce((a, b) => a + b, 0),
              sizes[i]!,
            ).dataSync(),
          ],
          `piece ${i} values`,
        );
      });
      const parts = pieces.map((p, i) => (i === unused ? null : weighted(p)));
      const loss = parts
        .filter((p) => p !== null)
        .map((p) => p!.loss)
        .reduce((a, b) => F.add(a, b));
      loss.backward();
      const want = layout(
        shape,
        d,
        sizes,
        parts.map((p) => p?.w ?? null),
      );
      assert.deepEqual([...x.grad!.dataSync<Float32Array>()], [...want], `unused piece ${unused}`);
    }
  });
}

test('split: an input with another consumer sums both; a second backward pass adds again; inside a memoryScope', () => {
  const x = randn([3, 8], gen).requiresGrad_();
  const step = () =>
    memoryScope(() => {
      const [a, b] = F.chunk(x, 2, -1);
      const wa = weighted(a!),
        wb = weighted(b!);
      const loss = F.add(F.add(wa.loss, wb.loss), F.sum(F.mul(x, 0.5)));
      loss.backward();
      return layout([3, 8], 1, [4, 4], [wa.w, wb.w]).map((v) => Math.fround(v + 0.5));
    });
  const g1 = step();
  assert.deepEqual([...x.grad!.dataSync<Float32Array>()], [...g1], 'one pass');
  const g2 = step();
  const both = g1.map((v, i) => Math.fround(v + g2[i]!));
  assert.deepEqual([...x.grad!.dataSync<Float32Array>()], [...both], 'two passes accumulate');
  // The same graph backpropagated twice: each pass gets its own buffer.
  const y = randn([2, 6], gen).requiresGrad_();
  const [p, q] = F.split(y, [2, 4], 1);
  const wp = weighted(p!),
    wq = weighted(q!);
  const loss = F.add(wp.loss, wq.loss);
  loss.backward();
  loss.backward();
  const once = layout([2, 6], 1, [2, 4], [wp.w, wq.w]);
  assert.deepEqual([...y.grad!.dataSync<Float32Array>()], [...once.map((v) => Math.fround(2 * v))], 'same graph twice');
});
