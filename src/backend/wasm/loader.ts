/**
 * Finds, compiles and instantiates the kernel module (assembly/index.ts, built by
 * scripts/build-wasm.mjs into qkv-simd.wasm and qkv-relaxed.wasm next to this file).
 *
 * No static import of any Node module: this file is reachable from the package entry, which must
 * load in browsers. Under Node (>= 20.16) the bytes are read synchronously through
 * `process.getBuiltinModule('node:fs')`; elsewhere `loadKernelsAsync(base)` compiles them
 * asynchronously. When the module cannot be loaded (file missing, no WebAssembly SIMD)
 * `kernels()` returns null and says why in `wasmLoadError()`; the backend then falls back to js.
 * Without a shared memory (no cross-origin isolation) it loads all the same and runs on one thread.
 */
import { memory, memoryAvailable, memoryShared, RESERVED_BYTES } from './memory.ts';

/**
 * Signatures of the module's exports, written once, beside the code that calls them: each binding
 * file (gemm.ts, softmax.ts, ...) declares the exports of its assembly/ twin in one table with
 * `declareExports`, and gets them back typed. The table is checked against the module when it is
 * instantiated (every declared export present, with that many parameters), and
 * test/backend/wasm-exports.test.ts checks the other way (every export of the module declared).
 * JavaScript sees addresses, sizes and flags as numbers: the aliases below only name them.
 */
/** A byte address in the wasm memory (0 for an absent optional array). */
export type Ptr = number;
export type I32 = number;
export type F32 = number;
export type F64 = number;

/** One export: its parameters as a labelled tuple, its result, and the parameter count. */
export interface Signature<A extends readonly number[] = readonly number[], R = unknown> {
  readonly arity: A['length'];
  /** Type only. */
  readonly call?: (...args: A) => R;
}

/** `sig<[x: Ptr, n: I32]>(2)`: the count must equal the tuple's length (a compile error otherwise). */
// biome-ignore lint/suspicious/noConfusingVoidType: R is an export's result, void when it returns nothing.
export function sig<A extends readonly number[], R extends number | void = void>(arity: A['length']): Signature<A, R> {
  return { arity };
}

type Table = Record<string, Signature<readonly number[], unknown>>;
/** The functions a table declares, as JavaScript calls them. */
export type Bound<T extends Table> = {
  readonly [K in keyof T]: T[K] extends Signature<infer A, infer R> ? (...args: A) => R : never;
};

const declared = new Map<string, { file: string; arity: number }>();

function verify(exports: WebAssembly.Exports, names: Iterable<string>, file: string): void {
  for (const name of names) {
    const want = declared.get(name)!;
    const f = exports[name];
    if (typeof f !== 'function')
      throw new Error(
        `wasm backend: ${want.file} declares export '${name}', which ${file} ` +
          `lacks; rebuild it with \`npm run build:wasm\``,
      );
    if (f.length !== want.arity)
      throw new Error(
        `wasm backend: ${want.file} declares '${name}' with ${want.arity} ` +
          `parameters, ${file} has ${f.length}; rebuild it with \`npm run ` +
          `build:wasm\``,
      );
  }
}

/**
 * Declare the exports of one assembly/ file (`file` names the binding file, for errors) and get
 * a function returning them, typed (it loads the module on first use, see `requireKernels`).
 */
export function declareExports<T extends Table>(file: string, table: T): () => Bound<T> {
  for (const [name, s] of Object.entries(table)) {
    const prev = declared.get(name);
    if (prev) throw new Error(`wasm backend: export '${name}' declared by both ${prev.file} and ${file}`);
    declared.set(name, { file, arity: s.arity });
  }
  if (loaded) verify(loaded.exports, Object.keys(table), FILE_NAMES[loaded.variant]);
  return requireKernels as () => Bound<T>;
}

/** Every declared export and the file declaring it (for the test that the list is complete). */
export function declaredExports(): Map<string, { file: string; arity: number }> {
  return new Map(declared);
}

export type WasmVariant = 'relaxed-simd' | 'simd';

const FILE_NAMES: Record<WasmVariant, string> = { 'relaxed-simd': 'qkv-relaxed.wasm', simd: 'qkv-simd.wasm' };

/**
 * Where a build lies: next to this file. Each URL is written out literally,
 * `new URL('./name.wasm', import.meta.url)`, the pattern bundlers (Vite, webpack, Parcel, esbuild
 * with a plugin) recognise, so an app that bundles qkv emits both .wasm files and rewrites these
 * URLs to them. Under Node they resolve next to src/backend/wasm/loader.ts (tsx) or
 * dist/backend/wasm/loader.js (scripts/build-wasm.mjs copies the builds there).
 */
function wasmUrl(variant: WasmVariant): URL {
  return variant === 'relaxed-simd'
    ? new URL('./qkv-relaxed.wasm', import.meta.url)
    : new URL('./qkv-simd.wasm', import.meta.url);
}

/**
 * The bytes of a module with one function `(result v128)` whose code is `body` (no locals); small
 * enough that every size is one LEB128 byte. For WebAssembly.validate: what the engine can compile.
 */
function probeModule(body: number[]): Uint8Array {
  const code = [0, ...body, 0x0b]; // no locals, the body, end
  // \0asm, version 1; type section: () -> v128; function section: one function of that type.
  const head = [0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0];
  return new Uint8Array([...head, 10, code.length + 2, 1, code.length, ...code]); // code section: one body
}
/** `v128.const 0`. */
const V128_ZERO = [0xfd, 0x0c, ...new Array<number>(16).fill(0)];
// (module (func (result v128) v128.const 0 ×3 f32x4.relaxed_madd))
const RELAXED_PROBE = probeModule([...V128_ZERO, ...V128_ZERO, ...V128_ZERO, 0xfd, 0x85, 0x02]);
// (module (func (result v128) v128.const 0))
const SIMD_PROBE = probeModule(V128_ZERO);

interface NodeProcess {
  getBuiltinModule?: (id: string) => unknown;
}

function nodeBuiltin<T>(id: string): T | null {
  const proc = (globalThis as { process?: NodeProcess }).process;
  try {
    return (proc?.getBuiltinModule?.(id) as T | undefined) ?? null;
  } catch {
    return null;
  }
}

function validate(bytes: Uint8Array): boolean {
  try {
    return typeof WebAssembly !== 'undefined' && WebAssembly.validate(bytes as Uint8Array<ArrayBuffer>);
  } catch {
    return false;
  }
}

/**
 * Whether this engine runs relaxed SIMD (then the relaxed build is the one loaded). On by default
 * from V8 11.4 (Node 22); Node 20 has it behind a flag, which this turns on.
 */
export function relaxedSimdSupported(): boolean {
  if (validate(RELAXED_PROBE)) return true;
  const v8 = nodeBuiltin<{ setFlagsFromString(flags: string): void }>('node:v8');
  if (!v8) return false;
  try {
    v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
  } catch {
    return false;
  }
  return validate(RELAXED_PROBE);
}

let loaded: { exports: WebAssembly.Exports; variant: WasmVariant; module: WebAssembly.Module } | null = null;
let loadError: string | null = null;
let tried = false;

/**
 * The builds import a shared memory (scripts/build-wasm.mjs: --sharedMemory). Where the memory is
 * a plain one (memory.ts: no cross-origin isolation), the import must say so: this clears the
 * shared bit of the memory import's limits in a copy of the bytes. One byte changes; the code is
 * the same, so the results are too.
 */
export function unsharedMemoryImport(bytes: Uint8Array): Uint8Array {
  const out = bytes.slice();
  let p = 8; // magic and version
  const leb = (): number => {
    let v = 0;
    for (let shift = 0; ; shift += 7) {
      if (p >= out.length) throw new Error('wasm backend: truncated module (reading its import section)');
      const b = out[p++]!;
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
    }
  };
  const limits = (): number => {
    const at = p++;
    leb();
    if (out[at]! & 1) leb();
    return at;
  };
  while (p < out.length) {
    const id = out[p++]!;
    const size = leb();
    const end = p + size;
    if (id === 2) {
      for (let n = leb(); n > 0; n--) {
        for (let name = 0; name < 2; name++) {
          const length = leb(); // module name, then field name (read the length before moving p)
          p += length;
        }
        const kind = out[p++]!;
        if (kind === 0) leb();
        else if (kind === 1) {
          p++; // reference type
          limits();
        } else if (kind === 2) {
          const at = limits();
          out[at] = out[at]! & ~2;
        } else p += 2; // global: value type, mutability
      }
    }
    p = end;
  }
  return out;
}

function instantiate(
  bytes: Uint8Array,
  variant: WasmVariant,
): { exports: WebAssembly.Exports; variant: WasmVariant; module: WebAssembly.Module } {
  const module = new WebAssembly.Module(
    (memoryShared ? bytes : unsharedMemoryImport(bytes)) as Uint8Array<ArrayBuffer>,
  );
  const instance = new WebAssembly.Instance(module, { env: { memory } });
  const exports = instance.exports;
  verify(exports, declared.keys(), FILE_NAMES[variant]);
  const heapBase = (exports.heapBase as () => number)();
  if (heapBase > RESERVED_BYTES)
    throw new Error(`wasm backend: module static data (${heapBase} bytes) exceeds the reserved ${RESERVED_BYTES}`);
  return { exports, variant, module };
}

function readNode(variant: WasmVariant): Uint8Array {
  const fs = nodeBuiltin<{ readFileSync(p: URL): Uint8Array }>('node:fs');
  if (!fs)
    throw new Error(
      'wasm backend: not running under Node >= 20.16 (no process.getBuiltinModule); use loadWasmKernels()',
    );
  const url = wasmUrl(variant);
  try {
    return new Uint8Array(fs.readFileSync(url));
  } catch (e) {
    throw new Error(
      `wasm backend: cannot read ${url.pathname}; build it with \`npm run build:wasm\` (${(e as Error).message})`,
    );
  }
}

function preconditions(): void {
  if (!memoryAvailable) throw new Error('wasm backend: no WebAssembly.Memory here');
  if (!validate(SIMD_PROBE)) throw new Error('wasm backend: this engine has no WebAssembly SIMD');
}

/** The module's exports, loading it synchronously on first use (Node); null if it cannot be loaded. */
export function kernels(): WebAssembly.Exports | null {
  if (loaded) return loaded.exports;
  if (tried) return null;
  tried = true;
  try {
    preconditions();
    const variant: WasmVariant = relaxedSimdSupported() ? 'relaxed-simd' : 'simd';
    loaded = instantiate(readNode(variant), variant);
    return loaded.exports;
  } catch (e) {
    loadError = (e as Error).message;
    return null;
  }
}

/** The module's exports, or an error saying why they are unavailable. */
export function requireKernels(): WebAssembly.Exports {
  const k = kernels();
  if (!k) throw new Error(loadError ?? 'wasm backend: not loaded');
  return k;
}

/** Why the module could not be loaded (null when it loaded or was not tried). */
export function wasmLoadError(): string | null {
  return loadError;
}

/**
 * Browser (or any engine) loader: fetch and compile the module asynchronously, from next to this
 * file (where a bundler put it) or from `base`, a folder URL holding qkv-simd.wasm and
 * qkv-relaxed.wasm. Returns true when the kernels are ready. (The backend's `loadWasmKernels`,
 * exported by the package, calls this and registers the backend.)
 */
export async function loadKernelsAsync(base?: string | URL): Promise<boolean> {
  if (loaded) return true;
  try {
    preconditions();
    const variant: WasmVariant = validate(RELAXED_PROBE) ? 'relaxed-simd' : 'simd';
    const res = await fetch(base === undefined ? wasmUrl(variant) : new URL(FILE_NAMES[variant], base));
    if (!res.ok) throw new Error(`wasm backend: fetching ${res.url} gave ${res.status}`);
    loaded = instantiate(new Uint8Array(await res.arrayBuffer()), variant);
    tried = true;
    loadError = null;
    return true;
  } catch (e) {
    loadError = (e as Error).message;
    return false;
  }
}

/** The compiled module in use (worker threads instantiate it on the same memory). */
export function wasmModule(): WebAssembly.Module {
  requireKernels();
  return loaded!.module;
}

/** Which build is in use (loads the module). */
export function wasmVariant(): WasmVariant {
  requireKernels();
  return loaded!.variant;
}

/** Switch builds, e.g. to test or time the plain-SIMD one where relaxed SIMD is available (Node). */
export function setWasmVariant(variant: WasmVariant): void {
  requireKernels();
  if (loaded!.variant === variant) return;
  if (variant === 'relaxed-simd' && !relaxedSimdSupported())
    throw new Error('wasm backend: this engine does not support relaxed SIMD');
  loaded = instantiate(readNode(variant), variant);
}

/** Exports about the module itself (assembly/index.ts), used here and by the thread pool. */
const moduleExports = declareExports('loader.ts', {
  /** End of the module's static data. */
  heapBase: sig<[], I32>(0),
  /** 1 for the relaxed-SIMD build. */
  relaxed: sig<[], I32>(0),
  /** Bytes of the GEMM's scratch block (assembly/gemm.ts); each worker thread has one. */
  scratchBytes: sig<[], I32>(0),
});
/** Floats of GEMM scratch per thread (the thread pool sizes its workers' blocks with it). */
export function gemmScratchFloats(): number {
  return moduleExports().scratchBytes() / 4;
}
