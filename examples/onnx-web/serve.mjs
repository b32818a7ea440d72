/**
 * A static server for the example page: the page and decode.js from this folder, ONNX Runtime Web
 * from node_modules/onnxruntime-web/dist under /ort/, and export folders under /models/NAME/.
 *
 *   node examples/onnx-web/serve.mjs gpt=DIR [mt=DIR] [--port 8080]
 */
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const ortDist = resolve(here, '../../node_modules/onnxruntime-web/dist');
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.onnx': 'application/octet-stream',
};

/** Start on 127.0.0.1 (port 0: any free one); `models` maps a name to an export folder. */
export function startServer({ models, port = 0 }) {
  const roots = {
    '': resolve(here),
    ort: ortDist,
    ...Object.fromEntries(Object.entries(models).map(([k, v]) => [`models/${k}`, resolve(v)])),
  };
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/+/, '') || 'index.html';
    // The longest mount point that prefixes the path; never a file outside it.
    const mount = Object.keys(roots)
      .filter((m) => m === '' || path === m || path.startsWith(`${m}/`))
      .sort((a, b) => b.length - a.length)[0];
    const base = roots[mount];
    const file = resolve(base, path.slice(mount.length).replace(/^\/+/, '') || 'index.html');
    if ((file !== base && !file.startsWith(base + sep)) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end('not found');
      return;
    }
    // Cross-origin isolation lets ONNX Runtime Web use threads (SharedArrayBuffer).
    res.writeHead(200, {
      'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream',
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
    });
    createReadStream(file).pipe(res);
  });
  return new Promise((ok) =>
    server.listen(port, '127.0.0.1', () => ok({ server, url: `http://127.0.0.1:${server.address().port}/` })),
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const p = args.indexOf('--port');
  const port = p >= 0 ? Number(args.splice(p, 2)[1]) : 8080;
  const models = Object.fromEntries(args.map((a) => a.split('=')));
  if (args.length === 0 || Object.values(models).some((d) => !d || !existsSync(join(d, 'onnx.json')))) {
    console.error(
      'usage: node examples/onnx-web/serve.mjs gpt=DIR [mt=DIR] [--port 8080]   (DIR: from qkv export --format onnx)',
    );
    process.exit(1);
  }
  const { url } = await startServer({ models, port });
  console.log(`open ${url}?model=${Object.keys(models)[0]}`);
}
