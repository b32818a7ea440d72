/**
 * Peak memory of opening a GPT-2 folder in the explorer page (Chromium): the server runs without
 * a model, the folder is opened through the page's folder picker, and the renderer processes'
 * peak resident memory (VmHWM, Linux /proc) is read before and after, with the page's WebAssembly
 * memory size. Then one token is generated, to show the model works.
 *   npx tsx bench/gpt2-memory.ts DIR [--backend wasm|js] [--serve]     (needs dist/web: npm run build:web)
 * --serve: the server serves DIR (qkv explore --model DIR) and the page loads it from there.
 * DIR: a Hugging Face GPT-2 folder (config.json, tokenizer.json, model.safetensors).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { findWebDir } from '../src/server/folders.ts';
import { startExploreServer } from '../src/server/static.ts';
import { FILES } from '../src/folder/spec.ts';

const dir = process.argv[2];
if (!dir) throw new Error('usage: npx tsx bench/gpt2-memory.ts DIR [--backend wasm|js]');
const backend = process.argv.includes('--backend') ? process.argv[process.argv.indexOf('--backend') + 1] : 'wasm';
const webDir = findWebDir();
if (!webDir) throw new Error('dist/web is missing: npm run build:web');

/** pid -> [VmRSS, VmHWM] in MB for every descendant of `root`. */
function tree(root: number): Map<number, [number, number]> {
  const out = new Map<number, [number, number]>();
  const walk = (pid: number) => {
    try {
      const st = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(st)?.[1] ?? 0) / 1024;
      out.set(pid, [kb('VmRSS'), kb('VmHWM')]);
    } catch {
      return;
    }
    let kids = '';
    try {
      kids = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' }).trim();
    } catch {
      kids = ''; // ps exits 1 when there are none
    }
    for (const k of kids.split('\n').filter(Boolean)) walk(Number(k));
  };
  walk(root);
  return out;
}

const serve = process.argv.includes('--serve');
const server = await startExploreServer({ webDir, modelDir: serve ? dir : null, port: 0 });
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ],
});
try {
  const page = await browser.newPage();
  const rootPid = process.pid; // Chromium's processes are this process's descendants
  let before = tree(rootPid);
  const t0 = performance.now();
  await page.goto(`${server.url}?backend=${backend}#generate`);
  if (!serve) {
    await page.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
    before = tree(rootPid);
    await page.locator('#folder-input').setInputFiles(dir);
    await page.waitForFunction(
      () => {
        const d = document.querySelector<HTMLElement>('#view-generate')!.dataset;
        return d.opened === '1' || d.openFailed === '1';
      },
      undefined,
      { timeout: 600000 },
    );
  } else {
    await page.waitForSelector('body[data-ready]', { timeout: 600000 });
  }
  const seconds = (performance.now() - t0) / 1000;
  const status = serve
    ? `opened ${await page.getByTestId('model-info').textContent()}`
    : await page.getByTestId('folder-status').textContent();
  const after = tree(rootPid);
  const fileMb = statSync(join(dir, FILES.weights)).size / 2 ** 20;
  // The renderer is the process whose peak grew the most.
  let best = { pid: 0, grew: -1, rss: 0, hwm: 0, hwm0: 0 };
  for (const [pid, [rss, hwm]] of after) {
    const hwm0 = before.get(pid)?.[1] ?? 0;
    if (hwm - hwm0 > best.grew) best = { pid, grew: hwm - hwm0, rss, hwm, hwm0 };
  }
  if (!status?.startsWith('opened')) throw new Error(`the page did not open ${dir}: ${status}`);
  await page.getByTestId('prompt').fill('Hello, my name is');
  await page.getByTestId('max-tokens').fill('1');
  const g0 = performance.now();
  await page.getByTestId('generate').click();
  await page.waitForFunction(
    () => document.querySelector('#view-generate')?.getAttribute('data-generated') === '1',
    undefined,
    { timeout: 600000 },
  );
  const genS = (performance.now() - g0) / 1000;
  const result = {
    backend,
    status,
    seconds: Number(seconds.toFixed(1)),
    file_mib: Math.round(fileMb),
    renderer_peak_mib_before: Math.round(best.hwm0),
    renderer_peak_mib_after: Math.round(best.hwm),
    renderer_rss_mib_after: Math.round(best.rss),
    first_generation_s: Number(genS.toFixed(1)),
    text: await page.getByTestId('generated').textContent(),
  };
  console.log(JSON.stringify(result, null, 1));
} finally {
  await browser.close();
  await server.close();
}
