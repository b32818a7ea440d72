/**
 * BERT-family folders in the explorer (issue 57, point 5; Chromium, playwright-core): the tiny masked-LM folders
 * transformers wrote (scripts/fixtures/make_hf_encoders.py) served by `qkv explore --model` and picked in the
 * page's Generate view, and in the browser:
 *  - every layer × head of the heatmap equals Node's encoderAttentionAsync (the library's, which
 *    test/viz/encoder-attention.test.ts holds to transformers' output_attentions), padding included;
 *  - [CLS], [SEP], <s>, </s>, the mask and padding are marked as what they are;
 *  - fill-mask's top tokens and scores are pipeline('fill-mask')'s (and transformers'), and the mask's attention
 *    (a row per layer × head) is the heatmaps' mask row;
 *  - the neuron view's softmax is the heatmap's row; the model view has every layer × head.
 * Runs once per backend pass (QKV_BACKEND=wasm opens ?backend=wasm, else js).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { dirSource } from '../../src/folder/node.ts';
import { ofKind, openFolder } from '../../src/folder/open.ts';
import { pipeline } from '../../src/pipelines/index.ts';
import { describeFolder, type ExploreServer } from '../../src/server/static.ts';
import { encoderAttentionAsync } from '../../src/viz/encoder-attention.ts';
import { flowSubject, textFlowAsync } from '../../src/viz/flow.ts';
import { toolSkip } from '../helpers/tools.ts';
import { BACKEND, closeAll, collectErrors, launchChromium, serveExplorer } from './chromium.ts';

const FIX = fileURLToPath(new URL('../fixtures/hf-encoders/', import.meta.url));
const skip = toolSkip('chromium');
const TEXT = 'A man in a blue shirt.';
const PAD = 14;

let browser: Browser;
let server: ExploreServer;
const errors: string[] = [];

before(async () => {
  if (skip) return;
  server = await serveExplorer({
    models: [
      describeFolder(join(FIX, 'bert-mlm'), 'bert-mlm'),
      describeFolder(join(FIX, 'roberta-mlm'), 'roberta-mlm'),
    ],
  });
  browser = await launchChromium();
});

after(() => closeAll(browser, server));

const opened = (name: string) =>
  openFolder(dirSource(join(FIX, name)), { ensemble: false }).then((o) => ofKind(o, 'hf-encoder'));

/** The page with `model` open in the Generate view. */
async function open(model: string): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  collectErrors(page, errors);
  await page.goto(`${server.url}?backend=${BACKEND}&model=${model}#generate`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
  await page.waitForFunction((m) => document.querySelector('#view-generate')?.getAttribute('data-model') === m, model, {
    timeout: 60000,
  });
  return page;
}

/** Waits until the view's `data-<what>` count reaches n. */
const counted = (page: Page, what: string, n: number) =>
  page.waitForFunction(
    ([w, k]) => document.querySelector<HTMLElement>('#view-generate')?.dataset[w as string] === String(k),
    [what, n] as const,
    { timeout: 60000 },
  );

/** Every cell of a heatmap figure, from its cells' titles (4 decimals). */
function readHeatmap(p: Page, figure: string): Promise<{ rows: number; cols: number; values: number[][] }> {
  return p.evaluate((fig) => {
    const svg = document.querySelector(`[data-testid="fig-${fig}"] svg`)!;
    const rows = Number(svg.getAttribute('data-rows'));
    const cols = Number(svg.getAttribute('data-cols'));
    const values = Array.from({ length: rows }, () => new Array<number>(cols).fill(Number.NaN));
    for (const c of Array.from(svg.querySelectorAll('rect.cell'))) {
      const m = /: (-?[\d.]+)( \(masked\))?$/.exec(c.querySelector('title')?.textContent ?? '');
      values[Number(c.getAttribute('data-row'))][Number(c.getAttribute('data-col'))] = m ? Number(m[1]) : Number.NaN;
    }
    return { rows, cols, values };
  }, figure);
}

const chips = (p: Page) =>
  p.evaluate(() =>
    Array.from(document.querySelectorAll('#enc-tokens .chip'), (c) => ({
      text: c.textContent ?? '',
      role: c.getAttribute('data-role'),
      mask: c.classList.contains('mask'),
    })),
  );

function close(a: number[][], b: number[][], tol: number, what: string): void {
  assert.equal(a.length, b.length, `${what}: rows`);
  a.forEach((row, i) =>
    row.forEach((v, j) => assert.ok(Math.abs(v - b[i][j]) <= tol, `${what} (${i}, ${j}): ${v} vs ${b[i][j]}`)),
  );
}

test('a served BERT folder: every head of every layer as Node computes it, special tokens and padding marked', {
  skip,
}, async () => {
  const page = await open('bert-mlm');
  assert.match(
    (await page.getByTestId('model-info').textContent()) ?? '',
    /^Model bert-mlm: Hugging Face bert, an encoder .*2 layers, 4 heads, 16 wide, at most 40 tokens, vocabulary 400/,
  );
  assert.equal(await page.locator('#generate-form').isVisible(), false, 'an encoder generates nothing');
  await page.getByTestId('enc-text').fill(TEXT);
  await page.getByTestId('enc-pad').fill(String(PAD));
  await page.getByTestId('encode').click();
  await counted(page, 'encoded', 1);

  const ref = await encoderAttentionAsync(await opened('bert-mlm'), TEXT, { padTo: PAD });
  const shown = await chips(page);
  assert.deepEqual(
    shown.map((c) => [c.text, c.role]),
    ref.tokens.map((t, i) => [t, ref.roles[i]]),
  );
  assert.equal(shown[0].text, '[CLS]');
  assert.equal(shown[0].role, 'special');
  assert.equal(shown[ref.tokens.indexOf('[SEP]')].role, 'special');
  assert.equal(shown.at(-1)!.text, '[PAD]');
  assert.equal(shown.at(-1)!.role, 'padding');

  for (let l = 0; l < 2; l++)
    for (let hd = 0; hd < 4; hd++) {
      await page.selectOption('#enc-layer', String(l));
      await page.selectOption('#enc-head', String(hd));
      const { rows, cols, values } = await readHeatmap(page, 'enc-heatmap');
      assert.deepEqual([rows, cols], [PAD, PAD]);
      close(values, ref.attention[l][hd], 5e-5, `layer ${l + 1} head ${hd + 1}`);
    }
  assert.equal(await page.locator('[data-testid="fig-enc-modelview"] .thumb').count(), 8, 'the model view: 2 × 4');
  assert.equal(await page.locator('[data-testid="fig-enc-headview"] svg').count(), 1);

  // The neuron view of layer 2, head 3, query [CLS]: every key, padding at weight 0, the heatmap's row.
  await page.selectOption('#enc-neuron-layer', '1');
  await page.selectOption('#enc-neuron-head', '2');
  await page.waitForFunction(() => {
    const o = document.querySelector('#enc-neuron-out');
    return o?.getAttribute('data-layer') === '1' && o.getAttribute('data-head') === '2';
  });
  const weights = await page.evaluate(() =>
    Array.from(document.querySelectorAll('#enc-neuron-out tr[data-key]'), (r) => Number(r.getAttribute('data-weight'))),
  );
  assert.equal(weights.length, PAD);
  weights.forEach((w, j) => assert.ok(Math.abs(w - ref.attention[1][2][0][j]) < 1e-6, `neuron key ${j}`));
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("fill-mask in the page: pipeline('fill-mask')'s tokens and scores, and the mask's attention", {
  skip,
}, async () => {
  for (const name of ['bert-mlm', 'roberta-mlm']) {
    const page = await open(name);
    const e = JSON.parse(readFileSync(join(FIX, name, 'expected.json'), 'utf8')) as {
      masked: string[];
      fillMask: { score: number; token: number }[][];
    };
    await page.getByTestId('fill-text').fill(e.masked[0]);
    await page.getByTestId('fill-k').fill('5');
    await page.getByTestId('fill-mask').click();
    await counted(page, 'filled', 1);
    const rows = await page.evaluate(() =>
      Array.from(document.querySelectorAll('#fill-results tbody tr'), (r) => ({
        token: Number(r.getAttribute('data-token')),
        score: Number(r.getAttribute('data-score')),
        text: r.querySelector('.tok')?.textContent ?? '',
      })),
    );
    const unmask = await pipeline('fill-mask', join(FIX, name));
    const want = await unmask(e.masked[0], { topK: 5 });
    assert.deepEqual(
      rows.map((r) => [r.token, r.score, r.text]),
      want.map((r) => [r.token, r.score, r.token_str]),
      `${name}: the pipeline's own numbers`,
    );
    rows.forEach((r, k) => {
      assert.equal(r.token, e.fillMask[0][k].token, `${name}: transformers' token ${k}`);
      assert.ok(Math.abs(r.score - e.fillMask[0][k].score) < 1e-6, `${name}: transformers' score ${k}`);
    });
    const ref = await encoderAttentionAsync(await opened(name), e.masked[0]);
    const shown = await chips(page);
    const at = shown.findIndex((c) => c.mask);
    assert.equal(shown[at].text, name === 'bert-mlm' ? '[MASK]' : '<mask>');
    assert.equal(shown[at].role, 'special');
    if (name === 'roberta-mlm') {
      assert.deepEqual([shown[0].text, shown.at(-1)!.text], ['<s>', '</s>']);
      assert.deepEqual([shown[0].role, shown.at(-1)!.role], ['special', 'special']);
    }
    // What the mask attends to: a row per layer × head, each the mask's row of that head's map.
    const mask = await readHeatmap(page, 'enc-mask-attention');
    assert.deepEqual([mask.rows, mask.cols], [8, ref.ids.length]);
    close(
      mask.values,
      ref.attention.flatMap((layer) => layer.map((head) => head[at])),
      5e-5,
      `${name} mask row`,
    );
    await page.context().close();
  }
  assert.deepEqual(errors, []);
});

test('a BERT-family folder picked in the page opens as a served one does; a bare model says it cannot fill', {
  skip,
}, async () => {
  const page = await open('bert-mlm');
  const before = await page.evaluate(() =>
    Number(document.querySelector<HTMLElement>('#view-generate')!.dataset.opened ?? 0),
  );
  await page.locator('#folder-input').setInputFiles(join(FIX, 'distilbert-mlm'));
  await counted(page, 'opened', before + 1);
  assert.match((await page.getByTestId('folder-status').textContent()) ?? '', /^opened distilbert-mlm/);
  assert.match(
    (await page.getByTestId('model-info').textContent()) ?? '',
    /Hugging Face distilbert from a local folder/,
  );
  await page.getByTestId('encode').click();
  await counted(page, 'encoded', 1);
  const ref = await encoderAttentionAsync(
    await opened('distilbert-mlm'),
    await page.getByTestId('enc-text').inputValue(),
  );
  const { values } = await readHeatmap(page, 'enc-heatmap');
  close(values, ref.attention[0][0], 5e-5, 'distilbert layer 1 head 1');

  await page.locator('#folder-input').setInputFiles(join(FIX, 'bert'));
  await counted(page, 'opened', before + 2);
  assert.equal(await page.getByTestId('fill-mask').isDisabled(), true);
  assert.match((await page.locator('#fill-note').textContent()) ?? '', /no masked-LM head \(head 'none'\)/);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("the Flow view on a served BERT folder: one encoder stack, `qkv flow`'s stages and numbers", {
  skip,
}, async () => {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  collectErrors(page, errors);
  await page.goto(`${server.url}?backend=${BACKEND}#flow`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
  const text = 'a man in a [MASK] shirt.';
  await page.getByTestId('flow-text').fill(text);
  await page.locator('#flow-model').selectOption('bert-mlm');
  await page.getByTestId('flow-run').click();
  await page.waitForFunction(
    () => document.querySelector('#flow-lanes button[data-stage="softmax"]') !== null,
    undefined,
    { timeout: 60000 },
  );
  assert.deepEqual(await page.locator('.flow-lane-box h3').allTextContents(), [
    'Encoder stack (every token sees every other)',
  ]);
  const want = await textFlowAsync(flowSubject(await opened('bert-mlm')), text);
  const ids = await page
    .locator('#flow-lanes button[data-stage]')
    .evaluateAll((bs) => bs.map((b) => b.getAttribute('data-stage')));
  assert.deepEqual(
    ids,
    want.flow.stages.map((s) => s.id),
  );
  // The softmax's top tokens at the mask: the flow's, which are the masked-LM head's.
  await page.locator('#flow-lanes button[data-stage="softmax"]').click();
  await page.waitForFunction(() => document.querySelector('#flow-detail')?.getAttribute('data-stage') === 'softmax');
  const top = await page.locator('#flow-detail [data-testid="flow-top"]').textContent();
  const at = want.flow.axes.tokens!.tokens.indexOf('[MASK]');
  const best = want.flow.stages.find((s) => s.id === 'softmax')!.top![at][0];
  assert.ok(top?.includes(best.token), `the mask's likeliest token ${best.token} is listed`);
  assert.deepEqual(errors, []);
  await page.context().close();
});
