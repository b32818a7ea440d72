/**
 * Vite build of the attention explorer: web/ → dist/web/ (served by `qkv explore`). The page
 * imports qkv from ../src directly. The wasm kernel modules (built by `npm run build:wasm` into
 * src/backend/wasm/) are copied to dist/web/wasm/ when present, so the page can load qkv's wasm
 * backend; without them it runs on the js backend.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

function wasmKernels(): Plugin {
  return {
    name: 'qkv-wasm-kernels',
    apply: 'build',
    generateBundle() {
      for (const f of ['qkv-simd.wasm', 'qkv-relaxed.wasm']) {
        const p = here(`../src/backend/wasm/${f}`);
        if (existsSync(p)) this.emitFile({ type: 'asset', fileName: `wasm/${f}`, source: readFileSync(p) });
      }
    },
  };
}

export default defineConfig({
  root: here('.'),
  base: './',
  publicDir: false,
  logLevel: 'warn',
  plugins: [wasmKernels()],
  // The model worker (web/src/model-worker.ts) is an ES module: it imports qkv and loads the wasm kernels as the page did.
  worker: { format: 'es' },
  build: {
    outDir: here('../dist/web'),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 2000,
    modulePreload: { polyfill: false },
  },
});
