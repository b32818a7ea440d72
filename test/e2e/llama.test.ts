/**
 * A Llama-family folder in the explorer (issue 58, point 4; Chromium, playwright-core): the tiny grouped-query
 * Llama transformers wrote (scripts/fixtures/make_hf_llama.py) served by `qkv explore --model`, in the Generate
 * view: it generates as pipeline('text-generation') does (its BOS, its generation_config.json, greedy), every
 * layer × head of the heatmap equals Node's, each head is named with the KV head its group shares, the rotary
 * angles are drawn over the tokens, and the neuron view's softmax is the heatmap's row in a head of the second
 * group. The Flow view of the same folder lists the stages of Node's flow in order (RMSNorm, the turned queries and
 * keys, grouped-query attention, the SwiGLU MLP) and shows a head's keys and values as its group's KV head's, shared
 * with the other head of the group, with Node's numbers. Runs once per backend pass (QKV_BACKEND=wasm opens
 * ?backend=wasm, else js).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { dirSource } from '../../src/folder/node.ts';
import { ofKind, openFolder } from '../../src/folder/open.ts';
import { pipeline } from '../../src/pipelines/index.ts';
import { describeFolder, type ExploreServer } from '../../src/server/static.ts';
import { flowSubject, textFlow } from '../../src/viz/flow.ts';
import { generateWithAttention } from '../../src/viz/gpt-attention.ts';
import { toolSkip } from '../helpers/tools.ts';
import { BACKEND, closeAll, collectErrors, launchChromium, serveExplorer } from './chromium.ts';

const DIR = join(fileURLToPath(new URL('../fixtures/hf-llama/', import.meta.url)), 'llama-gqa-tied');
const PROMPT = 'A man in a blue shirt';
const skip = toolSkip('chromium');

let browser: Browser;
let server: ExploreServer;

before(async () => {
  if (skip) return;
  server = await serveExplorer({ models: [describeFolder(DIR, 'llama-gqa-tied')] });
  browser = await launchChromium();
});

after(() => closeAll(browser, server));

test('a served Llama folder: generated as the pipeline, every head as Node, KV groups named, rotary angles drawn', {
  skip,
}, async () => {
  const errors: string[] = [];
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  collectErrors(page, errors);
  await page.goto(`${server.url}?backend=${BACKEND}&model=llama-gqa-tied#generate`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
  await page.waitForFunction(
    () => document.querySelector('#view-generate')?.getAttribute('data-model') === 'llama-gqa-tied',
  );
  const info = (await page.getByTestId('model-info').textContent()) ?? '';
  assert.match(
    info,
    /2 layers, 4 heads, .*Rotary positions\. Grouped-query attention: 4 query heads, 2 key\/value heads; /,
  );
  assert.match(info, /heads 1–2 share KV head 1, heads 3–4 share KV head 2\./);
  // The folder's settings: greedy, 20 new tokens, stopping at its eos_token_id.
  assert.equal(await page.locator('#sampling').inputValue(), 'greedy');
  assert.equal(await page.getByTestId('max-tokens').inputValue(), '20');
  await page.getByTestId('prompt').fill(PROMPT);
  await page.getByTestId('generate').click();
  await page.waitForFunction(
    () => document.querySelector('#view-generate')?.getAttribute('data-generated') === '1',
    undefined,
    {
      timeout: 60000,
    },
  );
  const gen = await pipeline('text-generation', DIR);
  assert.equal(await page.getByTestId('continuation').textContent(), await gen(PROMPT));

  const lm = ofKind(await openFolder(dirSource(DIR), { ensemble: false }), 'hf-gpt2');
  const ref = generateWithAttention(lm, PROMPT, { maxTokens: 20 });
  assert.equal(ref.tokens[0], '<|begin_of_text|>', "the tokenizer's BOS, as the pipeline feeds it");
  const T = ref.ids.length;
  assert.deepEqual(await page.locator('#gpt-head option').allTextContents(), [
    'mean of heads',
    'head 1 · KV 1',
    'head 2 · KV 1',
    'head 3 · KV 2',
    'head 4 · KV 2',
  ]);
  for (let l = 0; l < 2; l++)
    for (let hd = 0; hd < 4; hd++) {
      await page.selectOption('#gpt-layer', String(l));
      await page.selectOption('#gpt-head', String(hd));
      const values = await page.evaluate(() => {
        const svg = document.querySelector('[data-testid="fig-gpt-heatmap"] svg')!;
        const n = Number(svg.getAttribute('data-rows'));
        const out = Array.from({ length: n }, () => new Array<number>(n).fill(0));
        for (const c of Array.from(svg.querySelectorAll('rect.cell'))) {
          const m = /: (-?[\d.]+)( \(masked\))?$/.exec(c.querySelector('title')?.textContent ?? '');
          out[Number(c.getAttribute('data-row'))][Number(c.getAttribute('data-col'))] = m ? Number(m[1]) : 0;
        }
        return out;
      });
      assert.equal(values.length, T);
      values.forEach((row, i) =>
        row.forEach((v, j) =>
          assert.ok(Math.abs(v - ref.attention[l][hd][i][j]) <= 5e-5, `layer ${l + 1} head ${hd + 1} (${i}, ${j})`),
        ),
      );
    }
  // The rotary angles over the tokens: a row per position.
  assert.equal(await page.locator('[data-testid="fig-gpt-rotary"] svg').getAttribute('data-rows'), String(T));
  // The neuron view of layer 2, head 4 (KV head 2) at the last position: the heatmap's row.
  await page.selectOption('#neuron-layer', '1');
  await page.selectOption('#neuron-head', '3');
  await page.waitForFunction(() => {
    const o = document.querySelector('#neuron-out');
    return o?.getAttribute('data-layer') === '1' && o.getAttribute('data-head') === '3';
  });
  const weights = await page.evaluate(() =>
    Array.from(document.querySelectorAll('#neuron-out tr[data-key]'), (r) => Number(r.getAttribute('data-weight'))),
  );
  weights.forEach((w, j) => assert.ok(Math.abs(w - ref.attention[1][3][T - 1][j]) < 1e-5, `neuron key ${j}`));
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("the Flow view of the Llama folder: the stages of Node's flow, a KV head shared by its group", {
  skip,
}, async () => {
  const errors: string[] = [];
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
  collectErrors(page, errors);
  await page.goto(`${server.url}?backend=${BACKEND}#flow`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
  await page.getByTestId('flow-text').fill(PROMPT);
  await page.getByTestId('flow-run').click();
  await page.waitForFunction(
    () => Number(document.querySelector('#view-flow')?.getAttribute('data-flowed') ?? 0) >= 1,
    {
      timeout: 60000,
    },
  );
  // The first run (on the example text) may have drawn first: wait for the prompt's.
  const node = textFlow(flowSubject(await openFolder(dirSource(DIR), { ensemble: false })), PROMPT);
  await page.waitForFunction(
    (n) =>
      document.querySelectorAll('#flow-lanes button[data-stage]').length === n &&
      (document.querySelector('#flow-summary')?.textContent ?? '').includes('A man in a blue shirt'),
    node.flow.stages.length,
    { timeout: 60000 },
  );
  const ids = await page
    .locator('#flow-lanes button[data-stage]')
    .evaluateAll((bs) => bs.map((b) => b.getAttribute('data-stage')!));
  assert.deepEqual(
    ids,
    node.flow.stages.map((s) => s.id),
  );
  assert.ok(ids.includes('h.0.q') && ids.includes('h.1.mlp.gate'), 'the turned queries and the SwiGLU gate');
  await page.locator('#flow-lanes button[data-stage="h.1.attn"]').click();
  await page.waitForFunction(() => document.querySelector('#flow-detail')?.getAttribute('data-stage') === 'h.1.attn');
  assert.match(
    (await page.getByTestId('flow-kv-sharing').textContent()) ?? '',
    /4 query heads, 2 key\/value heads; heads 1–2 share KV head 1, heads 3–4 share KV head 2/,
  );
  assert.deepEqual(await page.locator('#flow-head-select option').allTextContents(), [
    'mean of heads',
    'head 1 · KV 1',
    'head 2 · KV 1',
    'head 3 · KV 2',
    'head 4 · KV 2',
  ]);
  const stage = node.flow.stages.find((s) => s.id === 'h.1.attn')!;
  for (const hd of [2, 3]) {
    await page.selectOption('#flow-head-select', String(hd));
    const keys = page.locator('#flow-detail [data-testid="flow-head-keys"]');
    assert.equal(await keys.locator('caption').textContent(), 'KV head 2, shared by heads 3–4: keys and values');
    const norms = await keys.evaluate((t) =>
      Array.from(t.querySelectorAll('tr[data-token]')).map((tr) => [
        Number(tr.querySelector('[data-key="k.norm"]')!.getAttribute('data-value')),
        Number(tr.querySelector('[data-key="v.norm"]')!.getAttribute('data-value')),
      ]),
    );
    const h = stage.heads![hd];
    const want = h.k.map((r, i) => [r.norm, h.v[i].norm]);
    norms.forEach((r, i) =>
      r.forEach((v, j) => assert.ok(Math.abs(v - want[i][j]) <= 1e-5 * (1 + want[i][j]), `head ${hd + 1} key ${i}`)),
    );
  }
  assert.deepEqual(errors, []);
  await page.context().close();
});
