/**
 * The explorer's Flow view in headless Chromium on the folders the repository ships (models/): the
 * EN→DE translator (encoder and decoder lanes, fed its greedy translation or a typed decoder input) and
 * the character GPT show every stage of `qkv flow` in its order, and a stage opened by keyboard shows
 * exactly the numbers `qkv flow` prints for the same folder and sentence: each token's summary and
 * leading components, a head's query/key/value/output norms, every component on demand, the top next
 * tokens. The CLI runs on the backend the page runs (QKV_BACKEND; js by default). And the page never
 * blocks: a wider GPT's flow over 64 tokens runs in the worker for longer than the 100 ms long-task
 * bound while the main thread has no task over it, and a main-thread run of that length is caught.
 * Skips without Chromium on a developer machine; fails under CI=true.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { FlowJson } from '../../src/cli/commands/flow.ts';
import { saveFolderWeights } from '../../src/folder/node.ts';
import { manualSeed } from '../../src/index.ts';
import { GPT, type GPTConfig } from '../../src/models/gpt.ts';
import type { FlowRow, FlowStage } from '../../src/viz/flow.ts';
import type { ExploreServer } from '../../src/server/static.ts';
import { toolSkip } from '../helpers/tools.ts';
import { BACKEND, closeAll, collectErrors, launchChromium, ROOT, serveRepository } from './chromium.ts';
import { tempDir } from './tiny-model.ts';

const SENTENCE = 'A man is riding a bike.';
const skip = toolSkip('chromium');

let browser: Browser;
let server: ExploreServer;
let page: Page;
const errors: string[] = [];

/** `qkv flow` on a shipped folder, on the page's backend: its JSON. */
function cliFlow(model: string, sentence: string, ...flags: string[]): FlowJson {
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'src', 'cli', 'main.ts'),
      'flow',
      '--model',
      join(ROOT, 'models', model),
      sentence,
      ...flags,
    ],
    { cwd: ROOT, encoding: 'utf8', maxBuffer: 256 << 20, env: { ...process.env, QKV_BACKEND: BACKEND } },
  );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as FlowJson;
}

/**
 * The shipped character GPT's folder with a wider model of random weights (nEmbd 768, 4 layers, 28M
 * parameters, 113 MB): its flow over 64 tokens ran 4 to 12 s in the page's worker on js and 0.48 to 0.56 s on
 * wasm here (a loaded 2-core machine), where the shipped model's takes 15 to 75 ms, under the long-task bound,
 * so that a flow run on the main thread would not have been caught (issue 61). Four layers, not more: the
 * page draws every stage's lane on the main thread, and more stages make that drawing approach the bound.
 */
function wideGpt(): string {
  const dir = join(tempDir('qkv-flow-'), 'gpt-flow-wide');
  const from = join(ROOT, 'models', 'gpt-multi30k-char');
  const file = JSON.parse(readFileSync(join(from, 'config.json'), 'utf8')) as { model: GPTConfig };
  file.model = { ...file.model, nEmbd: 768, nLayer: 4, nHead: 8, dropout: 0 };
  mkdirSync(dir);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(file));
  copyFileSync(join(from, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  manualSeed(61);
  saveFolderWeights(dir, new GPT(file.model));
  return dir;
}
let wide = '';

before(async () => {
  if (skip) return;
  wide = wideGpt();
  server = await serveRepository(() => {}, [wide]);
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  collectErrors(page, errors);
  await page.goto(`${server.url}?backend=${BACKEND}#flow`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
});

after(() => closeAll(browser, server));

/** Wait until the view has drawn its n-th flow. */
async function flowed(n: number): Promise<void> {
  await page.waitForFunction(
    (k) => document.querySelector('#view-flow')?.getAttribute('data-flowed') === String(k),
    n,
    { timeout: 120000 },
  );
}

/** Open a stage by keyboard (focus its button, Enter): the detail shows it. */
async function openStage(id: string): Promise<void> {
  const b = page.locator(`#flow-lanes button[data-stage="${id}"]`);
  await b.focus();
  await page.keyboard.press('Enter');
  assert.equal(await b.getAttribute('aria-expanded'), 'true', `${id} expanded`);
  await page.waitForFunction((s) => document.querySelector('#flow-detail')?.getAttribute('data-stage') === s, id);
  assert.equal(
    await page.evaluate(() => document.activeElement?.id),
    'flow-detail-title',
    'the focus goes to the numbers',
  );
}

/** The exact numbers of a table's rows: per token, data-key → data-value. */
function tableNumbers(testid: string): Promise<Record<string, number>[]> {
  return page
    .locator(`#flow-detail [data-testid="${testid}"]`)
    .evaluate((t) =>
      Array.from(t.querySelectorAll('tr[data-token]')).map((tr) =>
        Object.fromEntries(
          Array.from(tr.querySelectorAll('[data-key]')).map((c) => [
            c.getAttribute('data-key')!,
            Number(c.getAttribute('data-value')),
          ]),
        ),
      ),
    );
}

/** A stage's rows as the page's table keys them. */
const keyed = (rows: FlowRow[]) =>
  rows.map((r) => ({
    norm: r.norm,
    mean: r.mean,
    std: r.std,
    min: r.min,
    max: r.max,
    ...Object.fromEntries(r.head.map((v, j) => [String(j), v])),
  }));

const stageOf = (j: FlowJson, id: string): FlowStage => j.stages.find((s) => s.id === id)!;

async function stageIds(): Promise<string[]> {
  return page
    .locator('#flow-lanes button[data-stage]')
    .evaluateAll((bs) => bs.map((b) => b.getAttribute('data-stage')!));
}

test('EN→DE: every stage of qkv flow, in order; an opened stage shows qkv flow’s numbers exactly', {
  skip,
}, async () => {
  await flowed(1); // the view runs its first model (the first translator) when first shown
  assert.equal(await page.locator('#flow-model').inputValue(), 'multi30k-en-de');
  const cli = cliFlow('multi30k-en-de', SENTENCE, '--full', 'enc.1.attn');
  assert.deepEqual(
    await stageIds(),
    cli.stages.map((s) => s.id),
  );
  assert.deepEqual(await page.locator('.flow-lane-box h3').allTextContents(), ['Encoder (source)', 'Decoder (target)']);
  assert.match(
    (await page.getByTestId('flow-summary').textContent()) ?? '',
    new RegExp(`The decoder is fed “${cli.text.target}” \\(the model’s greedy translation\\)`),
  );
  await openStage('enc.1.attn');
  const attn = stageOf(cli, 'enc.1.attn');
  assert.deepEqual(await tableNumbers('flow-rows'), keyed(attn.rows));
  const head = attn.heads![0];
  const q = await tableNumbers('flow-head-queries');
  assert.deepEqual(
    q.map((r) => [r['q.norm'], r['out.norm'], ...head.q[0].head.map((_, j) => r[`q.${j}`])]),
    head.q.map((r, i) => [r.norm, head.out[i].norm, ...r.head]),
  );
  const k = await tableNumbers('flow-head-keys');
  assert.deepEqual(
    k.map((r) => [r['k.norm'], r['v.norm']]),
    head.k.map((r, i) => [r.norm, head.v[i].norm]),
  );
  const cells = await page.locator('#flow-detail [data-testid="fig-flow-head"] rect.cell').count();
  assert.equal(cells, attn.rows.length ** 2, 'head 1’s map: source × source');
  await page.getByTestId('flow-full-button').click();
  await page.waitForSelector('#flow-detail [data-testid="flow-full"]');
  const full = await tableNumbers('flow-full');
  assert.deepEqual(
    full.map((r) => Array.from({ length: attn.width }, (_, j) => r[String(j)])),
    cli.full!['enc.1.attn'],
  );
  await openStage('softmax');
  const top = await page.locator('#flow-detail [data-testid="flow-top"]').evaluate((t) =>
    Array.from(t.querySelectorAll('tr[data-token]')).map((tr) =>
      Array.from(tr.querySelectorAll('td')).map((td) => ({
        id: Number(td.getAttribute('data-id')),
        logit: Number(td.querySelector('[data-key="logit"]')!.getAttribute('data-value')),
        p: Number(td.querySelector('[data-key="p"]')!.getAttribute('data-value')),
      })),
    ),
  );
  assert.deepEqual(
    top,
    stageOf(cli, 'softmax').top!.map((row) => row.map(({ id, logit, p }) => ({ id, logit, p }))),
  );
  assert.deepEqual(await tableNumbers('flow-rows'), keyed(stageOf(cli, 'softmax').rows));
  // Enter again closes it.
  await page.locator('#flow-lanes button[data-stage="softmax"]').focus();
  await page.keyboard.press('Enter');
  assert.equal(await page.locator('#flow-detail').isHidden(), true);
  assert.deepEqual(errors, []);
});

test('a typed decoder input: the decoder lane is that prefix, with qkv flow --target’s numbers', { skip }, async () => {
  await page.getByTestId('flow-target').fill('Ein Mann');
  await page.getByTestId('flow-run').click();
  await flowed(2);
  const cli = cliFlow('multi30k-en-de', SENTENCE, '--target', 'Ein Mann');
  assert.equal(cli.text.translated, false);
  assert.deepEqual(
    await stageIds(),
    cli.stages.map((s) => s.id),
  );
  assert.match((await page.getByTestId('flow-summary').textContent()) ?? '', /--target 'Ein Mann'/);
  await openStage('dec.3.cross');
  assert.deepEqual(await tableNumbers('flow-rows'), keyed(stageOf(cli, 'dec.3.cross').rows));
  const cross = stageOf(cli, 'dec.3.cross');
  assert.equal(
    await page.locator('#flow-detail [data-testid="fig-flow-head"] rect.cell').count(),
    cross.rows.length * cli.axes.source!.ids.length,
    'a cross-attention map: target × source',
  );
  assert.deepEqual(errors, []);
});

test('the shipped GPT: one lane of blocks; an MLP stage and the logits are qkv flow’s', { skip }, async () => {
  await page.getByTestId('flow-target').fill('');
  await page.locator('#flow-model').selectOption('gpt-multi30k-char');
  await flowed(3);
  assert.equal(await page.getByTestId('flow-text').inputValue(), 'A man is riding a');
  assert.equal(await page.locator('#flow-target').isVisible(), false, 'a GPT has no decoder input');
  const cli = cliFlow('gpt-multi30k-char', 'A man is riding a');
  assert.deepEqual(
    await stageIds(),
    cli.stages.map((s) => s.id),
  );
  assert.deepEqual(await page.locator('.flow-lane-box h3').allTextContents(), ['Decoder-only stack']);
  await openStage('h.2.mlp.hidden');
  assert.deepEqual(await tableNumbers('flow-rows'), keyed(stageOf(cli, 'h.2.mlp.hidden').rows));
  await openStage('logits');
  assert.deepEqual(await tableNumbers('flow-rows'), keyed(stageOf(cli, 'logits').rows));
  await openStage('h.3.attn');
  const label = await page.locator('#flow-lanes button[data-stage="h.0.attn"]').getAttribute('aria-label');
  assert.equal(label, `block 1, causal self-attention: ${cli.axes.tokens!.ids.length} × 128`);
  assert.deepEqual(errors, []);
});

/** The main thread's tasks over 50 ms (the browser's long tasks), in ms, since watchLongTasks. */
const longTasks = () => page.evaluate(() => (window as unknown as { longTasks: number[] }).longTasks);

/** Every task over the bound, in ms: what the check below fails on. */
const overBound = (tasks: number[]) => tasks.filter((d) => d > 100);

test('the page never blocks: a flow that runs past the long-task bound in the worker leaves no main-thread task over it', {
  skip,
}, async () => {
  const id = await page
    .locator('#flow-model option')
    .evaluateAll(
      (os, name) => (os as HTMLOptionElement[]).map((o) => o.value).find((v) => v.includes(name)),
      basename(wide),
    );
  assert.ok(id, 'the wide GPT is served');
  // Opened first (its load is not the flow), on a short prompt.
  await page.getByTestId('flow-text').fill('A man');
  await page.locator('#flow-model').selectOption(id);
  await flowed(4);
  await page.evaluate(() => {
    const w = window as unknown as { longTasks: number[] };
    w.longTasks = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) w.longTasks.push(e.duration);
    }).observe({ type: 'longtask' });
  });
  // 63 characters and the start token: the 64 tokens the view shows at most. The model runs, its flow is drawn.
  const prompt = 'A man in a blue shirt is riding a red bike down the busy street.'.slice(0, 63);
  await page.getByTestId('flow-text').fill(prompt);
  await page.getByTestId('flow-run').click();
  await flowed(5);
  // How long the model ran in the worker (runner.ts's measure, from the request to its answer).
  const ran = await page.evaluate(() => performance.getEntriesByName('qkv:flow').at(-1)!.duration);
  assert.ok(
    ran > 100,
    `the flow ran ${ran.toFixed(0)} ms: not past the 100 ms bound, so the check below could not fail`,
  );
  const tasks = await longTasks();
  assert.deepEqual(overBound(tasks), [], `main-thread tasks over 100 ms while the model ran ${ran.toFixed(0)} ms`);
  // Planted: the main thread busy in a task of its own (a timer's, as the page's own work is; code that the
  // test runs through the debugging protocol is no task the observer sees) for as long as the model ran, up
  // to half a second (past the bound either way). The same check sees it.
  const planted = Math.min(ran, 500);
  await page.evaluate(
    (ms) =>
      new Promise<void>((done) =>
        setTimeout(() => {
          const t0 = performance.now();
          while (performance.now() - t0 < ms) {
            // a run on the main thread, as the flow would be without the worker
          }
          done();
        }, 0),
      ),
    planted,
  );
  await page.waitForFunction(() => (window as unknown as { longTasks: number[] }).longTasks.some((d) => d > 100));
  assert.equal(overBound(await longTasks()).length, 1, 'the planted main-thread run is one task over the bound');
  assert.deepEqual(errors, []);
});
