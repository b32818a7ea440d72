/**
 * Vite build of the WebGPU pages: bench/web/ → .bench-web/ (gitignored; never under dist/, which the package ships) (served by bench/web/serve.ts).
 *   index.html  the benchmark page (`npm run bench:web`): qkv's webgpu backend against tfjs-backend-webgpu and
 *               ONNX Runtime Web's WebGPU provider, qkv's wasm backend as the CPU reference;
 *   check.html  the page test/e2e/webgpu-page.once.test.ts drives: training and translation on webgpu against wasm.
 * The pages import qkv from ../../src directly. The .wasm files (qkv's kernels, ONNX Runtime Web's WebAssembly
 * half) come through their loaders' `new URL('./name.wasm', import.meta.url)`, which Vite emits beside the pages.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  root: here('.'),
  base: './',
  publicDir: false,
  logLevel: 'warn',
  build: {
    outDir: here('../../.bench-web'),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 8000,
    modulePreload: { polyfill: false },
    rollupOptions: { input: { index: here('index.html'), check: here('check.html') } },
  },
});
