/**
 * The wasm GEMM (assembly/gemm.ts via src/backend/wasm/gemm.ts) against the js reference, and the
 * wasm-memory allocator. Builds the .wasm first if it is missing.
 *
 * Tolerance: both implementations compute each C[i][j] as a float32 sum of k products (plus C's
 * old value when accumulating), in different orders (the wasm kernel blocks k and may fuse
 * multiply-adds; the js one rounds to float32 differently). Any such evaluation satisfies the
 * standard bound |computed − exact| <= γ·(|C₀| + Σₚ |A[i][p]|·|B[p][j]|) with γ = n·u/(1 − n·u),
 * n = k + 1 terms and u = 2⁻²⁴ (Higham, Accuracy and Stability, §3.1), so the two may differ by twice
 * that. We compute the right-hand side exactly by running the js GEMM on |A| and |B|, and allow
 * 2·γ_{k+2} of it: rigorous (never flaky), yet a wrong or missing term (≈ |a·b|, i.e. ~1/k of Σ|a·b|)
 * exceeds it by orders of magnitude for every k tested (2·(k+2)·u ≪ 1/k for k <= 600).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GemmParams } from '../../src/backend/backend.ts';
import { gemm as jsGemm } from '../../src/backend/js/gemm.ts';
import { kernels } from '../../src/backend/wasm/loader.ts';
import { alloc, bytesInUse, free, isWasmView, memory } from '../../src/backend/wasm/memory.ts';
import { rng } from '../helpers/random.ts';
import { wasmVariants } from '../helpers/wasm.ts';

const wasmDir = new URL('../../src/backend/wasm/', import.meta.url);
if (!['qkv-simd.wasm', 'qkv-relaxed.wasm'].every((f) => existsSync(new URL(f, wasmDir)))) {
  const script = fileURLToPath(new URL('../../scripts/build-wasm.mjs', import.meta.url));
  const r = spawnSync(process.execPath, [script], { stdio: 'inherit' });
  assert.equal(r.status, 0, 'scripts/build-wasm.mjs failed');
}
const { wasmGemm, gemmVariant, setGemmVariant } = await import('../../src/backend/wasm/gemm.ts');
type GemmVariant = ReturnType<typeof gemmVariant>;
/** The default build first (relaxed SIMD where supported), then plain SIMD if that was not it (said; test/helpers/wasm.ts). */
const variants: GemmVariant[] = wasmVariants(gemmVariant(), 'test/backend/wasm-gemm.test.ts');

const U = 2 ** -24;

const rand = rng(1234);
function randomArray(n: number, inWasm: boolean, pad = 0): Float32Array {
  const x = inWasm ? alloc(n + pad).subarray(pad) : new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = rand() * 2 - 1;
  return x;
}

/** Views in wasm memory made by randomArray(…, true) come from alloc; free their whole block. */
function release(...xs: Float32Array[]): void {
  for (const x of xs) if (isWasmView(x)) free(new Float32Array(x.buffer, x.byteOffset - (x.byteOffset % 16), 1));
}

function extent(batch: number, stride: number, size: number): number {
  return (batch - 1) * stride + size;
}

interface Case extends GemmParams {
  inWasm: boolean;
  /** Elements of padding before each array (1 = 4-byte misaligned views, inside wasm memory). */
  pad?: number;
}

function check(p: Case, what: string): void {
  const { batch, m, n, k, strideA, strideB, strideC, inWasm } = p;
  const a = randomArray(extent(batch, strideA, m * k), inWasm, p.pad);
  const b = randomArray(extent(batch, strideB, k * n), inWasm, p.pad);
  const c = randomArray(extent(batch, strideC, m * n), inWasm, p.pad);
  const expected = Float32Array.from(c);
  jsGemm(a, b, expected, p);
  // Error bound: js GEMM of |A|, |B| (+ |C₀| when accumulating), see the header comment.
  const bound = p.accumulate ? c.map(Math.abs) : new Float32Array(c.length);
  jsGemm(a.map(Math.abs), b.map(Math.abs), bound, p);
  const gamma = (2 * ((k + 2) * U)) / (1 - (k + 2) * U);
  wasmGemm(a, b, c, p);
  for (let i = 0; i < c.length; i++) {
    const err = Math.abs(c[i]! - expected[i]!);
    if (!(err <= gamma * bound[i]! + 1e-30)) {
      assert.fail(`${what}: C[${i}] = ${c[i]}, js ${expected[i]} (|diff| ${err} > ${gamma * bound[i]!})`);
    }
  }
  release(a, b, c);
}

function sameBits(actual: Float32Array, expected: Float32Array, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    if (!Object.is(actual[i], expected[i]))
      assert.fail(`${what}: element ${i} is ${actual[i]}, expected ${expected[i]}`);
  }
}

function equalBits(x: Float32Array, y: Float32Array): boolean {
  return x.length === y.length && x.every((v, i) => Object.is(v, y[i]));
}

const f32 = Math.fround;
const bits = new Float32Array(1);
const bitsInt = new Int32Array(bits.buffer);
/** The float32 next to x (not 0) away from zero when `out`, towards zero otherwise. */
function nextF32(x: number, out: boolean): number {
  bits[0] = x;
  bitsInt[0] += out ? 1 : -1;
  return bits[0]!;
}

/** fma in float32: a·b + c rounded once (a·b is exact in a double; the sum's error is kept by TwoSum). */
function fmaF32(a: number, b: number, c: number): number {
  const p = a * b;
  const s = p + c;
  const bb = s - p;
  const err = p - (s - bb) + (c - bb);
  const r = f32(s);
  if (err === 0 || r === s) return r;
  // s + err lies on s's side of every float32 midpoint but s itself: a tie at s is broken by err.
  const other = nextF32(r, Math.abs(s) > Math.abs(r));
  const lo = Math.min(r, other),
    hi = Math.max(r, other);
  if (s - lo !== hi - s) return r;
  return err > 0 ? hi : lo;
}

/**
 * C (m, n) = A (m, k)·Bᵀ (+ C₀), B stored (n, k), in the summation order assembly/gemm.ts states for
 * its few-row NT path, every operation rounded to float32 (the multiply-adds fused or not).
 */
function orderModel(
  a: Float32Array,
  b: Float32Array,
  c0: Float32Array,
  m: number,
  n: number,
  k: number,
  accumulate: boolean,
  fused: boolean,
): Float32Array {
  const madd = fused
    ? (x: number, y: number, z: number) => fmaF32(x, y, z)
    : (x: number, y: number, z: number) => f32(z + f32(x * y));
  const c = new Float32Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      const s = [0, 1, 2, 3].map(() => [0, 0, 0, 0]);
      let p = 0;
      for (; p + 16 <= k; p += 16)
        for (let q = 0; q < 4; q++)
          for (let l = 0; l < 4; l++) s[q]![l] = madd(a[i * k + p + 4 * q + l]!, b[j * k + p + 4 * q + l]!, s[q]![l]!);
      for (; p + 4 <= k; p += 4)
        for (let l = 0; l < 4; l++) s[0]![l] = madd(a[i * k + p + l]!, b[j * k + p + l]!, s[0]![l]!);
      const v = [0, 1, 2, 3].map((l) => f32(f32(s[0]![l]! + s[1]![l]!) + f32(s[2]![l]! + s[3]![l]!)));
      let sum = f32(f32(f32(v[0]! + v[1]!) + v[2]!) + v[3]!);
      for (; p < k; p++) sum = f32(sum + f32(a[i * k + p]! * b[j * k + p]!));
      c[i * n + j] = accumulate ? f32(c0[i * n + j]! + sum) : sum;
    }
  return c;
}

const tr = (t: boolean) => (t ? 'T' : 'N');

for (const variant of variants) {
  test(`wasm gemm (${variant}) matches js: every m, n, k in {1,3,7,17,64,65,129}, all transposes`, () => {
    setGemmVariant(variant);
    const sizes = [1, 3, 7, 17, 64, 65, 129];
    let i = 0;
    for (const m of sizes)
      for (const n of sizes)
        for (const k of sizes)
          for (const transA of [false, true])
            for (const transB of [false, true]) {
              const accumulate = i % 3 === 1;
              const inWasm = i % 2 === 0;
              check(
                { batch: 1, m, n, k, transA, transB, strideA: 0, strideB: 0, strideC: 0, accumulate, inWasm },
                `${m}x${n}x${k} ${tr(transA)}${tr(transB)} acc=${accumulate} inWasm=${inWasm}`,
              );
              i++;
            }
  });

  test(`wasm gemm (${variant}): batch 3 with broadcast (stride 0) on either operand, gaps between batches, accumulate, in/out of wasm memory`, () => {
    setGemmVariant(variant);
    const shapes = [
      [7, 17, 65],
      [64, 65, 129],
      [1, 129, 3],
      [65, 7, 1],
      [17, 1, 64],
    ] as const;
    for (const [m, n, k] of shapes) {
      const strides: [number, number, number][] = [
        [m * k, k * n, m * n], // plain
        [0, k * n, m * n], // A broadcast
        [m * k, 0, m * n], // B broadcast (folded into one tall GEMM when A is not transposed)
        [m * k + 5, k * n + 3, m * n + 7], // gaps, which must survive in C
      ];
      for (const [strideA, strideB, strideC] of strides)
        for (const transA of [false, true])
          for (const transB of [false, true])
            for (const accumulate of [false, true])
              for (const inWasm of [false, true]) {
                check(
                  { batch: 3, m, n, k, transA, transB, strideA, strideB, strideC, accumulate, inWasm },
                  `batch 3 ${m}x${n}x${k} strides ${strideA},${strideB},${strideC} ${tr(transA)}${tr(transB)} acc=${accumulate} inWasm=${inWasm}`,
                );
              }
    }
  });

  test(`wasm gemm (${variant}): misaligned views in wasm memory`, () => {
    setGemmVariant(variant);
    for (const transA of [false, true])
      for (const transB of [false, true]) {
        check(
          {
            batch: 2,
            m: 33,
            n: 41,
            k: 29,
            transA,
            transB,
            strideA: 33 * 29,
            strideB: 41 * 29,
            strideC: 33 * 41,
            accumulate: transA,
            inWasm: true,
            pad: 1,
          },
          `misaligned ${tr(transA)}${tr(transB)}`,
        );
      }
  });

  test(`wasm gemm (${variant}): shapes past the cache blocks (m > 256, n > 2048, k > 256)`, () => {
    setGemmVariant(variant);
    check(
      {
        batch: 1,
        m: 259,
        n: 2053,
        k: 263,
        transA: false,
        transB: false,
        strideA: 0,
        strideB: 0,
        strideC: 0,
        accumulate: false,
        inWasm: true,
      },
      'large NN',
    );
    check(
      {
        batch: 1,
        m: 259,
        n: 2053,
        k: 263,
        transA: true,
        transB: true,
        strideA: 0,
        strideB: 0,
        strideC: 0,
        accumulate: true,
        inWasm: false,
      },
      'large TT',
    );
  });

  test(`wasm gemm (${variant}): a few rows against a transposed B (a decoding step: dot products, columns split over threads)`, () => {
    setGemmVariant(variant);
    let i = 0;
    for (const m of [1, 2, 3, 4, 5])
      for (const [n, k] of [
        [4099, 771],
        [257, 3],
        [3, 16],
        [1, 17],
        [6, 5],
        [9, 130],
        [13, 33],
      ]) {
        const accumulate = i % 2 === 1;
        check(
          {
            batch: 1,
            m,
            n,
            k,
            transA: false,
            transB: true,
            strideA: 0,
            strideB: 0,
            strideC: 0,
            accumulate,
            inWasm: i % 3 !== 0,
            pad: i % 4 === 2 ? 1 : 0,
          },
          `${m}x${n}x${k} NT acc=${accumulate}`,
        );
        i++;
      }
  });

  test(`wasm gemm (${variant}): the few-row NT path, four columns at once, gives the bits of its summation order, column by column`, () => {
    setGemmVariant(variant);
    const { gemvNTRange } = kernels() as unknown as { gemvNTRange: (...args: number[]) => void };
    const fill = (x: Float32Array) => {
      for (let i = 0; i < x.length; i++) x[i] = rand() * 2 - 1;
      return x;
    };
    // Every m, n, k of the lists (one row goes column after column, several rows four columns at once),
    // and one row against a B larger than L2.
    const shapes: [number, number, number][] = [
      [1, 1031, 129],
      [1, 1026, 132],
    ];
    for (const m of [1, 2, 3, 4, 5])
      for (const n of [1, 2, 3, 4, 5, 7, 8, 9, 13, 67])
        for (const k of [1, 2, 3, 4, 5, 7, 8, 12, 15, 16, 17, 19, 31, 32, 33, 63, 64, 67, 128, 130])
          shapes.push([m, n, k]);
    let i = 0;
    for (const [m, n, k] of shapes) {
      const accumulate = i++ % 2 === 1;
      const what = `${m}x${n}x${k} acc=${accumulate}`;
      const a = fill(alloc(m * k)),
        b = fill(alloc(n * k)),
        c0 = fill(new Float32Array(m * n));
      const run = (ranges: [number, number][]): Float32Array => {
        const c = alloc(m * n);
        c.set(c0);
        for (const [j0, j1] of ranges) {
          gemvNTRange(a.byteOffset, b.byteOffset, c.byteOffset, m, n, k, accumulate ? 1 : 0, j0, j1);
          // Columns from j1 on untouched.
          for (let r = 0; r < m; r++)
            for (let j = j1; j < n; j++)
              assert.ok(Object.is(c[r * n + j], c0[r * n + j]), `${what}: column ${j} written`);
        }
        const out = c.slice();
        free(c);
        return out;
      };
      const whole = run([[0, n]]);
      // One column at a time (never four at once), and a split at odd columns (as threads would, anywhere).
      sameBits(run(Array.from({ length: n }, (_, j) => [j, j + 1])), whole, `${what}: one column at a time`);
      const s1 = Math.min(n, 1 + (i % 3)),
        s2 = Math.min(n, s1 + 5);
      sameBits(
        run([
          [0, s1],
          [s1, s2],
          [s2, n],
        ]),
        whole,
        `${what}: split at ${s1}, ${s2}`,
      );
      // The order of assembly/gemm.ts's comment, modelled in float32: unfused in the plain-SIMD build;
      // the relaxed build's multiply-add is fused where the CPU has FMA (either model, for every element).
      const unfused = orderModel(a, b, c0, m, n, k, accumulate, false);
      if (variant === 'simd') sameBits(whole, unfused, `${what}: against the order's model`);
      else if (!equalBits(whole, unfused))
        sameBits(whole, orderModel(a, b, c0, m, n, k, accumulate, true), `${what}: against the order's model (fma)`);
      free(a);
      free(b);
    }
    // Through wasmGemm (staging, the thread split of columns) for the rows it routes there.
    for (const m of [1, 2, 3, 4]) {
      const [n, k] = [4099, 131];
      const a = fill(new Float32Array(m * k)),
        b = fill(new Float32Array(n * k)),
        c = fill(new Float32Array(m * n));
      const c0 = c.slice();
      const p: GemmParams = {
        batch: 1,
        m,
        n,
        k,
        transA: false,
        transB: true,
        strideA: 0,
        strideB: 0,
        strideC: 0,
        accumulate: m % 2 === 0,
      };
      wasmGemm(a, b, c, p);
      const model = orderModel(a, b, c0, m, n, k, p.accumulate, false);
      if (variant === 'simd' || equalBits(c, model)) sameBits(c, model, `wasmGemm ${m}x${n}x${k}`);
      else sameBits(c, orderModel(a, b, c0, m, n, k, p.accumulate, true), `wasmGemm ${m}x${n}x${k} (fma)`);
    }
  });

  test(`wasm gemm (${variant}): k = 0, empty shapes, short arrays`, () => {
    setGemmVariant(variant);
    const c = new Float32Array([1, 2, 3, 4]);
    const p: GemmParams = {
      batch: 1,
      m: 2,
      n: 2,
      k: 0,
      transA: false,
      transB: false,
      strideA: 0,
      strideB: 0,
      strideC: 0,
      accumulate: true,
    };
    wasmGemm(new Float32Array(0), new Float32Array(0), c, p);
    assert.deepEqual([...c], [1, 2, 3, 4]);
    wasmGemm(new Float32Array(0), new Float32Array(0), c, { ...p, accumulate: false });
    assert.deepEqual([...c], [0, 0, 0, 0]);
    wasmGemm(new Float32Array(0), new Float32Array(0), new Float32Array(0), { ...p, m: 0, k: 3 });
    assert.throws(() => wasmGemm(new Float32Array(3), new Float32Array(4), c, { ...p, k: 2 }), RangeError);
  });
}

test('allocator: 16-byte alignment, zeroed, reuse after free, no overlap, growth keeps views valid', () => {
  const base = bytesInUse();
  // Alignment and zeroing.
  const views = [0, 1, 3, 4, 5, 17, 1000].map((n) => alloc(n));
  for (const v of views) {
    assert.equal(v.byteOffset % 16, 0);
    assert.ok(isWasmView(v));
    assert.ok(v.every((x) => x === 0));
    v.fill(7);
  }
  // Reuse: first fit hands the freed block back.
  const off = views[5]!.byteOffset;
  free(views[5]!);
  const again = alloc(17);
  assert.equal(again.byteOffset, off);
  assert.ok(
    again.every((x) => x === 0),
    'reused block is zeroed',
  );
  views[5] = again;
  for (const v of views) free(v);
  assert.equal(bytesInUse(), base);
  assert.throws(() => free(again), /not an allocated block/);
  assert.throws(() => free(new Float32Array(4)), /not an allocated block/);

  // Random alloc/free: live blocks never overlap and keep their contents.
  const r = rng(99);
  const live: { v: Float32Array; tag: number }[] = [];
  for (let step = 0; step < 2000; step++) {
    if (live.length > 0 && r() < 0.45) {
      const [{ v, tag }] = live.splice(Math.floor(r() * live.length), 1);
      assert.ok(
        v!.every((x) => x === tag!),
        'contents intact until free',
      );
      free(v!);
    } else {
      const v = alloc(Math.floor(r() ** 3 * 5000));
      v.fill(step);
      live.push({ v, tag: step });
    }
  }
  const spans = live
    .map(({ v }) => [v.byteOffset, v.byteOffset + Math.max(16, v.byteLength)] as const)
    .sort((x, y) => x[0] - y[0]);
  for (let i = 1; i < spans.length; i++) assert.ok(spans[i - 1]![1] <= spans[i]![0], 'no overlap');
  for (const { v, tag } of live) assert.ok(v.every((x) => x === tag));

  // Growth: a block larger than the memory forces a grow; earlier views stay valid and in memory.
  const before = memory.buffer.byteLength;
  const big = alloc(before / 4 + 1000);
  assert.ok(memory.buffer.byteLength > before);
  big[big.length - 1] = 5;
  for (const { v, tag } of live) {
    assert.ok(isWasmView(v), 'old view still recognised after grow');
    assert.ok(v.length === 0 || v[0] === tag);
    v.fill(-1);
  }
  free(big);
  for (const { v } of live) free(v);
  assert.equal(bytesInUse(), base);
});
