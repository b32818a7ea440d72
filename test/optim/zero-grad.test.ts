/**
 * zeroGrad(setToNone) on optimizers and modules, as torch's zero_grad(set_to_none): by default
 * (torch 1.13's) gradients are filled with 0 and kept, so a parameter keeps one gradient block for
 * a whole run; with true they are dropped (null). Under the wasm backend those blocks,
 * and Adam's moments, are long-lived wasm memory: they survive the step's memoryScope, backward
 * accumulates into them and Adam updates in place, in wasm.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, getBackend, manualSeed, memoryScope, nn, optim, tensor, type Tensor } from '../../src/index.ts';
import { routeCounts } from '../../src/backend/wasm/route.ts';
import { isWasmView } from '../../src/backend/wasm/memory.ts';
import { setScopePoisoning } from '../../src/tensor/storage.ts';
import { assertClose } from '../helpers/assert.ts';

class Tiny extends nn.Module {
  readonly emb = new nn.Embedding(13, 7, { paddingIdx: 0 });
  readonly fc1 = new nn.Linear(7, 9);
  readonly fc2 = new nn.Linear(9, 13);
  constructor() {
    super();
    this.registerModule('emb', this.emb);
    this.registerModule('fc1', this.fc1);
    this.registerModule('fc2', this.fc2);
  }
  loss(ids: Int32Array): Tensor {
    const x = this.emb.forward(tensor(ids, [3, 5]));
    const logits = this.fc2.forward(F.gelu(this.fc1.forward(x)));
    return F.crossEntropy(
      logits.reshape(15, 13),
      tensor(
        ids.map((i) => (i + 1) % 13),
        [15],
      ),
    );
  }
}

const ids = Int32Array.from({ length: 15 }, (_, i) => (i * 5) % 13);

function grads(m: nn.Module): (Float32Array | null)[] {
  return m.parameters().map((p) => (p.grad ? p.grad.dataSync<Float32Array>().slice() : null));
}

test('zeroGrad(true) drops gradients; zeroGrad() zeroes them in place and keeps the same blocks', () => {
  manualSeed(3);
  const m = new Tiny();
  const opt = new optim.Adam(m.parameters());
  m.loss(ids).backward();
  const blocks = m.parameters().map((p) => p.grad!.dataSync());
  assert.ok(
    blocks.every((g) => g.some((v) => v !== 0)),
    'every parameter got a gradient',
  );
  opt.zeroGrad();
  m.parameters().forEach((p, i) => {
    assert.ok(p.grad !== null, 'kept');
    assert.equal(p.grad.dataSync(), blocks[i], 'the same block');
    assert.ok(
      p.grad.dataSync().every((v) => v === 0),
      'zeroed',
    );
  });
  m.loss(ids).backward();
  m.zeroGrad(); // the module's twin
  assert.ok(
    m.parameters().every((p, i) => p.grad!.dataSync() === blocks[i] && p.grad!.dataSync().every((v) => v === 0)),
  );
  m.zeroGrad(true);
  assert.ok(
    m.parameters().every((p) => p.grad === null),
    'module zeroGrad(true) sets to none',
  );
  m.loss(ids).backward();
  opt.zeroGrad(true);
  assert.ok(
    m.parameters().every((p) => p.grad === null),
    'optimizer zeroGrad(true) sets to none',
  );
  // zeroGrad() with no gradients yet leaves them null.
  opt.zeroGrad();
  assert.ok(m.parameters().every((p) => p.grad === null));
});

test('after zeroGrad(), two backward calls accumulate, exactly as with fresh gradients', () => {
  manualSeed(4);
  const m = new Tiny();
  m.loss(ids).backward();
  const once = grads(m);
  m.zeroGrad();
  m.loss(ids).backward();
  grads(m).forEach((g, i) => assertClose(g!, once[i]!, `param ${i}: one backward after zeroGrad()`, 0, 0));
  m.loss(ids).backward();
  grads(m).forEach((g, i) =>
    assertClose(
      g!,
      once[i]!.map((v) => 2 * v),
      `param ${i}: two backward calls`,
      1e-7,
      1e-6,
    ),
  );
  m.zeroGrad(true);
  m.loss(ids).backward();
  m.loss(ids).backward();
  grads(m).forEach((g, i) =>
    assertClose(
      g!,
      once[i]!.map((v) => 2 * v),
      `param ${i}: two backward calls from none`,
      1e-7,
      1e-6,
    ),
  );
});

test('training in memoryScope with zeroGrad() equals training with zeroGrad(true); gradients and Adam state outlive the scope', () => {
  setScopePoisoning(true);
  try {
    const run = (setToNone: boolean) => {
      manualSeed(5);
      const m = new Tiny();
      const opt = new optim.AdamW(m.parameters(), { lr: 0.05 });
      const losses: number[] = [];
      let wasmAccumulations = 0;
      for (let step = 0; step < 6; step++) {
        const before = routeCounts.wasm;
        losses.push(
          memoryScope(() => {
            const loss = m.loss(ids);
            opt.zeroGrad(setToNone);
            loss.backward();
            opt.step();
            return loss.item();
          }),
        );
        wasmAccumulations += routeCounts.wasm - before;
        // After the scope: gradients are intact (a released scoped block would be NaN here).
        for (const p of m.parameters())
          assert.ok(p.grad!.dataSync().every(Number.isFinite), 'gradient outlives the step');
      }
      return { m, opt, losses, wasmAccumulations };
    };
    const a = run(true);
    const b = run(false);
    assertClose(b.losses, a.losses, 'losses', 0, 0);
    b.m.parameters().forEach((p, i) => assertClose(p, a.m.parameters()[i]!, `param ${i}`, 0, 0));
    assert.ok(b.losses[5]! < b.losses[0]!, `loss falls: ${b.losses}`);
    if (getBackend().name === 'wasm') {
      // Parameters, their gradients and Adam's moments are wasm blocks, so Adam, the embedding
      // gradient, bias adds and gradient accumulation ran in wasm.
      for (const [i, p] of b.m.parameters().entries()) {
        assert.ok(
          isWasmView(p.dataSync()) && isWasmView(p.grad!.dataSync()),
          `param ${i} and its gradient in wasm memory`,
        );
        assert.ok(
          isWasmView(b.opt.state.m[i]!.dataSync()) && isWasmView(b.opt.state.v[i]!.dataSync()),
          `Adam state ${i} in wasm memory`,
        );
      }
      assert.ok(b.wasmAccumulations > 0, 'cheap kernels ran in wasm');
    }
  } finally {
    setScopePoisoning(false);
  }
});
