/**
 * The Node side of the WebGPU pages (bench/web/): build them with Vite when stale, serve them from
 * http://127.0.0.1 (WebGPU needs a secure context: a loopback origin is one, about:blank is not), and open
 * them in headless Chromium with WebGPU on. Used by `npm run bench:web` (run.ts) and by
 * test/e2e/webgpu-page.once.test.ts.
 *
 * Served: the built pages (.bench-web/: qkv's and ONNX Runtime Web's .wasm files are emitted there by Vite)
 * at /, and the shipped models under /models/ (read-only, never a file outside those two folders; a missing
 * file is a 404, as the library's urlSource expects).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createReadStream, existsSync, readdirSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Where Vite writes the pages. */
export const OUT_DIR = join(ROOT, '.bench-web');
export const CHROMIUM = '/usr/bin/chromium';
/**
 * Headless Chromium with WebGPU. Without a GPU (and on Linux by default) Chromium's adapter is SwiftShader,
 * a CPU implementation of Vulkan: correct and slow. On a machine with a GPU add its flags with
 * QKV_CHROMIUM_FLAGS (e.g. `--enable-features=Vulkan --use-angle=vulkan`; see docs/webgpu.md).
 */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--enable-unsafe-webgpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.css': 'text/css',
};

function newest(dir: string): number {
  let m = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    m = Math.max(m, st.isDirectory() ? newest(p) : st.mtimeMs);
  }
  return m;
}

/** Build bench/web/ into .bench-web/ when a page is missing or older than bench/web/ or src/. */
export function ensureBuild(): void {
  const pages = ['index.html', 'check.html'].map((f) => join(OUT_DIR, f));
  const since = Math.max(newest(join(ROOT, 'bench', 'web')), newest(join(ROOT, 'src')));
  if (pages.every((p) => existsSync(p) && statSync(p).mtimeMs >= since)) return;
  const r = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', 'bench/web/vite.config.ts'],
    { cwd: ROOT, encoding: 'utf8' },
  );
  assert.equal(r.status, 0, `vite build of bench/web failed:\n${r.stdout}\n${r.stderr}`);
}

/** Serve the pages and the models on 127.0.0.1 (a free port). */
export function startServer(): Promise<{ server: Server; url: string }> {
  const mounts: Record<string, string> = {
    '': OUT_DIR,
    models: join(ROOT, 'models'),
  };
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).replace(/^\/+/, '') || 'index.html';
    const mount = Object.keys(mounts)
      .filter((m) => m === '' || path === m || path.startsWith(`${m}/`))
      .sort((a, b) => b.length - a.length)[0]!;
    const base = resolve(mounts[mount]!);
    const file = resolve(base, path.slice(mount.length).replace(/^\/+/, ''));
    if (!file.startsWith(base + sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  return new Promise((ok) =>
    server.listen(0, '127.0.0.1', () =>
      ok({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` }),
    ),
  );
}

/** Extra Chromium flags from QKV_CHROMIUM_FLAGS (space-separated). */
export function extraFlags(): string[] {
  return (process.env.QKV_CHROMIUM_FLAGS ?? '').split(/\s+/).filter(Boolean);
}

/**
 * Headless Chromium on `url` (a page of the build), waiting until the page says it is ready
 * (`body[data-ready]`); its console lines go to `log`, its uncaught errors into the returned list.
 */
export async function openPage(
  url: string,
  log: (line: string) => void = () => {},
  executablePath = process.env.QKV_CHROMIUM ?? CHROMIUM,
): Promise<{ browser: Browser; page: Page; errors: string[] }> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath, headless: true, args: [...CHROMIUM_FLAGS, ...extraFlags()] });
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => log(m.text()));
  await page.goto(url);
  await page.waitForSelector('body[data-ready]', { timeout: 120_000 });
  return { browser, page, errors };
}
