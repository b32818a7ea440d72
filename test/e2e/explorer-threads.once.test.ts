/**
 * The wasm backend's threads in the page (issue 47, point 2), in headless Chromium: the explorer's
 * server sends COOP/COEP, so the model worker's memory is shared, and the thread pool runs on Web
 * Workers started from the model worker. backendInfo() (the status line's tooltip) reports them; the
 * page's own check finds a GEMM the pool split bit-identical to one thread's; and a translation
 * whose encoder the pool splits gives the same attention maps, float for float, on 1 and 3 threads.
 * The page picks the wasm backend itself (?backend=wasm), so this runs in one backend pass only.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { saveModelDir, saveWeights } from '../../src/cli/files.ts';
import { Seq2Seq } from '../../src/models/seq2seq.ts';
import { describeFolder, type ExploreServer } from '../../src/server/static.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { BpeTokenizer } from '../../src/text/bpe.ts';
import { toolSkip } from '../helpers/tools.ts';
import { closeAll, launchChromium, openExplorer, recordedReplies, serveExplorer } from './chromium.ts';
import { SENTENCES, tempDir } from './tiny-model.ts';

const skip = toolSkip('chromium');
/** 36 source tokens: the encoder's feed-forward GEMMs (36 × 256 × 512) are over the size the pool splits. */
const SENTENCE = [...SENTENCES.slice(0, 3), ...SENTENCES.slice(0, 3)].join(' ');

/** A random translation model wide enough for its encoder's products to be split among threads. */
function makeWideTranslation(): string {
  const dir = tempDir('qkv-wide-tr-');
  const tokenizer = BpeTokenizer.learn(SENTENCES, { vocabSize: 120, minFrequency: 1 });
  manualSeed(5);
  const model = new Seq2Seq({
    vocabSize: tokenizer.vocabSize,
    dModel: 256,
    nhead: 4,
    numEncoderLayers: 2,
    numDecoderLayers: 2,
    dimFeedforward: 512,
    dropout: 0,
    activation: 'relu',
    normFirst: false,
    maxLen: 48,
    padId: tokenizer.padId,
  });
  model.eval();
  saveModelDir(dir, model, tokenizer, { preset: 'test-wide' });
  saveWeights(join(dir, 'model.safetensors'), model.stateDict());
  return dir;
}

let browser: Browser;
let server: ExploreServer;

before(async () => {
  if (skip) return;
  server = await serveExplorer({ models: [describeFolder(makeWideTranslation(), 'wide-tr')] });
  browser = await launchChromium();
});

after(() => closeAll(browser, server));

/** What the model worker answered: each value reply, as JSON (typed arrays as lists), in order. */
interface Reply {
  id: number;
  value?: unknown;
  threads?: { launches: number };
}

/**
 * The page with `query`, once ready, its errors collected, and every reply of its model worker
 * recorded (a wrapper around the page's Worker, installed before the page's script runs).
 */
async function open(query: string): Promise<{ page: Page; errors: string[]; replies: () => Promise<Reply[]> }> {
  const errors: string[] = [];
  const page = await openExplorer(browser, `${server.url}?backend=wasm${query}#translate`, errors, {
    record: 'message',
  });
  const replies = async () => (await recordedReplies(page)).map((r) => JSON.parse(r) as Reply);
  return { page, errors, replies };
}

/** The status line's tooltip: backendInfo() in words, and the page's thread check. */
const note = async (p: Page) => (await p.getByTestId('status').getAttribute('title')) ?? '';

async function translate(p: Page, replies: () => Promise<Reply[]>): Promise<{ value: unknown; launches: number }> {
  const before = (await replies()).length;
  await p.getByTestId('src').fill(SENTENCE);
  await p.getByTestId('translate').click();
  await p.waitForFunction(() => document.querySelector('#view-translate')?.getAttribute('data-translated') === '1', {
    timeout: 60000,
  });
  const all = await replies();
  const mine = all.slice(before).find((r) => (r.value as { result?: unknown })?.result !== undefined);
  assert.ok(mine, 'the translate request was answered');
  const launchesBefore = all[before - 1]?.threads?.launches ?? 0;
  return { value: mine.value, launches: (mine.threads?.launches ?? 0) - launchesBefore };
}

test('the page reports the wasm backend on Web Workers, N > 1 threads, and its GEMM check bit-identical', {
  skip,
}, async () => {
  const { page, errors } = await open('&threads=3');
  assert.equal(await page.evaluate(() => crossOriginIsolated), true);
  const n = await note(page);
  assert.match(n, /^wasm backend \([a-z-]+\), 3 threads: Web Workers over the shared memory; /, n);
  assert.match(n, /a 192×192 GEMM is bit-identical on 1 and 3 threads/, n);
  // The default: the cores (at most 8); where Chromium reports one core, one thread and no Web Workers.
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  const def = await open('');
  const d = await note(def.page);
  const want = Math.min(cores, 8);
  if (want > 1) assert.match(d, new RegExp(`, ${want} threads: Web Workers over the shared memory; `), d);
  else assert.match(d, /, 1 thread: /, d);
  assert.deepEqual([...errors, ...def.errors], []);
});

test('a translation is the same bit for bit on 1 thread and on 3 (Web Workers), and the pool ran its products', {
  skip,
}, async () => {
  const one = await open('&threads=1');
  assert.match(await note(one.page), /, 1 thread: setNumThreads\(1\)/);
  const three = await open('&threads=3');
  const a = await translate(one.page, one.replies);
  const b = await translate(three.page, three.replies);
  assert.equal(a.launches, 0, 'one thread: nothing split');
  assert.ok(b.launches > 0, `three threads: the pool split kernels of the translation (launches ${b.launches})`);
  const r = (b.value as { result: { translation: string; encoder: number[][][][] } }).result;
  assert.ok(r.encoder.length === 2 && r.encoder[0].length === 4, 'encoder maps: 2 layers × 4 heads');
  // Every attention weight of every map, the tokens and the translation: equal as numbers (JSON keeps a double exactly).
  assert.deepStrictEqual(b.value, a.value);
  assert.match(
    (await three.page.getByTestId('status').getAttribute('title')) ?? '',
    /kernels? split among the threads so far/,
  );
  assert.deepEqual([...one.errors, ...three.errors], []);
});
