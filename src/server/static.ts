/**
 * The explorer's static file server: the page built by Vite (dist/web), the list of served model
 * folders (/models.json) and each folder's model files under /models/<id>/, nothing else; the first
 * folder's files are also under /model/ (the one-model URL of earlier versions). Library code (the
 * explorer command, the tests and the benches start it); it knows no command-line flags beyond the
 * words of its error messages.
 *
 * The page's files are listed once at start, the folders' ids and file names are fixed (the folder
 * module's FILES), every other path (and any path with `..`) is refused. It binds 127.0.0.1 unless told otherwise,
 * answers only to
 * local host names when bound to a loopback address (no DNS rebinding), and sends the cross-origin
 * isolation headers (COOP same-origin, COEP require-corp) that shared WebAssembly memory needs.
 * Errors (no index.html, a port in use, an address that cannot be bound) are plain Errors whose
 * message is meant for the user.
 */
import { createReadStream, readdirSync, statSync, type Stats } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { extname, join, relative, sep } from 'node:path';
import { describeFolder, SERVED_FILES, type ServedFolder, type ServedFolderInfo } from './models.ts';

export { describeFolder, folderIds, SERVED_FILES, type ServedFolder, type ServedFolderInfo } from './models.ts';

/**
 * The files of a model folder the page may fetch (those the folder has; else 404): the folder module's FILES but
 * PyTorch's pickle.
 */
export const MODEL_FILES = SERVED_FILES;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.wasm': 'application/wasm',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.safetensors': 'application/octet-stream',
};

const SECURITY_HEADERS: Record<string, string> = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src " +
    "'self'; img-src 'self' data: blob:; connect-src 'self'; object-src " +
    "'none'; base-uri 'none'; frame-ancestors 'none'",
  'Cache-Control': 'no-cache',
};

/** Every file under `dir`, by URL path ('/assets/x.js' → absolute path). */
function listFiles(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) out.set(`/${relative(dir, p).split(sep).join('/')}`, p);
    }
  };
  walk(dir);
  return out;
}

const LOCAL_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

export interface ExploreServerOptions {
  /** The built page (dist/web). */
  webDir: string;
  /** The model folders served under /models/<id>/ (the first also under /model/), described by describeFolder. */
  models?: readonly ServedFolder[];
  /**
   * One model folder (described leniently: a folder that fails is left to the page to report), or null; used when
   * `models` is not given.
   */
  modelDir?: string | null;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8080; 0 picks a free port. */
  port?: number;
}

export interface ExploreServer {
  server: Server;
  url: string;
  port: number;
  close(): Promise<void>;
}

/** A strong validator from size and modification time (nanoseconds where the system keeps them). */
function etagOf(st: Stats): string {
  return `"${st.size.toString(16)}-${Math.floor(st.mtimeMs * 1000).toString(16)}"`;
}

/** If-None-Match (any of its tags, or *) wins over If-Modified-Since, as RFC 9110 §13.2.2 orders them. */
function notModified(req: IncomingMessage, etag: string, mtime: Date): boolean {
  const inm = req.headers['if-none-match'];
  if (inm !== undefined) return inm.trim() === '*' || inm.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
  const ims = req.headers['if-modified-since'];
  if (ims === undefined) return false;
  const since = Date.parse(ims);
  return Number.isFinite(since) && Math.floor(mtime.getTime() / 1000) <= Math.floor(since / 1000);
}

/**
 * The byte range a GET asks for (RFC 9110 §14): one range `bytes=a-b`, `bytes=a-` or `bytes=-n`,
 * clipped to the file; 'unsatisfiable' for a range past its end; null for the whole file (no Range,
 * an If-Range that no longer matches, several ranges or a malformed one: those get the whole file,
 * which the RFC allows).
 */
function rangeOf(req: IncomingMessage, etag: string, size: number): [number, number] | 'unsatisfiable' | null {
  const h = req.headers.range;
  if (req.method !== 'GET' || h === undefined) return null;
  const ifRange = req.headers['if-range'];
  if (ifRange !== undefined && String(ifRange).trim() !== etag) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(h.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return [Math.max(0, size - n), size - 1];
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return [start, end];
}

/** Why a request is refused, or null. */
function refusal(rawPath: string): { status: number; reason: string } | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    return { status: 400, reason: 'bad URL encoding' };
  }
  if (!decoded.startsWith('/')) return { status: 400, reason: 'bad path' };
  if (decoded.includes('\0') || decoded.includes('\\') || decoded.split('/').some((s) => s === '..' || s === '.'))
    return { status: 403, reason: 'forbidden path' };
  return null;
}

export function startExploreServer(o: ExploreServerOptions): Promise<ExploreServer> {
  const host = o.host ?? '127.0.0.1';
  const files = listFiles(o.webDir);
  if (!files.has('/index.html'))
    throw new Error(`${o.webDir} has no index.html: build the page with \`npm run build:web\``);
  files.set('/', files.get('/index.html')!);
  const models: readonly ServedFolder[] = o.models ?? (o.modelDir ? [describeFolder(o.modelDir, undefined, true)] : []);
  const byId = new Map(models.map((m) => [m.id, m]));
  if (byId.size !== models.length)
    throw new Error(`served folders need distinct ids, got ${models.map((m) => m.id).join(', ')}`);
  const list: ServedFolderInfo[] = models.map(({ id, name, kind, description, files }) => ({
    id,
    name,
    kind,
    description,
    files,
  }));
  const listBody = Buffer.from(`${JSON.stringify(list, null, 2)}\n`);
  const listTag = `"${createHash('sha256').update(listBody).digest('hex').slice(0, 32)}"`;
  const listTime = new Date(Math.floor(Date.now() / 1000) * 1000);
  const checkHost = isLoopback(host);

  const send = (res: ServerResponse, status: number, text: string, extra: Record<string, string> = {}) => {
    res.writeHead(status, {
      ...SECURITY_HEADERS,
      'Content-Type': 'text/plain; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(text)),
      ...extra,
    });
    res.end(text);
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return send(res, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
    if (checkHost) {
      const h = (req.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();
      if (!LOCAL_NAMES.has(h) && h !== host) return send(res, 403, 'forbidden host\n');
    }
    const raw = (req.url ?? '/').split('?')[0].split('#')[0];
    const bad = refusal(raw);
    if (bad) return send(res, bad.status, `${bad.reason}\n`);
    const path = decodeURIComponent(raw);
    if (path === '/models.json') {
      const headers = {
        ...SECURITY_HEADERS,
        'Content-Type': TYPES['.json'],
        ETag: listTag,
        'Last-Modified': listTime.toUTCString(),
      };
      if (notModified(req, listTag, listTime)) {
        res.writeHead(304, headers);
        return res.end();
      }
      res.writeHead(200, { ...headers, 'Content-Length': String(listBody.length) });
      return res.end(req.method === 'HEAD' ? undefined : listBody);
    }
    let file: string | undefined;
    let model: ServedFolder | undefined;
    // /models/<id>/<file>, or /model/<file> for the first folder; only the folder's own model files (404 where it has
    // none).
    const m = /^\/models\/([^/]+)\/([^/]+)$/.exec(path) ?? /^\/model\/()([^/]+)$/.exec(path);
    if (m) {
      model = m[1] === '' && path.startsWith('/model/') ? models[0] : byId.get(m[1]);
      if (model && SERVED_FILES.includes(m[2])) file = join(model.dir, m[2]);
    } else {
      file = files.get(path);
    }
    let st: Stats;
    try {
      if (!file) throw new Error('not served');
      st = statSync(file);
      if (!st.isFile()) throw new Error('not a file');
    } catch {
      return send(res, 404, 'not found\n');
    }
    // Validators, so a reload revalidates (Cache-Control: no-cache) instead of downloading the model again.
    const etag = etagOf(st);
    const headers: Record<string, string> = {
      ...SECURITY_HEADERS,
      'Content-Type': TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream',
      ETag: etag,
      'Last-Modified': st.mtime.toUTCString(),
      'Accept-Ranges': 'bytes',
    };
    if (model) headers['X-Qkv-Model'] = encodeURIComponent(model.name);
    if (notModified(req, etag, st.mtime)) {
      res.writeHead(304, headers);
      return res.end();
    }
    const range = rangeOf(req, etag, st.size);
    if (range === 'unsatisfiable') {
      return send(res, 416, 'range not satisfiable\n', { 'Content-Range': `bytes */${st.size}`, ETag: etag });
    }
    let status = 200;
    let start = 0;
    let end = st.size - 1;
    if (range) {
      [start, end] = range;
      status = 206;
      headers['Content-Range'] = `bytes ${start}-${end}/${st.size}`;
    }
    headers['Content-Length'] = String(Math.max(0, end - start + 1));
    res.writeHead(status, headers);
    if (req.method === 'HEAD' || st.size === 0) return res.end();
    const stream = createReadStream(file, { start, end });
    stream.on('error', () => res.destroy());
    res.on('close', () => stream.destroy()); // a client that goes away stops the read
    stream.pipe(res);
  };

  const server = createServer((req, res) => {
    try {
      handle(req, res);
    } catch {
      if (!res.headersSent) send(res, 500, 'internal error\n');
      else res.destroy();
    }
  });
  return new Promise((resolvePromise, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE')
        reject(new Error(`port ${o.port ?? 8080} on ${host} is in use: pass --port N (0 = any free port)`));
      else if (e.code === 'EADDRNOTAVAIL' || e.code === 'ENOTFOUND')
        reject(new Error(`cannot bind --host ${host}: ${e.message}`));
      else reject(e);
    });
    server.listen(o.port ?? 8080, host, () => {
      const port = (server.address() as AddressInfo).port;
      const shown = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
      resolvePromise({
        server,
        port,
        url: `http://${shown}:${port}/`,
        close: () =>
          new Promise<void>((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    });
  });
}
