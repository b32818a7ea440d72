import { defineConfig } from 'vite';

// Nothing qkv-specific for the build: the library's loader references its kernels as
// `new URL('./qkv-simd.wasm', import.meta.url)`, which Vite follows and emits into dist/assets/.
export default defineConfig({
  base: './',
  build: { target: 'es2022' },
  // The dev server pre-bundles dependencies into one file, which would move the loader away from
  // its .wasm files; serving qkv as it is keeps the URLs right under `vite` too.
  optimizeDeps: { exclude: ['qkv'] },
});
