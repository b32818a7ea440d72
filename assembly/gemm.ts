// Single-precision GEMM for the wasm backend, compiled by scripts/build-wasm.mjs with 128-bit SIMD
// (and a second build with relaxed-SIMD fused multiply-add). Over 500 lines: the blocked GEMM and the
// few-row dot-product path (end of file), whose four-column kernel is written out pass by pass.
//
// Contract: that of `gemm` in src/backend/backend.ts, with byte addresses instead of arrays:
// C = op(A)·op(B) (or C += … when `accumulate`), row-major, batched, batch strides in elements
// (0 broadcasts). The memory is owned and allocated by JavaScript (src/backend/wasm/memory.ts);
// this module allocates nothing, and needs a scratch block of `scratchBytes()` bytes for packing.
//
// Structure (Goto/BLIS): for each block of NC columns and KC steps of k, B is packed into
// slivers of NR = 8 columns (k-major: 8 contiguous floats per step); for each block of MC rows, A
// is packed into slivers of MR = 4 rows (4 contiguous floats per step). A 4×8 micro-kernel keeps
// the tile of C in 8 v128 accumulators (8 acc + 2 B + 1 A splat = 11 of the 16 xmm registers V8
// uses; larger tiles spilled). A B sliver (KC·8·4 = 8 KiB) stays in L1 while the A block
// (MC·KC·4 = 256 KiB) streams from L2. Packed slivers are zero-padded, so edges (any m, n, k)
// cost only a masked write-back of the last tile.

const MR: i32 = 4;
const NR: i32 = 8;
const KC: i32 = 256;
const MC: i32 = 256;
const NC: i32 = 2048;

const PACK_A_BYTES: usize = <usize>(MC * KC * 4);
const PACK_B_BYTES: usize = <usize>(KC * NC * 4);
const TILE_BYTES: usize = <usize>(MR * NR * 4);

/** Bytes of scratch space `gemm` needs (16-byte aligned): packed A block, packed B block, one tile. */
export function scratchBytes(): i32 {
  return <i32>(PACK_A_BYTES + PACK_B_BYTES + TILE_BYTES);
}

// @ts-ignore: decorator
@inline function madd(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    return f32x4.relaxed_madd(a, b, c);
  } else {
    return f32x4.add(c, f32x4.mul(a, b));
  }
}

/**
 * Pack rows [i0, i0+mc) × steps [p0, p0+kc) of op(A) into slivers of MR rows: sliver s holds,
 * for each step p, the 4 values op(A)[i0+4s+r][p0+p] (r = 0..3), zero beyond mc.
 * A is (m, k) row-major when !transA, stored (k, m) when transA.
 */
function packA(a: usize, m: i32, k: i32, transA: bool, i0: i32, mc: i32, p0: i32, kc: i32, dst: usize): void {
  for (let s = 0; s < mc; s += MR) {
    const rows = min(MR, mc - s);
    const d = dst + <usize>(s * kc) * 4;
    if (transA) {
      // op(A)[i][p] = A[p][i]: the 4 rows of a step are contiguous.
      let src = a + (<usize>p0 * <usize>m + <usize>(i0 + s)) * 4;
      const ld = <usize>m * 4;
      if (rows == MR) {
        for (let p = 0; p < kc; p++) {
          v128.store(d + <usize>p * 16, v128.load(src));
          src += ld;
        }
      } else {
        for (let p = 0; p < kc; p++) {
          const dp = d + <usize>p * 16;
          v128.store(dp, f32x4.splat(0));
          for (let r = 0; r < rows; r++) store<f32>(dp + <usize>r * 4, load<f32>(src + <usize>r * 4));
          src += ld;
        }
      }
    } else {
      // op(A)[i][p] = A[i][p]: 4 rows, each contiguous in p; transpose 4×4 blocks.
      const ld = <usize>k * 4;
      const r0 = a + (<usize>(i0 + s) * <usize>k + <usize>p0) * 4;
      if (rows == MR) {
        const r1 = r0 + ld, r2 = r1 + ld, r3 = r2 + ld;
        let p = 0;
        for (; p + 4 <= kc; p += 4) {
          const o = <usize>p * 4;
          const x0 = v128.load(r0 + o), x1 = v128.load(r1 + o), x2 = v128.load(r2 + o), x3 = v128.load(r3 + o);
          const t0 = v128.shuffle<f32>(x0, x1, 0, 4, 1, 5);
          const t1 = v128.shuffle<f32>(x0, x1, 2, 6, 3, 7);
          const t2 = v128.shuffle<f32>(x2, x3, 0, 4, 1, 5);
          const t3 = v128.shuffle<f32>(x2, x3, 2, 6, 3, 7);
          const dp = d + <usize>p * 16;
          v128.store(dp, v128.shuffle<f32>(t0, t2, 0, 1, 4, 5));
          v128.store(dp, v128.shuffle<f32>(t0, t2, 2, 3, 6, 7), 16);
          v128.store(dp, v128.shuffle<f32>(t1, t3, 0, 1, 4, 5), 32);
          v128.store(dp, v128.shuffle<f32>(t1, t3, 2, 3, 6, 7), 48);
        }
        for (; p < kc; p++) {
          const o = <usize>p * 4;
          const dp = d + <usize>p * 16;
          store<f32>(dp, load<f32>(r0 + o));
          store<f32>(dp, load<f32>(r1 + o), 4);
          store<f32>(dp, load<f32>(r2 + o), 8);
          store<f32>(dp, load<f32>(r3 + o), 12);
        }
      } else {
        for (let p = 0; p < kc; p++) {
          const dp = d + <usize>p * 16;
          v128.store(dp, f32x4.splat(0));
          for (let r = 0; r < rows; r++) store<f32>(dp + <usize>r * 4, load<f32>(r0 + <usize>r * ld + <usize>p * 4));
        }
      }
    }
  }
}

/**
 * Pack steps [p0, p0+kc) × columns [j0, j0+nc) of op(B) into slivers of NR columns: sliver s
 * holds, for each step p, the 8 values op(B)[p0+p][j0+8s+c] (c = 0..7), zero beyond nc.
 * B is (k, n) row-major when !transB, stored (n, k) when transB.
 */
function packB(b: usize, n: i32, k: i32, transB: bool, p0: i32, kc: i32, j0: i32, nc: i32, dst: usize): void {
  for (let s = 0; s < nc; s += NR) {
    const cols = min(NR, nc - s);
    const d = dst + <usize>(s * kc) * 4;
    if (!transB) {
      // op(B)[p][j] = B[p][j]: the 8 columns of a step are contiguous.
      let src = b + (<usize>p0 * <usize>n + <usize>(j0 + s)) * 4;
      const ld = <usize>n * 4;
      if (cols == NR) {
        for (let p = 0; p < kc; p++) {
          const dp = d + <usize>p * 32;
          v128.store(dp, v128.load(src));
          v128.store(dp, v128.load(src, 16), 16);
          src += ld;
        }
      } else {
        for (let p = 0; p < kc; p++) {
          const dp = d + <usize>p * 32;
          v128.store(dp, f32x4.splat(0));
          v128.store(dp, f32x4.splat(0), 16);
          for (let c = 0; c < cols; c++) store<f32>(dp + <usize>c * 4, load<f32>(src + <usize>c * 4));
          src += ld;
        }
      }
    } else {
      // op(B)[p][j] = B[j][p]: 8 rows of B, each contiguous in p; transpose 4×4 blocks.
      const ld = <usize>k * 4;
      const r0 = b + (<usize>(j0 + s) * <usize>k + <usize>p0) * 4;
      if (cols == NR) {
        const r1 = r0 + ld, r2 = r1 + ld, r3 = r2 + ld, r4 = r3 + ld, r5 = r4 + ld, r6 = r5 + ld, r7 = r6 + ld;
        let p = 0;
        for (; p + 4 <= kc; p += 4) {
          const o = <usize>p * 4;
          const dp = d + <usize>p * 32;
          let x0 = v128.load(r0 + o), x1 = v128.load(r1 + o), x2 = v128.load(r2 + o), x3 = v128.load(r3 + o);
          let t0 = v128.shuffle<f32>(x0, x1, 0, 4, 1, 5);
          let t1 = v128.shuffle<f32>(x0, x1, 2, 6, 3, 7);
          let t2 = v128.shuffle<f32>(x2, x3, 0, 4, 1, 5);
          let t3 = v128.shuffle<f32>(x2, x3, 2, 6, 3, 7);
          v128.store(dp, v128.shuffle<f32>(t0, t2, 0, 1, 4, 5));
          v128.store(dp, v128.shuffle<f32>(t0, t2, 2, 3, 6, 7), 32);
          v128.store(dp, v128.shuffle<f32>(t1, t3, 0, 1, 4, 5), 64);
          v128.store(dp, v128.shuffle<f32>(t1, t3, 2, 3, 6, 7), 96);
          x0 = v128.load(r4 + o); x1 = v128.load(r5 + o); x2 = v128.load(r6 + o); x3 = v128.load(r7 + o);
          t0 = v128.shuffle<f32>(x0, x1, 0, 4, 1, 5);
          t1 = v128.shuffle<f32>(x0, x1, 2, 6, 3, 7);
          t2 = v128.shuffle<f32>(x2, x3, 0, 4, 1, 5);
          t3 = v128.shuffle<f32>(x2, x3, 2, 6, 3, 7);
          v128.store(dp, v128.shuffle<f32>(t0, t2, 0, 1, 4, 5), 16);
          v128.store(dp, v128.shuffle<f32>(t0, t2, 2, 3, 6, 7), 48);
          v128.store(dp, v128.shuffle<f32>(t1, t3, 0, 1, 4, 5), 80);
          v128.store(dp, v128.shuffle<f32>(t1, t3, 2, 3, 6, 7), 112);
        }
        for (; p < kc; p++) {
          const o = <usize>p * 4;
          const dp = d + <usize>p * 32;
          store<f32>(dp, load<f32>(r0 + o));
          store<f32>(dp, load<f32>(r1 + o), 4);
          store<f32>(dp, load<f32>(r2 + o), 8);
          store<f32>(dp, load<f32>(r3 + o), 12);
          store<f32>(dp, load<f32>(r4 + o), 16);
          store<f32>(dp, load<f32>(r5 + o), 20);
          store<f32>(dp, load<f32>(r6 + o), 24);
          store<f32>(dp, load<f32>(r7 + o), 28);
        }
      } else {
        for (let p = 0; p < kc; p++) {
          const dp = d + <usize>p * 32;
          v128.store(dp, f32x4.splat(0));
          v128.store(dp, f32x4.splat(0), 16);
          for (let c = 0; c < cols; c++) store<f32>(dp + <usize>c * 4, load<f32>(r0 + <usize>c * ld + <usize>p * 4));
        }
      }
    }
  }
}

/**
 * The 4×8 micro-kernel: acc = Σ_p Apanel[p][0..3] ⊗ Bpanel[p][0..7] over kc steps, then
 * C[0..mr)[0..nr) = acc (overwrite) or += acc. `ldc` is C's row pitch in bytes.
 */
function kernel(
  pa: usize, pb: usize, kc: i32, c: usize, ldc: usize, mr: i32, nr: i32, overwrite: bool, tile: usize,
): void {
  let c00 = f32x4.splat(0), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  for (let p = 0; p < kc; p++) {
    const b0 = v128.load(pb);
    const b1 = v128.load(pb, 16);
    let a = v128.load32_splat(pa);
    c00 = madd(a, b0, c00);
    c01 = madd(a, b1, c01);
    a = v128.load32_splat(pa, 4);
    c10 = madd(a, b0, c10);
    c11 = madd(a, b1, c11);
    a = v128.load32_splat(pa, 8);
    c20 = madd(a, b0, c20);
    c21 = madd(a, b1, c21);
    a = v128.load32_splat(pa, 12);
    c30 = madd(a, b0, c30);
    c31 = madd(a, b1, c31);
    pa += 16;
    pb += 32;
  }
  if (mr == MR && nr == NR) {
    if (overwrite) {
      v128.store(c, c00); v128.store(c, c01, 16); c += ldc;
      v128.store(c, c10); v128.store(c, c11, 16); c += ldc;
      v128.store(c, c20); v128.store(c, c21, 16); c += ldc;
      v128.store(c, c30); v128.store(c, c31, 16);
    } else {
      v128.store(c, f32x4.add(v128.load(c), c00)); v128.store(c, f32x4.add(v128.load(c, 16), c01), 16); c += ldc;
      v128.store(c, f32x4.add(v128.load(c), c10)); v128.store(c, f32x4.add(v128.load(c, 16), c11), 16); c += ldc;
      v128.store(c, f32x4.add(v128.load(c), c20)); v128.store(c, f32x4.add(v128.load(c, 16), c21), 16); c += ldc;
      v128.store(c, f32x4.add(v128.load(c), c30)); v128.store(c, f32x4.add(v128.load(c, 16), c31), 16);
    }
  } else {
    // Edge tile: spill to the scratch tile and write back only the valid mr × nr corner.
    v128.store(tile, c00); v128.store(tile, c01, 16);
    v128.store(tile, c10, 32); v128.store(tile, c11, 48);
    v128.store(tile, c20, 64); v128.store(tile, c21, 80);
    v128.store(tile, c30, 96); v128.store(tile, c31, 112);
    for (let r = 0; r < mr; r++) {
      const t = tile + <usize>(r * NR) * 4;
      const cr = c + <usize>r * ldc;
      for (let j = 0; j < nr; j++) {
        const v = load<f32>(t + <usize>j * 4);
        const dst = cr + <usize>j * 4;
        store<f32>(dst, overwrite ? v : load<f32>(dst) + v);
      }
    }
  }
}

/**
 * Batched C = op(A)·op(B) (+= when accumulate). a, b, c, scratch: byte addresses; strides in
 * elements; booleans as 0/1.
 */
export function gemm(
  a: usize, b: usize, c: usize,
  batch: i32, m: i32, n: i32, k: i32,
  transA: i32, transB: i32,
  strideA: i32, strideB: i32, strideC: i32,
  accumulate: i32, scratch: usize,
): void {
  gemmRows(a, b, c, batch, m, n, k, transA, transB, strideA, strideB, strideC, accumulate, scratch, 0, m);
}

/**
 * `gemm` restricted to rows [i0, i1) of every C (the unit of work of one thread: threads given
 * disjoint row ranges write disjoint parts of C, and each element is computed exactly as by
 * `gemm`, so the split does not change a bit of the result). Each thread needs its own scratch.
 */
export function gemmRows(
  a: usize, b: usize, c: usize,
  batch: i32, m: i32, n: i32, k: i32,
  transA: i32, transB: i32,
  strideA: i32, strideB: i32, strideC: i32,
  accumulate: i32, scratch: usize, i0: i32, i1: i32,
): void {
  if (m <= 0 || n <= 0 || i1 <= i0) return;
  const ta = transA != 0, tb = transB != 0, acc = accumulate != 0;
  const packedA = scratch;
  const packedB = scratch + PACK_A_BYTES;
  const tile = packedB + PACK_B_BYTES;
  const ldc = <usize>n * 4;
  for (let bi = 0; bi < batch; bi++) {
    const ab = a + <usize>bi * <usize>strideA * 4;
    const bb = b + <usize>bi * <usize>strideB * 4;
    const cb = c + <usize>bi * <usize>strideC * 4;
    if (k <= 0) {
      if (!acc) memory.fill(cb + <usize>i0 * ldc, 0, <usize>(i1 - i0) * ldc);
      continue;
    }
    for (let jc = 0; jc < n; jc += NC) {
      const nc = min(NC, n - jc);
      for (let pc = 0; pc < k; pc += KC) {
        const kc = min(KC, k - pc);
        const overwrite = pc == 0 && !acc;
        packB(bb, n, k, tb, pc, kc, jc, nc, packedB);
        for (let ic = i0; ic < i1; ic += MC) {
          const mc = min(MC, i1 - ic);
          packA(ab, m, k, ta, ic, mc, pc, kc, packedA);
          for (let jr = 0; jr < nc; jr += NR) {
            const nr = min(NR, nc - jr);
            const pb = packedB + <usize>(jr * kc) * 4;
            const cj = cb + (<usize>ic * <usize>n + <usize>(jc + jr)) * 4;
            for (let ir = 0; ir < mc; ir += MR) {
              const pa = packedA + <usize>(ir * kc) * 4;
              kernel(pa, pb, kc, cj + <usize>ir * ldc, ldc, min(MR, mc - ir), nr, overwrite, tile);
            }
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Few-row GEMM against a transposed B, C = A·Bᵀ (or C += …): what one step of autoregressive
// decoding does in every Linear (one token's row times a (out, in) weight). The blocked GEMM in
// gemm.ts packs all of B for every call, which for one row costs more than the product itself; here
// each output is a dot product of two contiguous rows (A's row i, B's row j), so B streams once from
// memory and nothing is packed. Threads split the columns j: each element is computed by one thread,
// in one order, whatever the split.
//
// The order of one output's sum (the same in `dot1` and `dot4`, so every output is the same bits
// whichever computes it): four vector accumulators s0..s3, lane l of s_q summing the products at
// p ≡ 4q + l (mod 16) while 16 steps remain, then s0 taking the remaining whole 4-steps; then
// s = (s0 + s1) + (s2 + s3), sum = ((s[0] + s[1]) + s[2]) + s[3]; then the last k mod 4 products
// added one by one (multiply, then add: never fused); then C's old value added when accumulating.

/** The vector s of the order above: the whole 4-steps of A's row at `ai` · B's row at `bj`, before the lane sum. */
// @ts-ignore: decorator
@inline function dotVec(ai: usize, bj: usize, k: i32): v128 {
  let s0 = f32x4.splat(0);
  let s1 = f32x4.splat(0);
  let s2 = f32x4.splat(0);
  let s3 = f32x4.splat(0);
  let p: i32 = 0;
  for (; p + 16 <= k; p += 16) {
    const o = <usize>p * 4;
    s0 = madd(v128.load(ai + o), v128.load(bj + o), s0);
    s1 = madd(v128.load(ai + o, 16), v128.load(bj + o, 16), s1);
    s2 = madd(v128.load(ai + o, 32), v128.load(bj + o, 32), s2);
    s3 = madd(v128.load(ai + o, 48), v128.load(bj + o, 48), s3);
  }
  for (; p + 4 <= k; p += 4) {
    const o = <usize>p * 4;
    s0 = madd(v128.load(ai + o), v128.load(bj + o), s0);
  }
  return f32x4.add(f32x4.add(s0, s1), f32x4.add(s2, s3));
}

/** C[i][j] = A's row at `ai` · B's row at `bj` over k, in the order above (without C's old value). */
// @ts-ignore: decorator
@inline function dot1(ai: usize, bj: usize, k: i32): f32 {
  const s = dotVec(ai, bj, k);
  let sum =
    f32x4.extract_lane(s, 0) + f32x4.extract_lane(s, 1) + f32x4.extract_lane(s, 2) + f32x4.extract_lane(s, 3);
  for (let p = k & ~3; p < k; p++) sum += load<f32>(ai + <usize>p * 4) * load<f32>(bj + <usize>p * 4);
  return sum;
}

/**
 * The lane sums of four columns' vectors s (ta, tb, tc, td), each ((s[0] + s[1]) + s[2]) + s[3] as in
 * `dot1`, as the lanes of one vector, plus the last k mod 4 products of those columns (B's rows at b0,
 * b0 + rowBytes, …) one by one: f32x4.mul then add, `dot1`'s scalar `sum += a·b` in each lane.
 */
// @ts-ignore: decorator
@inline function laneSums4(
  ta: v128, tb: v128, tc: v128, td: v128, ai: usize, b0: usize, rowBytes: usize, k: i32,
): v128 {
  // Transpose: r_l holds lane l of ta, tb, tc, td, so ((r0 + r1) + r2) + r3 adds each column's lanes.
  const u0 = v128.shuffle<f32>(ta, tb, 0, 4, 1, 5);
  const u1 = v128.shuffle<f32>(ta, tb, 2, 6, 3, 7);
  const u2 = v128.shuffle<f32>(tc, td, 0, 4, 1, 5);
  const u3 = v128.shuffle<f32>(tc, td, 2, 6, 3, 7);
  const r01 = f32x4.add(v128.shuffle<f32>(u0, u2, 0, 1, 4, 5), v128.shuffle<f32>(u0, u2, 2, 3, 6, 7));
  let sum = f32x4.add(f32x4.add(r01, v128.shuffle<f32>(u1, u3, 0, 1, 4, 5)), v128.shuffle<f32>(u1, u3, 2, 3, 6, 7));
  for (let p = k & ~3; p < k; p++) {
    const o = <usize>p * 4;
    let y = f32x4.splat(load<f32>(b0 + o));
    y = f32x4.replace_lane(y, 1, load<f32>(b0 + rowBytes + o));
    y = f32x4.replace_lane(y, 2, load<f32>(b0 + rowBytes * 2 + o));
    y = f32x4.replace_lane(y, 3, load<f32>(b0 + rowBytes * 3 + o));
    sum = f32x4.add(sum, f32x4.mul(f32x4.splat(load<f32>(ai + o)), y));
  }
  return sum;
}

/**
 * The four sums of `dot1` for B's rows at b0, b0 + rowBytes, …, b0 + 3·rowBytes (four consecutive
 * columns of C), as the lanes of one vector: each A load serves the four columns, whose accumulators
 * are kept apart and take the same products in the same order as in `dot1`. One accumulator at a time
 * for the four columns (four passes over k: 4 accumulators, an A vector and 4 B vectors stay in
 * registers; all 16 at once spill, and V8 hoists the loads of a two-accumulator pass until it spills);
 * B's 4 rows are in L1 after the first pass (and for the other rows of A).
 */
// @ts-ignore: decorator
@inline function dot4(ai: usize, b0: usize, rowBytes: usize, k: i32): v128 {
  const r2 = rowBytes * 2,
    r3 = rowBytes * 3;
  const end16 = ai + <usize>(k & ~15) * 4;
  const end4 = ai + <usize>(k & ~3) * 4;
  let ta = f32x4.splat(0), tb = f32x4.splat(0), tc = f32x4.splat(0), td = f32x4.splat(0);
  let ua = f32x4.splat(0), ub = f32x4.splat(0), uc = f32x4.splat(0), ud = f32x4.splat(0);
  {
    // s0 (and the remaining whole 4-steps)
    let sa = f32x4.splat(0), sb = f32x4.splat(0), sc = f32x4.splat(0), sd = f32x4.splat(0);
    let pa = ai, pb = b0;
    for (; pa < end16; pa += 64, pb += 64) {
      const x = v128.load(pa, 0);
      sa = madd(x, v128.load(pb, 0), sa);
      sb = madd(x, v128.load(pb + rowBytes, 0), sb);
      sc = madd(x, v128.load(pb + r2, 0), sc);
      sd = madd(x, v128.load(pb + r3, 0), sd);
    }
    for (; pa < end4; pa += 16, pb += 16) {
      const x = v128.load(pa);
      sa = madd(x, v128.load(pb), sa);
      sb = madd(x, v128.load(pb + rowBytes), sb);
      sc = madd(x, v128.load(pb + r2), sc);
      sd = madd(x, v128.load(pb + r3), sd);
    }
    ta = sa;
    tb = sb;
    tc = sc;
    td = sd;
  }
  {
    // s1
    let sa = f32x4.splat(0), sb = f32x4.splat(0), sc = f32x4.splat(0), sd = f32x4.splat(0);
    let pa = ai, pb = b0;
    for (; pa < end16; pa += 64, pb += 64) {
      const x = v128.load(pa, 16);
      sa = madd(x, v128.load(pb, 16), sa);
      sb = madd(x, v128.load(pb + rowBytes, 16), sb);
      sc = madd(x, v128.load(pb + r2, 16), sc);
      sd = madd(x, v128.load(pb + r3, 16), sd);
    }
    ta = f32x4.add(ta, sa);
    tb = f32x4.add(tb, sb);
    tc = f32x4.add(tc, sc);
    td = f32x4.add(td, sd);
  }
  {
    // s2
    let sa = f32x4.splat(0), sb = f32x4.splat(0), sc = f32x4.splat(0), sd = f32x4.splat(0);
    let pa = ai, pb = b0;
    for (; pa < end16; pa += 64, pb += 64) {
      const x = v128.load(pa, 32);
      sa = madd(x, v128.load(pb, 32), sa);
      sb = madd(x, v128.load(pb + rowBytes, 32), sb);
      sc = madd(x, v128.load(pb + r2, 32), sc);
      sd = madd(x, v128.load(pb + r3, 32), sd);
    }
    ua = sa;
    ub = sb;
    uc = sc;
    ud = sd;
  }
  {
    // s3
    let sa = f32x4.splat(0), sb = f32x4.splat(0), sc = f32x4.splat(0), sd = f32x4.splat(0);
    let pa = ai, pb = b0;
    for (; pa < end16; pa += 64, pb += 64) {
      const x = v128.load(pa, 48);
      sa = madd(x, v128.load(pb, 48), sa);
      sb = madd(x, v128.load(pb + rowBytes, 48), sb);
      sc = madd(x, v128.load(pb + r2, 48), sc);
      sd = madd(x, v128.load(pb + r3, 48), sd);
    }
    ta = f32x4.add(ta, f32x4.add(ua, sa));
    tb = f32x4.add(tb, f32x4.add(ub, sb));
    tc = f32x4.add(tc, f32x4.add(uc, sc));
    td = f32x4.add(td, f32x4.add(ud, sd));
  }
  return laneSums4(ta, tb, tc, td, ai, b0, rowBytes, k);
}

/**
 * Columns [j0, j1) of C (m, n) = A (m, k) · Bᵀ, B stored (n, k) row-major; all row-major, no batch.
 * With `accumulate`, C += A·Bᵀ. Several rows: four columns at a time (`dot4`, each B block read from
 * memory for the first row and from L1 for the others), the rest one by one; one row: column after
 * column (`dot1`), reading B as one stream. Every element the same bits either way, so a thread split
 * at any column gives the same C.
 *
 * Why one row does not take `dot4` (measured on a 2-core Zen 4, Node 20, records/latency-profile point
 * 3): `dot4` reads four B rows interleaved, which costs 1.2-1.3x where B comes from L3 and 1.4-2x from
 * memory, as it does in a decoding step (its weights, 11 MB, pass through the caches each step); it
 * pays only where B sits in L1/L2 (0.7-0.9x) or is reused by several rows (4 rows: 0.7-0.8x). A `dot4`
 * that keeps B one stream (each column's sum in turn, then one transposed lane sum for four) was as
 * fast as `dot1` within the noise (0.96-1.13x).
 */
export function gemvNTRange(
  a: usize, b: usize, c: usize, m: i32, n: i32, k: i32, accumulate: i32, j0: i32, j1: i32,
): void {
  const rowBytes = <usize>k * 4;
  const acc = accumulate != 0;
  let j = j0;
  if (m > 1) {
    for (; j + 4 <= j1; j += 4) {
      const bj = b + <usize>j * rowBytes;
      for (let i = 0; i < m; i++) {
        const sum = dot4(a + <usize>i * rowBytes, bj, rowBytes, k);
        const cp = c + (<usize>i * <usize>n + <usize>j) * 4;
        v128.store(cp, acc ? f32x4.add(v128.load(cp), sum) : sum);
      }
    }
  }
  for (; j < j1; j++) {
    const bj = b + <usize>j * rowBytes;
    for (let i = 0; i < m; i++) {
      const sum = dot1(a + <usize>i * rowBytes, bj, k);
      const cp = c + (<usize>i * <usize>n + <usize>j) * 4;
      store<f32>(cp, acc ? load<f32>(cp) + sum : sum);
    }
  }
}
