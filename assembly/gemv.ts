// Few-row GEMM against a transposed B, C = A·Bᵀ (or C += …): what one step of autoregressive
// decoding does in every Linear (one token's row times a (out, in) weight). The blocked GEMM in
// gemm.ts packs all of B for every call, which for one row costs more than the product itself; here
// each output is a dot product of two contiguous rows (A's row i, B's row j), so B streams once from
// memory and nothing is packed. Threads split the columns j: each element is computed by one thread,
// in one order, whatever the split.

// @ts-ignore: decorator
@inline function madd(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    return f32x4.relaxed_madd(a, b, c);
  } else {
    return f32x4.add(c, f32x4.mul(a, b));
  }
}

/**
 * Columns [j0, j1) of C (m, n) = A (m, k) · Bᵀ, B stored (n, k) row-major; all row-major, no batch.
 * With `accumulate`, C += A·Bᵀ.
 */
export function gemvNTRange(a: usize, b: usize, c: usize, m: i32, n: i32, k: i32, accumulate: i32, j0: i32, j1: i32): void {
  const rowBytes = <usize>k * 4;
  for (let j = j0; j < j1; j++) {
    const bj = b + <usize>j * rowBytes;
    for (let i = 0; i < m; i++) {
      const ai = a + <usize>i * rowBytes;
      let s0 = f32x4.splat(0);
      let s1 = f32x4.splat(0);
      let s2 = f32x4.splat(0);
      let s3 = f32x4.splat(0);
      let p: i32 = 0;
      for (; p + 16 <= k; p += 16) {
        const o = <usize>p * 4;
        s0 = madd(v128.load(ai + o), v128.load(bj + o), s0);
        s1 = madd(v128.load(ai + o + 16), v128.load(bj + o + 16), s1);
        s2 = madd(v128.load(ai + o + 32), v128.load(bj + o + 32), s2);
        s3 = madd(v128.load(ai + o + 48), v128.load(bj + o + 48), s3);
      }
      for (; p + 4 <= k; p += 4) {
        const o = <usize>p * 4;
        s0 = madd(v128.load(ai + o), v128.load(bj + o), s0);
      }
      const s = f32x4.add(f32x4.add(s0, s1), f32x4.add(s2, s3));
      let sum = f32x4.extract_lane(s, 0) + f32x4.extract_lane(s, 1) + f32x4.extract_lane(s, 2) + f32x4.extract_lane(s, 3);
      for (; p < k; p++) sum += load<f32>(ai + <usize>p * 4) * load<f32>(bj + <usize>p * 4);
      const cp = c + (<usize>i * <usize>n + <usize>j) * 4;
      store<f32>(cp, accumulate != 0 ? load<f32>(cp) + sum : sum);
    }
  }
}
