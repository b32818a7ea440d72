/**
 * qkv on WebGPU in a browser page (issue 49, point 2): headless Chromium with WebGPU on (without a GPU its
 * adapter is SwiftShader, a CPU implementation of Vulkan) opens bench/web/check.html, built by Vite and served
 * from http://127.0.0.1 with the shipped models, and runs the same work on qkv's webgpu and wasm backends in
 * that page:
 *   1. a small Seq2Seq (seed 11, dropout 0.1) trained three Adam steps: losses, first gradients and parameters
 *      on webgpu against wasm, with the bounds and reasoning of test/webgpu/model.test.ts (the same steps in
 *      Node): the GPU computes in float32 with tree reductions and WGSL's exp/log, the CPU backends accumulate
 *      some sums differently; losses and gradients to 1e-4 relative (1e-6 absolute), parameters after three
 *      Adam steps to 2e-5 absolute (lr 0.01: a step moves a weight by at most ~lr, and the float32 differences
 *      in its gradient move the ratio m̂/√v̂ by about 1e-3 of that). Except where the exact gradient is zero:
 *      the key part of every in_proj_bias (rows E..2E) adds the same q·b_k to every score of a row, which the
 *      softmax ignores, so on both backends its gradient is rounding noise (|g| < 1e-6, checked), and Adam's
 *      m̂/(√v̂ + ε) turns noise of either sign into a step of up to lr (|m̂|/√v̂ ≤ 1.004 over three steps, by
 *      Cauchy–Schwarz on the moments' weights): there the two may move apart by up to 2·3·lr·1.01 (seen:
 *      1e-2 on SwiftShader, and as much between wasm and js in Node);
 *   2. a beam-4 translation of two sentences with the shipped EN→DE folder (served to the page, opened through
 *      urlSource by pipeline('translation', ..., { device })): webgpu's strings equal wasm's, and both equal
 *      the pipeline's in Node.
 * Runs once (a *.once file: the page chooses its own backends). Skips without Chromium on a developer machine;
 * fails under CI=true.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { ensureBuild, openPage, ROOT, startServer } from '../../bench/web/serve.ts';
import type { TrainOutcome } from '../../bench/web/page-check.ts';
import { pipeline } from '../../src/index.ts';
import { assertClose } from '../helpers/assert.ts';
import { CHROMIUM, requireTool, toolSkip } from '../helpers/tools.ts';

const skip = toolSkip('chromium');
let browser: Browser | undefined;
let page: Page;
let close: (() => void) | undefined;
let errors: string[] = [];

interface Check {
  train(backend: string): Promise<TrainOutcome>;
  translate(backend: string, lines: string[]): Promise<string[]>;
}

before(async () => {
  if (skip) return;
  requireTool('chromium');
  ensureBuild();
  const { server, url } = await startServer();
  close = () => server.close();
  ({ browser, page, errors } = await openPage(
    `${url}check.html`,
    (l) => l.startsWith('[check]') && console.log(l),
    CHROMIUM,
  ));
  assert.equal(
    await page.getAttribute('body', 'data-ready'),
    'ok',
    `the page did not start: ${await page.getAttribute('body', 'data-error')}`,
  );
});

after(async () => {
  await browser?.close();
  close?.();
});

test('in the page, a Seq2Seq trains three Adam steps on webgpu as on wasm', { skip }, async () => {
  const run = (backend: string) =>
    page.evaluate((b) => (window as unknown as { qkvCheck: Check }).qkvCheck.train(b), backend);
  const ref = await run('wasm');
  const got = await run('webgpu');
  assert.equal(ref.backend, 'wasm');
  assert.equal(got.backend, 'webgpu');
  assert.equal(got.device, 'webgpu', 'the parameters live on the GPU');
  assert.equal(ref.device, 'cpu');
  assert.equal(got.losses.length, 3);
  assert.ok(got.losses.every(Number.isFinite) && new Set(got.losses).size === 3, `three finite losses: ${got.losses}`);
  assertClose(got.losses, ref.losses, 'losses', 1e-6, 1e-4);
  assert.equal(got.grads.length, ref.grads.length);
  got.grads.forEach((g, i) => assertClose(g, ref.grads[i]!, `first gradient of parameter ${i}`, 1e-6, 1e-4));
  assert.deepEqual(got.names, ref.names);
  let keyBiases = 0;
  got.params.forEach((p, i) => {
    const name = `parameter ${i} (${got.names[i]}) after 3 steps`;
    if (!got.names[i]!.endsWith('in_proj_bias')) return assertClose(p, ref.params[i]!, name, 2e-5, 0);
    keyBiases++;
    const E = p.length / 3;
    const key = (a: number[]) => a.slice(E, 2 * E);
    const rest = (a: number[]) => [...a.slice(0, E), ...a.slice(2 * E)];
    assertClose(rest(p), rest(ref.params[i]!), `${name}, query and value parts`, 2e-5, 0);
    for (const g of [got.grads[i]!, ref.grads[i]!])
      assert.ok(
        key(g).every((x) => Math.abs(x) < 1e-6),
        `${got.names[i]}: the key part's gradient is rounding noise: ${key(g)}`,
      );
    assertClose(key(p), key(ref.params[i]!), `${name}, key part (zero gradient)`, 2 * 3 * 0.01 * 1.01, 0);
  });
  assert.equal(keyBiases, 3, 'three attention layers: encoder self, decoder self and cross');
  assert.deepEqual(errors, []);
});

test('in the page, the shipped EN→DE model translates (beam 4) on webgpu as on wasm, and as in Node', {
  skip,
}, async () => {
  const lines = ['A man is riding a bike down the street.', 'Two dogs play in the snow.'];
  const run = (backend: string) =>
    page.evaluate(([b, l]) => (window as unknown as { qkvCheck: Check }).qkvCheck.translate(b, l), [
      backend,
      lines,
    ] as const);
  const onWasm = await run('wasm');
  const onGpu = await run('webgpu');
  const inNode = await (await pipeline('translation', `${ROOT}models/multi30k-en-de`))(lines, { beam: 4 });
  assert.equal(onGpu.length, 2);
  assert.ok(
    onGpu.every((s) => s.length > 5),
    `translations: ${JSON.stringify(onGpu)}`,
  );
  assert.deepEqual(onGpu, onWasm, 'webgpu against wasm in the page');
  assert.deepEqual(onWasm, inNode, 'the page (wasm) against Node');
  assert.deepEqual(errors, []);
});
