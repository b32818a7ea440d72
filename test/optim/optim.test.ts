import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { io, optim, Tensor } from '../../src/index.ts';
import { assertClose } from '../helpers/assert.ts';

const dir = new URL('../fixtures/optim/', import.meta.url);

for (const file of readdirSync(dir).filter((f) => f.endsWith('.safetensors'))) {
  test(`torch.optim parity over 5 steps: ${file}`, () => {
    const { tensors, metadata } = io.readSafetensors(readFileSync(new URL(file, dir)));
    const cfg = JSON.parse(metadata.config);
    const names = ['w', 'b'];
    const params = names.map((n) => tensors[`init.${n}`].clone().requiresGrad_());
    const Opt = cfg.optimizer === 'AdamW' ? optim.AdamW : optim.Adam;
    const opt = new Opt(params, { lr: cfg.lr, betas: cfg.betas, eps: cfg.eps, weightDecay: cfg.weightDecay });
    for (let step = 1; step <= 5; step++) {
      names.forEach((n, i) => (params[i].grad = tensors[`grad.${step}.${n}`].clone()));
      if (cfg.clip)
        assertClose([optim.clipGradNorm(params, cfg.clip)], tensors[`norm.${step}`].dataSync(), `norm at step ${step}`);
      opt.step();
      names.forEach((n, i) =>
        assertClose(params[i], tensors[`param.${step}.${n}`], `${n} after step ${step}`, 1e-6, 1e-5),
      );
    }
  });
}

test("the paper's schedule: linear warmup, peak at warmup, inverse-sqrt decay", () => {
  const d = 512,
    w = 4000;
  assert.equal(optim.noamLr(1, d, w), d ** -0.5 * w ** -1.5);
  assert.equal(optim.noamLr(w, d, w), d ** -0.5 * w ** -0.5);
  assertClose([optim.noamLr(2 * w, d, w)], [d ** -0.5 * (2 * w) ** -0.5], 'decay');
  assert.ok(optim.noamLr(w, d, w) > optim.noamLr(w - 1, d, w) && optim.noamLr(w, d, w) > optim.noamLr(w + 1, d, w));
  assert.throws(() => optim.noamLr(0, d, w), /step counts from 1, got 0/);
});

test('optimizer argument errors', () => {
  const p = new Tensor(new Float32Array(2), [2]).requiresGrad_();
  assert.throws(() => new optim.Adam([p], { betas: [0.9, 1] }), /betas must be in \[0, 1\), got \[0.9, 1\]/);
  assert.throws(() => new optim.Adam([new Tensor(new Float32Array(2), [2])]), /parameter 0 does not require grad/);
});
