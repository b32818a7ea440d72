/** `qkv explore`'s server: what it serves, what it refuses, its headers; and `npm start`'s model choice. */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { findDefaultModel } from '../../src/cli/explore.ts';
import { startExploreServer, type ExploreServer } from '../../src/server/static.ts';
import { get } from './http.ts';
import { makeTinyModel, tempDir } from './tiny-model.ts';

let server: ExploreServer;
let modelDir: string;

before(async () => {
  const web = tempDir('qkv-web-');
  mkdirSync(join(web, 'assets'));
  writeFileSync(join(web, 'index.html'), '<!doctype html><title>x</title>');
  writeFileSync(join(web, 'assets', 'app.js'), 'console.log(1)');
  modelDir = makeTinyModel().dir;
  writeFileSync(join(modelDir, 'secret.txt'), 'not for the page');
  server = await startExploreServer({ webDir: web, modelDir, port: 0 });
});

after(() => server.close());

test('binds 127.0.0.1 by default', () => {
  const addr = server.server.address();
  assert.ok(addr && typeof addr === 'object' && addr.address === '127.0.0.1');
  assert.equal(server.url, `http://127.0.0.1:${server.port}/`);
});

test('serves the page with cross-origin isolation headers', async () => {
  const r = await get(server.port, '/');
  assert.equal(r.status, 200);
  assert.match(String(r.headers['content-type']), /text\/html/);
  assert.equal(r.headers['cross-origin-opener-policy'], 'same-origin');
  assert.equal(r.headers['cross-origin-embedder-policy'], 'require-corp');
  assert.equal(r.body.toString(), '<!doctype html><title>x</title>');
  const js = await get(server.port, '/assets/app.js?v=1');
  assert.equal(js.status, 200);
  assert.match(String(js.headers['content-type']), /text\/javascript/);
  assert.equal(js.headers['cross-origin-embedder-policy'], 'require-corp');
});

test('serves the model folder\'s three files, and nothing else from it', async () => {
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors']) {
    const r = await get(server.port, `/model/${f}`);
    assert.equal(r.status, 200, f);
    assert.deepEqual(r.body, readFileSync(join(modelDir, f)), f);
    assert.equal(r.headers['cross-origin-opener-policy'], 'same-origin');
  }
  const head = await get(server.port, '/model/model.safetensors', { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(Number(head.headers['content-length']), readFileSync(join(modelDir, 'model.safetensors')).length);
  assert.equal((await get(server.port, '/model/secret.txt')).status, 404);
  assert.equal((await get(server.port, '/model/')).status, 404);
});

test('refuses paths outside the served files', async () => {
  for (const p of ['/../package.json', '/%2e%2e/package.json', '/assets/..%2f..%2fpackage.json', '/model/../secret.txt', '/model/..%2fsecret.txt', '/assets/%5c..%5cx', '/./index.html']) {
    const r = await get(server.port, p);
    assert.equal(r.status, 403, p);
    assert.equal(r.body.toString(), 'forbidden path\n');
  }
  for (const p of ['/package.json', '/src/index.ts', '/etc/passwd', '/assets/', '/index.html/x', `/${modelDir}/config.json`, '/model/secret.txt']) {
    assert.equal((await get(server.port, p)).status, 404, p);
  }
  assert.equal((await get(server.port, '/%zz')).status, 400);
  assert.equal((await get(server.port, '/', { method: 'POST' })).status, 405);
  assert.equal((await get(server.port, '/', { host: 'attacker.example' })).status, 403, 'DNS rebinding');
  assert.equal((await get(server.port, '/', { host: `localhost:${server.port}` })).status, 200);
});

test('npm start\'s model: models/multi30k-en-de, else the newest run with weights, else none', () => {
  const root = tempDir('qkv-root-');
  assert.equal(findDefaultModel([root]), null);
  const mk = (rel: string, weights = true) => {
    const d = join(root, rel);
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, 'config.json'), '{}');
    writeFileSync(join(d, 'tokenizer.json'), '{}');
    if (weights) writeFileSync(join(d, 'model.safetensors'), '');
    return d;
  };
  const old = mk('runs/old');
  utimesSync(join(old, 'model.safetensors'), new Date(2020, 0, 1), new Date(2020, 0, 1));
  const fresh = mk('runs/fresh');
  mk('runs/unfinished', false);
  assert.equal(findDefaultModel([root]), fresh);
  const shipped = mk('models/multi30k-en-de');
  assert.equal(findDefaultModel([root]), shipped);
});
