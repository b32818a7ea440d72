// Elementwise arithmetic, reductions, permutes, embedding gather/scatter and the Adam update for
// the wasm backend. Same contracts as the js twins in src/backend/js (elementwise.ts, layout.ts,
// embedding.ts, adam.ts), with byte addresses instead of arrays. These kernels are cheap per
// element, so they only pay when their arrays already live in wasm memory (the wrappers in
// src/backend/wasm/kernels.ts check that and otherwise run the js twin).
//
// Results are bit-identical to the js twins wherever the twin's arithmetic allows it: a float32
// +, −, ×, ÷ rounds exactly as the twin's float64 operation rounded to float32 (53 ≥ 2·24 + 2),
// so binary ops run in f32x4; a scalar that is not a float32 (1/√d, say), the reductions' sums and
// the whole Adam update are computed in float64 (f64x2) as the twins compute them. Only the row
// sums, which add in 4 float64 partial sums instead of one, may differ, by float64 rounding.
//
// Ops: 0 add, 1 sub, 2 mul, 3 div (the order of BinaryOp in src/backend/backend.ts).
// Aliasing: an output may be the very same array as an input (out = a, for a += b); every element
// is read before it is written, at the same index. Partial overlaps are not allowed.

// @ts-ignore: decorator
@inline function op4(op: i32, x: v128, y: v128): v128 {
  if (op == 0) return f32x4.add(x, y);
  if (op == 1) return f32x4.sub(x, y);
  if (op == 2) return f32x4.mul(x, y);
  return f32x4.div(x, y);
}

// @ts-ignore: decorator
@inline function op1(op: i32, x: f32, y: f32): f32 {
  if (op == 0) return x + y;
  if (op == 1) return x - y;
  if (op == 2) return x * y;
  return x / y;
}

// @ts-ignore: decorator
@inline function op2d(op: i32, x: v128, y: v128): v128 {
  if (op == 0) return f64x2.add(x, y);
  if (op == 1) return f64x2.sub(x, y);
  if (op == 2) return f64x2.mul(x, y);
  return f64x2.div(x, y);
}

// @ts-ignore: decorator
@inline function op1d(op: i32, x: f64, y: f64): f64 {
  if (op == 0) return x + y;
  if (op == 1) return x - y;
  if (op == 2) return x * y;
  return x / y;
}

/** Two float32 at p as float64 lanes. */
// @ts-ignore: decorator
@inline function load2d(p: usize): v128 {
  return f64x2.promote_low_f32x4(v128.load64_zero(p));
}

/** Two float64 lanes rounded to float32 and stored at p. */
// @ts-ignore: decorator
@inline function store2d(p: usize, v: v128): void {
  v128.store64_lane(p, f32x4.demote_f64x2_zero(v), 0);
}

// ---------------------------------------------------------------------------------------------
// Binary ops.

// @ts-ignore: decorator
@inline function fullLoop(op: i32, a: usize, b: usize, out: usize, n: i32): void {
  let j = 0;
  for (; j + 8 <= n; j += 8) {
    const q = <usize>j * 4;
    const x0 = v128.load(a + q), x1 = v128.load(a + q, 16);
    const y0 = v128.load(b + q), y1 = v128.load(b + q, 16);
    v128.store(out + q, op4(op, x0, y0));
    v128.store(out + q, op4(op, x1, y1), 16);
  }
  for (; j + 4 <= n; j += 4) {
    const q = <usize>j * 4;
    v128.store(out + q, op4(op, v128.load(a + q), v128.load(b + q)));
  }
  for (; j < n; j++) {
    const q = <usize>j * 4;
    store<f32>(out + q, op1(op, load<f32>(a + q), load<f32>(b + q)));
  }
}

/** out[i] = a[i] ∘ b[i] for n elements (same shape). */
export function binaryFull(op: i32, a: usize, b: usize, out: usize, n: i32): void {
  if (op == 0) fullLoop(0, a, b, out, n);
  else if (op == 1) fullLoop(1, a, b, out, n);
  else if (op == 2) fullLoop(2, a, b, out, n);
  else fullLoop(3, a, b, out, n);
}

// @ts-ignore: decorator
@inline function rowsLoop(op: i32, swap: bool, a: usize, b: usize, out: usize, rows: i32, w: i32): void {
  if (w == 1) {
    // One value repeated: a splat against the whole of a.
    const bv = v128.load32_splat(b);
    const bs = load<f32>(b);
    let j = 0;
    for (; j + 4 <= rows; j += 4) {
      const q = <usize>j * 4;
      const x = v128.load(a + q);
      v128.store(out + q, swap ? op4(op, bv, x) : op4(op, x, bv));
    }
    for (; j < rows; j++) {
      const q = <usize>j * 4;
      const x = load<f32>(a + q);
      store<f32>(out + q, swap ? op1(op, bs, x) : op1(op, x, bs));
    }
    return;
  }
  const ld = <usize>w * 4;
  for (let r = 0; r < rows; r++) {
    const ar = a + <usize>r * ld, orow = out + <usize>r * ld;
    let j = 0;
    for (; j + 4 <= w; j += 4) {
      const q = <usize>j * 4;
      const x = v128.load(ar + q), y = v128.load(b + q);
      v128.store(orow + q, swap ? op4(op, y, x) : op4(op, x, y));
    }
    for (; j < w; j++) {
      const q = <usize>j * 4;
      const x = load<f32>(ar + q), y = load<f32>(b + q);
      store<f32>(orow + q, swap ? op1(op, y, x) : op1(op, x, y));
    }
  }
}

/**
 * out[r·w + j] = a[r·w + j] ∘ b[j] for `rows` rows of w (b broadcast along leading dims, e.g. a
 * bias), or b[j] ∘ a[r·w + j] when `swap`.
 */
export function binaryRows(op: i32, swap: i32, a: usize, b: usize, out: usize, rows: i32, w: i32): void {
  if (swap == 0) {
    if (op == 0) rowsLoop(0, false, a, b, out, rows, w);
    else if (op == 1) rowsLoop(1, false, a, b, out, rows, w);
    else if (op == 2) rowsLoop(2, false, a, b, out, rows, w);
    else rowsLoop(3, false, a, b, out, rows, w);
  } else {
    if (op == 0) rowsLoop(0, true, a, b, out, rows, w);
    else if (op == 1) rowsLoop(1, true, a, b, out, rows, w);
    else if (op == 2) rowsLoop(2, true, a, b, out, rows, w);
    else rowsLoop(3, true, a, b, out, rows, w);
  }
}

// @ts-ignore: decorator
@inline function scalarLoopD(op: i32, swap: bool, a: usize, out: usize, n: i32, s: f64): void {
  const sv = f64x2.splat(s);
  let j = 0;
  for (; j + 2 <= n; j += 2) {
    const q = <usize>j * 4;
    const x = load2d(a + q);
    store2d(out + q, swap ? op2d(op, sv, x) : op2d(op, x, sv));
  }
  for (; j < n; j++) {
    const q = <usize>j * 4;
    const x = <f64>load<f32>(a + q);
    store<f32>(out + q, <f32>(swap ? op1d(op, s, x) : op1d(op, x, s)));
  }
}

// @ts-ignore: decorator
@inline function scalarLoopF(op: i32, swap: bool, a: usize, out: usize, n: i32, s: f32): void {
  const sv = f32x4.splat(s);
  let j = 0;
  for (; j + 4 <= n; j += 4) {
    const q = <usize>j * 4;
    const x = v128.load(a + q);
    v128.store(out + q, swap ? op4(op, sv, x) : op4(op, x, sv));
  }
  for (; j < n; j++) {
    const q = <usize>j * 4;
    const x = load<f32>(a + q);
    store<f32>(out + q, swap ? op1(op, s, x) : op1(op, x, s));
  }
}

/**
 * out = a ∘ s (s ∘ a when `scalarFirst`). `exact` = s is a float32: then float32 arithmetic rounds
 * as the js twin's float64 does; otherwise the work is done in float64, as the twin does it.
 */
export function binaryScalar(op: i32, a: usize, out: usize, n: i32, s: f64, scalarFirst: i32, exact: i32): void {
  const f = <f32>s;
  if (exact != 0) {
    if (scalarFirst == 0) {
      if (op == 0) scalarLoopF(0, false, a, out, n, f);
      else if (op == 1) scalarLoopF(1, false, a, out, n, f);
      else if (op == 2) scalarLoopF(2, false, a, out, n, f);
      else scalarLoopF(3, false, a, out, n, f);
    } else {
      if (op == 0) scalarLoopF(0, true, a, out, n, f);
      else if (op == 1) scalarLoopF(1, true, a, out, n, f);
      else if (op == 2) scalarLoopF(2, true, a, out, n, f);
      else scalarLoopF(3, true, a, out, n, f);
    }
  } else if (scalarFirst == 0) {
    if (op == 0) scalarLoopD(0, false, a, out, n, s);
    else if (op == 1) scalarLoopD(1, false, a, out, n, s);
    else if (op == 2) scalarLoopD(2, false, a, out, n, s);
    else scalarLoopD(3, false, a, out, n, s);
  } else {
    if (op == 0) scalarLoopD(0, true, a, out, n, s);
    else if (op == 1) scalarLoopD(1, true, a, out, n, s);
    else if (op == 2) scalarLoopD(2, true, a, out, n, s);
    else scalarLoopD(3, true, a, out, n, s);
  }
}

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

// @ts-ignore: decorator
@inline function copyRow(dst: usize, src: usize, n: i32): void {
  let j = 0;
  for (; j + 4 <= n; j += 4) v128.store(dst + <usize>j * 4, v128.load(src + <usize>j * 4));
  for (; j < n; j++) store<f32>(dst + <usize>j * 4, load<f32>(src + <usize>j * 4));
}

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
    for (let r = R4; r < R; r++) for (let c = 0; c < C; c++) store<f32>(ob + <usize>c * orow + <usize>r * 4, load<f32>(xb + <usize>r * xr + <usize>c * 4));
    for (let r = 0; r < R4; r++) for (let c = C4; c < C; c++) store<f32>(ob + <usize>c * orow + <usize>r * 4, load<f32>(xb + <usize>r * xr + <usize>c * 4));
  }
}

// ---------------------------------------------------------------------------------------------
// Dropout's mask (the random words are drawn by the op's generator, in js).

/**
 * For n elements from ceil(n/2) random 32-bit words (element 2j takes the low 16 bits of word j,
 * element 2j + 1 the high 16): keep[i] = s (as float32) where the 16 bits are >= threshold, else
 * 0, and out[i] = x[i]·s in float64 rounded to float32 (0·x where dropped), as the js twin.
 */
export function dropoutMask(bits: usize, x: usize, keep: usize, out: usize, n: i32, threshold: i32, s: f64): void {
  const thr = i32x4.splat(threshold);
  const low16 = i32x4.splat(0xffff);
  const sf = f32x4.splat(<f32>s);
  const sd = f64x2.splat(s);
  let j = 0;
  for (; j + 8 <= n; j += 8) {
    const w = v128.load(bits + (<usize>j << 1));
    // Masks of elements 0, 2, 4, 6 (low halves) and 1, 3, 5, 7 (high halves), then in order.
    const mLo = i32x4.ge_u(v128.and(w, low16), thr);
    const mHi = i32x4.ge_u(i32x4.shr_u(w, 16), thr);
    const m0 = v128.shuffle<i32>(mLo, mHi, 0, 4, 1, 5);
    const m1 = v128.shuffle<i32>(mLo, mHi, 2, 6, 3, 7);
    const q = <usize>j * 4;
    v128.store(keep + q, v128.and(m0, sf));
    v128.store(keep + q, v128.and(m1, sf), 16);
    store2d(out + q, f64x2.mul(load2d(x + q), v128.and(i64x2.extend_low_i32x4_s(m0), sd)));
    store2d(out + q + 8, f64x2.mul(load2d(x + q + 8), v128.and(i64x2.extend_high_i32x4_s(m0), sd)));
    store2d(out + q + 16, f64x2.mul(load2d(x + q + 16), v128.and(i64x2.extend_low_i32x4_s(m1), sd)));
    store2d(out + q + 24, f64x2.mul(load2d(x + q + 24), v128.and(i64x2.extend_high_i32x4_s(m1), sd)));
  }
  for (; j < n; j++) {
    const word = load<u32>(bits + (<usize>(j >> 1) << 2));
    const half = (j & 1) == 0 ? word & 0xffff : word >>> 16;
    const k: f64 = half >= <u32>threshold ? s : 0;
    const q = <usize>j * 4;
    store<f32>(keep + q, <f32>k);
    store<f32>(out + q, <f32>(<f64>load<f32>(x + q) * k));
  }
}

// ---------------------------------------------------------------------------------------------
// Strided copies (narrow, split, cat, a bias into every row).

/** `rows` runs of `bytes` bytes from src to dst, each side with its own stride in bytes (0: one run repeated). */
export function copyRows(src: usize, srcStride: usize, dst: usize, dstStride: usize, rows: i32, bytes: usize): void {
  for (let r = 0; r < rows; r++) memory.copy(dst + <usize>r * dstStride, src + <usize>r * srcStride, bytes);
}

// ---------------------------------------------------------------------------------------------
// Embedding (ids: i32, validated by the op).

/** out[i, :] = weight[ids[i], :]. */
export function embedding(weight: usize, ids: usize, out: usize, n: i32, dim: i32): void {
  const row = <usize>dim * 4;
  for (let i = 0; i < n; i++) {
    const id = load<i32>(ids + <usize>i * 4);
    copyRow(out + <usize>i * row, weight + <usize>id * row, dim);
  }
}

/** dweight[ids[i], :] += dy[i, :], skipping ids equal to paddingIdx (in order of i, as the twin). */
export function embeddingBackward(dy: usize, ids: usize, dweight: usize, n: i32, dim: i32, paddingIdx: i32): void {
  const row = <usize>dim * 4;
  for (let i = 0; i < n; i++) {
    const id = load<i32>(ids + <usize>i * 4);
    if (id == paddingIdx) continue;
    const d = dweight + <usize>id * row, s = dy + <usize>i * row;
    let j = 0;
    for (; j + 4 <= dim; j += 4) {
      const q = <usize>j * 4;
      v128.store(d + q, f32x4.add(v128.load(d + q), v128.load(s + q)));
    }
    for (; j < dim; j++) {
      const q = <usize>j * 4;
      store<f32>(d + q, load<f32>(d + q) + load<f32>(s + q));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Adam / AdamW, in float64 exactly as the js twin (every operation in the same order), so the
// result is the same to the bit. The step constants come from the caller: c1 = 1 − β1,
// c2 = 1 − β2, stepSize = lr / (1 − β1ᵗ), bc2Sqrt = √(1 − β2ᵗ), shrink = 1 − lr·wd for AdamW
// (else 1), l2 = wd for Adam (else 0).

// @ts-ignore: decorator
@inline function adamLoop(hasL2: bool, p: usize, g: usize, m: usize, v: usize, n: i32, b1: f64, c1: f64, b2: f64, c2: f64, stepSize: f64, bc2Sqrt: f64, eps: f64, shrink: f64, l2: f64): void {
  const b1v = f64x2.splat(b1), c1v = f64x2.splat(c1), b2v = f64x2.splat(b2), c2v = f64x2.splat(c2);
  const sv = f64x2.splat(stepSize), bcv = f64x2.splat(bc2Sqrt), ev = f64x2.splat(eps), shv = f64x2.splat(shrink), l2v = f64x2.splat(l2);
  let j = 0;
  for (; j + 2 <= n; j += 2) {
    const q = <usize>j * 4;
    const pj = load2d(p + q);
    let gj = load2d(g + q);
    if (hasL2) gj = f64x2.add(gj, f64x2.mul(l2v, pj));
    const mi = f64x2.add(f64x2.mul(b1v, load2d(m + q)), f64x2.mul(c1v, gj));
    const vi = f64x2.add(f64x2.mul(b2v, load2d(v + q)), f64x2.mul(f64x2.mul(c2v, gj), gj));
    store2d(m + q, mi);
    store2d(v + q, vi);
    const den = f64x2.add(f64x2.div(f64x2.sqrt(vi), bcv), ev);
    store2d(p + q, f64x2.sub(f64x2.mul(pj, shv), f64x2.mul(sv, f64x2.div(mi, den))));
  }
  for (; j < n; j++) {
    const q = <usize>j * 4;
    const pj = <f64>load<f32>(p + q);
    let gj = <f64>load<f32>(g + q);
    if (hasL2) gj += l2 * pj;
    const mi = b1 * <f64>load<f32>(m + q) + c1 * gj;
    const vi = b2 * <f64>load<f32>(v + q) + c2 * gj * gj;
    store<f32>(m + q, <f32>mi);
    store<f32>(v + q, <f32>vi);
    store<f32>(p + q, <f32>(pj * shrink - stepSize * (mi / (Math.sqrt(vi) / bc2Sqrt + eps))));
  }
}

/** One Adam step in place over n parameters (a part of a block: the caller offsets the addresses). */
export function adam(p: usize, g: usize, m: usize, v: usize, n: i32, b1: f64, c1: f64, b2: f64, c2: f64, stepSize: f64, bc2Sqrt: f64, eps: f64, shrink: f64, l2: f64): void {
  if (l2 != 0) adamLoop(true, p, g, m, v, n, b1, c1, b2, c2, stepSize, bc2Sqrt, eps, shrink, l2);
  else adamLoop(false, p, g, m, v, n, b1, c1, b2, c2, stepSize, bc2Sqrt, eps, shrink, l2);
}
