#!/usr/bin/env node
// Compiles the AssemblyScript kernels (assembly/index.ts and what it exports) to WebAssembly with
// the `assemblyscript` devDependency, writing two builds next to their loader in src/backend/wasm/:
//   qkv-simd.wasm     128-bit SIMD (runs everywhere WebAssembly SIMD does: Node >= 16)
//   qkv-relaxed.wasm  + relaxed SIMD (f32x4.relaxed_madd → fma); chosen at load time when
//                     WebAssembly.validate accepts relaxed SIMD (Node 20 behind a V8 flag).
// When dist/backend/wasm exists (after `npm run build`), the .wasm files are copied there too so
// the compiled loader finds them next to itself (its `new URL('./qkv-simd.wasm', import.meta.url)`,
// which is also what bundlers follow to emit them). Usage: node scripts/build-wasm.mjs [--copy]
import asc from 'assemblyscript/asc';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'src/backend/wasm');
const distDir = join(root, 'dist/backend/wasm');
process.chdir(root); // asc resolves entry files against the current directory

// The memory is created by JavaScript (src/backend/wasm/memory.ts) and imported; the limits
// here must match it: shared, maximum 65536 pages (4 GiB of address space).
const common = [
  '--optimizeLevel',
  '3',
  '--shrinkLevel',
  '0',
  '--noAssert',
  '--converge',
  '--runtime',
  'stub',
  '--use',
  'abort=',
  '--importMemory',
  '--sharedMemory',
  '--initialMemory',
  '1',
  '--maximumMemory',
  '65536',
  '--enable',
  'simd',
  '--enable',
  'threads',
];

const builds = [
  { file: 'qkv-simd.wasm', flags: [] },
  { file: 'qkv-relaxed.wasm', flags: ['--enable', 'relaxed-simd'] },
];

// --copy: only copy the builds already in src/backend/wasm/ into dist/backend/wasm/ (after a
// `tsc` build that ran after this script, which would otherwise leave dist/ without them).
if (process.argv.includes('--copy')) {
  mkdirSync(distDir, { recursive: true });
  for (const { file } of builds) {
    if (!existsSync(join(outDir, file))) {
      console.error(`build-wasm: ${join(outDir, file)} is missing; run \`npm run build:wasm\``);
      process.exit(1);
    }
    copyFileSync(join(outDir, file), join(distDir, file));
  }
  console.log(`build-wasm: copied ${builds.map((b) => b.file).join(', ')} to ${distDir}`);
  process.exit(0);
}

mkdirSync(outDir, { recursive: true });
for (const { file, flags } of builds) {
  const out = join(outDir, file);
  const { error } = await asc.main(['assembly/index.ts', '--outFile', out, ...common, ...flags], {
    stdout: process.stdout,
    stderr: process.stderr,
  });
  if (error) {
    console.error(`build-wasm: ${file} failed: ${error.message}`);
    process.exit(1);
  }
  if (existsSync(join(root, 'dist/backend'))) {
    mkdirSync(distDir, { recursive: true });
    copyFileSync(out, join(distDir, file));
  }
  console.log(`build-wasm: wrote ${out}`);
}
