/**
 * Capture and replay (src/compile) on the webgpu backend (this file runs in scripts/test.mjs's webgpu pass): the
 * recorder is the same as on the host backends, so a replay of a small block, and of the static-cache GPT step,
 * equals the eager run on the GPU bit for bit (read back with `await t.data()`). What a replay does not do yet on
 * WebGPU: encode its dispatches from recorded bind groups in one command buffer (docs/compiled.md).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getBackend } from '../../src/backend/backend.ts';
import { gpu } from '../../src/backend/webgpu/registry.ts';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { CaptureError, capture } from '../../src/compile/capture.ts';
import { StaticGPTDecoder } from '../../src/decode/static-gpt.ts';
import { GPT, GPT_TINY } from '../../src/models/gpt.ts';
import { LayerNorm, Linear } from '../../src/nn/index.ts';
import * as F from '../../src/ops/index.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { randn, Tensor } from '../../src/tensor/tensor.ts';

assert.equal(getBackend().name, 'webgpu', 'this file runs in the webgpu pass (QKV_BACKEND=webgpu)');

const bits = async (t: Tensor): Promise<Uint32Array> => {
  const d = await t.data<Float32Array>();
  return new Uint32Array(d.buffer.slice(d.byteOffset, d.byteOffset + d.byteLength));
};
const ids = (values: number[], shape = [values.length]): Tensor => new Tensor(Int32Array.from(values), shape, 'int32');

test('webgpu: a replay of a small block equals its eager run bit for bit', async () => {
  manualSeed(3);
  const ln = new LayerNorm(16);
  const fc = new Linear(16, 24);
  const out = new Linear(24, 16);
  const emb = randn(10, 16);
  const block = (i: Tensor, x: Tensor): Tensor[] => {
    let h = F.add(x, F.embedding(i, emb));
    for (let k = 0; k < 2; k++) h = F.add(h, out.forward(F.gelu(fc.forward(ln.forward(h)))));
    return [F.softmax(h, -1)];
  };
  const { captured } = noGrad(() => capture(block, [ids([1, 2, 3]), randn(3, 16)]));
  for (let r = 0; r < 2; r++) {
    const inputs = [ids([r, 9 - r, 4]), randn(3, 16)];
    const eager = await bits(noGrad(() => block(inputs[0], inputs[1]))[0]);
    assert.deepEqual(await bits(captured.replay(inputs)[0]), eager, `replay ${r}`);
  }
  await assert.rejects(
    async () => noGrad(() => capture((x) => (F.sum(x).dataSync()[0] > 0 ? x : F.neg(x)), [randn(2, 2)])),
    (e: Error) => e instanceof CaptureError && /dataSync/.test(e.message),
  );
});

test('webgpu: the static-cache GPT step replays its eager run bit for bit, step after step', async () => {
  manualSeed(7);
  const model = new GPT({ ...GPT_TINY, vocabSize: 53, blockSize: 16 }).eval();
  const eager = new StaticGPTDecoder(model, 10, { compiled: false });
  const replayed = new StaticGPTDecoder(model, 10);
  const feeds = [[3, 14, 15], [9], [2], [6], [5]];
  for (const [s, fed] of feeds.entries()) {
    const x = ids(fed, [1, fed.length]);
    const a = await bits(noGrad(() => eager.step(x)));
    const b = await bits(noGrad(() => replayed.step(x)));
    assert.deepEqual(b, a, `step ${s}`);
  }
  assert.equal(replayed.captures?.size, 2);
});

test('webgpu: a replayed GPT-2-deep token step records the dispatches of the eager step, in no more submits', async (t) => {
  manualSeed(8);
  // GPT-2 small's depth at a narrow width (the kernels of a token do not depend on the width or the heads).
  const model = new GPT({ ...GPT_TINY, vocabSize: 1000, blockSize: 64, nLayer: 12, nHead: 2, nEmbd: 16 }).eval();
  const ctx = gpu();
  const counted = async (step: () => Tensor) => {
    await ctx.sync();
    const d0 = ctx.stats.dispatches;
    const s0 = ctx.stats.submits;
    const logits = noGrad(step);
    ctx.flush();
    const counts = { dispatches: ctx.stats.dispatches - d0, submits: ctx.stats.submits - s0 };
    await logits.data();
    return counts;
  };
  const prompt = ids([464, 2068, 7586], [1, 3]);
  const next = ids([21831], [1, 1]);
  const cache = model.initCache();
  noGrad(() => model.forwardCached(prompt, cache));
  const dynamic = await counted(() => model.forwardCached(next, cache).logits);
  const eager = new StaticGPTDecoder(model, 8, { compiled: false });
  noGrad(() => eager.step(prompt));
  const staticEager = await counted(() => eager.step(next));
  const replayed = new StaticGPTDecoder(model, 8);
  noGrad(() => replayed.step(prompt));
  noGrad(() => replayed.step(next)); // captures the one-token step
  const replay = await counted(() => replayed.step(ids([318], [1, 1])));
  t.diagnostic(
    `per token: dynamic ${JSON.stringify(dynamic)}, static eager ${JSON.stringify(staticEager)}, replay ${JSON.stringify(replay)}`,
  );
  assert.equal(replay.dispatches, staticEager.dispatches);
  assert.ok(replay.submits <= staticEager.submits, `${replay.submits} > ${staticEager.submits}`);
  assert.ok(dynamic.dispatches > 0);
});
