/**
 * The backends as sets of files: the kernel list is written once. Each wasm binding file declares
 * the exports of its assembly/ twin (loader.ts `declareExports`); here the module's exports and
 * the declarations must match both ways, and the wasm backend's kernel families must be the js
 * backend's, file for file (src/backend/js/<family>.ts, src/backend/wasm/<family>.ts,
 * assembly/<family>.ts).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type HostKernels, KERNEL_NAMES, KernelTable } from '../../src/backend/backend.ts';
import { plainHost } from '../../src/tensor/storage.ts';
import { hostBackend } from '../../src/backend/backend.ts';
import { jsBackend as jsB } from '../../src/backend/js/index.ts';
import { jsKernels } from '../../src/backend/js/registry.ts';
import { wasmBackend as wasmB } from '../../src/backend/wasm/index.ts';
import {
  declaredExports,
  declareExports,
  kernels,
  relaxedSimdSupported,
  sig,
  unsharedMemoryImport,
  wasmModule,
} from '../../src/backend/wasm/loader.ts';
import { wasmKernels } from '../../src/backend/wasm/registry.ts';
import { requireWasm, wasmSkip, wasmVariants } from '../helpers/wasm.ts';
const jsBackend = hostBackend(jsB);
const wasmBackend = hostBackend(wasmB);

const root = (p: string) => fileURLToPath(new URL(`../../${p}`, import.meta.url));

test('every function the module exports is declared by one binding file, with its parameter count', {
  skip: wasmSkip(),
}, () => {
  requireWasm();
  const declared = declaredExports();
  const exported = WebAssembly.Module.exports(wasmModule())
    .filter((e) => e.kind === 'function')
    .map((e) => e.name);
  assert.deepEqual([...declared.keys()].sort(), [...exported].sort());
  const k = kernels()!;
  for (const [name, { file, arity }] of declared) {
    assert.equal((k[name] as (...a: number[]) => unknown).length, arity, `${name} (${file})`);
  }
});

test('a second declaration of an export is refused, naming both files', () => {
  assert.throws(
    () => declareExports('elsewhere.ts', { softmax: sig<[x: number]>(1) }),
    /export 'softmax' declared by both softmax\.ts and elsewhere\.ts/,
  );
});

test("the wasm backend has the js backend's kernel families, each a file on both sides and in assembly/", () => {
  const js = jsKernels.families();
  const wasm = wasmKernels.families();
  assert.deepEqual(wasm, js);
  assert.deepEqual(Object.keys(js).sort(), [...KERNEL_NAMES].sort());
  for (const family of new Set(Object.values(js))) {
    for (const dir of ['src/backend/js', 'src/backend/wasm', 'assembly'])
      assert.ok(existsSync(root(`${dir}/${family}.ts`)), `${dir}/${family}.ts`);
  }
  for (const name of KERNEL_NAMES) {
    assert.equal(typeof jsBackend[name], 'function', `js ${name}`);
    assert.equal(typeof wasmBackend[name], 'function', `wasm ${name}`);
  }
});

test('a backend missing a kernel, or registering one twice, is refused by name', () => {
  const t = new KernelTable<HostKernels>('test');
  t.register('softmax', { softmax: jsBackend.softmax });
  assert.throws(
    () => t.register('other', { softmax: jsBackend.softmax }),
    /test backend: kernel 'softmax' registered by both softmax and other/,
  );
  assert.throws(() => t.build(plainHost), /test backend: no kernel registered for gemm, binary, /);
});

test('unsharedMemoryImport clears only the shared flag of the memory import', { skip: wasmSkip() }, () => {
  requireWasm();
  // A module importing a shared memory (limits flag 3: shared, with maximum) and exporting nothing.
  const shared = new Uint8Array([
    0, 97, 115, 109, 1, 0, 0, 0, 2, 16, 1, 3, 101, 110, 118, 6, 109, 101, 109, 111, 114, 121, 2, 3, 1, 2,
  ]);
  const plain = unsharedMemoryImport(shared);
  assert.deepEqual(
    [...plain.keys()].filter((i) => plain[i] !== shared[i]),
    [23],
  );
  assert.equal(plain[23], 1);
  new WebAssembly.Instance(new WebAssembly.Module(plain as Uint8Array<ArrayBuffer>), {
    env: { memory: new WebAssembly.Memory({ initial: 1, maximum: 2 }) },
  });
  assert.throws(
    () =>
      new WebAssembly.Instance(new WebAssembly.Module(shared), {
        env: { memory: new WebAssembly.Memory({ initial: 1, maximum: 2 }) },
      }),
  );
});

test('the twin tests run both builds where relaxed SIMD loaded; a plain-SIMD load where the engine runs relaxed SIMD fails them', () => {
  assert.deepEqual(wasmVariants('relaxed-simd', 'x.test.ts'), ['relaxed-simd', 'simd']);
  if (relaxedSimdSupported()) {
    assert.throws(
      () => wasmVariants('simd', 'x.test.ts'),
      /^Error: x\.test\.ts: this engine runs relaxed SIMD, yet the plain-SIMD build loaded/,
    );
  } else {
    // Said on stderr (a `#` line), not failed: this engine cannot run the relaxed build.
    assert.deepEqual(wasmVariants('simd', 'x.test.ts'), ['simd']);
  }
});
