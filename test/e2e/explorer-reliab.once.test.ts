/**
 * The explorer page in headless Chromium on bad input (issue 13, items 1, 2 and 6): weights holding
 * NaN are refused with the message the CLI gives (naming the tensor); a sentence longer than the
 * model reads is translated from its first maxLen tokens and the page says so; a reload
 * revalidates the model list and files (304) instead of downloading them again.
 * Skips without Chromium on a developer machine; fails under CI=true.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import type { ExploreServer } from '../../src/server/static.ts';
import { readSafetensors, writeSafetensors } from '../../src/io/safetensors.ts';
import { translateWithAttention } from '../../src/viz/attention-data.ts';
import { toolSkip } from '../helpers/tools.ts';
import { closeAll, launchChromium, serveExplorer } from './chromium.ts';
import { makeTinyModel } from './tiny-model.ts';

const skip = toolSkip('chromium');
let browser: Browser;
const servers: ExploreServer[] = [];

before(async () => {
  if (skip) return;
  browser = await launchChromium();
});

after(() => closeAll(browser, ...servers));

async function open(modelDir: string) {
  const server = await serveExplorer({ modelDir });
  servers.push(server);
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${server.url}?backend=js#translate`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
  return { page, server };
}

test('weights with NaN: the page refuses them, naming the tensor and index', { skip }, async () => {
  const { dir } = makeTinyModel();
  const wpath = join(dir, 'model.safetensors');
  const t = readSafetensors(readFileSync(wpath)).tensors;
  t['embedding.weight'].dataSync<Float32Array>()[40] = Number.NaN;
  writeFileSync(wpath, writeSafetensors(t));
  const { page } = await open(dir);
  await page.waitForFunction(
    () => /Could not load/.test(document.querySelector('#model-info')?.textContent ?? ''),
    undefined,
    { timeout: 30000 },
  );
  // The file is named by its URL, as the folder module names a file read over HTTP.
  assert.equal(
    await page.getByTestId('model-info').textContent(),
    `Could not load the model: models/${basename(dir)}/model.safetensors: tensor 'embedding.weight' holds NaN at index 40 (row 2) of [120, 16]: the weights are corrupt (a diverged training run or a damaged file)`,
  );
  assert.equal(await page.getByTestId('translate').isDisabled(), true);
});

test('an over-long sentence: translated from its first maxLen tokens, and the page says so; a reload gets 304s', {
  skip,
}, async () => {
  const tiny = makeTinyModel();
  const { page, server } = await open(tiny.dir);
  // What the server answered, seen from the server: Chromium reports a revalidated response as its cached 200.
  const answered: { url: string; status: number; conditional: boolean }[] = [];
  server.server.on('request', (req, res) =>
    res.on('finish', () =>
      answered.push({
        url: req.url ?? '',
        status: res.statusCode,
        conditional: req.headers['if-none-match'] !== undefined,
      }),
    ),
  );
  await page.waitForFunction(() => !(document.querySelector('#translate') as HTMLButtonElement).disabled, undefined, {
    timeout: 30000,
  });
  const long = 'A dog runs in the park. '.repeat(6).trim();
  const ref = translateWithAttention(tiny.model, tiny.tokenizer, long);
  assert.ok(ref.truncatedFrom! > 24);
  await page.getByTestId('src').fill(long);
  await page.getByTestId('translate').click();
  await page.waitForFunction(() => document.querySelector('#view-translate')?.getAttribute('data-translated') === '1');
  assert.equal(
    await page.getByTestId('translation').textContent(),
    ref.translation === '' ? '(empty)' : ref.translation,
  );
  assert.match(
    (await page.locator('#timing').textContent()) ?? '',
    new RegExp(`the sentence has ${ref.truncatedFrom} tokens, this model reads 24: only the first 24 were translated$`),
  );
  assert.equal(await page.locator('#translate-error').isHidden(), true, 'no error shown');

  answered.length = 0;
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
  await page.waitForFunction(() => !(document.querySelector('#translate') as HTMLButtonElement).disabled, undefined, {
    timeout: 30000,
  });
  const url = `/models/${basename(tiny.dir)}/model.safetensors`;
  const weights = answered.filter((s) => s.url === url);
  assert.deepEqual(
    weights,
    [{ url, status: 304, conditional: true }],
    'the weights were revalidated, not downloaded again',
  );
  assert.ok(
    answered.every((a) => a.status === 304),
    JSON.stringify(answered),
  );
});
