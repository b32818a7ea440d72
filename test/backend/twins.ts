/**
 * Helpers for the tests that run each wasm kernel family against its js twin
 * (test/backend/wasm-<family>.test.ts, mirroring src/backend/wasm/<family>.ts).
 */
import assert from 'node:assert/strict';
import type { BinaryOp, HostBackend } from '../../src/backend/backend.ts';
import { hostBackend } from '../../src/backend/backend.ts';
import { jsBackend as jsB } from '../../src/backend/js/index.ts';
import { wasmBackend as wasmB } from '../../src/backend/wasm/index.ts';
import { kernels, wasmVariant, type WasmVariant } from '../../src/backend/wasm/loader.ts';
import { alloc } from '../../src/backend/wasm/memory.ts';
import { routeCounts } from '../../src/backend/wasm/route.ts';
import { assertClose } from '../helpers/assert.ts';
import { rng, uniformArray } from '../helpers/random.ts';
import { wasmVariants } from '../helpers/wasm.ts';
const jsBackend = hostBackend(jsB);
const wasmBackend = hostBackend(wasmB);

assert.ok(kernels(), 'the wasm module loads (npm run build:wasm)');
/** Both builds where relaxed SIMD is available, else the plain-SIMD one (said; test/helpers/wasm.ts). */
export const variants: WasmVariant[] = wasmVariants(wasmVariant(), 'test/backend/twins.ts');

/** A seeded source of uniform values in [-scale, scale). */
export function randomSource(seed: number): { rand: () => number; randn: (n: number, scale?: number) => Float32Array } {
  const rand = rng(seed);
  return { rand, randn: (n, scale = 1) => uniformArray(rand, n, scale) };
}

/**
 * The js twins accumulate some sums in float64 and use Math.exp; the wasm kernels are float32
 * with a polynomial exp. Agreement to 2e-5 + 2e-5·|js| (float32 rounding over a few hundred terms)
 * is asked, with NaN and ±∞ in the same places.
 */
export const close = (a: Float32Array, b: Float32Array, what: string) => assertClose(a, b, what, 2e-5, 2e-5);

export interface Both {
  js: Float32Array[];
  wasm: Float32Array[];
  rj: unknown;
  rw: unknown;
}

/** `both(outs, f, fill)`: run `f` on both backends with fresh copies of the outputs (pre-filled, to catch unwritten cells). */
export function twinRunner(randn: (n: number, scale?: number) => Float32Array) {
  return (outs: number[], f: (be: HostBackend, o: Float32Array[]) => unknown, fill = 0): Both => {
    const init = outs.map((n) => randn(n, fill));
    const js = init.map((x) => x.slice());
    const wasm = init.map((x) => x.slice());
    const rj = f(jsBackend, js);
    const rw = f(wasmBackend, wasm);
    return { js, wasm, rj, rw };
  };
}

/** A copy of x in wasm memory (never freed: a few MB for a whole file). */
export function w(x: Float32Array): Float32Array {
  const v = alloc(x.length);
  v.set(x);
  return v;
}

export const prod = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);

export function sameBits(actual: Float32Array, expected: Float32Array, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    if (!Object.is(actual[i], expected[i]))
      assert.fail(`${what}: element ${i} is ${actual[i]}, expected ${expected[i]}`);
  }
}

/** Count the route of what `f` runs: asserts it took wasm (`expect` 'wasm') or the js twin. */
export function routed<T>(expect: 'wasm' | 'js', what: string, f: () => T): T {
  const before = { ...routeCounts };
  const r = f();
  const dw = routeCounts.wasm - before.wasm,
    dj = routeCounts.js - before.js;
  if (expect === 'wasm') assert.ok(dw > 0 && dj === 0, `${what}: expected the wasm kernel (wasm ${dw}, js ${dj})`);
  else assert.ok(dj > 0 && dw === 0, `${what}: expected the js twin (wasm ${dw}, js ${dj})`);
  return r;
}

export const OPS: BinaryOp[] = ['add', 'sub', 'mul', 'div'];

/** Values with specials sprinkled in: zeros of both signs, ±∞, NaN. */
export function spikyFrom(randn: (n: number, scale?: number) => Float32Array): (n: number) => Float32Array {
  return (n) => {
    const x = randn(n, 3);
    const specials = [0, -0, Infinity, -Infinity, NaN, 1e-40];
    for (let i = 0; i < n; i += 7) x[i] = specials[(i / 7) % specials.length]!;
    return x;
  };
}
