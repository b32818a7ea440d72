/**
 * The exported models in a browser: headless Chromium loads examples/onnx-web (ONNX Runtime Web,
 * wasm execution provider) from a loopback server, and its greedy decoding of the shipped GPT
 * and translation model (fp16 exports) gives the same tokens as qkv and as onnxruntime-node
 * running the same decode.js.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, copyFileSync, mkdirSync } from 'node:fs';
import { tempDir } from './tiny-model.ts';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { Browser, Page } from 'playwright-core';
import { loadLmDir, loadModelDir } from '../../src/cli/files.ts';
import { generate } from '../../src/decode/gpt.ts';
import { greedy } from '../../src/decode/search.ts';
import { exportGptOnnx, exportSeq2SeqOnnx, MANIFEST, type OnnxExport } from '../../src/io/onnx/export.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { greedyGpt, greedySeq2Seq, type ExportModel } from '../../examples/onnx-web/decode.js';
import { startServer } from '../../examples/onnx-web/serve.mjs';
import { requireTool, toolSkip } from '../helpers/tools.ts';
import { closeAll, launchChromium } from './chromium.ts';

const root = new URL('../../', import.meta.url).pathname;
const skip = toolSkip('chromium');
const work = tempDir('qkv-onnx-web-');

function writeExport(exp: OnnxExport, from: string, to: string): void {
  mkdirSync(to);
  for (const [f, bytes] of Object.entries(exp.files)) writeFileSync(join(to, f), bytes);
  writeFileSync(join(to, MANIFEST), JSON.stringify(exp.manifest));
  copyFileSync(join(from, 'tokenizer.json'), join(to, 'tokenizer.json'));
}

/** The same export opened in onnxruntime-node, for decode.js in Node. */
async function nodeModel(exp: OnnxExport): Promise<ExportModel> {
  const sessions: ExportModel['sessions'] = {};
  for (const [role, f] of Object.entries(exp.manifest.graphs))
    sessions[role] = (await ort.InferenceSession.create(exp.files[f])) as unknown as ExportModel['sessions'][string];
  return { manifest: exp.manifest as ExportModel['manifest'], sessions }; // the decoders' kinds (no encoder export here)
}

const mtDir = join(root, 'models/multi30k-en-de');
const lmDir = join(root, 'models/gpt-multi30k-char');
let browser: Browser | undefined;
let page: Page;
let server: { close(): unknown } | undefined;
const pageErrors: string[] = [];

before(async () => {
  if (skip) return;
  requireTool('chromium');
  const mt = loadModelDir(mtDir).model;
  const lm = loadLmDir(lmDir).model;
  writeExport(
    exportSeq2SeqOnnx(mt.config, mt.stateDict(), { dtype: 'fp16', withAttention: false }),
    mtDir,
    join(work, 'mt'),
  );
  writeExport(
    exportGptOnnx(lm.config, lm.stateDict(), { dtype: 'fp16', withAttention: false }),
    lmDir,
    join(work, 'gpt'),
  );
  const started = await startServer({ models: { mt: join(work, 'mt'), gpt: join(work, 'gpt') } });
  server = started.server;
  browser = await launchChromium();
  page = await browser.newPage();
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(`${started.url}?model=gpt`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
});

after(() => closeAll(browser, server));

test("GPT in ONNX Runtime Web (wasm): greedy continuations equal qkv's and onnxruntime-node's", { skip }, async () => {
  const { model, tokenizer, separatorId } = loadLmDir(lmDir);
  const exp = exportGptOnnx(model.config, model.stateDict(), { dtype: 'fp16', withAttention: false });
  const inNode = await nodeModel(exp);
  const texts = ['A man', 'Two dogs are running', 'A woman in a blue'];
  const prompts = texts.map((t) => [separatorId, ...tokenizer.encode(t)]);
  const t0 = performance.now();
  const web = await page.evaluate(
    async ([all, sep]) => {
      const w = window as unknown as {
        ort: unknown;
        greedyGpt: typeof greedyGpt;
        openExport: (o: unknown, b: string) => Promise<ExportModel>;
      };
      const m = await w.openExport(w.ort, './models/gpt/');
      const out: number[][] = [];
      for (const p of all) out.push(await w.greedyGpt(w.ort, m, p, 50, sep));
      return out;
    },
    [prompts, separatorId] as const,
  );
  console.log(`page: ${texts.length} continuations in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  for (let i = 0; i < texts.length; i++) {
    const qkv = generate(model, prompts[i], { maxTokens: 50, temperature: 0, stopIds: [separatorId] }).ids;
    assert.ok(qkv.length > 5);
    assert.deepEqual(
      web[i],
      qkv,
      `'${texts[i]}': page '${tokenizer.decode(web[i])}' vs qkv '${tokenizer.decode(qkv)}'`,
    );
    assert.deepEqual(
      await greedyGpt(ort, inNode, prompts[i], 50, separatorId),
      qkv,
      `'${texts[i]}' in onnxruntime-node`,
    );
  }
  assert.deepEqual(pageErrors, []);
});

test("translation model in ONNX Runtime Web (wasm): greedy translations equal qkv's and onnxruntime-node's", {
  skip,
}, async () => {
  const { model, tokenizer, targetTokenizer } = loadModelDir(mtDir);
  const exp = exportSeq2SeqOnnx(model.config, model.stateDict(), { dtype: 'fp16', withAttention: false });
  const inNode = await nodeModel(exp);
  const sentences = [
    'A man is riding a bike.',
    'Two dogs play in the snow.',
    'A little girl in a pink dress is climbing the stairs.',
  ];
  const srcs = sentences.map((s) => tokenizer.encode(s));
  const ids = { bosId: targetTokenizer.bosId, eosId: targetTokenizer.eosId };
  const t0 = performance.now();
  const web = await page.evaluate(
    async ([all, o]) => {
      const w = window as unknown as {
        ort: unknown;
        greedySeq2Seq: typeof greedySeq2Seq;
        openExport: (o: unknown, b: string) => Promise<ExportModel>;
      };
      const m = await w.openExport(w.ort, './models/mt/');
      const out: number[][] = [];
      for (const src of all) out.push(await w.greedySeq2Seq(w.ort, m, src, o));
      return out;
    },
    [srcs, ids] as const,
  );
  console.log(`page: ${srcs.length} translations in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  for (let i = 0; i < srcs.length; i++) {
    const qkv = greedy(model, new Tensor(Int32Array.from(srcs[i]), [1, srcs[i].length], 'int32'), ids).tokens[0];
    assert.ok(qkv.length > 3);
    assert.deepEqual(
      web[i],
      qkv,
      `'${sentences[i]}': page '${targetTokenizer.decode(web[i])}' vs qkv '${targetTokenizer.decode(qkv)}'`,
    );
    assert.deepEqual(await greedySeq2Seq(ort, inNode, srcs[i], ids), qkv, `'${sentences[i]}' in onnxruntime-node`);
  }
  assert.deepEqual(pageErrors, []);
});
