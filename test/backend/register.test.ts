/**
 * Backend selection and memory. wasm is the default where it loads; QKV_BACKEND picks one (the
 * suite runs under each, see scripts/test.mjs); setBackend switches. Training on the wasm backend
 * keeps its WebAssembly memory flat: each step runs in a memoryScope, so its activations live in
 * wasm memory and are freed when the step ends (released blocks are filled with NaN here, so a
 * tensor used after its scope would show in the loss), and after the first steps no step grows
 * the memory, however many steps run. Gradients and Adam's moments are long-lived wasm blocks
 * (zeroGrad(false) keeps each gradient block from step to step), updated in place.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  backendNames,
  F,
  getBackend,
  Generator,
  manualSeed,
  memoryScope,
  models,
  optim,
  setBackend,
  tensor,
} from '../../src/index.ts';
import { setScopePoisoning } from '../../src/tensor/storage.ts';
import { bytesInUse, memory } from '../../src/backend/wasm/memory.ts';
import { wasmLoadError } from '../../src/backend/wasm/index.ts';

test('backends: js always; wasm registered here; default wasm unless QKV_BACKEND says otherwise', () => {
  assert.ok(backendNames().includes('js'));
  assert.ok(backendNames().includes('wasm'), `wasm did not load: ${wasmLoadError()}`);
  assert.equal(getBackend().name, process.env.QKV_BACKEND ?? 'wasm');
  const before = getBackend().name;
  setBackend('js');
  assert.equal(getBackend().name, 'js');
  setBackend(before);
  assert.throws(() => setBackend('cuda'), /unknown backend 'cuda', registered: js, wasm, webgpu/);
});

test('2,000 training steps of a small Seq2Seq (attention, layer norm, gelu, cross-entropy, Adam) on wasm: wasm memory flat, loss falls', () => {
  const prev = getBackend().name;
  setBackend('wasm');
  setScopePoisoning(true);
  try {
    manualSeed(11);
    const cfg = {
      ...models.MULTI30K_SMALL,
      vocabSize: 16,
      dModel: 16,
      nhead: 2,
      numEncoderLayers: 1,
      numDecoderLayers: 1,
      dimFeedforward: 32,
      dropout: 0,
      activation: 'gelu' as const,
      maxLen: 16,
    };
    const m = new models.Seq2Seq(cfg);
    const opt = new optim.Adam(m.parameters(), { lr: 0.01, betas: [0.9, 0.98], eps: 1e-9 });
    const gen = new Generator(2);
    const B = 4,
      T = 6;
    const ids = (n: number) => Int32Array.from({ length: n }, () => 4 + gen.int(12));
    let bytes = 0,
      pages = 0,
      first = 0,
      last = 0,
      during = 0;
    for (let step = 0; step < 2000; step++) {
      const src = ids(B * T);
      // Variable lengths with padding (id 0) exercise the key padding masks and ignored targets.
      for (let b = 0; b < B; b++) for (let t = T - ((step + b) % 3); t < T; t++) src[b * T + t] = 0;
      const l = memoryScope(() => {
        const loss = F.crossEntropy(m.forward(tensor(src, [B, T]), tensor(src, [B, T])), tensor(src, [B, T]), {
          ignoreIndex: 0,
          labelSmoothing: 0.1,
        });
        // As the trainers: one long-lived gradient block per parameter, zeroed each step.
        opt.zeroGrad(false);
        loss.backward();
        opt.step();
        if (step === 10) during = bytesInUse();
        return loss.item();
      });
      assert.ok(Number.isFinite(l), `step ${step}: loss ${l}`);
      if (step < 20) first += l / 20;
      if (step >= 1980) last += l / 20;
      if (step === 10) {
        bytes = bytesInUse();
        pages = memory.buffer.byteLength;
      }
    }
    assert.equal(bytesInUse(), bytes, 'wasm bytes in use after step 10 and after step 2000');
    // With wasm as the default backend, the step's activations were in wasm memory (under
    // QKV_BACKEND=js the allocator is the plain one and the scope only runs the step).
    if ((process.env.QKV_BACKEND ?? 'wasm') === 'wasm')
      assert.ok(during > bytes + 10_000, `bytes in use during a step ${during}, after ${bytes}`);
    assert.equal(memory.buffer.byteLength, pages, 'wasm memory size');
    assert.ok(last < 0.8 * first, `loss ${first.toFixed(3)} -> ${last.toFixed(3)}`);
  } finally {
    setScopePoisoning(false);
    setBackend(prev);
  }
});

test('a bad QKV_BACKEND or QKV_THREADS is one line from the CLI, before any command runs', async () => {
  const { spawnSync } = await import('node:child_process');
  const cases: [Record<string, string>, RegExp][] = [
    [{ QKV_BACKEND: 'gpu' }, /^qkv: QKV_BACKEND=gpu: unknown backend \(expected one of js, wasm, webgpu\)\n$/],
    [
      { QKV_THREADS: 'abc' },
      /^qkv: QKV_THREADS=abc: expected a whole number of threads >= 1 \(at most 8 are used\)\n$/,
    ],
    [{ QKV_THREADS: '0' }, /^qkv: QKV_THREADS=0: expected a whole number of threads >= 1/],
  ];
  for (const [env, want] of cases) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'info', '--preset', 'paper-base'], {
      env: { ...process.env, QKV_BACKEND: '', QKV_THREADS: '', ...env },
      encoding: 'utf8',
    });
    assert.equal(r.status, 1, `${JSON.stringify(env)}: exit status`);
    assert.match(r.stderr, want, JSON.stringify(env));
    assert.equal(r.stdout, '', `${JSON.stringify(env)}: nothing runs`);
  }
});
