/**
 * What the explorer says of a big folder before it loads it (web/src/page-memory.ts; issue 63, point 4): the plan of
 * a Hugging Face decoder's config.json in fp32, q8 and q4 (its bytes are gptWeightBytes', held exact to the state dict
 * in test/models/gpt-memory.test.ts), the tab's limit (wasm's 4 GiB less room, the device's memory where the
 * browser tells it, the JavaScript heap's limit for the js backend), the warning over half the device's memory,
 * and the one-line refusal, which names the dtypes that would fit.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gptWeightBytes } from '../../src/models/gpt-memory.ts';
import { gptConfigFromHf } from '../../src/models/hf/gpt2.ts';
import { checkPageLimit, JS_LIMIT_BYTES, memoryLine, WASM_LIMIT_BYTES } from '../../web/src/page-memory.ts';

const GPT2 = { model_type: 'gpt2', n_layer: 12, n_head: 12, n_embd: 768, n_positions: 1024, vocab_size: 50257 };
const GPT2_XL = { ...GPT2, n_layer: 48, n_head: 25, n_embd: 1600 };
const NONE = { deviceMemoryGiB: null, jsHeapLimit: null };

test('GPT-2 124M: its plan in fp32, q8 and q4 (loading reads float32 first), within the wasm limit', () => {
  const fp32 = 124439808 * 4;
  const p = checkPageLimit(GPT2, 'wasm', 'config.json', 'fp32', NONE);
  assert.deepEqual([p.parameters, p.fp32, p.held, p.peak], [124439808, fp32, fp32, fp32]);
  assert.deepEqual([p.limit, p.warning], [WASM_LIMIT_BYTES, null]);
  assert.equal(memoryLine(p), '124,439,808 parameters: 498 MB in fp32');
  for (const [dtype, q] of [
    ['q8', 'int8'],
    ['q4', 'q4'],
  ] as const) {
    const held = gptWeightBytes(gptConfigFromHf(GPT2), q).held;
    const r = checkPageLimit(GPT2, 'wasm', 'config.json', dtype, NONE);
    assert.deepEqual([r.held, r.peak], [held, fp32 + held]);
    assert.equal(
      memoryLine(r),
      `124,439,808 parameters: 498 MB in fp32, ${(held / 1e6).toFixed(0)} MB in ${dtype} once loaded ` +
        `(${((fp32 + held) / 1e6).toFixed(0)} MB while loading)`,
    );
  }
  // 512 tokens: the KV cache (12 layers × 12 heads × 64 × 2 × 4 bytes a token), the maps (144 of 512 × 512).
  assert.deepEqual(p.per512, { kvCache: 12 * 12 * 64 * 2 * 4 * 512, maps: 144 * 512 * 512 * 4 });
});

test("the device's memory: a lower limit, a warning past its half, and a refusal naming the dtype that fits", () => {
  const half = { deviceMemoryGiB: 0.5, jsHeapLimit: null };
  const p = checkPageLimit(GPT2, 'wasm', 'config.json', 'fp32', half);
  assert.equal(p.limit, 2 ** 29);
  assert.equal(p.limitWhy, 'on this device, which reports 0.5 GiB of memory');
  assert.equal(
    p.warning,
    'loading it takes 498 MB, over half of the 0.5 GiB this device reports: the tab may run out or slow the machine',
  );
  // In q4 the float32 weights and their q4 copy are held at once while loading: over 512 MiB.
  assert.throws(
    () => checkPageLimit(GPT2, 'wasm', 'gpt2/config.json', 'q4', half),
    (e: Error) =>
      /^gpt2\/config\.json: this model has 124,439,808 parameters, 498 MB in fp32 \(\d+ MB in q4, \d+ MB while loading\), more than the page can hold \(537 MB on this device, which reports 0\.5 GiB of memory\); it fits in fp32: choose it in Weights; gpt2, distilgpt2, gpt2-medium and gpt2-large fit$/.test(
        e.message,
      ),
  );
  assert.equal(
    checkPageLimit(GPT2, 'wasm', 'config.json', 'fp32', { deviceMemoryGiB: 8, jsHeapLimit: null }).limit,
    WASM_LIMIT_BYTES,
  );
});

test("the js backend: the JavaScript heap's limit where it is lower; gpt2-xl refused as before; a bad dtype named", () => {
  const p = checkPageLimit(GPT2, 'js', 'config.json', 'fp32', { deviceMemoryGiB: null, jsHeapLimit: 2e9 });
  assert.deepEqual(
    [p.limit, p.limitWhy],
    [2e9, "with the js backend: this browser's JavaScript heap is limited to 2000 MB"],
  );
  assert.equal(checkPageLimit(GPT2, 'js', 'config.json', 'fp32', NONE).limit, JS_LIMIT_BYTES);
  assert.throws(
    () => checkPageLimit(GPT2_XL, 'wasm', 'config.json'),
    new Error(
      'config.json: this model has 1,557,611,200 parameters, 6230 MB in fp32, more than the page can hold ' +
        `(${(WASM_LIMIT_BYTES / 1e6).toFixed(0)} MB with the wasm backend: WebAssembly memory is 4 GiB at most); ` +
        'gpt2, distilgpt2, gpt2-medium and gpt2-large fit',
    ),
  );
  assert.throws(
    () => checkPageLimit(GPT2, 'wasm', 'config.json', 'fp16' as never),
    /dtype: expected one of fp32, q8, q4, got 'fp16'/,
  );
});
