/**
 * Activation recomputation (autograd/checkpoint.ts, GPT.recompute; issue 60's memory point): the part is run once
 * without a graph and again in the backward pass, and the gradients are the plain path's bit for bit, dropout
 * included (the rerun restores the generator's state). Each test counts the reruns, so it fails when recomputation
 * is off as surely as when it is wrong.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getBackend } from '../../src/backend/backend.ts';
import { bytesInUse } from '../../src/backend/wasm/memory.ts';
import { checkpoint, F, manualSeed, memoryScope, models, noGrad, randn, Tensor } from '../../src/index.ts';
import { defaultGenerator } from '../../src/tensor/random.ts';
import type { GPTConfig } from '../../src/models/gpt-config.ts';

const bits = (t: Tensor | null) => Array.from(new Uint32Array(Float32Array.from(t!.dataSync<Float32Array>()).buffer));

test("checkpoint: the gradients of x and of the parameters are the plain path's, bit for bit, dropout included", () => {
  manualSeed(3);
  const w1 = randn([16, 8]).requiresGrad_();
  const w2 = randn([8, 16]).requiresGrad_();
  let calls = 0;
  const part = (x: Tensor) => {
    calls++;
    return F.linear(F.dropout(F.gelu(F.linear(x, w1)), 0.3, true), w2); // (B, 8) -> (B, 16) -> (B, 8)
  };
  const run = (recompute: boolean) => {
    const x = new Tensor(
      Float32Array.from({ length: 40 }, (_, i) => Math.sin(i + 1)),
      [5, 8],
    ).requiresGrad_();
    w1.grad = null;
    w2.grad = null;
    defaultGenerator.manualSeed(11);
    let y = recompute ? checkpoint(part, x, [w1, w2]) : part(x);
    y = recompute ? checkpoint(part, y, [w1, w2]) : part(y); // two parts: the gradient crosses from one to the other
    const after = defaultGenerator.getState();
    F.sum(F.mul(y, y)).backward();
    assert.deepEqual(defaultGenerator.getState(), after, 'the backward leaves the generator as it was');
    return { x: bits(x.grad), w1: bits(w1.grad), w2: bits(w2.grad), y: bits(y) };
  };
  calls = 0;
  const plain = run(false);
  assert.equal(calls, 2);
  calls = 0;
  const re = run(true);
  assert.equal(calls, 4, 'each part runs twice: forward, then again in the backward pass');
  assert.deepEqual(re.y, plain.y, 'the output');
  assert.deepEqual(re.x, plain.x, "x's gradient");
  assert.deepEqual(re.w1, plain.w1, "w1's gradient");
  assert.deepEqual(re.w2, plain.w2, "w2's gradient");
});

test('checkpoint: under noGrad, or with nothing to differentiate, it is the part itself (one run)', () => {
  let calls = 0;
  const part = (x: Tensor) => {
    calls++;
    return F.mul(x, 2);
  };
  const x = randn([3]);
  noGrad(() => checkpoint(part, x.requiresGrad_(), []));
  const y = checkpoint(part, randn([3]), [randn([2])]);
  assert.equal(calls, 2);
  assert.equal(y.requiresGrad, false);
});

/** A tiny decoder of each kind: GPT-2's, and a Llama with grouped KV heads, rotary positions and SwiGLU. */
const CONFIGS: Record<string, GPTConfig> = {
  gpt2: { vocabSize: 23, blockSize: 16, nLayer: 3, nHead: 2, nEmbd: 16, dropout: 0.1, positions: 'learned' },
  llama: {
    vocabSize: 23,
    blockSize: 16,
    nLayer: 3,
    nHead: 4,
    nKVHead: 2,
    nEmbd: 16,
    dropout: 0.1,
    positions: 'rotary',
    rope: { base: 10000 },
    norm: 'rms',
    mlp: 'swiglu',
    dFf: 24,
    qkvBias: false,
    outBias: false,
    mlpBias: false,
  },
};

for (const [kind, config] of Object.entries(CONFIGS))
  test(`GPT.recompute (${kind}, LoRA with dropout): the same loss and gradients bit for bit, each block run twice`, () => {
    manualSeed(5);
    const model = new models.GPT(config);
    for (const p of model.parameters()) p.requiresGrad = false;
    for (const block of model.h) {
      block.attn.addInProjLora(kind === 'gpt2' ? 'qkv' : 'k', { r: 2, alpha: 4, dropout: 0.2, init: 'random' });
      if (kind === 'llama') block.attn.addInProjLora('v', { r: 2, alpha: 4, dropout: 0.2, init: 'random' });
    }
    model.train();
    let calls = 0;
    for (const block of model.h) {
      const f = block.forward.bind(block);
      block.forward = (...a: Parameters<typeof f>) => {
        calls++;
        return f(...a);
      };
    }
    const ids = new Tensor(
      Int32Array.from({ length: 24 }, (_, i) => (i * 7) % 23),
      [2, 12],
      'int32',
    );
    const target = new Tensor(
      Int32Array.from({ length: 24 }, (_, i) => (i * 5 + 1) % 23),
      [24],
      'int32',
    );
    const trainable = model.namedParameters().filter(([, p]) => p.requiresGrad);
    assert.ok(trainable.length >= 6);
    const step = (recompute: boolean) => {
      model.recompute = recompute;
      for (const [, p] of trainable) p.grad = null;
      defaultGenerator.manualSeed(9);
      calls = 0;
      const loss = F.crossEntropy(model.forward(ids).reshape(24, 23), target);
      loss.backward();
      return { loss: bits(loss), calls, grads: trainable.map(([n, p]) => [n, bits(p.grad)]) };
    };
    const plain = step(false);
    const re = step(true);
    assert.equal(plain.calls, config.nLayer);
    assert.equal(re.calls, 2 * config.nLayer, 'every block runs again in the backward pass');
    assert.deepEqual(re.loss, plain.loss, 'the loss');
    assert.deepEqual(re.grads, plain.grads, 'every LoRA gradient');
  });

test("GPT.recompute frees the blocks' insides: after the forward pass a step holds a fraction of the plain path's " +
  'scoped memory (wasm)', { skip: getBackend().name !== 'wasm' && "scoped memory is the wasm backend's" }, () => {
  manualSeed(6);
  const config: GPTConfig = {
    vocabSize: 50,
    blockSize: 64,
    nLayer: 6,
    nHead: 4,
    nEmbd: 64,
    dropout: 0,
    positions: 'learned',
  };
  const model = new models.GPT(config);
  for (const p of model.parameters()) p.requiresGrad = false;
  for (const block of model.h) block.attn.addInProjLora('qkv', { r: 4, alpha: 8, init: 'random' });
  model.train();
  const ids = new Tensor(
    Int32Array.from({ length: 128 }, (_, i) => (i * 7) % 50),
    [2, 64],
    'int32',
  );
  const target = new Tensor(
    Int32Array.from({ length: 128 }, (_, i) => (i * 3 + 1) % 50),
    [128],
    'int32',
  );
  const held = (recompute: boolean) => {
    model.recompute = recompute;
    return memoryScope(() => {
      const before = bytesInUse();
      const loss = F.crossEntropy(model.forward(ids).reshape(128, 50), target);
      const after = bytesInUse() - before; // what the forward pass keeps for the backward
      loss.backward();
      return after;
    });
  };
  const plain = held(false);
  const re = held(true);
  assert.ok(re < plain / 3, `with recompute ${re} bytes held after the forward, plain ${plain}`);
});
