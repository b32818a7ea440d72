// The static KV cache (src/decode/static-gpt.ts): greedy decoding over it draws today's tokens from today's
// logits bit for bit (the dynamic cache's generate), and its captured steps replay the eager static steps bit for
// bit, for learned, sinusoidal and rotary positions, one or several KV heads and sliding windows (GPT-2's and
// Llama's families share the GPT class). A replayed step attends over the filled keys only (the length a dynamic
// scalar), so matching the dynamic cache's bits also checks that each replay was given the step's length.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { bytesInUse } from '../../src/backend/wasm/memory.ts';
import { generate } from '../../src/decode/gpt.ts';
import { generateStatic, StaticGPTDecoder } from '../../src/decode/static-gpt.ts';
import { GPT, GPT_TINY, type GPTConfig } from '../../src/models/gpt.ts';
import { normal_ } from '../../src/nn/init.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { Tensor } from '../../src/tensor/tensor.ts';

const bits = (a: Float32Array): Uint32Array =>
  new Uint32Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength));

const CONFIGS: [string, GPTConfig][] = [
  ['learned', { ...GPT_TINY, vocabSize: 97, blockSize: 40 }],
  ['sinusoidal', { ...GPT_TINY, vocabSize: 97, blockSize: 40, positions: 'sinusoidal', activation: 'gelu_tanh' }],
  [
    'rotary, grouped KV heads, RMS norm, SwiGLU',
    {
      ...GPT_TINY,
      vocabSize: 97,
      blockSize: 40,
      nHead: 4,
      nKVHead: 2,
      positions: 'rotary',
      norm: 'rms',
      mlp: 'swiglu',
      tiedHead: false,
    },
  ],
  // One batch row and one KV head: the attention reads the cache's first rows in place (no prefix copy).
  [
    'rotary, one KV head (multi-query)',
    { ...GPT_TINY, vocabSize: 97, blockSize: 40, nHead: 4, nKVHead: 1, positions: 'rotary', tiedHead: false },
  ],
  [
    'sliding window of 4 in blocks 0 and 2 (Mistral-like), rotary',
    {
      ...GPT_TINY,
      vocabSize: 97,
      blockSize: 40,
      nLayer: 3,
      nHead: 4,
      nKVHead: 2,
      positions: 'rotary',
      norm: 'rms',
      mlp: 'swiglu',
      slidingWindow: 4,
      slidingLayers: [0, 2],
    },
  ],
];
const PROMPT = [5, 17, 3, 88, 42];

/** A random model whose weights are wide enough (std 0.6, not GPT-2's 0.02) that greedy decoding wanders. */
function wide(config: GPTConfig): GPT {
  const model = new GPT(config).eval();
  noGrad(() => {
    for (const [n, p] of model.namedParameters()) if (!n.includes('ln')) normal_(p, 0, 0.6);
  });
  return model;
}

for (const [name, config] of CONFIGS) {
  test(`${name}: greedy over the static cache, eager and replayed, draws the dynamic cache's tokens`, () => {
    manualSeed(11);
    const model = wide(config);
    const options = { maxTokens: 24, temperature: 0 };
    const dynamic = generate(model, PROMPT, options);
    const eager = generateStatic(model, PROMPT, { ...options, compiled: false });
    const replayed = generateStatic(model, PROMPT, options);
    assert.ok(new Set(dynamic.ids).size >= 8, `a degenerate draw: ${dynamic.ids}`);
    assert.deepEqual(eager.ids, dynamic.ids);
    assert.deepEqual(replayed.ids, dynamic.ids);
    // Replayed, eager static and dynamic steps: the same logits, bit for bit, at every step.
    eager.logits.forEach((l, i) => assert.deepEqual(bits(replayed.logits[i]), bits(l), `step ${i}`));
    dynamic.logits.forEach((l, i) => assert.deepEqual(bits(eager.logits[i]), bits(l), `step ${i}: static vs dynamic`));
    // The cache holds the KV heads only (grouped-query attention).
    const { nHead, nKVHead = nHead, nEmbd } = config;
    assert.deepEqual(new StaticGPTDecoder(model, 8).layers[0].k.shape, [1, nKVHead, 8, nEmbd / nHead]);
  });
}

test('a kept decoder serves a second generation from its captures; a decoder too short is refused', () => {
  manualSeed(4);
  const model = wide({ ...GPT_TINY, vocabSize: 97, blockSize: 32 });
  const options = { maxTokens: 10, temperature: 0 };
  const decoder = new StaticGPTDecoder(model, 20);
  const first = generateStatic(model, PROMPT, { ...options, decoder });
  const captures = [...decoder.captures!.values()];
  const second = generateStatic(model, PROMPT, { ...options, decoder });
  assert.deepEqual([...decoder.captures!.values()], captures); // no new capture: every step replayed
  assert.deepEqual(second.ids, first.ids);
  assert.deepEqual(second.ids, generate(model, PROMPT, options).ids);
  second.logits.forEach((l, i) => assert.deepEqual(bits(l), bits(first.logits[i]), `step ${i}`));
  assert.throws(
    () => generateStatic(model, PROMPT, { ...options, decoder: new StaticGPTDecoder(model, 14) }),
    /options\.decoder must be a StaticGPTDecoder of this model with maxLength >= 15, got maxLength 14/,
  );
});

test('the context cut (prompt + maxTokens > blockSize) refills the static cache as generate does', () => {
  manualSeed(5);
  const model = wide({ ...GPT_TINY, vocabSize: 61, blockSize: 12 });
  const options = { maxTokens: 20, temperature: 0 };
  const dynamic = generate(model, [1, 2, 3, 4], options);
  const replayed = generateStatic(model, [1, 2, 3, 4], options);
  assert.ok(new Set(dynamic.ids).size >= 5, `a degenerate draw: ${dynamic.ids}`);
  assert.deepEqual(replayed.ids, dynamic.ids);
  dynamic.logits.forEach((l, i) => assert.deepEqual(bits(replayed.logits[i]), bits(l), `step ${i}`));
});

test('a batch of two rows: the replayed static steps equal the eager ones bit for bit', () => {
  manualSeed(9);
  const model = wide({ ...GPT_TINY, vocabSize: 97, blockSize: 16 });
  const eager = new StaticGPTDecoder(model, 8, { batch: 2, compiled: false });
  const replayed = new StaticGPTDecoder(model, 8, { batch: 2 });
  const feeds = [
    [4, 8, 15, 16, 23, 42],
    [1, 2],
    [3, 5],
    [7, 11],
  ];
  noGrad(() => {
    for (const [s, fed] of feeds.entries()) {
      const x = new Tensor(Int32Array.from(fed), [2, fed.length / 2], 'int32');
      const a = bits(eager.step(x).dataSync<Float32Array>());
      assert.deepEqual(bits(replayed.step(x).dataSync<Float32Array>()), a, `step ${s}`);
    }
  });
});

test('one capture serves every one-token step; the decoder refuses positions past maxLength', () => {
  manualSeed(2);
  const model = new GPT({ ...GPT_TINY, vocabSize: 50, blockSize: 16 }).eval();
  const decoder = new StaticGPTDecoder(model, 6);
  noGrad(() => {
    decoder.step(new Tensor(Int32Array.from([1, 2]), [1, 2], 'int32'));
    for (let i = 0; i < 4; i++) decoder.step(new Tensor(Int32Array.from([i + 3]), [1, 1], 'int32'));
    assert.equal(decoder.captures?.size, 2); // the prefill's shape and the one-token step's
    assert.throws(
      () => decoder.step(new Tensor(Int32Array.from([1]), [1, 1], 'int32')),
      /positions 6\.\.6 exceed the cache's maxLength 6/,
    );
  });
  assert.throws(() => new StaticGPTDecoder(model, 17), /maxLength must be an integer in \[1, 16\], got 17/);
});

test('a generation frees the static cache and captures it made when it ends (wasm memory back where it was)', () => {
  manualSeed(6);
  const model = wide({ ...GPT_TINY, vocabSize: 97, blockSize: 32 });
  const options = { maxTokens: 8, temperature: 0 };
  generateStatic(model, PROMPT, options); // first use: whatever the kernels keep (scratch) is allocated here
  const before = bytesInUse();
  for (let i = 0; i < 3; i++) generateStatic(model, PROMPT, options);
  assert.equal(bytesInUse(), before); // js: nothing in wasm memory; wasm: the caches and plans freed
  const decoder = new StaticGPTDecoder(model, 16);
  generateStatic(model, PROMPT, { ...options, decoder }); // a given decoder is the caller's: kept
  assert.ok(bytesInUse() >= before);
  const kept = [...decoder.captures!.values()];
  decoder.release();
  assert.throws(() => kept[0].replay([]), /this capture was released/);
});
