/**
 * Training live in the page (issue 47, point 5), in headless Chromium: the Train view trains a
 * character GPT on the sonnets in the model worker (wasm backend, its threads on Web Workers), and
 * - the loss goes down, and the sample's attention changes as it learns;
 * - Pause stops the steps (none while paused), Resume goes on from there, and every step's loss is
 *   the one qkv's LmTrainer gives in Node for the same text, shape and recipe, bit for bit: the page
 *   trains with the library's trainer, and pausing changes nothing;
 * - Save downloads a zip of the folder (config.json, tokenizer.json, model.safetensors under
 *   NAME/), which `qkv generate --model NAME` reads and continues the prompt exactly as the page's
 *   model did at that step.
 * The page picks the wasm backend itself (?backend=wasm), so this runs in one backend pass only.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { setBackend } from '../../src/backend/backend.ts';
import { lineSeparatorId } from '../../src/folder/gpt.ts';
import { readZip } from '../../src/io/zip.ts';
import { GPT } from '../../src/models/gpt.ts';
import type { ExploreServer } from '../../src/server/static.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { CharTokenizer } from '../../src/text/chars.ts';
import { encodeLines } from '../../src/text/lines.ts';
import { LmTrainer } from '../../src/train/lm.ts';
import { SONNETS } from '../../web/src/train-text.ts';
import { qkv } from '../helpers/cli.ts';
import { toolSkip } from '../helpers/tools.ts';
import { closeAll, launchChromium, openExplorer, recordedReplies, serveExplorer } from './chromium.ts';
import { tempDir } from './tiny-model.ts';

const skip = toolSkip('chromium');
/** The run: small enough to take a few seconds; the prompt's characters are all in the sonnets. */
const SHAPE = { nLayer: 2, nHead: 2, nEmbd: 32, blockSize: 32 };
const RECIPE = { batchSize: 8, lr: 0.01, warmup: 5, steps: 400, seed: 3 };
const PROMPT = 'Shall I';
const MAX_TOKENS = 20;
const NAME = 'gpt-test';

let browser: Browser;
let server: ExploreServer;

before(async () => {
  if (skip) return;
  server = await serveExplorer({ models: [] });
  browser = await launchChromium();
});

after(() => closeAll(browser, server));

interface Slice {
  step: number;
  steps: { step: number; loss: number; lr: number }[];
  smoothed: number;
  valLoss: number;
  sample: { continuation: string; lineEnded: boolean; attention: number[][][][] };
}

/** The trainSteps answers so far (a reply with `steps` and `sample`), in order. */
async function slices(p: Page): Promise<Slice[]> {
  const all = await recordedReplies(p);
  return all.map((r) => JSON.parse(r) as Slice).filter((v) => v && Array.isArray(v.steps) && v.sample);
}

const stepOf = async (p: Page) => Number((await p.locator('#view-train').getAttribute('data-step')) ?? 0);
const stateOf = (p: Page) => p.locator('#view-train').getAttribute('data-state');

async function waitState(p: Page, state: string): Promise<void> {
  await p.waitForFunction((s) => document.querySelector('#view-train')?.getAttribute('data-state') === s, state, {
    timeout: 60000,
  });
}

async function waitStep(p: Page, atLeast: number): Promise<void> {
  await p.waitForFunction(
    (n) => Number(document.querySelector('#view-train')?.getAttribute('data-step') ?? 0) >= n,
    atLeast,
    { timeout: 120000 },
  );
}

/** The same run in Node: LmTrainer on the same lines, model and recipe, on the wasm backend. */
function nodeLosses(steps: number): number[] {
  setBackend('wasm');
  const lines = SONNETS.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const nVal = Math.max(1, Math.floor(lines.length / 10));
  const train = lines.slice(0, -nVal);
  const tokenizer = CharTokenizer.learn(train);
  const ids = encodeLines(tokenizer, train, lineSeparatorId(tokenizer));
  manualSeed(RECIPE.seed);
  const model = new GPT({ vocabSize: tokenizer.vocabSize, dropout: 0, positions: 'learned', ...SHAPE });
  const trainer = new LmTrainer(model, ids, {
    batchSize: RECIPE.batchSize,
    lr: RECIPE.lr,
    minLr: RECIPE.lr / 10,
    warmup: RECIPE.warmup,
    decaySteps: RECIPE.steps,
    seed: RECIPE.seed,
  });
  return Array.from({ length: steps }, () => trainer.step().loss);
}

test('train in the page: the loss falls, pause and resume, and the saved folder generates as the page does', {
  skip,
}, async () => {
  const errors: string[] = [];
  const p = await openExplorer(browser, `${server.url}?backend=wasm#train`, errors, {
    record: 'value',
    context: { acceptDownloads: true },
  });
  assert.match((await p.getByTestId('status').getAttribute('title')) ?? '', /^wasm backend/);
  assert.equal(await stateOf(p), 'idle');
  assert.ok(await p.getByTestId('train-pause').isDisabled(), 'nothing to pause before a run');

  const set = async (id: string, v: number | string) => p.getByTestId(id).fill(String(v));
  await set('train-layers', SHAPE.nLayer);
  await set('train-heads', SHAPE.nHead);
  await set('train-width', SHAPE.nEmbd);
  await set('train-context', SHAPE.blockSize);
  await set('train-batch', RECIPE.batchSize);
  await set('train-lr', RECIPE.lr);
  await set('train-warmup', RECIPE.warmup);
  await set('train-steps', RECIPE.steps);
  await set('train-seed', RECIPE.seed);
  await set('train-prompt', PROMPT);
  await set('train-max-tokens', MAX_TOKENS);
  await set('train-name', NAME);
  await p.getByTestId('train-start').click();

  // Some steps, then pause: the state says so once the slice under way has ended, and no step follows.
  await waitStep(p, 30);
  await p.getByTestId('train-pause').click();
  await waitState(p, 'paused');
  const pausedAt = await stepOf(p);
  const slicesAtPause = (await slices(p)).length;
  await p.waitForTimeout(1500);
  assert.equal(await stepOf(p), pausedAt, 'no step while paused');
  assert.equal((await slices(p)).length, slicesAtPause, 'no slice asked for while paused');
  assert.ok(await p.getByTestId('train-pause').isDisabled());
  assert.match(
    (await p.getByTestId('train-status').textContent()) ?? '',
    new RegExp(`^step ${pausedAt} / 400 .* paused$`),
  );

  // Resume: on from there, then pause again.
  await p.getByTestId('train-resume').click();
  await waitStep(p, pausedAt + 30);
  await p.getByTestId('train-pause').click();
  await waitState(p, 'paused');
  const last = await stepOf(p);

  const got = await slices(p);
  const losses = got.flatMap((s) => s.steps);
  assert.deepEqual(
    losses.map((s) => s.step),
    Array.from({ length: last }, (_, i) => i + 1),
    'every step once, in order, across the pause',
  );
  // The library's trainer in Node, uninterrupted: the same losses, bit for bit.
  assert.deepStrictEqual(
    losses.map((s) => s.loss),
    nodeLosses(last),
  );
  // It learns: from about ln(vocabulary) to well under it, on the training and the held-out lines.
  const first = got[0];
  const end = got[got.length - 1];
  assert.ok(losses[0].loss > 3.5, `first loss ${losses[0].loss}`);
  assert.ok(end.smoothed < losses[0].loss - 0.8, `moving average ${end.smoothed} after ${last} steps`);
  assert.ok(
    end.valLoss < first.valLoss && end.valLoss < losses[0].loss - 0.8,
    `validation loss ${first.valLoss} after step ${first.step} → ${end.valLoss}`,
  );
  // The sample's attention is the model's as it is: it changes as it learns, and the page draws it.
  assert.notDeepStrictEqual(end.sample.attention, first.sample.attention);
  assert.ok((await p.locator('[data-testid="fig-train-heatmap"] rect.cell').count()) > 0, 'the heatmap is drawn');
  assert.ok((await p.locator('[data-testid="fig-train-loss"] polyline.series').count()) === 2, 'two loss curves');
  assert.equal(await p.getByTestId('train-continuation').textContent(), end.sample.continuation);

  // Save: one zip holding the folder; qkv generate reads it and continues the prompt as the page did.
  const [download] = await Promise.all([p.waitForEvent('download'), p.getByTestId('train-save').click()]);
  assert.equal(download.suggestedFilename(), `${NAME}.zip`);
  const zip = readZip(new Uint8Array(readFileSync(await download.path())), `${NAME}.zip`);
  const names = [...zip.entries.keys()].sort();
  assert.deepEqual(names, [`${NAME}/config.json`, `${NAME}/model.safetensors`, `${NAME}/tokenizer.json`]);
  const out = tempDir('qkv-train-saved-');
  for (const n of names) {
    mkdirSync(dirname(join(out, n)), { recursive: true });
    writeFileSync(join(out, n), zip.read(n));
  }
  const config = JSON.parse(readFileSync(join(out, NAME, 'config.json'), 'utf8'));
  assert.equal(config.format, 'qkv-gpt');
  assert.equal(config.training.steps, last);
  const r = qkv([
    'generate',
    '--model',
    join(out, NAME),
    '--prompt',
    PROMPT,
    '--max-tokens',
    String(MAX_TOKENS),
    '--temperature',
    '0',
  ]);
  assert.equal(r.status, 0, r.stderr);
  const page = PROMPT + end.sample.continuation;
  // The page stops at the line's end; qkv generate writes its MAX_TOKENS tokens.
  if (end.sample.lineEnded) assert.ok(r.stdout.startsWith(`${page}\n`), `qkv: ${r.stdout}\npage: ${page}`);
  else assert.equal(r.stdout, `${page}\n`);
  assert.match(
    (await p.getByTestId('train-saved').textContent()) ?? '',
    new RegExp(`Saved ${NAME}\\.zip at step ${last}`),
  );
  // The Train view's ids are its own (train-…): none is used twice on the page.
  const ids = await p.evaluate(() => Array.from(document.querySelectorAll('[id]'), (e) => e.id));
  assert.deepEqual(
    ids.filter((id, i) => ids.indexOf(id) !== i),
    [],
  );
  assert.deepEqual(errors, []);
  await p.context().close();
});
