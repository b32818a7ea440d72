/**
 * `npm start`'s explorer (`qkv explore` without --model) on the folders the repository ships
 * (models/: EN→DE, EN→FR, the GPT), in headless Chromium: the model switcher lists all three;
 * choosing EN→FR translates with the French model exactly as `qkv translate --beam 1` does (the
 * page's greedy decoding; EN→DE with --no-ensemble, as the page runs a folder's own model); the
 * Generate view continues a prompt with the shipped GPT at once, without a folder pick.
 * Skips without Chromium on a developer machine; fails under CI=true. Runs once per backend pass.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { ExploreServer } from '../../src/server/static.ts';
import { readLm } from '../../src/folder/node.ts';
import { generateWithAttention } from '../../src/viz/gpt-attention.ts';
import { toolSkip } from '../helpers/tools.ts';
import { BACKEND, closeAll, collectErrors, launchChromium, ROOT, serveRepository, translateIn } from './chromium.ts';

const SENTENCE = 'A man in a blue shirt is riding a bike.';
const skip = toolSkip('chromium');

let browser: Browser;
let server: ExploreServer;
let page: Page;
const errors: string[] = [];
const logs: string[] = [];

/** `qkv translate` on one sentence, from src through tsx. */
function cliTranslate(model: string, ...flags: string[]): string {
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'src', 'cli', 'main.ts'),
      'translate',
      '--model',
      join(ROOT, 'models', model),
      ...flags,
    ],
    { cwd: ROOT, input: `${SENTENCE}\n`, encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

before(async () => {
  if (skip) return;
  server = await serveRepository((l) => logs.push(l));
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  collectErrors(page, errors);
  await page.goto(`${server.url}?backend=${BACKEND}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
});

after(() => closeAll(browser, server));

const modelOf = (view: string) => page.locator(`#view-${view}`).getAttribute('data-model');

const translate = (n: number) => translateIn(page, SENTENCE, n);

test('the switcher lists the three shipped folders by name and kind; Translate starts with EN→DE', {
  skip,
}, async () => {
  assert.equal(logs.filter((l) => l.startsWith('qkv explore: model models/')).length, 3, logs.join('\n'));
  assert.deepEqual(await page.locator('#model-select option').allTextContents(), [
    'gpt-multi30k-char · GPT',
    'multi30k-en-de · translation',
    'multi30k-en-fr · translation',
  ]);
  assert.deepEqual(
    await page.locator('#model-select option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).title)),
    [
      'language model (characters), 4 layers, nEmbd 128',
      'translation EN→DE, 4 + 4 layers, dModel 128',
      'translation EN→FR, 4 + 4 layers, dModel 128',
    ],
  );
  assert.equal(await page.locator('#view-translate').isVisible(), true);
  assert.equal(await modelOf('translate'), 'multi30k-en-de');
  assert.equal(await page.locator('#model-select').inputValue(), 'multi30k-en-de');
  assert.match(
    (await page.getByTestId('model-info').textContent()) ?? '',
    /^Model multi30k-en-de: dModel 128, 4 encoder \+ 4 decoder layers, 4 heads, vocabulary 8000, /,
  );
  assert.match(
    (await page.getByTestId('status').textContent()) ?? '',
    new RegExp(`^model: multi30k-en-de · backend: ${BACKEND}`),
  );
});

test('EN→DE, then EN→FR from the switcher: each translates as qkv translate --beam 1 does with that folder', {
  skip,
}, async () => {
  const de = await translate(1);
  assert.equal(de, cliTranslate('multi30k-en-de', '--beam', '1', '--no-ensemble'));
  assert.equal(await page.locator('#view-translate .result .label').textContent(), 'German: ');

  await page.selectOption('#model-select', 'multi30k-en-fr');
  await page.waitForFunction(
    () => document.querySelector('#view-translate')?.getAttribute('data-model') === 'multi30k-en-fr',
    undefined,
    { timeout: 60000 },
  );
  assert.equal(await page.locator('#view-translate').isVisible(), true);
  assert.match((await page.getByTestId('model-info').textContent()) ?? '', /^Model multi30k-en-fr: /);
  assert.equal(await page.getByTestId('translation').textContent(), '', 'the German translation is cleared');
  const fr = await translate(2);
  const cli = cliTranslate('multi30k-en-fr', '--beam', '1');
  assert.equal(fr, cli, 'the page translates with the French model as the CLI does');
  assert.notEqual(fr, de);
  assert.equal(await page.locator('#view-translate .result .label').textContent(), 'French: ');
  assert.ok((await page.locator('[data-testid="fig-heatmap"] rect.cell').count()) > 0);
});

test('Generate continues a prompt with the shipped GPT at once, without a folder pick', { skip }, async () => {
  await page.locator('#tabs [data-view="generate"]').click();
  await page.waitForFunction(
    () => document.querySelector('#view-generate')?.getAttribute('data-model') === 'gpt-multi30k-char',
    undefined,
    { timeout: 60000 },
  );
  assert.equal(await page.locator('#model-select').inputValue(), 'gpt-multi30k-char', 'the switcher follows the view');
  assert.match(
    (await page.getByTestId('generate-info').textContent()) ?? '',
    /^Model gpt-multi30k-char: GPT, 4 layers, 4 heads, nEmbd 128, context 128 tokens, vocabulary 82 \(characters\), [\d,]+ parameters\.$/,
  );
  assert.equal(await page.locator('#view-generate').getAttribute('data-opened'), null, 'no folder was picked');
  const PROMPT = 'A man in a blue shirt';
  const ref = generateWithAttention(readLm(join(ROOT, 'models', 'gpt-multi30k-char')), PROMPT, { maxTokens: 30 });
  await page.getByTestId('prompt').fill(PROMPT);
  await page.getByTestId('max-tokens').fill('30');
  await page.getByTestId('generate').click();
  await page.waitForFunction(
    () => document.querySelector('#view-generate')?.getAttribute('data-generated') === '1',
    undefined,
    { timeout: 60000 },
  );
  const shown = (await page.getByTestId('continuation').textContent()) ?? '';
  assert.ok(shown.trim().length > 0);
  assert.equal(shown, ref.continuation, 'the browser generates as Node does');

  // Back to a translation model from the switcher: the Translate view, its model kept.
  await page.selectOption('#model-select', 'multi30k-en-fr');
  await page.waitForFunction(() => !document.querySelector<HTMLElement>('#view-translate')!.hidden);
  assert.equal(await modelOf('translate'), 'multi30k-en-fr');
  assert.deepEqual(errors, []);
});

test('?model=ID starts with that folder: the GPT in Generate, the switcher on it', { skip }, async () => {
  const p = await browser.newPage();
  try {
    await p.goto(`${server.url}?backend=${BACKEND}&model=gpt-multi30k-char`);
    await p.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
    assert.equal(await p.locator('#view-generate').isVisible(), true);
    assert.equal(await p.locator('#view-generate').getAttribute('data-model'), 'gpt-multi30k-char');
    assert.equal(await p.locator('#model-select').inputValue(), 'gpt-multi30k-char');
    assert.equal(await p.locator('#tab-translate').isVisible(), true, 'the translation models stay a tab away');
  } finally {
    await p.close();
  }
});
