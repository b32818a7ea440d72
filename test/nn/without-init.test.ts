/**
 * Models built to be loaded (nn/init's withoutInit, GPT's `{ init: false }`, the folder readers): no random
 * initialisation, no draws from the seeded stream, weights left as allocated; a parameter's zeros or −0 are what
 * they were when it moves to long-lived storage; and, under the wasm backend, a quantized model built that way
 * never makes its float32 weights resident (the memory of a quantized GPT-2-shaped model is its quantized
 * weights, not the float shell's).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { getBackend } from '../../src/backend/backend.ts';
import { alloc, free, memoryShared } from '../../src/backend/wasm/memory.ts';
import { manualSeed, models, nn, rand, type Tensor } from '../../src/index.ts';

const bits = (t: Tensor) => [...new Uint32Array(Float32Array.from(t.dataSync()).buffer)];

test('withoutInit: parameters stay as allocated (zeros, LayerNorm ones) and the seeded stream is not drawn from', () => {
  manualSeed(11);
  const expected = bits(rand(5));
  manualSeed(11);
  const m = nn.init.withoutInit(() => new nn.TransformerEncoderLayer({ dModel: 16, nhead: 2, dimFeedforward: 32 }));
  assert.deepEqual(bits(rand(5)), expected, 'no random draws while building');
  for (const [name, p] of m.namedParameters()) {
    const want = /norm\d*\.weight$/.test(name) ? 1 : 0;
    assert.ok(
      [...p.dataSync()].every((v) => v === want),
      `${name} holds only ${want}`,
    );
  }
  // Outside it, initialisation is back, and equal to a model built before it.
  manualSeed(4);
  const a = new nn.Linear(8, 3);
  manualSeed(4);
  nn.init.withoutInit(() => new nn.Linear(8, 3));
  const b = new nn.Linear(8, 3);
  assert.deepEqual(bits(b.weight), bits(a.weight), 'withoutInit drew nothing: the Linear after it draws as the first');
  assert.ok(
    b.weight.dataSync().some((v) => v !== 0),
    'initialised',
  );
});

test("GPT { init: false }: every weight zero (LayerNorms one), GPT-2's and the layers' own initialisation skipped", () => {
  const m = new models.GPT(
    { vocabSize: 40, blockSize: 8, nLayer: 2, nHead: 2, nEmbd: 16, dropout: 0, positions: 'learned' },
    { init: false },
  );
  for (const [name, p] of m.namedParameters())
    assert.ok(
      [...p.dataSync()].every((v) => v === (/ln_\w*\.weight$/.test(name) ? 1 : 0)),
      `${name} is as allocated`,
    );
});

test('a parameter keeps −0 and any nonzero value when it moves to long-lived storage; new storage reads zero', () => {
  const w = Float32Array.of(-0, 0, 0, 0, 0, 0, 0, -0);
  // A module whose parameter starts as −0s and zeros (through registerParameter's move).
  class Holder extends nn.Module {
    readonly p: Tensor;
    constructor(values: Float32Array) {
      super();
      this.p = this.registerParameter('p', rand(values.length).write(values));
    }
  }
  const h = new Holder(w);
  assert.deepEqual(bits(h.p), [...new Uint32Array(w.buffer)], '−0 kept');
  assert.deepEqual([...new Holder(new Float32Array(6)).p.dataSync()], [0, 0, 0, 0, 0, 0]);
  if (getBackend().name === 'wasm' && memoryShared) {
    // A block freed with values in it, handed out again zero-filled: what "new storage is zero" relies on.
    const a = alloc(1000);
    a.fill(7);
    free(a);
    const b = alloc(1000);
    assert.ok(
      b.every((v) => v === 0),
      'a reused block is zero-filled',
    );
    free(b);
  }
});

test('wasm: a q4 GPT built to be loaded holds its quantized weights in memory, not the float32 shell', () => {
  // In a child process, so its resident memory is this model's alone: a GPT of 29M parameters (116 MB in
  // float32, 17 MB in q4 with int8 tables) built with { init: false } and quantized.
  const script = `
    import { readFileSync } from 'node:fs';
    import { models, setBackend } from './src/index.ts';
    setBackend('wasm');
    const rss = () => Number(/VmRSS:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
    const before = rss();
    const cfg = { vocabSize: 32000, blockSize: 64, nLayer: 4, nHead: 8, nEmbd: 512, dropout: 0, positions: 'learned' };
    const m = new models.GPT(cfg, { init: false }).quantize({ dtype: 'q4' });
    console.log(JSON.stringify({ mb: rss() - before, params: m.numParameters() }));
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    cwd: new URL('../..', import.meta.url).pathname,
  });
  assert.equal(r.status, 0, r.stderr);
  const { mb } = JSON.parse(r.stdout.trim().split('\n').pop()!) as { mb: number };
  // The float32 weights are 116 MB: before this change the process grew by more than that; now by the q4
  // weights (~17 MB) and the quantizer's passing arrays.
  assert.ok(mb < 60, `the q4 model made ${mb.toFixed(0)} MB resident (the float32 weights are 116 MB)`);
});
