/**
 * The explorer page's own behaviour in headless Chromium (issue 47): what each view shows, keeps and
 * clears, and how it is reached by keyboard and announced. One server serves two tiny translation
 * models and a tiny GPT; each test opens the page in a fresh browser context (its own storage).
 * Skips without Chromium on a developer machine; fails under CI=true. Runs once per backend pass.
 */
import assert from 'node:assert/strict';
import { basename } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { join } from 'node:path';
import { saveModelDir, saveWeights } from '../../src/cli/files.ts';
import { saveLmDir } from '../../src/folder/node.ts';
import { GPT } from '../../src/models/gpt.ts';
import { Seq2Seq } from '../../src/models/seq2seq.ts';
import { describeFolder, type ExploreServer } from '../../src/server/static.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { BpeTokenizer } from '../../src/text/bpe.ts';
import { CharTokenizer } from '../../src/text/chars.ts';
import { generateWithAttention, lineSeparatorId } from '../../src/viz/gpt-attention.ts';
import { toolSkip } from '../helpers/tools.ts';
import { BACKEND, closeAll, collectErrors, launchChromium, serveExplorer } from './chromium.ts';
import { GPT_HEADS, GPT_LAYERS, HEADS, LAYERS, makeTinyGpt, makeTinyModel, SENTENCES, tempDir } from './tiny-model.ts';

const SENTENCE = 'A dog runs in the park.';
const skip = toolSkip('chromium');

let browser: Browser;
let server: ExploreServer;
const tr = skip ? null : makeTinyModel(1);
const tr2 = skip ? null : makeTinyModel(2);
const gpt = skip ? null : makeTinyGpt(1);

/**
 * A GPT large enough that generating 100 characters takes the js backend about a second (4 layers,
 * nEmbd 256, context 128): the page must stay responsive meanwhile, show progress and cancel.
 */
function makeSlowGpt(): string {
  const dir = tempDir('qkv-slow-gpt-');
  const tokenizer = CharTokenizer.learn(SENTENCES);
  manualSeed(3);
  const model = new GPT({
    vocabSize: tokenizer.vocabSize,
    blockSize: 128,
    nLayer: 4,
    nHead: 4,
    nEmbd: 256,
    dropout: 0,
    positions: 'learned',
  });
  model.eval();
  saveLmDir(dir, model, tokenizer, 'char', { preset: 'test-slow' });
  saveWeights(join(dir, 'model.safetensors'), model.stateDict());
  return dir;
}
const slow = skip ? null : makeSlowGpt();

/** A translation model that takes the js backend over a second to translate SLOW_SENTENCE (to its maxLen 96). */
function makeSlowTranslation(): string {
  const dir = tempDir('qkv-slow-tr-');
  const tokenizer = BpeTokenizer.learn(SENTENCES, { vocabSize: 120, minFrequency: 1 });
  manualSeed(5);
  const model = new Seq2Seq({
    vocabSize: tokenizer.vocabSize,
    dModel: 256,
    nhead: 4,
    numEncoderLayers: 4,
    numDecoderLayers: 4,
    dimFeedforward: 1024,
    dropout: 0,
    activation: 'relu',
    normFirst: false,
    maxLen: 96,
    padId: tokenizer.padId,
  });
  model.eval();
  saveModelDir(dir, model, tokenizer, { preset: 'test-slow' });
  saveWeights(join(dir, 'model.safetensors'), model.stateDict());
  return dir;
}
const SLOW_SENTENCE = [...SENTENCES.slice(0, 3), ...SENTENCES.slice(0, 3)].join(' ');
const slowTr = skip ? null : makeSlowTranslation();
/** The folders' names, as the page names them. */
const NAME = skip
  ? { tr: '', tr2: '', gpt: '' }
  : { tr: basename(tr!.dir), tr2: basename(tr2!.dir), gpt: basename(gpt!.dir) };
/** Each page's errors, checked at its end. */
const errors = new Map<Page, string[]>();

before(async () => {
  if (skip) return;
  server = await serveExplorer({
    models: [
      describeFolder(tr!.dir, 'tiny-tr'),
      describeFolder(tr2!.dir, 'tiny-tr2'),
      describeFolder(gpt!.dir, 'tiny-gpt'),
      describeFolder(slow!, 'slow-gpt'),
      describeFolder(slowTr!, 'slow-tr'),
    ],
  });
  browser = await launchChromium();
});

after(() => closeAll(browser, server));

/**
 * The page at `hash`, in a fresh context, once it says it is ready. The tests of long runs use the js
 * backend in both passes: on wasm the slow models are too quick to need a progress line or a cancel.
 */
async function open(hash: string, query = '', backend = BACKEND): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const p = await context.newPage();
  const errs: string[] = [];
  errors.set(p, errs);
  collectErrors(p, errs);
  await p.goto(`${server.url}?backend=${backend}${query}#${hash}`);
  await p.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
  return p;
}

async function close(p: Page): Promise<void> {
  const errs = errors.get(p) ?? [];
  await p.context().close();
  assert.deepEqual(errs, [], 'no errors in the page');
}

/** Wait until view `view` has model `id` loaded. */
const loaded = (p: Page, view: string, id: string) =>
  p.waitForFunction(([v, m]) => document.querySelector(`#view-${v}`)?.getAttribute('data-model') === m, [view, id], {
    timeout: 30000,
  });

async function translate(p: Page, text = SENTENCE): Promise<void> {
  const n = Number((await p.locator('#view-translate').getAttribute('data-translated')) ?? 0);
  await p.getByTestId('src').fill(text);
  await p.getByTestId('translate').click();
  await p.waitForFunction(
    (k) => document.querySelector('#view-translate')?.getAttribute('data-translated') === String(k),
    n + 1,
    { timeout: 30000 },
  );
}

async function generate(p: Page, prompt: string, maxTokens: number): Promise<void> {
  const n = Number((await p.locator('#view-generate').getAttribute('data-generated')) ?? 0);
  await p.locator('#view-generate [data-testid="prompt"]').fill(prompt);
  await p.locator('#view-generate [data-testid="max-tokens"]').fill(String(maxTokens));
  await p.locator('#view-generate #stop-line').setChecked(false);
  await p.locator('#view-generate [data-testid="generate"]').click();
  await p.waitForFunction(
    (k) => document.querySelector('#view-generate')?.getAttribute('data-generated') === String(k),
    n + 1,
    { timeout: 30000 },
  );
}

/** A view's attention figure: 'heatmap', 'headview' or 'modelview' (its box, whatever its id). */
const fig = (p: Page, view: string, kind: string) => p.locator(`#view-${view} figure[data-figure$="${kind}"]`);
const status = async (p: Page) => (await p.getByTestId('status').textContent()) ?? '';

test('Export lists the pictures of every view; no element id is used twice', { skip }, async () => {
  const p = await open('translate');
  await translate(p);
  await p.locator('#tabs [data-view="generate"]').click();
  await loaded(p, 'generate', 'tiny-gpt');
  await generate(p, 'A dog', 6);
  await p.locator('#tabs [data-view="export"]').click();
  const rows = await p
    .locator('#export-list tr[data-figure]')
    .evaluateAll((rs) => rs.map((r) => `${r.querySelector('td')?.textContent}: ${r.getAttribute('data-figure')}`));
  for (const view of ['Translate', 'Generate'])
    assert.equal(rows.filter((r) => r.startsWith(`${view}: `)).length, 3, `${view}'s three maps in ${rows}`);
  const dup = await p.evaluate(() => {
    const seen = new Map<string, number>();
    for (const el of Array.from(document.querySelectorAll('[id]'))) seen.set(el.id, (seen.get(el.id) ?? 0) + 1);
    return [...seen].filter(([, n]) => n > 1).map(([id]) => id);
  });
  assert.deepEqual(dup, [], 'ids used more than once');
  await close(p);
});

test('the status line names the model of the view on screen', { skip }, async () => {
  const p = await open('generate');
  await loaded(p, 'generate', 'tiny-gpt');
  await loaded(p, 'translate', 'tiny-tr');
  await p.waitForTimeout(100);
  assert.match(await status(p), new RegExp(`^model: ${NAME.gpt} · `), 'opened at #generate');
  await p.locator('#tabs [data-view="translate"]').click();
  assert.match(await status(p), new RegExp(`^model: ${NAME.tr} · `));
  await p.locator('#tabs [data-view="generate"]').click();
  assert.match(await status(p), new RegExp(`^model: ${NAME.gpt} · `));
  await p.locator('#tabs [data-view="steps"]').click();
  assert.match(await status(p), new RegExp(`^model: ${NAME.gpt} · `), 'the model view last shown');
  await close(p);
  const q = await open('steps');
  await loaded(q, 'translate', 'tiny-tr');
  assert.match(await status(q), new RegExp(`^model: ${NAME.tr} · `), 'opened at #steps');
  await q.locator('#tabs [data-view="generate"]').click();
  await loaded(q, 'generate', 'tiny-gpt');
  assert.match(await status(q), new RegExp(`^model: ${NAME.gpt} · `));
  await close(q);
});

test('the attention controls stay hidden until there are maps', { skip }, async () => {
  const p = await open('translate');
  assert.equal(await p.locator('#view-translate .controls').isVisible(), false, 'before the first translation');
  assert.equal(await p.locator('#view-translate p.hint').isVisible(), false);
  await translate(p);
  assert.equal(await p.locator('#view-translate .controls').isVisible(), true);
  await p.locator('#tabs [data-view="generate"]').click();
  await loaded(p, 'generate', 'tiny-gpt');
  assert.equal(await p.locator('#view-generate .controls').first().isVisible(), false, 'before the first generation');
  await close(p);
});

test('positional encoding: a bad list or an odd dModel is refused by name, and the stale curves go', {
  skip,
}, async () => {
  const p = await open('positional');
  const err = p.locator('#view-positional .error');
  const curves = p.locator('#view-positional figure[data-figure="pe-positions"]');
  assert.equal(await curves.isVisible(), true);
  await p.locator('#pe-positions').fill('abc, -5');
  assert.equal(await err.isVisible(), true);
  const msg = (await err.textContent()) ?? '';
  assert.match(msg, /Curves of positions: 'abc' is not a whole number/);
  assert.doesNotMatch(msg, /positionalCurvesSvg/);
  assert.equal(await curves.isVisible(), false, 'the old curves are not left on screen');
  await p.locator('#pe-positions').fill('0, 10');
  assert.equal(await err.isVisible(), false);
  assert.equal(await curves.isVisible(), true);
  await p.getByTestId('pe-dmodel').fill('7');
  assert.equal(await err.isVisible(), true);
  assert.match((await err.textContent()) ?? '', /dModel must be an even whole number from 2 to 1024, got '7'/);
  assert.equal(await p.locator('#view-positional figure[data-figure="pe-heatmap"]').isVisible(), false);
  await close(p);
});

test('translate: an empty beam size is refused; an error clears the last results', { skip }, async () => {
  const p = await open('translate');
  await translate(p);
  assert.equal(await fig(p, 'translate', 'heatmap').isVisible(), true);
  await p.selectOption('#decoding', 'beam');
  await p.getByTestId('beam').fill('');
  await p.getByTestId('translate').click();
  const err = p.locator('#translate-error');
  await err.waitFor({ state: 'visible' });
  assert.match((await err.textContent()) ?? '', /beam size must be a whole number from 2 to 16, got ''/);
  assert.equal(await p.getByTestId('translation').textContent(), '');
  assert.equal(await fig(p, 'translate', 'heatmap').isVisible(), false, "the last run's maps are cleared");
  assert.equal(await p.locator('#view-translate .tokens .chip').count(), 0);
  assert.equal(await p.locator('#view-translate .controls').isVisible(), false);
  await close(p);
});

test('generate: an error clears the last results', { skip }, async () => {
  const p = await open('generate');
  await loaded(p, 'generate', 'tiny-gpt');
  await generate(p, 'A dog', 4);
  assert.equal(await fig(p, 'generate', 'heatmap').isVisible(), true);
  await p.locator('#view-generate [data-testid="prompt"]').fill('   ');
  await p.locator('#view-generate [data-testid="generate"]').click();
  await p.locator('#generate-error').waitFor({ state: 'visible' });
  assert.equal(await fig(p, 'generate', 'heatmap').isVisible(), false);
  assert.equal(await p.getByTestId('continuation').textContent(), '');
  assert.equal(await p.locator('#next-token').isVisible(), false);
  assert.equal(await p.locator('#neuron').isVisible(), false);
  assert.equal(await p.locator('#view-generate .tokens .chip').count(), 0);
  await close(p);
});

test('step by step: tokens are separated by spaces as well as commas', { skip }, async () => {
  const p = await open('steps');
  await p.locator('#tokens-input').fill('The big');
  const rows = await p.locator('#inputs table[data-matrix="Q (queries)"] tr th:first-child').allTextContents();
  assert.deepEqual(rows.slice(1), ['The', 'big']);
  await p.locator('#tokens-input').fill('one,two');
  assert.deepEqual(
    (await p.locator('#inputs table[data-matrix="Q (queries)"] tr th:first-child').allTextContents()).slice(1),
    ['one', 'two'],
  );
  await close(p);
});

test('translate: characters outside the vocabulary are named in a warning', { skip }, async () => {
  const p = await open('translate');
  const warn = p.locator('#translate-warning');
  await translate(p, 'A dog 中 runs ½.');
  assert.equal(await warn.isVisible(), true);
  const w = (await warn.textContent()) ?? '';
  assert.match(w, /'中'/);
  assert.match(w, /'½'/);
  assert.match(w, /<unk>/);
  await translate(p);
  assert.equal(await warn.isVisible(), false, 'a sentence in the vocabulary: no warning');
  await close(p);
});

test('the model chosen in the switcher is kept on reload', { skip }, async () => {
  const p = await open('translate');
  await loaded(p, 'translate', 'tiny-tr');
  await p.selectOption('#model-select', 'tiny-tr2');
  await loaded(p, 'translate', 'tiny-tr2');
  await p.reload();
  await p.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
  await loaded(p, 'translate', 'tiny-tr2');
  assert.equal(await p.locator('#model-select').inputValue(), 'tiny-tr2');
  assert.match(await status(p), new RegExp(`^model: ${NAME.tr2} · `));
  await close(p);
});

test('the GPT heatmap labels every token', { skip }, async () => {
  const lm = { model: gpt!.model, tokenizer: gpt!.tokenizer, separatorId: lineSeparatorId(gpt!.tokenizer) };
  const ref = generateWithAttention(lm, 'A dog', { maxTokens: 40, stopAtLineEnd: false });
  const T = ref.ids.length;
  const p = await open('generate');
  await loaded(p, 'generate', 'tiny-gpt');
  await generate(p, 'A dog', 40);
  const heat = fig(p, 'generate', 'heatmap');
  assert.equal(await heat.locator('rect.cell').count(), T * T);
  assert.equal(await heat.locator('.row-label').count(), T, 'a label on every row');
  assert.equal(await heat.locator('.col-label').count(), T, 'a label on every column');
  await close(p);
});

test('the tabs are a tablist: roles, aria-selected, arrow keys', { skip }, async () => {
  const p = await open('translate');
  assert.equal(await p.locator('#tabs').getAttribute('role'), 'tablist');
  const tabs = p.locator('#tabs [role="tab"]');
  assert.equal(await tabs.count(), 7);
  for (const v of ['translate', 'generate', 'flow', 'positional', 'steps', 'train', 'export']) {
    const tab = p.locator(`#tabs [data-view="${v}"]`);
    assert.equal(await tab.getAttribute('aria-controls'), `view-${v}`);
    const panel = p.locator(`#view-${v}`);
    assert.equal(await panel.getAttribute('role'), 'tabpanel');
    assert.equal(await panel.getAttribute('aria-labelledby'), await tab.getAttribute('id'));
  }
  const selected = () => p.locator('#tabs [aria-selected="true"]').getAttribute('data-view');
  assert.equal(await selected(), 'translate');
  assert.equal(await p.locator('#tabs [data-view="translate"]').getAttribute('tabindex'), '0');
  assert.equal(await p.locator('#tabs [data-view="steps"]').getAttribute('tabindex'), '-1');
  await p.locator('#tabs [data-view="translate"]').focus();
  await p.keyboard.press('ArrowRight');
  assert.equal(await selected(), 'generate');
  assert.equal(await p.evaluate(() => document.activeElement?.getAttribute('data-view')), 'generate');
  assert.equal(await p.locator('#view-generate').isVisible(), true);
  await p.keyboard.press('End');
  assert.equal(await selected(), 'export', 'End');
  assert.equal(await p.evaluate(() => document.activeElement?.getAttribute('data-view')), 'export');
  await p.keyboard.press('ArrowRight');
  assert.equal(await selected(), 'translate', 'wraps around');
  const focusedTab = () => p.evaluate(() => document.activeElement?.getAttribute('data-view'));
  assert.equal(await focusedTab(), 'translate', 'the focus follows');
  await p.keyboard.press('ArrowLeft');
  assert.equal(await selected(), 'export', 'wraps back');
  await p.keyboard.press('Home');
  assert.equal(await selected(), 'translate', 'Home');
  assert.equal(await p.locator('#view-translate').isVisible(), true);
  await close(p);
});

test('the status is live; errors are alerts', { skip }, async () => {
  const p = await open('translate');
  assert.equal(await p.getByTestId('status').getAttribute('aria-live'), 'polite');
  for (const sel of ['#translate-error', '#view-positional .error', '#view-steps .error'])
    assert.equal(await p.locator(sel).first().getAttribute('role'), 'alert', sel);
  await p.locator('#tabs [data-view="generate"]').click();
  await loaded(p, 'generate', 'tiny-gpt');
  assert.equal(await p.locator('#generate-error').getAttribute('role'), 'alert');
  await close(p);
});

test('heatmap cells and model-view thumbnails are reachable and readable by keyboard', { skip }, async () => {
  const p = await open('translate');
  await translate(p);
  const heat = fig(p, 'translate', 'heatmap');
  const focusable = heat.locator('rect.cell[tabindex="0"]');
  assert.equal(await focusable.count(), 1, 'one tab stop in the grid');
  assert.equal(await heat.locator('rect.cell[aria-label]').count(), 1, 'the tab stop alone is labelled');
  await focusable.focus();
  const active = () =>
    p.evaluate(() => {
      const a = document.activeElement!;
      return { row: a.getAttribute('data-row'), col: a.getAttribute('data-col'), label: a.getAttribute('aria-label') };
    });
  const a0 = await active();
  assert.deepEqual([a0.row, a0.col], ['0', '0']);
  assert.match(a0.label ?? '', /^<s> → .+: \d\.\d{4}$/, 'the tokens and the value');
  await p.keyboard.press('ArrowRight');
  const a1 = await active();
  assert.deepEqual([a1.row, a1.col], ['0', '1']);
  assert.match(a1.label ?? '', /^<s> → .+: \d\.\d{4}$/, 'the cell moved to is read out');
  assert.equal(await heat.locator('rect.cell[tabindex]').count(), 1, 'still one tab stop');
  await p.keyboard.press('ArrowDown');
  assert.deepEqual(Object.values(await active()).slice(0, 2), ['1', '1']);
  // Enter follows the row's token in the head view, as a click does.
  const before = await fig(p, 'translate', 'headview').innerHTML();
  await p.keyboard.press('Enter');
  assert.notEqual(await fig(p, 'translate', 'headview').innerHTML(), before);

  const thumbs = fig(p, 'translate', 'modelview').locator('g.thumb');
  assert.equal(await thumbs.count(), LAYERS * HEADS);
  const t = fig(p, 'translate', 'modelview').locator('g.thumb[data-layer="1"][data-head="1"]');
  assert.equal(await t.getAttribute('tabindex'), '0');
  assert.equal(await t.getAttribute('role'), 'button');
  assert.equal(await t.getAttribute('aria-label'), 'layer 2, head 2');
  await t.focus();
  await p.keyboard.press('Enter');
  assert.equal(await p.locator('#view-translate select[id$="layer"]').inputValue(), '1');
  assert.equal(await p.locator('#view-translate select[id$="head"]').first().inputValue(), '1');
  assert.ok(GPT_LAYERS * GPT_HEADS > 0);
  await close(p);
});

test('a model runs off the main thread: no long task while it runs, progress after half a second', {
  skip,
}, async () => {
  const p = await open('generate', '&model=slow-gpt', 'js');
  await loaded(p, 'generate', 'slow-gpt');
  const t0 = await p.evaluate(() => {
    const w = window as unknown as { longTasks: { start: number; duration: number }[] };
    w.longTasks = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) w.longTasks.push({ start: e.startTime, duration: e.duration });
    }).observe({ type: 'longtask' });
    return performance.now();
  });
  const progress = p.locator('#view-generate .progress');
  const sawProgress = progress
    .waitFor({ state: 'visible', timeout: 30000 })
    .then(() => true)
    .catch(() => false);
  await generate(p, 'A dog', 100);
  const run = await p.evaluate(() => performance.getEntriesByName('qkv:generate').at(-1)?.toJSON());
  const end = run ? run.startTime + run.duration : Number.POSITIVE_INFINITY;
  const tasks = await p.evaluate(
    () => (window as unknown as { longTasks: { start: number; duration: number }[] }).longTasks,
  );
  const during = tasks.filter((t) => t.start >= t0 && t.start < end && t.duration > 100);
  assert.deepEqual(during, [], 'no task over 100 ms on the main thread while the model runs');
  assert.ok(run && run.duration > 500, `the run took ${run?.duration} ms: long enough to show progress`);
  assert.equal(await sawProgress, true, 'a progress line while it ran');
  assert.equal(await progress.isVisible(), false, 'gone when done');
  await close(p);
});

test('a long run can be cancelled; the page goes on with the same model', { skip }, async () => {
  const p = await open('generate', '&model=slow-gpt', 'js');
  await loaded(p, 'generate', 'slow-gpt');
  const form = p.locator('#view-generate');
  await form.locator('[data-testid="prompt"]').fill('A dog');
  await form.locator('[data-testid="max-tokens"]').fill('120');
  await form.locator('#stop-line').setChecked(false);
  await form.locator('[data-testid="generate"]').click();
  const progress = form.locator('.progress');
  await progress.waitFor({ state: 'visible', timeout: 30000 });
  assert.match((await progress.textContent()) ?? '', /generating… \d+\.\d s/);
  await progress.getByRole('button', { name: 'Cancel' }).click();
  const err = p.locator('#generate-error');
  await err.waitFor({ state: 'visible' });
  assert.match((await err.textContent()) ?? '', /^Cancelled after \d+\.\d s\.$/);
  assert.equal(await form.locator('[data-testid="generate"]').isEnabled(), true);
  assert.equal(await progress.isVisible(), false);
  assert.equal(await form.getAttribute('data-generated'), null, 'nothing was shown');
  // The next run: the same model, opened again in a new worker.
  await generate(p, 'A dog', 3);
  assert.equal(((await p.getByTestId('continuation').textContent()) ?? '').length > 0, true);
  assert.equal(await err.isVisible(), false);
  await close(p);
});

test("a cancel in one view leaves the other's results working (the next-token view redraws)", { skip }, async () => {
  const p = await open('generate', '&model=tiny-gpt', 'js');
  await loaded(p, 'generate', 'tiny-gpt');
  await generate(p, 'A dog', 4);
  const kept = () => p.locator('#next-token-mass').getAttribute('data-kept');
  assert.notEqual(await kept(), '3');
  // A long translation, cancelled.
  await p.selectOption('#model-select', 'slow-tr');
  await loaded(p, 'translate', 'slow-tr');
  await p.getByTestId('src').fill(SLOW_SENTENCE);
  await p.getByTestId('translate').click();
  const progress = p.locator('#view-translate .progress');
  await progress.waitFor({ state: 'visible', timeout: 30000 });
  assert.match((await progress.textContent()) ?? '', /translating… \d+\.\d s/);
  await progress.getByRole('button', { name: 'Cancel' }).click();
  await p.locator('#translate-error').waitFor({ state: 'visible' });
  assert.match((await p.locator('#translate-error').textContent()) ?? '', /^Cancelled after /);
  // Back in Generate: the next-token view still follows the sampling controls.
  await p.locator('#tabs [data-view="generate"]').click();
  await p.getByTestId('top-k').fill('3');
  await p.waitForFunction(() => document.querySelector('#next-token-mass')?.getAttribute('data-kept') === '3', null, {
    timeout: 10000,
  });
  assert.equal(await p.locator('#next-token .error').isVisible(), false);
  await close(p);
});

test('a layer or head change moves the model view selection in place; its download has the new one', {
  skip,
}, async () => {
  const p = await open('generate');
  await loaded(p, 'generate', 'tiny-gpt');
  await generate(p, 'A dog', 6);
  const model = fig(p, 'generate', 'modelview');
  // A mark on the drawn grid: gone if the grid is parsed again.
  await model
    .locator('g.thumb')
    .first()
    .evaluate((g) => g.setAttribute('data-probe', 'kept'));
  await p.selectOption('#gpt-layer', '1');
  await p.selectOption('#gpt-head', '0');
  assert.equal(await model.locator('[data-probe="kept"]').count(), 1, 'the grid was not drawn again');
  assert.deepEqual(
    await model.locator('g.thumb.selected').evaluateAll((gs) => gs.map((g) => `${g.dataset.layer}/${g.dataset.head}`)),
    ['1/0'],
  );
  assert.equal(await model.locator('g.thumb.selected rect.frame').getAttribute('stroke'), '#d62728');
  assert.equal(await model.locator('g.thumb[data-layer="0"][data-head="0"] rect.frame').getAttribute('stroke'), '#bbb');
  // The Export list's SVG is the model view with the selection now on screen.
  await p.locator('#tabs [data-view="export"]').click();
  const svg = await p.evaluate(async () => {
    const row = document.querySelector('#export-list tr[data-figure="gpt-modelview"]')!;
    const got = new Promise<string>((resolve) => {
      const orig = URL.createObjectURL;
      URL.createObjectURL = (b: Blob | MediaSource) => {
        void (b as Blob).text().then(resolve);
        URL.createObjectURL = orig;
        return orig(b);
      };
    });
    row.querySelector<HTMLButtonElement>('button')!.click();
    return got;
  });
  assert.match(svg, /<g class="thumb selected" data-layer="1" data-head="0">/);
  assert.equal((svg.match(/class="thumb selected"/g) ?? []).length, 1);
  await close(p);
});
