/**
 * `qkv explore --model` on a Hugging Face Marian folder (scripts/fixtures/make_marian.py's opus-mt-shaped
 * fixture), in headless Chromium: the page opens it in the Translate view, translates as Node does with
 * HF's generate() rules (greedy, and beam search), and shows every attention map (encoder, decoder,
 * cross; every layer × head) with the SentencePiece pieces on its axes; a Marian folder picked in the
 * Translate view (holding pytorch_model.bin alone) translates the same.
 * Skips without Chromium on a developer machine; fails under CI=true.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { explore } from '../../src/cli/commands/explore.ts';
import { readMarianDir } from '../../src/folder/node.ts';
import type { ExploreServer } from '../../src/server/static.ts';
import { marianWithAttention } from '../../src/viz/attention-data.ts';
import { toolSkip } from '../helpers/tools.ts';
import { BACKEND, closeAll, launchChromium, translateIn } from './chromium.ts';
import { tempDir } from './tiny-model.ts';
import { ensureWebBuild } from './web-build.ts';

const FIX = fileURLToPath(new URL('../fixtures/marian-tiny/', import.meta.url));
const HERE = fileURLToPath(new URL('.', import.meta.url));
const SENTENCE = 'A little girl in a pink dress is jumping into the water while her father watches.';
const skip = toolSkip('chromium');

let browser: Browser;
let server: ExploreServer;
let page: Page;
const errors: string[] = [];

before(async () => {
  if (skip) return;
  ensureWebBuild();
  server = await explore({ model: [FIX], port: 0, host: '127.0.0.1', log: () => {} });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${server.url}?backend=${BACKEND}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
});

after(() => closeAll(browser, server));

const cells = (fig: string) => page.locator(`[data-testid="fig-${fig}"] rect.cell`).count();

const translate = (n: number) => translateIn(page, SENTENCE, n);

test('a served Marian folder: Translate as Node does, every map with its pieces', { skip }, async () => {
  const marian = readMarianDir(FIX);
  await page.waitForFunction(() => document.querySelector('#view-translate')?.getAttribute('data-model') !== null, {
    timeout: 60000,
  });
  const greedy = marianWithAttention(marian, SENTENCE, { beam: 1 });
  const shown = await translate(1);
  assert.equal(shown, greedy.translation === '' ? '(empty)' : greedy.translation);
  const S = greedy.srcTokens.length;
  const T = greedy.tgtTokens.length;
  assert.equal(await cells('heatmap'), T * S, 'cross-attention: target × source');
  await page.selectOption('#kind', 'encoder');
  assert.equal(await cells('heatmap'), S * S);
  const svg = (await page.locator('[data-testid="fig-heatmap"]').innerHTML()) ?? '';
  for (const piece of greedy.srcTokens.slice(0, 3)) assert.ok(svg.includes(piece), `the piece ${piece} on an axis`);
  await page.selectOption('#kind', 'decoder');
  assert.equal(await cells('heatmap'), T * T);
  assert.equal(await page.locator('[data-testid="fig-modelview"] g.thumb').count(), 2 * 4, '2 layers × 4 heads');
  await page.selectOption('#kind', 'cross');
  await page.screenshot({ path: join(HERE, 'screenshots', 'explorer-marian.png'), fullPage: true });

  const beam = marianWithAttention(marian, SENTENCE, { beam: 4 });
  await page.selectOption('#decoding', 'beam');
  await page.getByTestId('beam').fill('4');
  assert.equal(await translate(2), beam.translation === '' ? '(empty)' : beam.translation);
  assert.equal(await cells('heatmap'), beam.tgtTokens.length * beam.srcTokens.length);
  assert.deepEqual(errors, []);
});

test('a Marian folder picked in Translate (pytorch_model.bin alone) translates as Node does', { skip }, async () => {
  const dir = tempDir('qkv-marian-pick-');
  const picked = join(dir, 'opus-mt-tiny');
  mkdirSync(picked);
  for (const f of readdirSync(FIX)) if (f !== 'model.safetensors') copyFileSync(join(FIX, f), join(picked, f));
  await page.locator('#translate-folder-input').setInputFiles(picked);
  await page.waitForFunction(() => document.querySelector('#view-translate')?.getAttribute('data-opened') === '1', {
    timeout: 60000,
  });
  assert.match((await page.getByTestId('model-info').textContent()) ?? '', /^Model opus-mt-tiny: dModel 16/);
  const ref = marianWithAttention(readMarianDir(FIX), SENTENCE, { beam: 4 });
  const n = Number((await page.locator('#view-translate').getAttribute('data-translated')) ?? 0);
  assert.equal(await translate(n + 1), ref.translation === '' ? '(empty)' : ref.translation);
  assert.equal(await cells('heatmap'), ref.tgtTokens.length * ref.srcTokens.length);
  assert.deepEqual(errors, []);
});
