/**
 * The explorer end to end in headless Chromium (Debian's `chromium`, driven by playwright-core):
 * the server from `qkv explore` on a free port with a tiny random model, the page built by Vite,
 * the model run in the browser; then a tiny random GPT folder, shown in the Generate view. Without
 * /usr/bin/chromium it skips, saying so, on a developer machine, and fails under CI=true.
 *
 * Run once per backend pass of scripts/test.mjs: QKV_BACKEND=wasm opens the page with
 * ?backend=wasm (and checks the page really runs on it), otherwise ?backend=js.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import type { ExploreServer } from '../../src/server/static.ts';
import { translateWithAttention } from '../../src/viz/attention-data.ts';
import { parseHex } from '../../src/viz/color.ts';
import { MASKED_FILL } from '../../src/viz/heatmap.ts';
import { generateWithAttention, lineSeparatorId, type LoadedGpt } from '../../src/viz/gpt-attention.ts';
import { toolSkip } from '../helpers/tools.ts';
import {
  BACKEND,
  closeAll,
  collectErrors,
  launchChromium,
  openExplorer,
  serveExplorer,
  translateIn,
} from './chromium.ts';
import { get } from './http.ts';
import {
  GPT_HEADS,
  GPT_LAYERS,
  HEADS,
  LAYERS,
  makeTinyGpt,
  makeTinyModel,
  makeTinySeparateModel,
  tempDir,
} from './tiny-model.ts';
import { exportModel } from '../../src/cli/commands/export.ts';
import { readSeq2Seq } from '../../src/folder/node.ts';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const SENTENCE = 'A dog runs in the park.';
// Skips on a developer machine without Chromium; under CI=true the first test fails instead.
const skip = toolSkip('chromium');

let browser: Browser;
let page: Page;
let server: ExploreServer;
const pageErrors: string[] = [];
const tiny = skip ? null : makeTinyModel();

before(async () => {
  if (skip) return;
  server = await serveExplorer({ modelDir: tiny!.dir });
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  page = await context.newPage();
  collectErrors(page, pageErrors);
  await page.goto(`${server.url}?backend=${BACKEND}#translate`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
});

after(() => closeAll(browser, server));

const cells = (id: string) => page.locator(`[data-testid="fig-${id}"] rect.cell`).count();
const svgOfPage = (p: Page, id: string) => p.locator(`[data-testid="fig-${id}"]`).innerHTML();
const svgOf = (id: string) => svgOfPage(page, id);

test('the page is cross-origin isolated and runs on the chosen backend', { skip }, async () => {
  assert.equal(await page.evaluate(() => crossOriginIsolated), true);
  const status = await page.getByTestId('status').textContent();
  assert.match(status ?? '', new RegExp(`backend: ${BACKEND}`));
  assert.match(
    (await page.getByTestId('model-info').textContent()) ?? '',
    /Model qkv-tiny-\w+: dModel 16, 2 encoder \+ 2 decoder layers, 2 heads/,
  );
});

test('translate: the translation appears, the heatmap has query × key cells, layer and head change it', {
  skip,
}, async () => {
  const ref = translateWithAttention(tiny!.model, tiny!.tokenizer, SENTENCE);
  const S = ref.srcTokens.length;
  const T = ref.tgtTokens.length;
  await page.getByTestId('src').fill(SENTENCE);
  await page.getByTestId('translate').click();
  await page.waitForFunction(() => document.querySelector('#view-translate')?.getAttribute('data-translated') === '1');
  const shown = (await page.getByTestId('translation').textContent()) ?? '';
  assert.ok(shown.length > 0 && shown !== '…');
  assert.equal(shown, ref.translation === '' ? '(empty)' : ref.translation, 'the browser translates as Node does');

  // Default: cross-attention, layer 1, head 1: target positions × source tokens.
  assert.equal(await page.locator('#kind').inputValue(), 'cross');
  assert.equal(await page.locator('#head').inputValue(), '0');
  assert.equal(await cells('heatmap'), T * S);
  assert.equal((await page.locator('[data-testid="fig-heatmap"] .row-label').count()) <= T, true);
  assert.ok((await page.locator('[data-testid="fig-heatmap"] .col-label').count()) >= Math.min(S, 2));
  const title = await page.locator('[data-testid="fig-heatmap"] rect.cell title').first().textContent();
  assert.match(title ?? '', /^<s> → .+: \d\.\d{4}$/, 'value on hover');

  const first = await svgOf('heatmap');
  await page.selectOption('#layer', '1');
  const layer2 = await svgOf('heatmap');
  assert.notEqual(layer2, first, 'layer 2 differs from layer 1');
  assert.match(layer2, /layer 2 · head 1/);
  await page.selectOption('#head', '1');
  const head2 = await svgOf('heatmap');
  assert.notEqual(head2, layer2, 'head 2 differs from head 1');
  assert.match(head2, /layer 2 · head 2/);
  assert.equal(await cells('heatmap'), T * S);

  // Encoder self-attention: source × source; decoder self-attention: target × target, masked above the diagonal.
  await page.selectOption('#kind', 'encoder');
  assert.equal(await cells('heatmap'), S * S);
  await page.selectOption('#kind', 'decoder');
  assert.equal(await cells('heatmap'), T * T);
  assert.equal(await page.locator('[data-testid="fig-heatmap"] rect.cell.masked').count(), (T * (T - 1)) / 2);

  // Head view lines and the model view grid; clicking a thumbnail selects that layer and head.
  assert.ok((await page.locator('[data-testid="fig-headview"] line.link').count()) > 0);
  assert.equal(await page.locator('[data-testid="fig-modelview"] g.thumb').count(), LAYERS * HEADS);
  await page.locator('[data-testid="fig-modelview"] g.thumb[data-layer="0"][data-head="1"]').click();
  assert.equal(await page.locator('#layer').inputValue(), '0');
  assert.equal(await page.locator('#head').inputValue(), '1');

  await page.selectOption('#kind', 'cross');
  await page.screenshot({ path: join(HERE, 'screenshots', 'explorer-translate.png'), fullPage: true });
});

test('beam search from the page', { skip }, async () => {
  const ref = translateWithAttention(tiny!.model, tiny!.tokenizer, SENTENCE, { beam: 3 });
  await page.selectOption('#decoding', 'beam');
  await page.getByTestId('beam').fill('3');
  await page.getByTestId('translate').click();
  await page.waitForFunction(() => document.querySelector('#view-translate')?.getAttribute('data-translated') === '2');
  assert.equal(
    await page.getByTestId('translation').textContent(),
    ref.translation === '' ? '(empty)' : ref.translation,
  );
  assert.equal(await cells('heatmap'), ref.tgtTokens.length * ref.srcTokens.length);
});

test('step by step: seed 003 gives 2.66 and 4.34', { skip }, async () => {
  await page.locator('#tabs [data-view="steps"]').click();
  const view = page.locator('#view-steps');
  await view.waitFor({ state: 'visible' });
  const out = page.locator('#view-steps table[data-matrix="output = weights · V"]').first();
  const text = (await out.textContent()) ?? '';
  for (const v of ['2.66', '3.66', '3.34', '4.34']) assert.ok(text.includes(v), `${v} in the output table`);
  assert.ok(((await view.textContent()) ?? '').includes('0.67'));
  await page.screenshot({ path: join(HERE, 'screenshots', 'explorer-steps.png'), fullPage: true });
  // Seed 002 prints 4 decimals; the context vector of "journey" is [0.4419, 0.6515, 0.5683].
  await page.selectOption('#example', 'seed-002');
  const t2 = (await page.locator('#view-steps table[data-matrix="output = weights · V"]').first().textContent()) ?? '';
  for (const v of ['0.4419', '0.6515', '0.5683']) assert.ok(t2.includes(v), `${v} for seed 002`);
  // Editing an input recomputes: V[0][0] = 0 in seed 003 gives output (0, 0) = 0.33·4 = 1.32.
  await page.selectOption('#example', 'seed-003');
  await page.locator('#inputs input[data-m="v"][data-i="0"][data-j="0"]').fill('0');
  const t3 = (await page.locator('#view-steps table[data-matrix="output = weights · V"]').first().textContent()) ?? '';
  assert.ok(t3.includes('1.32'), 'recomputed after an edit');
  assert.equal(await page.locator('#example').inputValue(), 'custom');
  assert.ok(((await page.locator('#causal').textContent()) ?? '').includes('−∞'));
});

test('positional encoding: heatmap cells follow dModel and length', { skip }, async () => {
  await page.locator('#tabs [data-view="positional"]').click();
  await page.getByTestId('pe-dmodel').fill('32');
  await page.getByTestId('pe-length').fill('20');
  assert.equal(await cells('pe-heatmap'), 32 * 20);
  assert.equal(
    await page.locator('[data-testid="fig-pe-positions"] polyline.series').count(),
    2,
    'positions 0 and 10 (20, 30, 40 are out of range)',
  );
});

test('export: SVG and PNG of a heatmap, a view as standalone HTML', { skip }, async () => {
  await page.locator('#tabs [data-view="export"]').click();
  const row = page.locator('#export-list tr[data-figure="heatmap"]');
  const [svg] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: 'SVG' }).click()]);
  const svgText = readFileSync((await svg.path())!, 'utf8');
  assert.match(svg.suggestedFilename(), /\.svg$/);
  assert.match(svgText, /<svg[^>]*class="qkv-heatmap/);
  const [png] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: 'PNG' }).click()]);
  assert.match(png.suggestedFilename(), /\.png$/);
  assert.deepEqual([...readFileSync((await png.path())!).subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  const [html] = await Promise.all([page.waitForEvent('download'), page.locator('[data-export-view="steps"]').click()]);
  const page2 = readFileSync((await html.path())!, 'utf8');
  assert.match(page2, /^<!doctype html>/);
  assert.ok(page2.includes('2.66') || page2.includes('1.32'));
  assert.ok(!page2.includes('<script'), 'standalone: no script');
});

test('requests outside the served files are refused', { skip }, async () => {
  assert.deepEqual(pageErrors, [], 'no errors in the page until now');
  assert.equal((await get(server.port, '/../package.json')).status, 403);
  assert.equal((await get(server.port, '/src/index.ts')).status, 404);
  assert.equal(await page.evaluate(async () => (await fetch('/package.json')).status), 404);
  assert.equal(
    await page.evaluate(async () => (await fetch('/model/../../package.json')).status),
    404,
    'the browser normalises .., the server still has nothing there',
  );
});

test('without a model the page says how to start with one; the other views still work', { skip }, async () => {
  const bare = await serveExplorer({ modelDir: null });
  try {
    const p = await browser.newPage();
    await p.goto(`${bare.url}?backend=js#steps`);
    await p.waitForSelector('body[data-ready="true"]');
    assert.match(
      (await p.getByTestId('model-info').textContent()) ?? '',
      /No model is being served\. Start the explorer with a model folder: qkv explore --model DIR/,
    );
    assert.ok(((await p.locator('#view-steps').textContent()) ?? '').includes('4.34'));
    await p.close();
  } finally {
    await bare.close();
  }
});

/** The heatmap's values as the page shows them (cell titles, 4 decimals) and which cells are drawn masked. */
function readHeatmap(p: Page): Promise<{ rows: number; cols: number; values: number[][]; masked: boolean[][] }> {
  return p.evaluate(() => {
    const svg = document.querySelector('[data-testid="fig-gpt-heatmap"] svg')!;
    const rows = Number(svg.getAttribute('data-rows'));
    const cols = Number(svg.getAttribute('data-cols'));
    const values = Array.from({ length: rows }, () => new Array<number>(cols).fill(Number.NaN));
    const masked = Array.from({ length: rows }, () => new Array<boolean>(cols).fill(false));
    for (const c of Array.from(svg.querySelectorAll('rect.cell'))) {
      const i = Number(c.getAttribute('data-row'));
      const j = Number(c.getAttribute('data-col'));
      const m = /: (-?[\d.]+)( \(masked\))?$/.exec(c.querySelector('title')?.textContent ?? '');
      values[i][j] = m ? Number(m[1]) : Number.NaN;
      masked[i][j] = c.classList.contains('masked');
    }
    return { rows, cols, values, masked };
  });
}

test('a GPT folder: the Generate view continues a prompt and shows causal attention for every layer × head', {
  skip,
}, async () => {
  const gpt = makeTinyGpt();
  const lm: LoadedGpt = { model: gpt.model, tokenizer: gpt.tokenizer, separatorId: lineSeparatorId(gpt.tokenizer) };
  const srv = await serveExplorer({ modelDir: gpt.dir });
  const p = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  collectErrors(p, errors);
  try {
    // A link to #translate opens the model's view: Generate, the Translate tab hidden.
    await p.goto(`${srv.url}?backend=${BACKEND}#translate`);
    await p.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
    assert.equal(await p.locator('#view-generate').isVisible(), true);
    assert.equal(await p.locator('#view-translate').isVisible(), false);
    assert.equal(await p.locator('#tab-translate').isVisible(), false);
    assert.equal(await p.locator('#tab-generate').getAttribute('aria-selected'), 'true');
    assert.match(
      (await p.getByTestId('status').textContent()) ?? '',
      new RegExp(`model: qkv-tiny-gpt-\\w+ · backend: ${BACKEND}`),
    );
    assert.match(
      (await p.getByTestId('model-info').textContent()) ?? '',
      /^Model qkv-tiny-gpt-\w+: GPT, 2 layers, 2 heads, nEmbd 16, context 48 tokens, vocabulary \d+ \(characters\), [\d,]+ parameters\.$/,
    );

    // Greedy: the continuation Node draws, and T × T maps with nothing above the diagonal.
    const PROMPT = 'A dog';
    const ref = generateWithAttention(lm, PROMPT, { maxTokens: 12 });
    const T = ref.ids.length;
    await p.getByTestId('prompt').fill(PROMPT);
    await p.getByTestId('max-tokens').fill('12');
    await p.getByTestId('generate').click();
    await p.waitForFunction(() => document.querySelector('#view-generate')?.getAttribute('data-generated') === '1');
    assert.equal(
      await p.getByTestId('continuation').textContent(),
      ref.continuation,
      'the browser generates as Node does',
    );
    assert.equal(await p.getByTestId('generated').textContent(), `${PROMPT}${ref.continuation}`);
    assert.ok(ref.continuation.length > 0);
    assert.equal(await p.locator('#gpt-tokens .chip').count(), T);
    assert.equal(await p.locator('#gpt-tokens .chip.generated').count(), T - ref.promptLength);

    // Every layer × head: its heatmap is the model's weights, rows sum to 1, the upper triangle is 0 and drawn masked.
    assert.deepEqual(await p.locator('#gpt-layer option').allTextContents(), ['layer 1', 'layer 2']);
    assert.deepEqual(await p.locator('#gpt-head option').allTextContents(), ['mean of heads', 'head 1', 'head 2']);
    const seen = new Set<string>();
    for (let l = 0; l < GPT_LAYERS; l++) {
      for (let h = 0; h < GPT_HEADS; h++) {
        await p.selectOption('#gpt-layer', String(l));
        await p.selectOption('#gpt-head', String(h));
        const svg = await svgOfPage(p, 'gpt-heatmap');
        assert.match(svg, new RegExp(`causal self-attention · layer ${l + 1} · head ${h + 1}`));
        seen.add(svg);
        const { rows, cols, values, masked } = await readHeatmap(p);
        assert.deepEqual([rows, cols], [T, T]);
        for (let i = 0; i < T; i++) {
          let sum = 0;
          for (let j = 0; j < T; j++) {
            const v = values[i][j];
            assert.ok(
              Math.abs(v - ref.attention[l][h][i][j]) < 2e-4,
              `layer ${l + 1} head ${h + 1} (${i}, ${j}): ${v} vs ${ref.attention[l][h][i][j]}`,
            );
            assert.equal(masked[i][j], j > i, `(${i}, ${j}) masked iff above the diagonal`);
            if (j > i) assert.equal(v, 0, `(${i}, ${j}) above the diagonal is 0`);
            sum += v;
          }
          assert.ok(Math.abs(sum - 1) < T * 1e-4, `row ${i} sums to ${sum}`);
        }
      }
    }
    assert.equal(seen.size, GPT_LAYERS * GPT_HEADS, 'each layer × head has its own map');
    // The model view: every layer × head, each with its upper triangle grey; the head view: no line to a later token.
    assert.equal(await p.locator('[data-testid="fig-gpt-modelview"] g.thumb').count(), GPT_LAYERS * GPT_HEADS);
    // Each thumbnail is painted as an image of a pixel per cell once on screen (issue 63): its grey pixels.
    await p.locator('[data-testid="fig-gpt-modelview"]').scrollIntoViewIfNeeded();
    await p.waitForFunction(
      (n) => document.querySelectorAll('[data-testid="fig-gpt-modelview"] g.thumb[data-drawn] image').length === n,
      GPT_LAYERS * GPT_HEADS,
    );
    const grey = parseHex(MASKED_FILL);
    const greyPixels = await p
      .locator('[data-testid="fig-gpt-modelview"] g.thumb image')
      .evaluateAll(async (imgs, [r, g, b]) => {
        let n = 0;
        for (const el of imgs) {
          const img = new Image();
          img.src = el.getAttribute('href') ?? '';
          await img.decode();
          const c = document.createElement('canvas');
          c.width = img.naturalWidth;
          c.height = img.naturalHeight;
          const ctx = c.getContext('2d')!;
          ctx.drawImage(img, 0, 0);
          const d = ctx.getImageData(0, 0, c.width, c.height).data;
          for (let k = 0; k < d.length; k += 4) if (d[k] === r && d[k + 1] === g && d[k + 2] === b) n++;
        }
        return n;
      }, grey);
    assert.equal(greyPixels, (GPT_LAYERS * GPT_HEADS * T * (T - 1)) / 2);
    const links = await p
      .locator('[data-testid="fig-gpt-headview"] line.link')
      .evaluateAll((ls) => ls.map((x) => [Number(x.getAttribute('data-row')), Number(x.getAttribute('data-col'))]));
    assert.ok(links.length >= T);
    for (const [r, c] of links) assert.ok(c <= r, `head view line ${r} → ${c}`);
    await p.locator('[data-testid="fig-gpt-modelview"] g.thumb[data-layer="0"][data-head="1"]').click();
    assert.equal(await p.locator('#gpt-layer').inputValue(), '0');
    assert.equal(await p.locator('#gpt-head').inputValue(), '1');
    await p.screenshot({ path: join(HERE, 'screenshots', 'explorer-generate.png'), fullPage: true });

    // Seeded sampling: the same tokens as Node's for that seed.
    const sampled = generateWithAttention(lm, PROMPT, { maxTokens: 12, temperature: 1.5, seed: 3 });
    await p.selectOption('#sampling', 'sample');
    await p.getByTestId('temperature').fill('1.5');
    await p.getByTestId('seed').fill('3');
    await p.getByTestId('generate').click();
    await p.waitForFunction(() => document.querySelector('#view-generate')?.getAttribute('data-generated') === '2');
    assert.equal(await p.getByTestId('continuation').textContent(), sampled.continuation);
    assert.equal((await readHeatmap(p)).rows, sampled.ids.length);
    // Bad input: the message, and nothing of the last run under it.
    await p.getByTestId('prompt').fill('   ');
    await p.getByTestId('generate').click();
    await p.locator('#generate-error').waitFor({ state: 'visible' });
    assert.equal(await p.locator('#generate-error').textContent(), 'generate: the prompt is empty');
    assert.equal(await p.getByTestId('generate').isEnabled(), true);
    assert.equal(await p.locator('#fig-gpt-heatmap').isVisible(), false);

    // The Export view offers the Generate view, and lists its pictures.
    await p.getByTestId('prompt').fill(PROMPT);
    await p.getByTestId('generate').click();
    await p.waitForFunction(() => document.querySelector('#view-generate')?.getAttribute('data-generated') === '3');
    await p.locator('#tabs [data-view="export"]').click();
    assert.equal(await p.locator('[data-export-view="generate"]').count(), 1);
    assert.equal(await p.locator('[data-export-view="translate"]').count(), 0);
    assert.equal(await p.locator('#export-list tr[data-figure="gpt-modelview"] td').first().textContent(), 'Generate');
    assert.deepEqual(errors, []);
  } finally {
    await p.close();
    await srv.close();
  }
});

test("a folder that names an ensemble: the page says so and runs the folder's own model alone", { skip }, async () => {
  const [a, b] = [makeTinyModel(4), makeTinyModel(5)];
  const dir = join(tempDir('qkv-explorer-ens-'), 'ens');
  exportModel({ model: a.dir, out: dir, dtype: 'f32', ensemble: [b.dir], log: () => {} });
  const ref = translateWithAttention(a.model, a.tokenizer, SENTENCE);
  const srv = await serveExplorer({ modelDir: dir });
  const p = await browser.newPage();
  try {
    await p.goto(`${srv.url}?backend=${BACKEND}#translate`);
    await p.waitForSelector('body[data-ready="true"]');
    await p.waitForFunction(() =>
      /alone, so its translations can differ from theirs\.$/.test(
        document.querySelector('[data-testid="model-info"]')?.textContent ?? '',
      ),
    );
    assert.match(
      (await p.getByTestId('model-info').textContent()) ?? '',
      /parameters\. Its folder names an ensemble \(member-2\) that qkv translate and qkv eval decode with as well; this page runs and shows this model alone/,
    );
    await p.getByTestId('src').fill(SENTENCE);
    await p.getByTestId('translate').click();
    await p.waitForFunction(() => document.querySelector('#view-translate')?.getAttribute('data-translated') === '1');
    assert.equal(
      await p.getByTestId('translation').textContent(),
      ref.translation === '' ? '(empty)' : ref.translation,
    );
  } finally {
    await p.close();
    await srv.close();
  }
});

for (const dtype of ['int8', 'q4'] as const)
  test(`an ${dtype} folder: the page runs it as stored, translating as Node does with the same folder`, {
    skip,
  }, async () => {
    const a = makeTinyModel(6, 32);
    const dir = join(tempDir(`qkv-explorer-${dtype}-`), dtype);
    exportModel({ model: a.dir, out: dir, dtype, log: () => {} });
    const stored = readSeq2Seq(dir);
    const held = Object.values(stored.model.stateDict()).map((t) => t.dtype);
    assert.ok(held.includes(dtype), `Node holds ${dtype} weights from the folder (${[...new Set(held)]})`);
    const ref = translateWithAttention(stored.model.eval(), stored.tokenizer, SENTENCE);
    const float = translateWithAttention(a.model, a.tokenizer, SENTENCE);
    const srv = await serveExplorer({ modelDir: dir });
    const errors: string[] = [];
    const p = await openExplorer(browser, `${srv.url}?backend=${BACKEND}#translate`, errors);
    try {
      assert.equal(
        await translateIn(p, SENTENCE, 1),
        ref.translation === '' ? '(empty)' : ref.translation,
        `the page's ${dtype} translation (the float model's: ${JSON.stringify(float.translation)})`,
      );
      // The heatmap's values (cross-attention, layer 1, head 1, 4 decimals on hover) are the quantized model's,
      // and they tell it from the float model's (else this test could not see a page that dequantized).
      const titles = await p.locator('[data-testid="fig-heatmap"] rect.cell title').allTextContents();
      const shown = titles.map((t) => /: (\d\.\d{4})$/.exec(t)?.[1]);
      const values = (x: typeof ref) => x.cross[0]![0]!.flat().map((v) => v.toFixed(4));
      assert.deepEqual(shown, values(ref), `the page's ${dtype} attention is Node's ${dtype} attention`);
      assert.ok(
        float.translation !== ref.translation || values(float).join() !== values(ref).join(),
        `the ${dtype} model's translation or attention differs from the float model's`,
      );
      assert.deepEqual(errors, []);
    } finally {
      await p.context().close();
      await srv.close();
    }
  });

test('a model with separate vocabularies: the page fetches target_tokenizer.json and translates as Node does', {
  skip,
}, async () => {
  const sep = makeTinySeparateModel(3);
  const ref = translateWithAttention(sep.model, sep.tokenizer, SENTENCE, { targetTokenizer: sep.targetTokenizer });
  const srv = await serveExplorer({ modelDir: sep.dir });
  const p = await browser.newPage();
  try {
    await p.goto(`${srv.url}?backend=${BACKEND}#translate`);
    await p.waitForSelector('body[data-ready="true"]');
    await p.waitForFunction(() =>
      /parameters\.$/.test(document.querySelector('[data-testid="model-info"]')?.textContent ?? ''),
    );
    assert.match(
      (await p.getByTestId('model-info').textContent()) ?? '',
      new RegExp(
        `vocabularies ${sep.tokenizer.vocabSize} \\(source\\) and ${sep.targetTokenizer.vocabSize} \\(target\\)`,
      ),
    );
    await p.getByTestId('src').fill(SENTENCE);
    await p.getByTestId('translate').click();
    await p.waitForFunction(() => document.querySelector('#view-translate')?.getAttribute('data-translated') === '1');
    assert.equal(
      await p.getByTestId('translation').textContent(),
      ref.translation === '' ? '(empty)' : ref.translation,
    );
    assert.equal(
      await p.locator('[data-testid="fig-heatmap"] rect.cell').count(),
      ref.tgtTokens.length * ref.srcTokens.length,
    );
    // Rows are named from the target vocabulary, columns from the source's (a cell's title: "target → source: weight").
    assert.ok(ref.tgtTokens.length >= 3, 'the random model writes a few tokens before EOS');
    const titles = await p.locator('[data-testid="fig-heatmap"] rect.cell title').allTextContents();
    assert.deepEqual(
      titles.map((t) => t.replace(/: [\d.]+$/, '')),
      ref.tgtTokens.flatMap((q) => ref.srcTokens.map((k) => `${q} → ${k}`)),
    );
  } finally {
    await p.close();
    await srv.close();
  }
});

test('a config.json of another format: the page names the file, what it expected and what came', { skip }, async () => {
  const gpt = makeTinyGpt();
  writeFileSync(join(gpt.dir, 'config.json'), JSON.stringify({ format: 'qkv-bert', model: {} }));
  const srv = await serveExplorer({ modelDir: gpt.dir });
  const p = await browser.newPage();
  try {
    await p.goto(`${srv.url}?backend=js`);
    await p.waitForSelector('body[data-ready="true"]');
    // The file is named by its URL (models/<id>/), as the folder module names a file read over HTTP.
    assert.equal(
      await p.getByTestId('model-info').textContent(),
      `Could not load the model: models/${basename(gpt.dir)}/config.json: expected format 'qkv-seq2seq' (a translation model from qkv train) or 'qkv-gpt' (a language model from qkv train-lm), got format 'qkv-bert'`,
    );
    assert.equal(
      await p.getByTestId('status').evaluate((e) => e.textContent?.startsWith('model failed to load')),
      true,
    );
  } finally {
    await p.close();
    await srv.close();
  }
});
