/** `qkv explore`'s server: what it serves, what it refuses, its headers; and `npm start`'s model choice. */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { after, before, test } from 'node:test';
import { explore } from '../../src/cli/commands/explore.ts';
import { findDefaultModels } from '../../src/server/folders.ts';
import { describeFolder, startExploreServer, type ExploreServer } from '../../src/server/static.ts';
import { get } from './http.ts';
import { ensureWebBuild } from './web-build.ts';
import { UserError } from '../../src/cli/files.ts';
import { makeTinyGpt, makeTinyModel, tempDir } from './tiny-model.ts';

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

test("serves the model folder's three files, and nothing else from it", async () => {
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
  for (const p of [
    '/../package.json',
    '/%2e%2e/package.json',
    '/assets/..%2f..%2fpackage.json',
    '/model/../secret.txt',
    '/model/..%2fsecret.txt',
    '/assets/%5c..%5cx',
    '/./index.html',
  ]) {
    const r = await get(server.port, p);
    assert.equal(r.status, 403, p);
    assert.equal(r.body.toString(), 'forbidden path\n');
  }
  for (const p of [
    '/package.json',
    '/src/index.ts',
    '/etc/passwd',
    '/assets/',
    '/index.html/x',
    `/${modelDir}/config.json`,
    '/model/secret.txt',
  ]) {
    assert.equal((await get(server.port, p)).status, 404, p);
  }
  assert.equal((await get(server.port, '/%zz')).status, 400);
  assert.equal((await get(server.port, '/', { method: 'POST' })).status, 405);
  assert.equal((await get(server.port, '/', { host: 'attacker.example' })).status, 403, 'DNS rebinding');
  assert.equal((await get(server.port, '/', { host: `localhost:${server.port}` })).status, 200);
});

test("npm start's models: every folder under models/, else the newest run with weights, else none", () => {
  const root = tempDir('qkv-root-');
  assert.deepEqual(findDefaultModels([root]), []);
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
  assert.deepEqual(findDefaultModels([root]), [fresh]);
  const de = mk('models/multi30k-en-de');
  const fr = mk('models/multi30k-en-fr');
  const gpt = mk('models/gpt-multi30k-char');
  mkdirSync(join(root, 'models', 'notes'));
  assert.deepEqual(findDefaultModels([root]), [gpt, de, fr]);
});

test("several folders: /models.json lists them, each one's files under /models/<id>/, the first also under /model/", async () => {
  const web = tempDir('qkv-web2-');
  writeFileSync(join(web, 'index.html'), '<!doctype html><title>y</title>');
  const a = makeTinyModel(2).dir;
  const b = makeTinyGpt(2).dir;
  const srv = await startExploreServer({
    webDir: web,
    models: [describeFolder(a, 'a'), describeFolder(b, 'b')],
    port: 0,
  });
  try {
    const list = await get(srv.port, '/models.json');
    assert.equal(list.status, 200);
    assert.equal(list.headers['cross-origin-embedder-policy'], 'require-corp');
    assert.deepEqual(JSON.parse(list.body.toString()), [
      {
        id: 'a',
        name: basename(a),
        kind: 'seq2seq',
        description: 'translation, 2 + 2 layers, dModel 16',
        files: ['config.json', 'tokenizer.json', 'model.safetensors'],
      },
      {
        id: 'b',
        name: basename(b),
        kind: 'gpt',
        description: 'language model (characters), 2 layers, nEmbd 16',
        files: ['config.json', 'tokenizer.json', 'model.safetensors'],
      },
    ]);
    assert.equal(
      (await get(srv.port, '/models.json', { headers: { 'If-None-Match': String(list.headers.etag) } })).status,
      304,
    );
    for (const [id, dir] of [
      ['a', a],
      ['b', b],
    ]) {
      for (const f of ['config.json', 'tokenizer.json', 'model.safetensors']) {
        const r = await get(srv.port, `/models/${id}/${f}`);
        assert.equal(r.status, 200, `${id}/${f}`);
        assert.deepEqual(r.body, readFileSync(join(dir, f)));
        assert.equal(r.headers['x-qkv-model'], encodeURIComponent(basename(dir)));
      }
    }
    assert.deepEqual(
      (await get(srv.port, '/model/config.json')).body,
      readFileSync(join(a, 'config.json')),
      '/model/ is the first folder',
    );
    for (const p of [
      '/models/c/config.json',
      '/models/a/secret.txt',
      '/models/a/target_tokenizer.json',
      '/models/a',
      '/models/a/',
      '/models//config.json',
      '/models/a/x/config.json',
    ]) {
      assert.equal((await get(srv.port, p)).status, 404, p);
    }
    for (const p of [
      '/models/../package.json',
      '/models/a/../../package.json',
      '/models/a/..%2fconfig.json',
      '/models/..%2f..%2fetc/passwd',
    ]) {
      assert.equal((await get(srv.port, p)).status, 403, p);
    }
  } finally {
    await srv.close();
  }
});

test("qkv explore --model A --model B serves exactly A and B; a bad folder is refused with the module's message naming the file", async () => {
  ensureWebBuild();
  const a = makeTinyModel(3).dir;
  const b = makeTinyGpt(3).dir;
  const logs: string[] = [];
  const srv = await explore({ model: [a, b], port: 0, host: '127.0.0.1', log: (l) => logs.push(l) });
  try {
    const list = JSON.parse((await get(srv.port, '/models.json')).body.toString()) as { id: string; kind: string }[];
    assert.deepEqual(
      list.map((m) => [m.id, m.kind]),
      [
        [basename(a), 'seq2seq'],
        [basename(b), 'gpt'],
      ],
    );
    assert.ok(
      logs.some((l) => l.includes('(translation model, Translate view: translation, 2 + 2 layers, dModel 16)')),
      logs.join('\n'),
    );
  } finally {
    await srv.close();
  }
  const bad = makeTinyGpt(4).dir;
  writeFileSync(join(bad, 'config.json'), JSON.stringify({ format: 'qkv-bert', model: {} }));
  await assert.rejects(
    explore({ model: [a, bad], port: 0, host: '127.0.0.1', log: () => {} }),
    (e: Error) =>
      e instanceof UserError &&
      e.message ===
        `${join(bad, 'config.json')}: expected format 'qkv-seq2seq' (a translation model from qkv train) or 'qkv-gpt' (a language model from qkv train-lm), got format 'qkv-bert'`,
  );
  const noTok = makeTinyModel(5).dir;
  rmSync(join(noTok, 'tokenizer.json'));
  await assert.rejects(explore({ model: [noTok], port: 0, host: '127.0.0.1', log: () => {} }), {
    message: `tokenizer not found: ${join(noTok, 'tokenizer.json')}`,
  });
  await assert.rejects(explore({ model: [join(a, 'nope')], port: 0, host: '127.0.0.1', log: () => {} }), {
    message: `--model ${join(a, 'nope')}: model folder not found: ${join(a, 'nope')}`,
  });
});
