/**
 * GEMM throughput only, wasm vs js, single thread: npx tsx bench/gemm.ts (npm run bench:gemm).
 * The full benchmark with peers is bench/index.ts (npm run bench).
 *
 * Checks the wasm kernel against js on one shape first, then times square 128…1024 and
 * 4096×512×512 (m×k×n) in NN, NT and TN layouts: median of 5 timed samples after a warm-up, each
 * sample repeating the call until it lasts ≥ 20 ms. Wasm operands live in wasm memory (no copies).
 * Only one benchmark runs at a time (bench/lock.ts).
 */
import { loadavg } from 'node:os';
import { acquireBenchLock } from './lock.ts';
import type { GemmParams } from '../src/backend/backend.ts';
import { gemm as jsGemm } from '../src/backend/js/gemm.ts';
import { alloc, free } from '../src/backend/wasm/memory.ts';
import { gemmVariant, setGemmVariant, wasmGemm, type GemmVariant } from '../src/backend/wasm/gemm.ts';

acquireBenchLock();

type Gemm = (a: Float32Array, b: Float32Array, c: Float32Array, p: GemmParams) => void;

function fillRandom(x: Float32Array): Float32Array {
  for (let i = 0; i < x.length; i++) x[i] = Math.random() * 2 - 1;
  return x;
}

function params(m: number, n: number, k: number, transA: boolean, transB: boolean): GemmParams {
  return { batch: 1, m, n, k, transA, transB, strideA: 0, strideB: 0, strideC: 0, accumulate: false };
}

// Correctness first: every transpose case on an odd shape, within the float32 bound of the test.
{
  const [m, n, k] = [67, 131, 93];
  for (const [ta, tb] of [
    [false, false],
    [false, true],
    [true, false],
    [true, true],
  ] as const) {
    const p = params(m, n, k, ta, tb);
    const a = fillRandom(alloc(m * k));
    const b = fillRandom(alloc(k * n));
    const c = alloc(m * n);
    const ref = new Float32Array(m * n);
    const bound = new Float32Array(m * n);
    wasmGemm(a, b, c, p);
    jsGemm(a, b, ref, p);
    jsGemm(a.map(Math.abs), b.map(Math.abs), bound, p);
    const gamma = (2 * (k + 2)) / 2 ** 24;
    for (let i = 0; i < c.length; i++) {
      if (!(Math.abs(c[i]! - ref[i]!) <= gamma * bound[i]!))
        throw new Error(`wasm/js mismatch at ${i}: ${c[i]} vs ${ref[i]} (${ta ? 'T' : 'N'}${tb ? 'T' : 'N'})`);
    }
    for (const x of [a, b, c]) free(x);
  }
  console.log(`check: wasm (${gemmVariant()}) matches js on ${m}x${n}x${k}, all transposes`);
}

function median(xs: number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  return s[s.length >> 1]!;
}

/** GFLOP/s, median of `samples` timings. */
function time(fn: Gemm, a: Float32Array, b: Float32Array, c: Float32Array, p: GemmParams, samples = 5): number {
  const flops = 2 * p.m * p.n * p.k;
  let t0 = performance.now();
  fn(a, b, c, p); // warm-up (and calibration)
  const reps = Math.max(1, Math.ceil(20 / Math.max(performance.now() - t0, 0.01)));
  fn(a, b, c, p);
  const times: number[] = [];
  for (let s = 0; s < samples; s++) {
    t0 = performance.now();
    for (let r = 0; r < reps; r++) fn(a, b, c, p);
    times.push((performance.now() - t0) / reps);
  }
  return flops / (median(times) * 1e6);
}

const variants: GemmVariant[] = gemmVariant() === 'relaxed-simd' ? ['simd', 'relaxed-simd'] : ['simd'];
const shapes: [number, number, number][] = [
  [128, 128, 128],
  [256, 256, 256],
  [512, 512, 512],
  [1024, 1024, 1024],
  [4096, 512, 512],
];
const cases = [
  ['NN', false, false],
  ['NT', false, true],
  ['TN', true, false],
] as const;

console.log(
  `node ${process.version}, load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}; GFLOP/s, median of 5`,
);
const header = ['m×k×n', 'case', 'js', ...variants.map((v) => `wasm ${v}`), 'best/js'];
console.log(header.join('\t'));
for (const [m, k, n] of shapes) {
  const a = fillRandom(alloc(m * k));
  const b = fillRandom(alloc(k * n));
  const c = alloc(m * n);
  for (const [name, ta, tb] of cases) {
    const p = params(m, n, k, ta, tb);
    const js = time(jsGemm, a, b, c, p);
    const wasm = variants.map((v) => {
      setGemmVariant(v);
      return time(wasmGemm, a, b, c, p);
    });
    console.log(
      [
        `${m}×${k}×${n}`,
        name,
        js.toFixed(2),
        ...wasm.map((x) => x.toFixed(1)),
        `${(Math.max(...wasm) / js).toFixed(0)}×`,
      ].join('\t'),
    );
  }
  for (const x of [a, b, c]) free(x);
}
