// Layout kernels for the wasm backend: sums over leading or trailing dims, two permutes, strided
// row copies. Same contracts as the js twins in src/backend/js/layout.ts, with byte addresses
// instead of arrays; the sums accumulate in float64 (f64x2) as the twin does. Only the row sums,
// which add in 4 float64 partial sums instead of one, may differ from it, by float64 rounding.
import { copyRow, load2d } from './simd';

// ---------------------------------------------------------------------------------------------
// Reductions (float64 accumulation, as the js twin).

/** out[j] = Σ_r x[r·w + j] (reduce leading dims: column sums); scratch: 8·w bytes. */
export function sumColumns(x: usize, out: usize, rows: i32, w: i32, scratch: usize): void {
  memory.fill(scratch, 0, <usize>w * 8);
  const ld = <usize>w * 4;
  for (let r = 0; r < rows; r++) {
    const xr = x + <usize>r * ld;
    let j = 0;
    for (; j + 4 <= w; j += 4) {
      const s = scratch + <usize>j * 8;
      const q = xr + <usize>j * 4;
      v128.store(s, f64x2.add(v128.load(s), load2d(q)));
      v128.store(s, f64x2.add(v128.load(s, 16), load2d(q + 8)), 16);
    }
    for (; j < w; j++) {
      const s = scratch + <usize>j * 8;
      store<f64>(s, load<f64>(s) + <f64>load<f32>(xr + <usize>j * 4));
    }
  }
  for (let j = 0; j < w; j++) store<f32>(out + <usize>j * 4, <f32>load<f64>(scratch + <usize>j * 8));
}

/** out[r] = Σ_j x[r·w + j] (reduce trailing dims: row sums). */
export function sumRows(x: usize, out: usize, rows: i32, w: i32): void {
  const ld = <usize>w * 4;
  for (let r = 0; r < rows; r++) {
    const xr = x + <usize>r * ld;
    let a0 = f64x2.splat(0), a1 = a0;
    let j = 0;
    for (; j + 4 <= w; j += 4) {
      const q = xr + <usize>j * 4;
      a0 = f64x2.add(a0, load2d(q));
      a1 = f64x2.add(a1, load2d(q + 8));
    }
    const t = f64x2.add(a0, a1);
    let s = f64x2.extract_lane(t, 0) + f64x2.extract_lane(t, 1);
    for (; j < w; j++) s += <f64>load<f32>(xr + <usize>j * 4);
    store<f32>(out + <usize>r * 4, <f32>s);
  }
}

// ---------------------------------------------------------------------------------------------
// Permutes.

/** x (A, B, C, D) → out (A, C, B, D): permute [0, 2, 1, 3] (attention's head split and merge). */
export function swapMiddle(x: usize, out: usize, A: i32, B: i32, C: i32, D: i32): void {
  const row = <usize>D * 4;
  for (let a = 0; a < A; a++) {
    for (let b = 0; b < B; b++) {
      const xb = x + (<usize>a * <usize>B + <usize>b) * <usize>C * row;
      const ob = out + (<usize>a * <usize>C * <usize>B + <usize>b) * row;
      for (let c = 0; c < C; c++) copyRow(ob + <usize>c * <usize>B * row, xb + <usize>c * row, D);
    }
  }
}

const TILE: i32 = 64;

/** x (batch, R, C) → out (batch, C, R): the last two dims swapped, in 4×4 SIMD blocks. */
export function transposeLast(x: usize, out: usize, batch: i32, R: i32, C: i32): void {
  const xr = <usize>C * 4, orow = <usize>R * 4;
  const R4 = R & ~3, C4 = C & ~3;
  for (let bi = 0; bi < batch; bi++) {
    const xb = x + <usize>bi * <usize>R * xr;
    const ob = out + <usize>bi * <usize>C * orow;
    for (let c0 = 0; c0 < C4; c0 += TILE) {
      const c1 = min(C4, c0 + TILE);
      for (let r = 0; r < R4; r += 4) {
        const p = xb + <usize>r * xr;
        for (let c = c0; c < c1; c += 4) {
          const q = p + <usize>c * 4;
          const r0 = v128.load(q), r1 = v128.load(q + xr), r2 = v128.load(q + 2 * xr), r3 = v128.load(q + 3 * xr);
          const t0 = i32x4.shuffle(r0, r1, 0, 4, 1, 5), t1 = i32x4.shuffle(r0, r1, 2, 6, 3, 7);
          const t2 = i32x4.shuffle(r2, r3, 0, 4, 1, 5), t3 = i32x4.shuffle(r2, r3, 2, 6, 3, 7);
          const o = ob + <usize>c * orow + <usize>r * 4;
          v128.store(o, i64x2.shuffle(t0, t2, 0, 2));
          v128.store(o + orow, i64x2.shuffle(t0, t2, 1, 3));
          v128.store(o + 2 * orow, i64x2.shuffle(t1, t3, 0, 2));
          v128.store(o + 3 * orow, i64x2.shuffle(t1, t3, 1, 3));
        }
      }
    }
    // Edges: the last R % 4 rows and the last C % 4 columns.
    for (let r = R4; r < R; r++) {
      for (let c = 0; c < C; c++) {
        store<f32>(ob + <usize>c * orow + <usize>r * 4, load<f32>(xb + <usize>r * xr + <usize>c * 4));
      }
    }
    for (let r = 0; r < R4; r++) {
      for (let c = C4; c < C; c++) {
        store<f32>(ob + <usize>c * orow + <usize>r * 4, load<f32>(xb + <usize>r * xr + <usize>c * 4));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Strided copies (narrow, split, cat, a bias into every row).

/** `rows` runs of `bytes` bytes from src to dst, each side with its own stride in bytes (0: one run repeated). */
export function copyRows(src: usize, srcStride: usize, dst: usize, dstStride: usize, rows: i32, bytes: usize): void {
  for (let r = 0; r < rows; r++) memory.copy(dst + <usize>r * dstStride, src + <usize>r * srcStride, bytes);
}
