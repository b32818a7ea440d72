// Capture and replay (src/compile): a replay equals an eager run of the same step on the same inputs bit for
// bit (compared as Uint32 words, not with a tolerance); what cannot be captured fails the capture by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CaptureError, capture, compile, withScalars } from '../../src/compile/capture.ts';
import { enableGrad, noGrad } from '../../src/autograd/grad-mode.ts';
import { getBackend } from '../../src/backend/backend.ts';
import { Dropout, LayerNorm, Linear } from '../../src/nn/index.ts';
import * as F from '../../src/ops/index.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { randn, Tensor, zeros } from '../../src/tensor/tensor.ts';

/** The float32 values of t as their bits (a copy; read asynchronously, so on every device). */
const bits = async (t: Tensor): Promise<Uint32Array> => {
  const d = await t.data<Float32Array>();
  return new Uint32Array(d.buffer.slice(d.byteOffset, d.byteOffset + d.byteLength));
};

manualSeed(3);
const ln = new LayerNorm(16);
const fc = new Linear(16, 24);
const out = new Linear(24, 16);
const emb = randn(10, 16);

/** A small pre-norm residual block with an embedding, a softmax and a reduction: many kernels and buffers. */
function block(ids: Tensor, x: Tensor): Tensor[] {
  let h = F.add(x, F.embedding(ids, emb));
  for (let i = 0; i < 3; i++) h = F.add(h, out.forward(F.gelu(fc.forward(ln.forward(h)))));
  const p = F.softmax(h, -1);
  return [p, F.sum(F.mul(p, h), -1)];
}

const ids = (values: number[]): Tensor => new Tensor(Int32Array.from(values), [values.length], 'int32');

test('a replay equals the eager run bit for bit, on new inputs, and reuses its buffers', async () => {
  const { outputs, captured } = noGrad(() => capture(block, [ids([1, 2, 3, 4]), randn(4, 16)]));
  assert.equal(outputs.length, 2);
  assert.ok(captured.stats.kernels > 20, `kernels: ${captured.stats.kernels}`);
  // Lifetimes share buffers: fewer buffers than allocations.
  assert.ok(captured.stats.buffers < captured.stats.allocations, JSON.stringify(captured.stats));
  for (let r = 0; r < 3; r++) {
    const inputs = [ids([r, 9 - r, 5, r + 1]), randn(4, 16)];
    const eager = noGrad(() => block(inputs[0], inputs[1]));
    const replayed = captured.replay(inputs);
    assert.deepEqual(await bits(replayed[0]), await bits(eager[0]), `replay ${r}: probabilities`);
    assert.deepEqual(await bits(replayed[1]), await bits(eager[1]), `replay ${r}: sums`);
  }
  // The capturing run's outputs are the eager run's own.
  const inputs = [ids([7, 7, 0, 1]), randn(4, 16)];
  const again = noGrad(() => capture(block, inputs));
  assert.deepEqual(await bits(again.outputs[0]), await bits(noGrad(() => block(inputs[0], inputs[1]))[0]));
});

test('compile captures once per set of input shapes and replays afterwards', async () => {
  const step = compile(block);
  const a = [ids([1, 2]), randn(2, 16)];
  const b = [ids([3, 4, 5]), randn(3, 16)];
  noGrad(() => step(...a));
  noGrad(() => step(...b));
  assert.deepEqual([...step.captures.keys()], ['int32[2];float32[2, 16]', 'int32[3];float32[3, 16]']);
  const c = [ids([0, 9]), randn(2, 16)];
  const replayed = noGrad(() => step(...c));
  assert.equal(step.captures.size, 2);
  assert.deepEqual(await bits(replayed[1]), await bits(noGrad(() => block(c[0], c[1]))[1]));
  step.clear();
  assert.equal(step.captures.size, 0);
});

test('what cannot be captured fails the capture by name', async () => {
  const x = randn(2, 16);
  assert.throws(
    () => enableGrad(() => capture((t) => F.relu(t), [x])),
    (e: Error) => e instanceof CaptureError && /grad mode is on/.test(e.message),
  );
  noGrad(() => {
    assert.throws(
      () => capture((t) => (F.sum(t).item() > 0 ? F.relu(t) : F.neg(t)), [x]),
      (e: Error) => e instanceof CaptureError && /reads a tensor's values on the host \(dataSync/.test(e.message),
    );
    assert.throws(
      () => capture((t) => (t.dataSync()[0] > 0 ? F.relu(t) : F.neg(t)), [x]),
      (e: Error) => e instanceof CaptureError && /dataSync/.test(e.message),
    );
    if (ArrayBuffer.isView(x.storage)) {
      // A kernel handed a view into a step's buffer (qkv's ops pass offsets instead): the plan would move it.
      const viaView = (t: Tensor) => {
        const y = F.relu(t);
        getBackend().relu((y.storage as unknown as Float32Array).subarray(0, 8) as never, y.storage as never);
        return y;
      };
      assert.throws(
        () => capture(viaView, [x]),
        (e: Error) => e instanceof CaptureError && /a view into a step's buffer/.test(e.message),
      );
    }
    const drop = new Dropout(0.5); // training mode
    assert.throws(
      () => capture((t) => drop.forward(t), [x]),
      (e: Error) => e instanceof CaptureError && /dropout draws random bits/.test(e.message),
    );
  });
  // A failed capture leaves the backend as it was: eager ops still run and read.
  assert.equal((await F.relu(x).data()).length, 32);
});

test('a replay refuses inputs of other shapes or dtypes, and ids out of range, naming them', () => {
  noGrad(() => {
    const x0 = randn(2, 16);
    const { captured } = capture(block, [ids([1, 2]), x0]);
    assert.throws(() => captured.replay([ids([1, 2, 3]), randn(3, 16)]), /input 0 must be int32 \[2\] as captured/);
    assert.throws(() => captured.replay([ids([1, 2])]), /expected 2 input tensors, got 1/);
    // Ids are checked where the eager op checks them: on devices that read synchronously (a GPU trusts them).
    if (x0.device.readSync)
      assert.throws(
        () => captured.replay([ids([1, 10]), randn(2, 16)]),
        /index 10 at position 1 is out of range for 10/,
      );
  });
});

// A dynamic scalar: a long-lived cache of MAX keys and values, of which a step attends over the first n, n a
// host number each replay passes anew (what the static KV cache's length is).
const MAX = 9;
const cacheK = randn(1, 2, MAX, 8);
const cacheV = randn(1, 2, MAX, 8);
/** Keys or values [0, n) of the cache, as the eager op gets them. */
const firstN = (t: Tensor, n: number): Tensor => F.narrow(t, 2, 0, n);

test('a dynamic scalar: each replay attends over the first n keys it is given, bit for bit the eager op on them', async () => {
  const attendFirst = (q: Tensor): Tensor => {
    const n = length;
    // The prefix copies (one run of n·8 elements per head) and the attention's key length follow the scalar.
    const runs = (what: string, args: unknown[], [m]: readonly number[]): void => {
      if (what === 'copyRows') args[5] = args[7] = m * 8;
    };
    const prefix = (t: Tensor, into: Tensor): Tensor =>
      withScalars(runs, () => {
        getBackend().copyRows(t.storage, 0, MAX * 8, into.storage, 0, n * 8, 2, n * 8);
        return Tensor.fromStorage(t.device, into.storage, [1, 2, n, 8], 'float32');
      });
    const k = prefix(cacheK, scratchK);
    const v = prefix(cacheV, scratchV);
    return withScalars(
      (what, args, [m]) => {
        if (what === 'attention') (args[6] as { s: number }).s = m;
      },
      () => F.scaledDotProductAttention(q, k, v),
    );
  };
  const scratchK = zeros(1, 2, MAX, 8);
  const scratchV = zeros(1, 2, MAX, 8);
  let length = 3;
  const q0 = randn(1, 2, 1, 8);
  const { outputs, captured } = noGrad(() => capture(attendFirst, [q0], { scalars: [length] }));
  const eager = (q: Tensor, n: number) =>
    noGrad(() => F.scaledDotProductAttention(q, firstN(cacheK, n), firstN(cacheV, n)));
  assert.deepEqual(await bits(outputs[0]), await bits(eager(q0, 3)));
  for (const n of [1, 5, MAX, 2]) {
    const q = randn(1, 2, 1, 8);
    const [r] = noGrad(() => captured.replay([q], [n]));
    assert.deepEqual(await bits(r), await bits(eager(q, n)), `n = ${n}`);
  }
  // compile reads the scalars at every call.
  const fast = compile(attendFirst, { scalars: () => [length] });
  for (const n of [4, 7, 1]) {
    length = n;
    const q = randn(1, 2, 1, 8);
    const [r] = noGrad(() => fast(q));
    assert.deepEqual(await bits(r), await bits(eager(q, n)), `compiled, n = ${n}`);
  }
  assert.equal(fast.captures.size, 1);
  // A replay takes as many scalars as were declared; a capture declaring none refuses calls that depend on one.
  assert.throws(() => captured.replay([q0]), /replay: scalars must be 1 finite numbers as captured, got \[\]/);
  assert.throws(() => captured.replay([q0], [1, 2]), /scalars must be 1 finite numbers as captured, got \[1, 2\]/);
  assert.throws(
    () => noGrad(() => capture(attendFirst, [q0])),
    (e: Error) =>
      e instanceof CaptureError &&
      /depend on dynamic scalars \(withScalars\), but the capture declares none/.test(e.message),
  );
  assert.throws(
    () => noGrad(() => capture(attendFirst, [q0], { scalars: [Number.NaN] })),
    /options\.scalars must be an array of finite numbers/,
  );
  // Outside a capture withScalars only runs its op.
  length = 6;
  assert.deepEqual(await bits(noGrad(() => attendFirst(q0))), await bits(eager(q0, 6)));
});
