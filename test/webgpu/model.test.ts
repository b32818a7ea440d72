/**
 * qkv's models on the webgpu backend (this file runs in scripts/test.mjs's webgpu pass, where QKV_BACKEND=webgpu
 * made it current), against the js backend in the same process: a Seq2Seq's losses, first gradients and
 * parameters over three Adam steps (dropout on), greedy and beam decoding through the asynchronous path, the
 * translation pipeline on the shipped EN→DE model with `{ device: 'webgpu' }`, and GPU memory that stays flat
 * over many training steps (buffers pooled and released by scope).
 *
 * The GPU computes in float32 with tree reductions and WGSL's exp/log; the js twins accumulate some sums in
 * float64. Agreement asked: losses and gradients to 1e-4 relative (1e-6 absolute), parameters after three
 * Adam steps to 2e-5 absolute (lr 0.01: a step moves a weight by at most ~lr, and the float32 differences in
 * its gradient move the ratio m̂/√v̂ by about 1e-3 of that) where the gradient is not rounding noise, decoded
 * ids exactly.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getBackend, setBackend } from '../../src/backend/backend.ts';
import { beamSearchPausing, greedyPausing } from '../../src/decode/pausing.ts';
import { F, models, optim, pipeline, tensor } from '../../src/index.ts';
import { memoryScope } from '../../src/tensor/storage.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { gpu } from '../../src/backend/webgpu/registry.ts';
import { assertClose } from '../helpers/assert.ts';

assert.equal(getBackend().name, 'webgpu', 'this file runs in the webgpu pass (QKV_BACKEND=webgpu)');

const SMALL = {
  ...models.MULTI30K_SMALL,
  vocabSize: 14,
  dModel: 16,
  nhead: 2,
  numEncoderLayers: 1,
  numDecoderLayers: 1,
  dimFeedforward: 32,
  dropout: 0.1,
  maxLen: 16,
};

async function run(backend: string) {
  await setBackend(backend);
  try {
    manualSeed(11);
    const m = new models.Seq2Seq(SMALL);
    const opt = new optim.Adam(m.parameters(), { lr: 0.01 });
    const src = tensor(new Int32Array([4, 5, 6, 7, 0, 8, 9, 10, 11, 12]), [2, 5]);
    const tin = tensor(new Int32Array([2, 4, 5, 6, 2, 8, 9, 0]), [2, 4]);
    const tout = tensor(new Int32Array([4, 5, 6, 3, 8, 9, 3, 0]), [2, 4]);
    const losses: number[] = [];
    let grads: Float32Array[] = [];
    for (let step = 0; step < 3; step++) {
      opt.zeroGrad();
      const loss = F.crossEntropy(m.forward(src, tin), tout, { ignoreIndex: 0, labelSmoothing: 0.1 });
      loss.backward();
      if (step === 0) grads = await Promise.all(m.parameters().map((p) => p.grad!.data<Float32Array>()));
      opt.step();
      losses.push(await loss.itemAsync());
    }
    m.eval();
    const g = await greedyPausing(m, src, { bosId: 2, eosId: 3, maxLen: 6 });
    const b = await beamSearchPausing(m, src, { bosId: 2, eosId: 3, maxLen: 6, beamSize: 3, lengthPenalty: 0.6 });
    const params = await Promise.all(m.parameters().map((p) => p.data<Float32Array>()));
    return {
      losses,
      grads,
      params,
      greedy: Array.from(await g.ids.data()),
      beam: Array.from(await b.ids.data()),
      device: m.parameters()[0]!.deviceName,
    };
  } finally {
    await setBackend('webgpu');
  }
}

test('a Seq2Seq trains three Adam steps and decodes on webgpu as on js', async () => {
  const ref = await run('js');
  const got = await run('webgpu');
  assert.equal(got.device, 'webgpu', 'the parameters live on the GPU');
  assertClose(got.losses, ref.losses, 'losses', 1e-6, 1e-4);
  got.grads.forEach((g, i) => assertClose(g, ref.grads[i], `first gradient of parameter ${i}`, 1e-6, 1e-4));
  // Where a gradient is zero in exact arithmetic (the key projection's bias: softmax ignores a constant added
  // to every score) both backends hold rounding noise, which Adam scales to steps of ±lr: those elements are
  // left out (first gradient below 1e-7 on js), every other one compared.
  got.params.forEach((p, i) => {
    const kept = (a: Float32Array) => a.filter((_, j) => Math.abs(ref.grads[i][j]) >= 1e-7);
    assertClose(kept(p), kept(ref.params[i]), `parameter ${i} after 3 steps`, 2e-5, 0);
  });
  assert.deepEqual(got.greedy, ref.greedy, 'greedy ids');
  assert.deepEqual(got.beam, ref.beam, 'beam-3 ids');
});

// 200 steps in CI (each is ~300 dispatches, slow on SwiftShader); 600 were run by hand with the same result.
test('GPU memory stays flat over 200 training steps (pooled buffers, released by scope)', async () => {
  manualSeed(3);
  const m = new models.Seq2Seq({ ...SMALL, dropout: 0 });
  const opt = new optim.Adam(m.parameters(), { lr: 1e-3 });
  const src = tensor(new Int32Array([4, 5, 6, 7, 0, 8, 9, 10, 11, 12]), [2, 5]);
  const tin = tensor(new Int32Array([2, 4, 5, 6, 2, 8, 9, 0]), [2, 4]);
  const tout = tensor(new Int32Array([4, 5, 6, 3, 8, 9, 3, 0]), [2, 4]);
  const stats = gpu().stats;
  const at: Record<number, { allocated: number; live: number; created: number }> = {};
  for (let step = 1; step <= 200; step++) {
    const loss = memoryScope(() => {
      opt.zeroGrad();
      const l = F.crossEntropy(m.forward(src, tin), tout, { ignoreIndex: 0 });
      l.backward();
      opt.step();
      return l.detach();
    });
    await loss.itemAsync(); // a training loop reads its loss: the GPU catches up, the collector may run
    if (step === 50 || step === 200)
      at[step] = { allocated: stats.allocatedBytes, live: stats.liveBytes, created: stats.buffersCreated };
  }
  assert.ok(at[200].allocated <= at[50].allocated, `GPU bytes grew: ${at[50].allocated} -> ${at[200].allocated}`);
  assert.ok(at[200].created <= at[50].created + 8, `buffers made: ${at[50].created} -> ${at[200].created}`);
});

test('the translation pipeline with { device: "webgpu" } gives the js backend translations (shipped EN→DE)', async () => {
  const lines = ['Two dogs play in the snow.'];
  const onGpu = await pipeline('translation', 'models/multi30k-en-de', { device: 'webgpu' });
  assert.equal(getBackend().name, 'webgpu');
  const got = await onGpu(lines);
  await setBackend('js');
  try {
    const onJs = await pipeline('translation', 'models/multi30k-en-de');
    assert.deepEqual(got, await onJs(lines));
  } finally {
    await setBackend('webgpu');
  }
});
