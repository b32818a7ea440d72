/**
 * A package that bundles (issue 38): examples/web-app, an app that depends on the packed package
 * (not on src/), is installed from the release tarball with Vite, built with `vite build`, and run
 * in headless Chromium from a plain server that sends no COOP/COEP headers. Vite must emit both
 * .wasm kernels itself (the loader's literal `new URL('./qkv-*.wasm', import.meta.url)`); the page
 * must run the wasm backend on one thread, saying it is not cross-origin isolated, and translate
 * byte for byte as `qkv translate` does.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, createReadStream, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, relative, sep } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { packedTarball, ROOT } from '../helpers/packed.ts';
import { requireTool, toolSkip } from '../helpers/tools.ts';
import { closeAll, launchChromium } from './chromium.ts';
import { tempDir } from './tiny-model.ts';

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const MODEL = join(ROOT, 'models', 'multi30k-en-de');
const skip = toolSkip('chromium');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
};

/**
 * The built app at / and the model folder at /models/multi30k-en-de/, as any static host serves
 * them: no Cross-Origin-Opener-Policy, no Cross-Origin-Embedder-Policy. A missing file gets
 * index.html, as from a single-page app's host.
 */
function serve(app: string, model: string): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const prefix = '/models/multi30k-en-de/';
    const [root, rel] = path.startsWith(prefix)
      ? [model, path.slice(prefix.length)]
      : [app, path === '/' ? 'index.html' : path.slice(1)];
    const file = normalize(join(root, rel));
    if (!file.startsWith(root + sep) || !existsSync(file) || !statSync(file).isFile()) {
      // As `vite preview` and many static hosts do for a single-page app: a path that is not there
      // gets the page (qkv must take it for a missing file, e.g. the absent target_tokenizer.json).
      res.writeHead(200, { 'Content-Type': TYPES['.html'] });
      createReadStream(join(app, 'index.html')).pipe(res);
      return;
    }
    res.writeHead(200, { 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` }),
    ),
  );
}

/** The .wasm files under `dir`, but for the folders named in `skip` (at its top). */
function wasmFilesUnder(dir: string, skip: string[] = []): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter(
    (f) => f.endsWith('.wasm') && !skip.includes(f.split(/[\\/]/)[0]),
  );
}

/** `qkv translate --model models/multi30k-en-de` of these lines, from the built checkout's CLI. */
function cliTranslate(lines: string[]): string[] {
  const r = spawnSync(process.execPath, [join(ROOT, 'dist', 'cli', 'main.js'), 'translate', '--model', MODEL], {
    cwd: ROOT,
    input: `${lines.join('\n')}\n`,
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, `qkv translate failed:\n${r.stderr}`);
  const out = r.stdout.split('\n');
  assert.equal(out.pop(), '', 'qkv translate ends its output with a line end');
  assert.equal(out.length, lines.length);
  return out;
}

let app: string;
let buildLog = '';
let browser: Browser | undefined;
let page: Page;
let server: Server | undefined;
const pageErrors: string[] = [];
const requests: string[] = [];

before(async () => {
  if (skip) return;
  requireTool('chromium');
  const tarball = packedTarball();
  app = join(tempDir('qkv-web-app-'), 'web-app');
  // The app's sources, without what its README's steps leave in a checkout (examples/web-app/.gitignore).
  const source = join(ROOT, 'examples', 'web-app');
  cpSync(source, app, {
    recursive: true,
    filter: (src) => !/^(node_modules|dist|public[\\/]models|package-lock\.json)$/.test(relative(source, src)),
  });
  // The app's own package.json, pointed at this tarball instead of ../../qkv-<version>.tgz.
  const manifestPath = join(app, 'package.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  assert.match(
    manifest.dependencies.qkv,
    /^file:.*qkv-[0-9.]+\.tgz$/,
    'examples/web-app depends on the packed tarball',
  );
  const repoVite = (
    JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }
  ).devDependencies.vite;
  assert.equal(
    manifest.devDependencies.vite.match(/\d+/)?.[0],
    repoVite.match(/\d+/)?.[0],
    `the app's vite (${manifest.devDependencies.vite}) has the repository's major (${repoVite})`,
  );
  manifest.dependencies.qkv = `file:${tarball}`;
  writeFileSync(manifestPath, JSON.stringify(manifest, null, 2));
  const install = spawnSync(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund'], {
    cwd: app,
    encoding: 'utf8',
    env: { ...process.env, npm_config_loglevel: 'warn' },
  });
  assert.equal(install.status, 0, `npm install in the web app failed:\n${install.stdout}\n${install.stderr}`);
  assert.ok(!existsSync(join(app, 'node_modules', 'qkv', 'src')), 'qkv is installed from the tarball (dist/ only)');
  const build = spawnSync(process.execPath, [join(app, 'node_modules', 'vite', 'bin', 'vite.js'), 'build'], {
    cwd: app,
    encoding: 'utf8',
  });
  buildLog = `${build.stdout}\n${build.stderr}`;
  assert.equal(build.status, 0, `vite build failed:\n${buildLog}`);

  const served = await serve(join(app, 'dist'), MODEL);
  server = served.server;
  browser = await launchChromium();
  page = await browser.newPage();
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('request', (r) => requests.push(new URL(r.url()).pathname));
  await page.goto(served.url);
  await page.waitForSelector('body[data-state="ready"], body[data-state="error"]', { timeout: 120000 });
  const state = await page.getAttribute('body', 'data-state');
  assert.equal(state, 'ready', `the page failed: ${await page.textContent('#status')} ${pageErrors.join('; ')}`);
});

after(() => closeAll(browser, server));

test('vite build emits both wasm kernels from the installed package, and the page fetches one of them', {
  skip,
}, () => {
  const assets = readdirSync(join(app, 'dist', 'assets'));
  for (const name of ['qkv-simd', 'qkv-relaxed']) {
    const emitted = assets.find((f) => f.startsWith(`${name}-`) && f.endsWith('.wasm'));
    assert.ok(emitted, `dist/assets/ has no ${name}-<hash>.wasm: ${assets.join(', ')}\n${buildLog}`);
    // The very bytes the package ships next to its loader.
    const shipped = readFileSync(join(app, 'node_modules', 'qkv', 'dist', 'backend', 'wasm', `${name}.wasm`));
    assert.ok(
      readFileSync(join(app, 'dist', 'assets', emitted)).equals(shipped),
      `${emitted} is the package's ${name}.wasm`,
    );
  }
  // Emitted by the bundler, not copied by hand: the app's sources hold no .wasm, its config no plugin.
  assert.deepEqual(wasmFilesUnder(app, ['node_modules', 'dist']), [], 'the example app copies no kernel by hand');
  assert.doesNotMatch(
    readFileSync(join(app, 'vite.config.ts'), 'utf8'),
    /plugins\s*:|emitFile|publicDir/,
    'vite.config.ts is plain: no plugin, no copied folder',
  );
  assert.ok(
    requests.some((p) => /^\/assets\/qkv-(simd|relaxed)-[^/]+\.wasm$/.test(p)),
    `the page fetched an emitted kernel: ${requests.join(', ')}`,
  );
});

test('without cross-origin isolation the page runs the wasm backend on one thread and says why', { skip }, async () => {
  assert.equal(await page.evaluate(() => self.crossOriginIsolated), false);
  const raw = await page.getAttribute('#backend', 'data-info');
  assert.ok(raw, '#backend carries backendInfo() as data-info');
  const info = JSON.parse(raw) as { backend: string; threads: number; reason: string; wasmVariant: string | null };
  assert.equal(info.backend, 'wasm');
  assert.equal(info.threads, 1);
  assert.match(info.reason, /cross-origin isolated/);
  assert.ok(
    info.wasmVariant === 'simd' || info.wasmVariant === 'relaxed-simd',
    `a wasm build loaded: ${info.wasmVariant}`,
  );
  assert.match((await page.textContent('#backend')) ?? '', /wasm.*1 thread.*cross-origin isolated/);
  assert.deepEqual(pageErrors, []);
});

test("the page's translations are byte-identical to `qkv translate`'s", { skip }, async () => {
  const items = await page.$$eval('#examples li', (lis) =>
    lis.map((li) => ({ source: li.dataset.source ?? '', translation: li.dataset.translation ?? '' })),
  );
  assert.equal(items.length, 2, 'two example sentences');
  const expected = cliTranslate(items.map((i) => i.source));
  assert.ok(expected.every((t) => t.length > 0));
  assert.deepEqual(
    items.map((i) => i.translation),
    expected,
  );

  // The text box: type a sentence, press the button, wait for the output to name it.
  const sentence = 'A woman in a red coat is walking her dog in the park.';
  await page.fill('#source', sentence);
  await page.click('#translate');
  await page.waitForSelector('#output[data-source]', { timeout: 60000 });
  assert.equal(await page.getAttribute('#output', 'data-source'), sentence);
  assert.equal(await page.textContent('#output'), cliTranslate([sentence])[0]);
  assert.deepEqual(pageErrors, []);
});
