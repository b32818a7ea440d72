/**
 * The explorer on the GPU (issue 49, point 3), in headless Chromium with WebGPU (`--enable-unsafe-webgpu`; on
 * these machines the adapter is SwiftShader, a CPU implementation of Vulkan: correct and slow, so the inputs
 * are short). With `?backend=webgpu` the model worker runs the models on the webgpu backend:
 * - backendInfo() in the page says webgpu, on which adapter (the status line and its tooltip, the switch);
 * - a translation with the shipped EN→DE model (greedy and beam 2), a greedy generation with the shipped GPT and
 *   with a Hugging Face GPT-2 folder (the hf-gpt2-tiny fixture, with its next-token and neuron views), and the
 *   Flow view on the translator and the GPT give the wasm backend's tokens, with attention maps, probabilities
 *   and flow numbers within 1e-4 + 1e-4·|wasm| (float32 on both, in another order of operations; the
 *   tolerance the model path meets against PyTorch, test/webgpu/viz.test.ts's bound);
 * - the backend switch moves the same page to wasm (a new model worker, the models reopened), and is remembered;
 * - the Train view trains on webgpu (LmTrainer.stepAsync) with the wasm backend's losses within the bound below,
 *   and its Save reads the weights back from the GPU.
 * Runs once (the page picks its backends itself); skips without Chromium on a developer machine.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { readZip } from '../../src/io/zip.ts';
import { describeFolder, type ExploreServer } from '../../src/server/static.ts';
import { causalAttention, loadGptFromFiles } from '../../src/viz/gpt-attention.ts';
import { toolSkip } from '../helpers/tools.ts';
import { assertClose } from '../helpers/assert.ts';
import { closeAll, launchChromium, openExplorer, recordedReplies, ROOT, serveExplorer } from './chromium.ts';

const skip = toolSkip('chromium');
/** SwiftShader runs every shader on the machine's CPU cores: minutes, on a loaded machine. */
const SLOW = 300_000;

let browser: Browser;
let server: ExploreServer;

before(async () => {
  if (skip) return;
  server = await serveExplorer({
    models: [
      describeFolder(`${ROOT}models/multi30k-en-de`, 'multi30k-en-de'),
      describeFolder(`${ROOT}models/gpt-multi30k-char`, 'gpt-multi30k-char'),
      describeFolder(`${ROOT}test/fixtures/hf-gpt2-tiny`, 'hf-gpt2-tiny'),
    ],
  });
  browser = await launchChromium({ webgpu: true });
});

after(() => closeAll(browser, server));

/** The worker's replies so far that `keep` picks, parsed. */
async function replies<T>(p: Page, keep: (v: Record<string, unknown>) => boolean): Promise<T[]> {
  const all = await recordedReplies(p);
  return all.map((r) => JSON.parse(r) as Record<string, unknown>).filter((v) => v !== null && keep(v)) as T[];
}

/** A fresh page (its own storage) at `query`, ready, collecting its errors. */
async function open(query: string, errors: string[]): Promise<Page> {
  return openExplorer(browser, `${server.url}${query}`, errors, {
    record: 'value',
    timeout: SLOW,
    context: { acceptDownloads: true },
  });
}

const counter = async (p: Page, view: string, key: string) =>
  Number((await p.locator(`#view-${view}`).getAttribute(`data-${key}`)) ?? 0);

async function waitCounter(p: Page, view: string, key: string, n: number): Promise<void> {
  await p.waitForFunction(
    ([v, k, m]) => Number(document.querySelector(`#view-${v}`)?.getAttribute(`data-${k}`) ?? 0) >= Number(m),
    [view, key, String(n)],
    { timeout: SLOW },
  );
}

interface Translated {
  translation: string;
  outIds: number[];
  encoder: number[][][][];
  decoder: number[][][][];
  cross: number[][][][];
}

interface Generated {
  ids: number[];
  continuation: string;
  attention: number[][][][];
  /** The next-token view after the prompt: its most probable tokens. */
  next: { id: number; p: number }[];
  /** The neuron view's attention row (the page shows it after a generation). */
  neuron: number[];
}

/** Translate `text` (beam 1: greedy) in the Translate view; the worker's answer. */
async function translate(p: Page, text: string, beam: number): Promise<Translated> {
  await p.goto(`${p.url().split('#')[0]}#translate`);
  await p.getByTestId('src').fill(text);
  await p.locator('#decoding').selectOption(beam > 1 ? 'beam' : 'greedy');
  if (beam > 1) await p.getByTestId('beam').fill(String(beam));
  const n = await counter(p, 'translate', 'translated');
  await p.getByTestId('translate').click();
  await waitCounter(p, 'translate', 'translated', n + 1);
  const got = await replies<{ result: Translated }>(p, (v) => 'result' in v);
  const last = got[got.length - 1].result;
  assert.equal(await p.getByTestId('translation').textContent(), last.translation);
  return last;
}

/** Open served GPT `id` in Generate and continue `prompt` greedily for 8 tokens; the worker's answer. */
async function generate(p: Page, id: string, prompt: string): Promise<Generated> {
  await p.goto(`${p.url().split('#')[0]}#generate`);
  if ((await p.locator('#view-generate').getAttribute('data-model')) !== id) {
    await p.locator('#model-select').selectOption(id);
    await p.waitForFunction((m) => document.querySelector('#view-generate')?.getAttribute('data-model') === m, id, {
      timeout: SLOW,
    });
  }
  await p.getByTestId('prompt').fill(prompt);
  await p.getByTestId('max-tokens').fill('8');
  await p.locator('#sampling').selectOption('greedy');
  const n = await counter(p, 'generate', 'generated');
  await p.getByTestId('generate').click();
  await waitCounter(p, 'generate', 'generated', n + 1);
  const got = await replies<Generated>(p, (v) => 'attention' in v && 'continuation' in v && 'ids' in v);
  const next = await replies<{ view: { top: { id: number; p: number }[] } }>(p, (v) => 'view' in v);
  const neuron = await replies<{ weights: number[] }>(p, (v) => 'products' in v && 'weights' in v);
  return { ...got[got.length - 1], next: next[next.length - 1].view.top, neuron: neuron[neuron.length - 1].weights };
}

const flat = (s: number[][][][]) => s.flat(3);

interface Flowed {
  outline: { stages: { id: string; thumb: number[][] }[] };
  text: { text: string; target?: string };
}

interface StageNumbers {
  id: string;
  rows: { norm: number; mean: number; std: number; min: number; max: number; head: number[] }[];
  heads?: { weights: number[][] }[];
}

/** The Flow view's run of served folder `id` on `text`, and one stage of it opened (its numbers). */
async function flow(p: Page, id: string, text: string, stage: string): Promise<{ run: Flowed; stage: StageNumbers }> {
  await p.goto(`${p.url().split('#')[0]}#flow`);
  // The view runs its first model when first shown: wait for that run before asking for another.
  await p.waitForFunction(
    () =>
      Number(document.querySelector('#view-flow')?.getAttribute('data-flowed') ?? 0) >= 1 &&
      !document.querySelector<HTMLButtonElement>('#flow-run')?.disabled,
    null,
    { timeout: SLOW },
  );
  if ((await p.getByTestId('flow-model').inputValue()) !== id) {
    // Choosing a model runs it on its example sentence.
    const before = await counter(p, 'flow', 'flowed');
    await p.getByTestId('flow-model').selectOption(id);
    await waitCounter(p, 'flow', 'flowed', before + 1);
  }
  await p.getByTestId('flow-text').fill(text);
  const n = await counter(p, 'flow', 'flowed');
  await p.getByTestId('flow-run').click();
  await waitCounter(p, 'flow', 'flowed', n + 1);
  const runs = await replies<Flowed>(p, (v) => 'outline' in v);
  await p.locator(`#flow-lanes button[data-stage="${stage}"]`).click();
  await p.waitForFunction((s) => document.querySelector('#flow-detail')?.getAttribute('data-stage') === s, stage, {
    timeout: SLOW,
  });
  const stages = await replies<StageNumbers>(p, (v) => v.id === stage && Array.isArray(v.rows));
  return { run: runs[runs.length - 1], stage: stages[stages.length - 1] };
}

/** A flow's numbers: every stage's thumbnail, the opened stage's rows and heads. */
const flowNumbers = (f: { run: Flowed; stage: StageNumbers }) => [
  ...f.run.outline.stages.flatMap((s) => s.thumb.flat()),
  ...f.stage.rows.flatMap((r) => [r.norm, r.mean, r.std, r.min, r.max, ...r.head]),
  ...(f.stage.heads ?? []).flatMap((h) => h.weights.flat()),
];

test('?backend=webgpu: backendInfo says webgpu; translation, generation (GPT, GPT-2), the flow are wasm’s; the switch', {
  skip,
  timeout: 1_800_000,
}, async () => {
  const errors: string[] = [];
  const p = await open('?backend=webgpu#translate', errors);
  assert.equal(await p.locator('body').getAttribute('data-backend'), 'webgpu');
  assert.match((await p.getByTestId('status').textContent()) ?? '', /^model: multi30k-en-de · backend: webgpu$/);
  const note = (await p.getByTestId('status').getAttribute('title')) ?? '';
  assert.match(note, /^webgpu backend: kernels run on the GPU \(\w.*\)/, note);
  assert.match(note, /folders open on the wasm backend, then move to the GPU/, note);
  assert.equal(await p.getByTestId('backend-select').inputValue(), 'webgpu');
  const init = await replies<{ name: string; adapter: string | null }>(p, (v) => 'pref' in v);
  assert.equal(init[0].name, 'webgpu');
  assert.ok(init[0].adapter && note.includes(init[0].adapter), `the adapter ${init[0].adapter} in the tooltip`);

  const sentence = 'A dog runs.';
  const greedy = await translate(p, sentence, 1);
  const beam = await translate(p, sentence, 2);
  assert.match((await p.locator('#timing').textContent()) ?? '', /^\d+ ms, beam 2, webgpu backend/);
  const onGpu = {
    greedy,
    beam,
    gpt: await generate(p, 'gpt-multi30k-char', 'A dog'),
    gpt2: await generate(p, 'hf-gpt2-tiny', 'A man is'),
    flowDe: await flow(p, 'multi30k-en-de', sentence, 'dec.0.cross'),
    flowGpt: await flow(p, 'gpt-multi30k-char', 'A dog', 'h.1.attn'),
  };

  // The switch: the same page on wasm (a new model worker; the views' models opened again there).
  await p.getByTestId('backend-select').selectOption('wasm');
  await p.waitForFunction(() => document.body.dataset.backend === 'wasm', null, { timeout: SLOW });
  assert.match((await p.getByTestId('status').getAttribute('title')) ?? '', /^wasm backend/);
  assert.match(p.url(), /\?backend=wasm/);
  const onWasm = {
    flowGpt: await flow(p, 'gpt-multi30k-char', 'A dog', 'h.1.attn'),
    flowDe: await flow(p, 'multi30k-en-de', sentence, 'dec.0.cross'),
    gpt2: await generate(p, 'hf-gpt2-tiny', 'A man is'),
    gpt: await generate(p, 'gpt-multi30k-char', 'A dog'),
    greedy: await translate(p, sentence, 1),
    beam: await translate(p, sentence, 2),
  };
  for (const k of ['greedy', 'beam'] as const) {
    assert.equal(onGpu[k].translation, onWasm[k].translation, `${k}: translation`);
    assert.deepEqual(onGpu[k].outIds, onWasm[k].outIds, `${k}: ids`);
    for (const kind of ['encoder', 'decoder', 'cross'] as const)
      assertClose(flat(onGpu[k][kind]), flat(onWasm[k][kind]), `${k}: ${kind} attention`);
  }
  for (const k of ['gpt', 'gpt2'] as const) {
    assert.deepEqual(onGpu[k].ids, onWasm[k].ids, `${k}: ids`);
    assert.equal(onGpu[k].continuation, onWasm[k].continuation, `${k}: continuation`);
    assertClose(flat(onGpu[k].attention), flat(onWasm[k].attention), `${k}: attention`);
    // The next-token view: the same most probable token; each listed token's probability within the bound (two
    // tokens whose probabilities differ by rounding may trade places at the list's end).
    const [gpuNext, wasmNext] = [onGpu[k].next, onWasm[k].next];
    assert.equal(gpuNext[0].id, wasmNext[0].id, `${k}: the most probable next token`);
    const both = gpuNext.filter((t) => wasmNext.some((w) => w.id === t.id));
    assert.ok(both.length >= wasmNext.length - 1, `${k}: the next-token view lists the same tokens`);
    assertClose(
      both.map((t) => t.p),
      both.map((t) => wasmNext.find((w) => w.id === t.id)!.p),
      `${k}: the next-token view's probabilities`,
    );
    assertClose(onGpu[k].neuron, onWasm[k].neuron, `${k}: the neuron view's row`);
  }

  for (const k of ['flowDe', 'flowGpt'] as const) {
    assert.deepEqual(onGpu[k].run.text, onWasm[k].run.text, `${k}: the text (a translator: its greedy translation)`);
    assert.deepEqual(
      onGpu[k].run.outline.stages.map((st) => st.id),
      onWasm[k].run.outline.stages.map((st) => st.id),
    );
    assertClose(flowNumbers(onGpu[k]), flowNumbers(onWasm[k]), `${k}: numbers`);
  }
  assert.ok(onGpu.flowDe.stage.heads!.length > 0 && onGpu.flowGpt.stage.heads!.length > 0, 'the heads are shown');

  // Remembered: the page opened again without ?backend= runs on the switch's last choice.
  await p.goto(`${server.url}#translate`);
  await p.waitForSelector('body[data-ready="true"]', { timeout: SLOW });
  assert.equal(await p.getByTestId('backend-select').inputValue(), 'wasm');
  assert.equal(await p.locator('body').getAttribute('data-backend'), 'wasm');
  assert.deepEqual(errors, []);
  await p.context().close();
});

interface Slice {
  step: number;
  steps: { step: number; loss: number; lr: number }[];
  valLoss: number;
  sample: Generated & { prompt: string };
}

/** The Train view's run of `steps` steps on a tiny shape, on the page's backend: its slices, and the saved zip. */
async function train(p: Page, steps: number): Promise<{ slices: Slice[]; zip: Uint8Array }> {
  await p.goto(`${p.url().split('#')[0]}#train`);
  const set = async (id: string, v: number | string) => p.getByTestId(id).fill(String(v));
  for (const [id, v] of Object.entries(TRAIN)) await set(id, v);
  await set('train-steps', steps);
  await p.getByTestId('train-start').click();
  await p.waitForFunction(() => document.querySelector('#view-train')?.getAttribute('data-state') === 'done', null, {
    timeout: SLOW,
  });
  const slices = await replies<Slice>(p, (v) => Array.isArray(v.steps) && 'sample' in v);
  const [download] = await Promise.all([p.waitForEvent('download'), p.getByTestId('train-save').click()]);
  return { slices, zip: new Uint8Array(readFileSync(await download.path())) };
}

/** The run: a small character GPT, a few steps (SwiftShader), learning rate high enough that the loss moves. */
const TRAIN = {
  'train-layers': 1,
  'train-heads': 2,
  'train-width': 16,
  'train-context': 16,
  'train-batch': 4,
  'train-lr': 0.01,
  'train-warmup': 1,
  'train-seed': 5,
  'train-prompt': 'Shall',
  'train-max-tokens': 6,
  'train-name': 'gpt-gpu',
};

test('the Train view trains on webgpu with the wasm backend’s losses (within 1e-5), and saves from the GPU', {
  skip,
  timeout: 1_800_000,
}, async () => {
  const errors: string[] = [];
  const STEPS = 6;
  const gpuPage = await open('?backend=webgpu#train', errors);
  assert.equal(await gpuPage.locator('body').getAttribute('data-backend'), 'webgpu');
  const gpu = await train(gpuPage, STEPS);
  const wasmPage = await open('?backend=wasm#train', errors);
  assert.equal(await wasmPage.locator('body').getAttribute('data-backend'), 'wasm');
  const wasm = await train(wasmPage, STEPS);
  const losses = (r: { slices: Slice[] }) => r.slices.flatMap((s) => s.steps);
  assert.deepEqual(
    losses(gpu).map((s) => s.step),
    Array.from({ length: STEPS }, (_, i) => i + 1),
    'every step once, in order',
  );
  // Float32 on both sides, the GPU's tree reductions and WGSL's exp/log against wasm's order: each op agrees
  // to a few ulps, which six Adam steps of this width-16 model compound to about 1e-7 of the loss (measured:
  // the first five equal, the sixth 7e-8 apart). 1e-5 of the loss leaves room for another GPU's exp and log;
  // a wrong kernel, a lost or doubled update (the loss moves ~0.08 a step here) is far outside it.
  assertClose(
    losses(gpu).map((s) => s.loss),
    losses(wasm).map((s) => s.loss),
    'losses',
    0,
    1e-5,
  );
  assert.deepEqual(
    losses(gpu).map((s) => s.lr),
    losses(wasm).map((s) => s.lr),
  );
  const last = (r: { slices: Slice[] }) => r.slices[r.slices.length - 1];
  assertClose([last(gpu).valLoss], [last(wasm).valLoss], 'validation loss', 0, 1e-5);
  assert.equal(last(gpu).sample.continuation, last(wasm).sample.continuation, 'the sample');
  // Saved from the GPU: the weights read back are the model the page sampled with (its attention over the sample,
  // recomputed here on the CPU from the saved folder, within the 1e-4 of the maps above).
  const zip = readZip(gpu.zip, 'gpt-gpu.zip');
  const read = (f: string) => zip.read(`gpt-gpu/${f}`);
  const json = (f: string) => JSON.parse(new TextDecoder().decode(read(f))) as unknown;
  const saved = loadGptFromFiles(json('config.json'), json('tokenizer.json'), read('model.safetensors'));
  const sample = last(gpu).sample;
  assertClose(flat(causalAttention(saved.model, sample.ids)), flat(sample.attention), 'the saved model’s attention');
  assert.deepEqual(errors, []);
});
