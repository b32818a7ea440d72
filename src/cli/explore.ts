/**
 * `qkv explore`: the attention explorer. A small static server for the page built by Vite
 * (dist/web, `npm run build:web`) and for the three files of one model folder (a translation model
 * from `qkv train` or a language model from `qkv train-lm`); the page fetches them, reads the kind
 * from config.json's format and runs the model in the browser with qkv itself.
 *
 * It serves nothing else: the page's files are listed once at start, the model's three names are
 * fixed, every other path (and any path with `..`) is refused. It binds 127.0.0.1 unless told
 * otherwise, answers only to local host names when bound to a loopback address (no DNS
 * rebinding), and sends the cross-origin isolation headers (COOP same-origin, COEP require-corp)
 * that shared WebAssembly memory needs.
 */
import { createReadStream, existsSync, readdirSync, statSync, type Stats } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, extname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { modelDirKind } from './export.ts';
import { loadModelShape, TARGET_TOKENIZER, UserError } from './files.ts';

/** The three files of a model folder the page may fetch, under /model/. */
export const MODEL_FILES = ['config.json', 'tokenizer.json', 'model.safetensors'] as const;

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
  'Content-Security-Policy': "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
  'Cache-Control': 'no-cache',
};

/** The package root (two levels above this file, in src/cli or dist/cli). */
function packageRoot(): string {
  return fileURLToPath(new URL('../../', import.meta.url));
}

/** The built page: dist/web under the package root, if it has an index.html. */
export function findWebDir(): string | null {
  const dir = join(packageRoot(), 'dist', 'web');
  return existsSync(join(dir, 'index.html')) ? dir : null;
}

function isModelDir(dir: string): boolean {
  return MODEL_FILES.every((f) => existsSync(join(dir, f)));
}

/**
 * The model `qkv explore` opens without --model: models/multi30k-en-de if it exists, else the
 * run folder (runs/NAME/) whose model.safetensors is newest; looked up in the current folder,
 * then in the package root. Null when there is none.
 */
export function findDefaultModel(roots: readonly string[] = [process.cwd(), packageRoot()]): string | null {
  for (const root of [...new Set(roots.map((r) => resolve(r)))]) {
    const shipped = join(root, 'models', 'multi30k-en-de');
    if (isModelDir(shipped)) return shipped;
    const runs = join(root, 'runs');
    if (!existsSync(runs)) continue;
    let best: { dir: string; mtime: number } | null = null;
    for (const name of readdirSync(runs)) {
      const dir = join(runs, name);
      try {
        if (!statSync(dir).isDirectory() || !isModelDir(dir)) continue;
        const mtime = statSync(join(dir, 'model.safetensors')).mtimeMs;
        if (!best || mtime > best.mtime) best = { dir, mtime };
      } catch {
        continue;
      }
    }
    if (best) return best.dir;
  }
  return null;
}

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

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

export interface ExploreServerOptions {
  /** The built page (dist/web). */
  webDir: string;
  /** The model folder served under /model/, or null. */
  modelDir: string | null;
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
  if (decoded.includes('\0') || decoded.includes('\\') || decoded.split('/').some((s) => s === '..' || s === '.')) return { status: 403, reason: 'forbidden path' };
  return null;
}

export function startExploreServer(o: ExploreServerOptions): Promise<ExploreServer> {
  const host = o.host ?? '127.0.0.1';
  const files = listFiles(o.webDir);
  if (!files.has('/index.html')) throw new UserError(`${o.webDir} has no index.html: build the page with \`npm run build:web\``);
  files.set('/', files.get('/index.html')!);
  const modelName = o.modelDir ? basename(resolve(o.modelDir)) : null;
  const checkHost = isLoopback(host);

  const send = (res: ServerResponse, status: number, text: string, extra: Record<string, string> = {}) => {
    res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': String(Buffer.byteLength(text)), ...extra });
    res.end(text);
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
    if (checkHost) {
      const h = (req.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();
      if (!LOCAL_NAMES.has(h) && h !== host) return send(res, 403, 'forbidden host\n');
    }
    const raw = (req.url ?? '/').split('?')[0].split('#')[0];
    const bad = refusal(raw);
    if (bad) return send(res, bad.status, `${bad.reason}\n`);
    const path = decodeURIComponent(raw);
    let file: string | undefined;
    if (path.startsWith('/model/')) {
      const name = path.slice('/model/'.length);
      // target_tokenizer.json only where the model has one (separate vocabularies); else 404.
      const served = (MODEL_FILES as readonly string[]).includes(name) || name === TARGET_TOKENIZER;
      if (o.modelDir && served) file = join(o.modelDir, name);
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
    if (modelName && path.startsWith('/model/')) headers['X-Qkv-Model'] = encodeURIComponent(modelName);
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
      if (e.code === 'EADDRINUSE') reject(new UserError(`port ${o.port ?? 8080} on ${host} is in use: pass --port N (0 = any free port)`));
      else if (e.code === 'EADDRNOTAVAIL' || e.code === 'ENOTFOUND') reject(new UserError(`cannot bind --host ${host}: ${e.message}`));
      else reject(e);
    });
    server.listen(o.port ?? 8080, host, () => {
      const port = (server.address() as AddressInfo).port;
      const shown = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
      resolvePromise({
        server,
        port,
        url: `http://${shown}:${port}/`,
        close: () => new Promise<void>((r) => {
          server.closeAllConnections();
          server.close(() => r());
        }),
      });
    });
  });
}

export interface ExploreCommandOptions {
  model?: string;
  port: number;
  host: string;
  log: (line: string) => void;
}

export async function explore(o: ExploreCommandOptions): Promise<ExploreServer> {
  const webDir = findWebDir();
  if (!webDir) throw new UserError(`the explorer page is not built (no ${join(packageRoot(), 'dist', 'web', 'index.html')}): run \`npm run build:web\``);
  let modelDir: string | null;
  if (o.model) {
    modelDir = resolve(o.model);
    if (!existsSync(modelDir)) throw new UserError(`model folder not found: ${o.model}`);
    const missing = MODEL_FILES.filter((f) => !existsSync(join(modelDir!, f)));
    if (missing.length > 0) throw new UserError(`${o.model} lacks ${missing.join(', ')} (a model folder holds ${MODEL_FILES.join(', ')})`);
  } else {
    modelDir = findDefaultModel();
    if (!modelDir) {
      o.log('qkv explore: no model found (looked for models/multi30k-en-de, then runs/*/ with a model.safetensors).');
      o.log('  The Translate view needs one: pass --model DIR, or train one with `qkv train --out runs/NAME`');
      o.log('  (or a language model with `qkv train-lm --out runs/NAME`: the page then shows the Generate view).');
      o.log('  The positional-encoding and step-by-step views work without a model.');
    }
  }
  const dirKind = modelDir ? modelDirKind(modelDir) : null;
  // A translation model's config and tokenizers (target_tokenizer.json too, where the vocabularies are separate) are checked here, not in the page.
  const members = dirKind === 'seq2seq' ? loadModelShape(modelDir!).config.decoding?.ensemble : undefined;
  const kind = dirKind && (dirKind === 'gpt' ? 'language model, Generate view' : 'translation model, Translate view');
  const s = await startExploreServer({ webDir, modelDir, host: o.host, port: o.port });
  if (modelDir) {
    const rel = relative(process.cwd(), modelDir);
    o.log(`qkv explore: model ${rel === '' ? '.' : rel.startsWith('..') ? modelDir : rel} (${kind})`);
    if (members) o.log(`  its config.json names an ensemble (${members.join(', ')}) for qkv translate and eval; the page runs and shows the folder's own model alone`);
  }
  if (!isLoopback(o.host)) o.log(`qkv explore: listening on ${o.host}: anyone who can reach this address can load the page and the model`);
  o.log(`qkv explore: open ${s.url}  (Ctrl-C stops)`);
  return s;
}
