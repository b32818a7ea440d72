/**
 * The explorer's server under reloads and load (issue 13, item 6): validators (ETag, Last-Modified)
 * and 304s so a reload does not download the model again, single byte ranges (206/416), and a
 * bounded load test on loopback: hundreds of concurrent downloads and a few clients that stop
 * reading or hang up, after which it still serves, holds no open files and its memory is flat.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startExploreServer, type ExploreServer } from '../../src/server/static.ts';
import { makeTinyModel, tempDir } from './tiny-model.ts';

let server: ExploreServer;
let modelDir: string;
let weights: Buffer;

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function get(path: string, headers: Record<string, string> = {}, keepBody = true, method = 'GET'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: server.port, path, method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let n = 0;
      res.on('data', (c: Buffer) => (keepBody ? chunks.push(c) : (n += c.length)));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: keepBody ? Buffer.concat(chunks) : Buffer.alloc(0),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

before(async () => {
  const web = tempDir('qkv-web-');
  writeFileSync(join(web, 'index.html'), '<!doctype html><title>x</title>');
  modelDir = makeTinyModel().dir;
  // A 1 MiB weights file (the server does not parse it), so a download takes many socket writes.
  weights = Buffer.alloc(1 << 20);
  for (let i = 0; i < weights.length; i++) weights[i] = (i * 2654435761) >>> 24;
  writeFileSync(join(modelDir, 'model.safetensors'), weights);
  utimesSync(join(modelDir, 'model.safetensors'), new Date('2026-11-01T10:00:00Z'), new Date('2026-11-01T10:00:00Z'));
  server = await startExploreServer({ webDir: web, modelDir, port: 0 });
  server.server.on('connection', (sock: Socket) => {
    const port = sock.remotePort ?? 0;
    serverSide.set(port, sock);
    sock.once('close', () => serverSide.delete(port));
  });
});

after(() => server.close());

test('ETag and Last-Modified on every file; If-None-Match and If-Modified-Since give 304 with no body', async () => {
  const r = await get('/model/model.safetensors');
  assert.equal(r.status, 200);
  assert.equal(r.headers['cache-control'], 'no-cache', 'still revalidated at every load');
  const etag = String(r.headers.etag);
  assert.match(etag, /^"[0-9a-f]+-[0-9a-f]+"$/);
  assert.equal(r.headers['last-modified'], 'Sun, 01 Nov 2026 10:00:00 GMT');
  assert.equal(r.headers['accept-ranges'], 'bytes');
  for (const h of <Record<string, string>[]>[
    { 'If-None-Match': etag },
    { 'If-None-Match': `"other", W/${etag}` },
    { 'If-None-Match': '*' },
    { 'If-Modified-Since': 'Sun, 01 Nov 2026 10:00:00 GMT' },
    { 'If-Modified-Since': 'Mon, 02 Nov 2026 00:00:00 GMT' },
  ]) {
    const c = await get('/model/model.safetensors', h);
    assert.equal(c.status, 304, JSON.stringify(h));
    assert.equal(c.body.length, 0);
    assert.equal(c.headers.etag, etag);
    assert.equal(
      c.headers['cross-origin-embedder-policy'],
      'require-corp',
      'the isolation headers come with a 304 too',
    );
  }
  for (const h of <Record<string, string>[]>[
    { 'If-None-Match': '"other"' },
    { 'If-Modified-Since': 'Sat, 31 Oct 2026 00:00:00 GMT' },
    { 'If-None-Match': '"other"', 'If-Modified-Since': 'Mon, 02 Nov 2026 00:00:00 GMT' },
    { 'If-Modified-Since': 'garbage' },
  ]) {
    const c = await get('/model/model.safetensors', h);
    assert.equal(c.status, 200, JSON.stringify(h));
    assert.deepEqual(c.body, weights);
  }
  const page = await get('/');
  assert.ok(page.headers.etag);
  assert.equal((await get('/', { 'If-None-Match': String(page.headers.etag) })).status, 304);
  // A changed file gets a new tag: the old one no longer matches.
  const cfg = join(modelDir, 'config.json');
  const before = String((await get('/model/config.json')).headers.etag);
  writeFileSync(cfg, `${readFileSync(cfg, 'utf8')} `);
  utimesSync(cfg, new Date('2026-11-05T00:00:00Z'), new Date('2026-11-05T00:00:00Z'));
  const after = await get('/model/config.json', { 'If-None-Match': before });
  assert.equal(after.status, 200);
  assert.notEqual(after.headers.etag, before);
});

test('single byte ranges: 206 with Content-Range, 416 past the end, the whole file for what is not one plain range', async () => {
  const n = weights.length;
  const etag = String((await get('/model/model.safetensors', {}, false, 'HEAD')).headers.etag);
  const cases: [string, number, number][] = [
    ['bytes=0-99', 0, 99],
    ['bytes=1000-', 1000, n - 1],
    ['bytes=-500', n - 500, n - 1],
    [`bytes=${n - 10}-${n + 100}`, n - 10, n - 1],
    ['bytes=-99999999', 0, n - 1],
  ];
  for (const [range, a, b] of cases) {
    const r = await get('/model/model.safetensors', { Range: range });
    assert.equal(r.status, 206, range);
    assert.equal(r.headers['content-range'], `bytes ${a}-${b}/${n}`, range);
    assert.equal(Number(r.headers['content-length']), b - a + 1);
    assert.deepEqual(r.body, weights.subarray(a, b + 1), range);
  }
  for (const range of [`bytes=${n}-`, `bytes=${n + 5}-${n + 9}`, 'bytes=-0']) {
    const r = await get('/model/model.safetensors', { Range: range });
    assert.equal(r.status, 416, range);
    assert.equal(r.headers['content-range'], `bytes */${n}`);
  }
  for (const range of ['bytes=0-1,5-9', 'items=0-5', 'bytes=9-3', 'bytes=x-']) {
    const r = await get('/model/model.safetensors', { Range: range });
    assert.equal(r.status, 200, range);
    assert.equal(r.body.length, n);
  }
  // If-Range: the range only while the file is unchanged.
  assert.equal((await get('/model/model.safetensors', { Range: 'bytes=0-9', 'If-Range': etag })).status, 206);
  assert.equal((await get('/model/model.safetensors', { Range: 'bytes=0-9', 'If-Range': '"stale"' })).status, 200);
});

/** Open file descriptors of this process (Linux; elsewhere 0, and that check is moot). */
function openFiles(): number {
  return existsSync('/proc/self/fd') ? readdirSync('/proc/self/fd').length : 0;
}

/** The server's end of every open connection, by the client's port (kept while open). */
const serverSide = new Map<number, Socket>();

/** Resolves when the server's end of every connection open now has closed (an event, not a timer). */
function allClosed(): Promise<void> {
  return Promise.all(
    [...serverSide.values()].map((s) => (s.closed ? undefined : new Promise((r) => s.once('close', r)))),
  ).then(() => undefined);
}

/**
 * Resolves once no file-system request of this process is pending: a read stream destroyed when its
 * client left closes its file asynchronously (fs.close), and this waits for that to finish.
 */
async function fsSettled(): Promise<void> {
  while (process.getActiveResourcesInfo().includes('FSReqCallback')) await new Promise((r) => setImmediate(r));
}

/** A client that asks for the weights and then stops reading (its socket paused): a slow reader. */
function stalledClient(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(server.port, '127.0.0.1', () => {
      s.write('GET /model/model.safetensors HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      s.once('data', () => {
        s.pause();
        resolve(s);
      });
    });
    s.on('error', reject);
  });
}

test('load: 600 concurrent downloads beside slow and vanishing clients; all answered, no files left open, memory flat', {
  timeout: 120_000,
}, async () => {
  const round = async (count: number) => {
    const replies = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        get(
          i % 3 === 0 ? '/model/config.json' : i % 3 === 1 ? '/model/model.safetensors' : '/',
          i % 3 === 1 ? {} : { 'If-None-Match': '"x"' },
          i % 3 !== 1,
        ),
      ),
    );
    for (const r of replies) assert.equal(r.status, 200);
  };
  await round(60); // warm up
  const fds0 = openFiles();
  const rss0 = process.memoryUsage().rss;
  const slow = await Promise.all(Array.from({ length: 4 }, stalledClient));
  const started = performance.now();
  for (let i = 0; i < 3; i++) await round(200);
  const seconds = (performance.now() - started) / 1000;
  // Clients that hang up mid-download: the server must close the file it was reading. No sleep:
  // wait until the server has seen every connection close, then until no file close is pending.
  for (const s of slow) s.destroy();
  const gone = await Promise.all(Array.from({ length: 4 }, stalledClient));
  for (const s of gone) s.destroy();
  await allClosed();
  await fsSettled();
  const fds1 = openFiles();
  const rss1 = process.memoryUsage().rss;
  const grew = (rss1 - rss0) / 2 ** 20;
  assert.ok(
    fds1 <= fds0 + 2,
    `open files ${fds0} before, ${fds1} after: the reads of clients that left were not closed`,
  );
  assert.ok(grew < 48, `RSS grew ${grew.toFixed(1)} MiB over 600 requests`);
  const still = await get('/model/model.safetensors');
  assert.deepEqual(still.body, weights, 'still serving after the load');
  await allClosed();
  const conns = await new Promise<number>((r) => server.server.getConnections((_, n) => r(n)));
  assert.ok(conns <= 1, `${conns} connections left open`);
  process.stderr.write(
    `# load: 600 requests in ${seconds.toFixed(1)} s with 4 stalled readers; RSS ${(rss0 / 2 ** 20).toFixed(0)} → ${(rss1 / 2 ** 20).toFixed(0)} MiB; open files ${fds0} → ${fds1}\n`,
  );
});
