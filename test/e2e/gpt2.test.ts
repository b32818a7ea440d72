/**
 * A GPT folder opened in the page (Chromium, playwright-core): the explorer is started without a
 * model, the PyTorch-written Hugging Face GPT-2 fixture is opened through the folder picker, and
 * in the browser:
 *  - the causal attention of the prompt, every layer × head, equals PyTorch's (fixture);
 *  - the next-token view's probabilities are the softmax of PyTorch's last logits and Node's
 *    nextTokenView, sum to the shown mass, and follow top-k live;
 *  - the neuron view's softmax equals the heatmap's attention row (and PyTorch's);
 *  - bad folders (another model_type, an unsupported tokenizer.json, a truncated safetensors, a
 *    model too large for the page, missing files) give one message and the page keeps working.
 * Runs once per backend pass (QKV_BACKEND=wasm opens ?backend=wasm, else js).
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tempDir } from './tiny-model.ts';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import type { ExploreServer } from '../../src/server/static.ts';
import { io } from '../../src/index.ts';
import { pipeline } from '../../src/pipelines/index.ts';
import { generateWithAttention, loadGptFromFiles } from '../../src/viz/gpt-attention.ts';
import { lastLogits, nextTokenView } from '../../src/viz/next-token.ts';
import { toolSkip } from '../helpers/tools.ts';
import { BACKEND, closeAll, collectErrors, launchChromium, serveExplorer } from './chromium.ts';

const FIX = fileURLToPath(new URL('../fixtures/hf-gpt2-tiny/', import.meta.url));
const PROMPT = 'A man is riding a bike';
const skip = toolSkip('chromium');

const readFix = (name: string) => new Uint8Array(readFileSync(join(FIX, name)));
const fixJson = (name: string) => JSON.parse(readFileSync(join(FIX, name), 'utf8')) as Record<string, unknown>;
const expected = io.readSafetensors(readFix('expected.safetensors')).tensors;
// The prompt alone, as pipeline('text-generation') feeds a GPT-2 folder (its tokenizer adds no special token).
const inputIds = Array.from(expected.prompt_ids.dataSync<Int32Array>());
const T0 = inputIds.length;
const [, , V] = expected.prompt_logits.shape;
const torchAttn = (l: number) => expected[`prompt_attn.${l}`].dataSync<Float32Array>();
const NH = 4;

/** A fresh page on the server, ready, collecting its errors. */
async function openPage(url: string): Promise<{ p: Page; errs: string[] }> {
  const p = await browser.newPage();
  const errs: string[] = [];
  p.on('pageerror', (e) => errs.push(e.message));
  await p.goto(`${url}?backend=${BACKEND}`);
  await p.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
  return { p, errs };
}

/** A copy of the fixture folder (named `name`) with some files replaced or left out. */
function folder(name: string, replace: Record<string, string | Uint8Array | null> = {}): string {
  const dir = join(tempDir('qkv-gpt2-e2e-'), name);
  mkdirSync(dir, { recursive: true });
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors']) {
    if (f in replace) {
      if (replace[f] !== null) writeFileSync(join(dir, f), replace[f]!);
    } else copyFileSync(join(FIX, f), join(dir, f));
  }
  return dir;
}

function readHeatmap(p: Page): Promise<{ rows: number; cols: number; values: number[][] }> {
  return p.evaluate(() => {
    const svg = document.querySelector('#view-generate [data-testid="fig-gpt-heatmap"] svg')!;
    const rows = Number(svg.getAttribute('data-rows'));
    const cols = Number(svg.getAttribute('data-cols'));
    const values = Array.from({ length: rows }, () => new Array<number>(cols).fill(Number.NaN));
    for (const c of Array.from(svg.querySelectorAll('rect.cell'))) {
      const m = /: (-?[\d.]+)( \(masked\))?$/.exec(c.querySelector('title')?.textContent ?? '');
      values[Number(c.getAttribute('data-row'))][Number(c.getAttribute('data-col'))] = m ? Number(m[1]) : Number.NaN;
    }
    return { rows, cols, values };
  });
}

const softmax = (x: ArrayLike<number>) => {
  const a = Array.from(x);
  const m = Math.max(...a);
  const e = a.map((v) => Math.exp(v - m));
  const z = e.reduce((s, v) => s + v, 0);
  return e.map((v) => v / z);
};

let browser: Browser;
let server: ExploreServer;
let page: Page;
const errors: string[] = [];

before(async () => {
  if (skip) return;
  server = await serveExplorer({ modelDir: null });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  // The page asks for model/config.json first; this server serves none (404), as intended.
  collectErrors(page, errors, (m) => m.location().url.endsWith('/model/config.json'));
  await page.goto(`${server.url}?backend=${BACKEND}#generate`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
});

after(() => closeAll(browser, server));

/** Open a folder through the picker; resolves when the page has opened it or said why not. */
async function open(dir: string): Promise<{ ok: boolean; status: string }> {
  const before = await page.evaluate(() => {
    const d = document.querySelector<HTMLElement>('#view-generate')!.dataset;
    return Number(d.opened ?? 0) + Number(d.openFailed ?? 0);
  });
  await page.locator('#folder-input').setInputFiles(dir);
  await page.waitForFunction(
    (n) => {
      const d = document.querySelector<HTMLElement>('#view-generate')!.dataset;
      return Number(d.opened ?? 0) + Number(d.openFailed ?? 0) > n;
    },
    before,
    { timeout: 30000 },
  );
  const status = (await page.getByTestId('folder-status').textContent()) ?? '';
  return { ok: !status.startsWith('Could not'), status };
}

async function generate(n: number): Promise<void> {
  const before = Number((await page.locator('#view-generate').getAttribute('data-generated')) ?? 0);
  await page.getByTestId('generate').click();
  await page.waitForFunction(
    (k) => Number(document.querySelector('#view-generate')?.getAttribute('data-generated') ?? 0) > k,
    before,
  );
  assert.equal(
    Number(await page.locator('#view-generate').getAttribute('data-generated')),
    before + 1,
    `generation ${n}`,
  );
}

test('open the PyTorch GPT-2 fixture folder with the picker; attention, next token and neuron view match', {
  skip,
}, async () => {
  assert.equal(await page.evaluate(() => crossOriginIsolated), true);
  assert.match((await page.getByTestId('status').textContent()) ?? '', new RegExp(`backend: ${BACKEND}`));
  assert.match(
    (await page.getByTestId('model-info').textContent()) ?? '',
    /No model is being served\..* Or open a GPT folder above/,
  );

  const r = await open(FIX);
  assert.ok(r.ok, r.status);
  assert.match(r.status, /^opened hf-gpt2-tiny: 0\.2 MB in [\d.]+ s$/);
  assert.match(
    (await page.getByTestId('model-info').textContent()) ?? '',
    /^Model hf-gpt2-tiny: Hugging Face GPT-2 from a local folder, 2 layers, 4 heads, nEmbd 32, context 32 tokens, vocabulary 317 \(byte-level BPE\), [\d,]+ parameters\. Weights held in fp32: 0\.1 MB(; WebAssembly memory: [\d.]+ MB)?\.$/,
  );
  assert.match((await page.getByTestId('status').textContent()) ?? '', /^model: hf-gpt2-tiny · backend: /);

  // Node's model from the same files: the page must generate what Node generates.
  const lm = loadGptFromFiles(fixJson('config.json'), fixJson('tokenizer.json'), readFix('model.safetensors'));
  const ref = generateWithAttention(lm, PROMPT, { maxTokens: 6, temperature: 1, seed: 5, stopAtLineEnd: false });
  assert.deepEqual(ref.ids.slice(0, T0), inputIds, 'the page feeds the prompt alone, as the pipeline and the fixture');
  await page.getByTestId('prompt').fill(PROMPT);
  await page.selectOption('#sampling', 'sample');
  await page.getByTestId('temperature').fill('1');
  await page.getByTestId('seed').fill('5');
  await page.getByTestId('max-tokens').fill('6');
  await page.locator('#stop-line').uncheck();
  await generate(1);
  assert.equal(
    await page.getByTestId('continuation').textContent(),
    ref.continuation,
    'the browser samples as Node does',
  );
  const T = ref.ids.length;

  // The prompt's attention, every layer × head, is PyTorch's (cells show 4 decimals).
  for (let l = 0; l < 2; l++) {
    for (let hd = 0; hd < NH; hd++) {
      await page.selectOption('#gpt-layer', String(l));
      await page.selectOption('#gpt-head', String(hd));
      const { rows, cols, values } = await readHeatmap(page);
      assert.deepEqual([rows, cols], [T, T]);
      const torch = torchAttn(l);
      for (let i = 0; i < T0; i++) {
        for (let j = 0; j < T0; j++) {
          const want = torch[(hd * T0 + i) * T0 + j];
          assert.ok(
            Math.abs(values[i][j] - want) < 1.5e-4,
            `layer ${l + 1} head ${hd + 1} (${i}, ${j}): ${values[i][j]} vs PyTorch ${want}`,
          );
        }
      }
    }
  }

  // Next token after the prompt: softmax of PyTorch's last logits, summing to the shown mass.
  const readNext = () =>
    page.evaluate(() => ({
      rows: Array.from(document.querySelectorAll('#next-token-table tbody tr')).map((r) => ({
        id: Number(r.getAttribute('data-id')),
        p: Number(r.getAttribute('data-p')),
      })),
      mass: Number(document.querySelector('#next-token-mass')!.getAttribute('data-mass')),
      kept: Number(document.querySelector('#next-token-mass')!.getAttribute('data-kept')),
      sampled: Number(document.querySelector('#next-token-sampled')!.getAttribute('data-id')),
    }));
  const torchP = softmax(expected.prompt_logits.dataSync<Float32Array>().subarray((T0 - 1) * V, T0 * V));
  const node = nextTokenView(lastLogits(lm.model, inputIds), { temperature: 1, seed: 5 });
  let shown = await readNext();
  assert.equal(shown.rows.length, 20);
  assert.equal(shown.kept, V);
  assert.ok(Math.abs(shown.rows.reduce((s, r) => s + r.p, 0) - shown.mass) < 1e-9, 'the rows sum to the shown mass');
  assert.ok(Math.abs(shown.mass - node.shownMass) < 1e-6);
  shown.rows.forEach((r, i) => {
    assert.equal(r.id, node.top[i].id, `rank ${i + 1}`);
    assert.ok(Math.abs(r.p - node.top[i].p) < 1e-6, `p of ${r.id}: page ${r.p}, Node ${node.top[i].p}`);
    assert.ok(Math.abs(r.p - torchP[r.id]) < 1e-4, `p of ${r.id}: page ${r.p}, PyTorch ${torchP[r.id]}`);
  });
  assert.equal(shown.sampled, node.sampled);
  // Live: top-k 5 keeps 5 tokens, renormalised; nothing is run again (same generation count).
  await page.getByTestId('top-k').fill('5');
  // The view is drawn from the model worker's answer: waited for.
  await page.waitForFunction(() => document.querySelector('#next-token-mass')?.getAttribute('data-kept') === '5');
  shown = await readNext();
  assert.equal(shown.kept, 5);
  assert.ok(Math.abs(shown.mass - 1) < 1e-9);
  assert.equal(shown.rows.filter((r) => r.p > 0).length, 5);
  const top5 = torchP
    .map((p, id) => ({ p, id }))
    .sort((a, b) => b.p - a.p)
    .slice(0, 5);
  const z = top5.reduce((s, t) => s + t.p, 0);
  top5.forEach((t, i) => assert.ok(Math.abs(shown.rows[i].p - t.p / z) < 1e-4));
  await page.getByTestId('top-k').fill('0');

  // Neuron view: its softmax is the heatmap's row, for the last prompt token and the last token.
  for (const [l, hd, q] of [
    [1, 2, T0 - 1],
    [0, 3, T - 1],
  ]) {
    await page.selectOption('#neuron-layer', String(l));
    await page.selectOption('#neuron-head', String(hd));
    await page.selectOption('#neuron-query', String(q));
    await page.selectOption('#gpt-layer', String(l));
    await page.selectOption('#gpt-head', String(hd));
    await page.waitForFunction((want) => {
      const o = document.querySelector<HTMLElement>('#neuron-out');
      return `${o?.dataset.layer}/${o?.dataset.head}/${o?.dataset.query}` === want;
    }, `${l}/${hd}/${q}`);
    const nv = await page.evaluate(() =>
      Array.from(document.querySelectorAll('#neuron-out tbody tr')).map((r) => ({
        score: Number(r.getAttribute('data-score')),
        weight: Number(r.getAttribute('data-weight')),
      })),
    );
    assert.equal(nv.length, q + 1);
    const { values } = await readHeatmap(page);
    nv.forEach((x, j) =>
      assert.ok(
        Math.abs(x.weight - values[q][j]) < 1e-4,
        `neuron ${l}/${hd}/${q} key ${j}: ${x.weight} vs heatmap ${values[q][j]}`,
      ),
    );
    const z2 = nv.reduce((s, x) => s + Math.exp(x.score), 0);
    nv.forEach((x) => assert.ok(Math.abs(Math.exp(x.score) / z2 - x.weight) < 1e-6, 'softmax of the scores'));
    if (q === T0 - 1) {
      const torch = torchAttn(l);
      nv.forEach((x, j) => assert.ok(Math.abs(x.weight - torch[(hd * T0 + q) * T0 + j]) < 1e-4, 'PyTorch row'));
    }
  }
  assert.equal(await page.locator('#neuron-out > p .strip .cell').count(), 8, 'q has headDim = 8 numbers');
  await page.screenshot({
    path: join(fileURLToPath(new URL('.', import.meta.url)), 'screenshots', 'explorer-gpt2.png'),
    fullPage: true,
  });
  assert.deepEqual(errors, []);
});

test('bad folders: one message each, the open model keeps working', { skip }, async () => {
  const cfg = fixJson('config.json');
  const weights = readFix('model.safetensors');
  const cases: [string, string, RegExp][] = [
    [
      'albert',
      folder('albert', { 'config.json': JSON.stringify({ ...cfg, model_type: 'albert' }) }),
      /^Could not open the folder: config\.json: Hugging Face model_type 'albert' is not supported \(qkv reads model_type 'gpt2': gpt2, distilgpt2, gpt2-medium, \.\.\.; 'llama', 'qwen2', 'mistral'; 'marian': Helsinki-NLP opus-mt-\*; 'm2m_100': facebook\/nllb-200-\*, m2m100_\*; 't5': t5-\*, flan-t5-\*; 'bert', 'roberta', 'xlm-roberta', 'distilbert': encoders; and its own formats 'qkv-seq2seq' and 'qkv-gpt'\)$/,
    ],
    [
      // The kind is read first: an ALBERT folder lacking tokenizer.json is refused for its model_type too.
      'albert-no-tokenizer',
      folder('albert-no-tokenizer', {
        'config.json': JSON.stringify({ ...cfg, model_type: 'albert' }),
        'tokenizer.json': null,
      }),
      /^Could not open the folder: config\.json: Hugging Face model_type 'albert' is not supported \(qkv reads model_type 'gpt2'/,
    ],
    [
      'wordpiece',
      folder('wordpiece', {
        'tokenizer.json': JSON.stringify({
          model: { type: 'WordPiece', vocab: {} },
          pre_tokenizer: { type: 'BertPreTokenizer' },
        }),
      }),
      /^Could not open the folder: tokenizer\.json: unsupported model type 'WordPiece' \(supported: BPE, or a qkv-chars tokenizer\)$/,
    ],
    [
      'truncated',
      folder('truncated', { 'model.safetensors': weights.subarray(0, weights.length - 5000) }),
      /^Could not open the folder: model\.safetensors: safetensors: tensor '.+' has data_offsets \[\d+, \d+\] but the data buffer after the header is only \d+ bytes$/,
    ],
    [
      'gpt2-xl',
      folder('gpt2-xl', {
        'config.json': JSON.stringify({
          ...cfg,
          n_layer: 48,
          n_embd: 1600,
          n_head: 25,
          n_positions: 1024,
          vocab_size: 50257,
        }),
      }),
      /^Could not open the folder: config\.json: this model has 1,557,611,200 parameters, 6230 MB in fp32, more than the page can hold \(\d+ MB with the (js|wasm) backend.*\); gpt2, distilgpt2, gpt2-medium and gpt2-large fit$/,
    ],
    [
      'missing',
      folder('missing', { 'model.safetensors': null }),
      /^Could not open the folder: model weights not found: model\.safetensors$/,
    ],
  ];
  for (const [what, dir, re] of cases) {
    const r = await open(dir);
    assert.equal(r.ok, false, what);
    assert.match(r.status, re, what);
    // The model opened before is still in use.
    assert.match((await page.getByTestId('model-info').textContent()) ?? '', /^Model hf-gpt2-tiny: /, what);
  }
  await page.getByTestId('prompt').fill('A dog');
  await page.selectOption('#sampling', 'greedy');
  await page.getByTestId('max-tokens').fill('3');
  await generate(2);
  assert.ok(((await page.getByTestId('generated').textContent()) ?? '').startsWith('A dog'));
  // The same folder opens again after the failures.
  assert.equal((await open(FIX)).ok, true);
  assert.deepEqual(errors, []);
});

test('qkv explore --model on a Hugging Face GPT-2 folder: the page loads it from the server and generates as Node', {
  skip,
}, async () => {
  const srv = await serveExplorer({ modelDir: FIX });
  const { p, errs } = await openPage(srv.url);
  try {
    assert.equal(await p.locator('#view-generate').isVisible(), true);
    assert.equal(await p.locator('#tab-translate').isVisible(), false);
    assert.match(
      (await p.getByTestId('model-info').textContent()) ?? '',
      /^Model hf-gpt2-tiny: Hugging Face GPT-2, 2 layers, 4 heads, nEmbd 32, context 32 tokens, vocabulary 317 \(byte-level BPE\)/,
    );
    const lm = loadGptFromFiles(fixJson('config.json'), fixJson('tokenizer.json'), readFix('model.safetensors'));
    const ref = generateWithAttention(lm, 'A dog', { maxTokens: 5, stopAtLineEnd: false });
    await p.getByTestId('prompt').fill('A dog');
    await p.getByTestId('max-tokens').fill('5');
    await p.locator('#stop-line').uncheck();
    await p.getByTestId('generate').click();
    await p.waitForFunction(() => document.querySelector('#view-generate')?.getAttribute('data-generated') === '1');
    assert.equal(await p.getByTestId('continuation').textContent(), ref.continuation);
    // The page generates as pipeline('text-generation') does: the prompt alone, the folder's settings (greedy,
    // stopping at its eos_token_id), the same tokens.
    const gen = await pipeline('text-generation', FIX);
    assert.equal(await p.locator('#sampling').inputValue(), 'greedy', "the folder's do_sample (none: greedy)");
    await p.locator('#stop-line').check();
    await p.getByTestId('generate').click();
    await p.waitForFunction(() => document.querySelector('#view-generate')?.getAttribute('data-generated') === '2');
    assert.equal(await p.getByTestId('continuation').textContent(), await gen('A dog', { maxNewTokens: 5 }));
    assert.deepEqual(errs, []);
  } finally {
    await p.close();
    await srv.close();
  }
});

test('with a translation model served, the Generate tab still opens a GPT folder', { skip }, async () => {
  const { makeTinyModel } = await import('./tiny-model.ts');
  const tiny = makeTinyModel();
  const srv = await serveExplorer({ modelDir: tiny.dir });
  const { p, errs } = await openPage(srv.url);
  try {
    assert.equal(await p.locator('#view-translate').isVisible(), true);
    await p.locator('#tabs [data-view="generate"]').click();
    assert.equal(await p.locator('#view-generate').isVisible(), true);
    await p.getByTestId('generate-info').waitFor();
    assert.match(
      (await p.getByTestId('generate-info').textContent()) ?? '',
      /serves a translation model \(see Translate\)\. Open a GPT folder above/,
    );
    await p.locator('#folder-input').setInputFiles(FIX);
    await p.waitForFunction(() => document.querySelector('#view-generate')?.getAttribute('data-opened') === '1');
    assert.match(
      (await p.getByTestId('generate-info').textContent()) ?? '',
      /^Model hf-gpt2-tiny: Hugging Face GPT-2 from a local folder/,
    );
    await p.getByTestId('prompt').fill('A dog');
    await p.getByTestId('max-tokens').fill('2');
    await p.getByTestId('generate').click();
    await p.waitForFunction(() => document.querySelector('#view-generate')?.getAttribute('data-generated') === '1');
    assert.ok(((await p.getByTestId('generated').textContent()) ?? '').startsWith('A dog'));
    // Translate still works.
    await p.locator('#tabs [data-view="translate"]').click();
    await p.getByTestId('src').fill('A dog runs.');
    await p.getByTestId('translate').click();
    await p.waitForFunction(() => document.querySelector('#view-translate')?.getAttribute('data-translated') === '1');
    assert.deepEqual(errs, []);
  } finally {
    await p.close();
    await srv.close();
  }
});
