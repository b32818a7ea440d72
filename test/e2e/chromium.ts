/**
 * What the browser tests of test/e2e share: headless Chromium launched with one set of flags (WebGPU on for the
 * files that need it), a page's errors collected, the explorer served as `npm start` serves it, the model
 * worker's replies recorded in the page, and the teardown. (test/e2e/webgpu-page.once.test.ts opens
 * bench/web's page through bench/web/serve.ts, which launches Chromium the same way.)
 */
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContextOptions, ConsoleMessage, Page } from 'playwright-core';
import { explore } from '../../src/cli/commands/explore.ts';
import { type ExploreServer, type ExploreServerOptions, startExploreServer } from '../../src/server/static.ts';
import { findDefaultModels } from '../../src/server/folders.ts';
import { CHROMIUM, requireTool } from '../helpers/tools.ts';
import { ensureWebBuild } from './web-build.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The backend the explorer page runs in the files run once per backend pass: wasm in the wasm pass, else js. */
export const BACKEND = process.env.QKV_BACKEND === 'wasm' ? 'wasm' : 'js';

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/**
 * Headless Chromium (failing under CI=true, as requireTool does, when it is missing). `webgpu`: WebGPU on
 * (without a GPU its adapter is SwiftShader, a CPU Vulkan); otherwise the GPU off.
 */
export async function launchChromium(options: { webgpu?: boolean } = {}): Promise<Browser> {
  requireTool('chromium');
  const { chromium } = await import('playwright-core');
  const gpu = options.webgpu ? '--enable-unsafe-webgpu' : '--disable-gpu';
  return chromium.launch({ executablePath: CHROMIUM, args: [...FLAGS, gpu], headless: true });
}

/** Collects into `errors` the page's uncaught errors and its console errors (less those `ignore` picks). */
export function collectErrors(page: Page, errors: string[], ignore?: (m: ConsoleMessage) => boolean): void {
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !ignore?.(m)) errors.push(m.text());
  });
}

/**
 * The explorer at `url` in a fresh browser context (its own storage), once the page says it is ready: its
 * errors collected into `errors`, the model worker's replies recorded (recordReplies) when `record` says how.
 */
export async function openExplorer(
  browser: Browser,
  url: string,
  errors: string[],
  options: { record?: 'message' | 'value'; timeout?: number; context?: BrowserContextOptions } = {},
): Promise<Page> {
  const page = await (await browser.newContext(options.context)).newPage();
  collectErrors(page, errors);
  if (options.record) await page.addInitScript(recordReplies(options.record));
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]', { timeout: options.timeout ?? 60000 });
  return page;
}

/** Types `sentence` into the Translate view, presses Translate, waits for the view's n-th translation: its text. */
export async function translateIn(page: Page, sentence: string, n: number): Promise<string> {
  await page.getByTestId('src').fill(sentence);
  await page.getByTestId('translate').click();
  await page.waitForFunction(
    (k) => document.querySelector('#view-translate')?.getAttribute('data-translated') === String(k),
    n,
    { timeout: 60000 },
  );
  return (await page.getByTestId('translation').textContent()) ?? '';
}

/** The explorer's server on the built page (dist/web, built when stale), on a free port. */
export function serveExplorer(options: Omit<ExploreServerOptions, 'webDir' | 'port'>): Promise<ExploreServer> {
  return startExploreServer({ webDir: ensureWebBuild(), port: 0, ...options });
}

/**
 * `npm start`'s server (`qkv explore` without --model, in the repository: the folders of models/), with the
 * folders of `extra` served after them.
 */
export async function serveRepository(
  log: (line: string) => void = () => {},
  extra: readonly string[] = [],
): Promise<ExploreServer> {
  ensureWebBuild();
  const cwd = process.cwd();
  process.chdir(ROOT);
  try {
    const model = extra.length > 0 ? [...findDefaultModels(), ...extra] : undefined;
    return await explore({ port: 0, host: '127.0.0.1', log, model });
  } finally {
    process.chdir(cwd);
  }
}

/**
 * A script for page.addInitScript: a Worker that records each value reply of its worker as JSON (typed arrays
 * as lists) in `qkvReplies`, the whole message (`{ id, value, … }`) or its value only. A string, not a
 * function: tsx would add helpers to a function's text that the page does not have.
 */
export function recordReplies(what: 'message' | 'value'): string {
  return `
const log = [];
globalThis.qkvReplies = log;
const json = (v) => JSON.stringify(v, (_k, x) => (ArrayBuffer.isView(x) ? Array.from(x) : x));
const Base = globalThis.Worker;
globalThis.Worker = class extends Base {
  constructor(url, options) {
    super(url, options);
    this.addEventListener('message', (e) => { if ('value' in e.data) log.push(json(e.data${what === 'value' ? '.value' : ''})); });
  }
};
`;
}

/** The replies recordReplies has recorded in the page so far, as JSON strings, in order. */
export function recordedReplies(page: Page): Promise<string[]> {
  return page.evaluate(() => (globalThis as unknown as { qkvReplies: string[] }).qkvReplies);
}

/** Closes the browser, then each server (what a file's `after` does; any may be missing after a failed set-up). */
export async function closeAll(
  browser: Browser | undefined,
  ...servers: ({ close(): unknown } | undefined)[]
): Promise<void> {
  await browser?.close();
  for (const s of servers) await s?.close();
}
