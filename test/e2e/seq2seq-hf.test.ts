/**
 * Hugging Face NLLB / M2M100 and T5 folders in the explorer (issue 59, point 4; Chromium, playwright-core): the tiny
 * folders transformers wrote (scripts/fixtures/make_hf_seq2seq.py) served by `qkv explore --model`, in the Translate
 * view: NLLB translates between the languages chosen as Node does (the target's code forced first), T5 gives Node's
 * output for the task chosen; every layer × head of the encoder, decoder and cross maps on screen equals Node's
 * (which test/viz/seq2seq-hf-attention.test.ts holds to transformers); T5's relative position bias is drawn per head,
 * by offset and over the tokens, with the model's numbers. Runs once per backend pass (QKV_BACKEND=wasm opens
 * ?backend=wasm, else js).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { dirSource } from '../../src/folder/node.ts';
import { ofKind, openFolder } from '../../src/folder/open.ts';
import { describeFolder, type ExploreServer } from '../../src/server/static.ts';
import type { AttentionKind, TranslationAttention } from '../../src/viz/attention-data.ts';
import { m2m100WithAttention, t5WithAttention } from '../../src/viz/seq2seq-hf-attention.ts';
import { toolSkip } from '../helpers/tools.ts';
import { BACKEND, closeAll, collectErrors, launchChromium, serveExplorer, translateIn } from './chromium.ts';

const FIX = fileURLToPath(new URL('../fixtures/hf-seq2seq/', import.meta.url));
const NLLB = join(FIX, 'nllb');
const T5 = join(FIX, 't5', 't5');
const SENTENCE = 'A man is riding a bike down the street.';
const skip = toolSkip('chromium');

let browser: Browser;
let server: ExploreServer;
let page: Page;
const errors: string[] = [];

before(async () => {
  if (skip) return;
  server = await serveExplorer({ models: [describeFolder(NLLB, 'nllb-tiny'), describeFolder(T5, 't5-tiny')] });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  collectErrors(page, errors);
});

after(() => closeAll(browser, server));

/** Open a served folder in Translate by its address. */
async function openModel(id: string): Promise<void> {
  await page.goto(`${server.url}?backend=${BACKEND}&model=${id}#translate`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
  await page.waitForFunction((m) => document.querySelector('#view-translate')?.getAttribute('data-model') === m, id, {
    timeout: 60000,
  });
}

/** Every cell of the heatmap on screen, [query][key], from its titles. */
function heatmapValues(): Promise<number[][]> {
  return page.evaluate(() => {
    const svg = document.querySelector('[data-testid="fig-heatmap"] svg')!;
    const rows = Number(svg.getAttribute('data-rows'));
    const cols = Number(svg.getAttribute('data-cols'));
    const out = Array.from({ length: rows }, () => new Array<number>(cols).fill(Number.NaN));
    for (const c of Array.from(svg.querySelectorAll('rect.cell'))) {
      const m = /: (-?[\d.e-]+)( \(masked\))?$/.exec(c.querySelector('title')?.textContent ?? '');
      out[Number(c.getAttribute('data-row'))][Number(c.getAttribute('data-col'))] = m ? Number(m[1]) : 0;
    }
    return out;
  });
}

/** Every layer × head of every kind on screen equals Node's maps (the titles' four digits); the model view has them all. */
async function everyHead(ref: TranslationAttention, what: string): Promise<void> {
  for (const kind of ['encoder', 'decoder', 'cross'] as AttentionKind[]) {
    await page.selectOption('#kind', kind);
    const maps = ref[kind];
    await page.waitForFunction(
      (n) => document.querySelectorAll('[data-testid="fig-modelview"] g.thumb').length === n,
      maps.length * maps[0].length,
    );
    for (let l = 0; l < maps.length; l++)
      for (let hd = 0; hd < maps[l].length; hd++) {
        await page.selectOption('#layer', String(l));
        await page.selectOption('#head', String(hd));
        const got = await heatmapValues();
        assert.equal(got.length, maps[l][hd].length, `${what} ${kind} ${l}/${hd}: rows`);
        got.forEach((row, i) =>
          row.forEach((v, j) =>
            assert.ok(
              Math.abs(v - maps[l][hd][i][j]) <= 5e-5,
              `${what} ${kind} layer ${l + 1} head ${hd + 1} (${i}, ${j}): ${v} vs ${maps[l][hd][i][j]}`,
            ),
          ),
        );
      }
  }
}

test('an NLLB folder: the languages chosen, translated as Node, every map of every head as Node', {
  skip,
}, async () => {
  await openModel('nllb-tiny');
  assert.equal(await page.locator('#src-lang').inputValue(), 'eng_Latn');
  assert.equal(await page.locator('#tgt-lang').inputValue(), 'deu_Latn');
  await page.selectOption('#tgt-lang', 'fra_Latn');
  const opened = ofKind(await openFolder(dirSource(NLLB), { ensemble: false }), 'm2m100');
  const ref = m2m100WithAttention(opened, SENTENCE, { beam: 1, srcLang: 'eng_Latn', tgtLang: 'fra_Latn' });
  const shown = await translateIn(page, SENTENCE, 1);
  assert.equal(shown, ref.translation === '' ? '(empty)' : ref.translation);
  assert.equal(ref.tgtTokens[1], 'fra_Latn', "the target language's code forced first");
  await everyHead(ref, 'nllb');
  assert.equal(await page.getByTestId('t5-bias').isHidden(), true, 'no T5 bias for NLLB');
  assert.deepEqual(errors, []);
});

test('a T5 folder: its output as Node, every map of every head, the relative position bias per head', {
  skip,
}, async () => {
  await openModel('t5-tiny');
  assert.equal(await page.locator('#t5-task').inputValue(), 'text2text-generation');
  const opened = ofKind(await openFolder(dirSource(T5), { ensemble: false }), 't5');
  const ref = t5WithAttention(opened, SENTENCE, { beam: 1 });
  const n = Number((await page.locator('#view-translate').getAttribute('data-translated')) ?? 0);
  const shown = await translateIn(page, SENTENCE, n + 1);
  assert.equal(shown, ref.translation === '' ? '(empty)' : ref.translation);
  await everyHead(ref, 't5');
  // The bias by offset: a row per head, a column per offset, each cell the model's value.
  await page.waitForSelector('[data-testid="fig-t5-bias-offsets"] svg');
  const H = opened.model.config.numHeads;
  for (const stack of ['encoder', 'decoder'] as const) {
    await page.selectOption('#t5-bias-stack', stack);
    const b = ref.bias[stack]!;
    const offsets = page.locator('[data-testid="fig-t5-bias-offsets"] svg');
    assert.equal(await offsets.getAttribute('data-rows'), String(H));
    assert.equal(await offsets.getAttribute('data-cols'), String(b.offsets.length));
    const titles = await page
      .locator('[data-testid="fig-t5-bias-offsets"] rect.cell title')
      .evaluateAll((ts) => ts.map((t) => t.textContent ?? ''));
    assert.equal(titles.length, H * b.offsets.length);
    for (const t of titles) {
      const m = /^head (\d+) → (-?\d+): (-?[\d.e-]+)$/.exec(t);
      assert.ok(m, `a cell's title: ${t}`);
      const want = b.values[Number(m[1]) - 1][b.offsets.indexOf(Number(m[2]))];
      assert.ok(Math.abs(Number(m[3]) - want) <= 5e-4 * (1 + Math.abs(want)), `${stack} ${t} vs ${want}`);
    }
    await page.selectOption('#t5-bias-head', String(H - 1));
    const map = page.locator('[data-testid="fig-t5-bias-map"] svg');
    assert.equal(await map.getAttribute('data-rows'), String(b.maps[0].length));
  }
  assert.deepEqual(errors, []);
});
