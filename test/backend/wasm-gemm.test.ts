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
