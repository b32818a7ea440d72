// Elementwise kernels for the wasm backend: binary arithmetic, dropout's mask, relu, gelu and gelu_tanh with
// their backwards. Same contracts as the js twins in src/backend/js/elementwise.ts, with byte
// addresses instead of arrays. Binary ops and dropout are cheap per element, so they only pay when
// their arrays already live in wasm memory (src/backend/wasm/elementwise.ts checks that and
// otherwise runs the js twin); relu and the gelus always run here.
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

import { exp4, fma, load2d, store2d } from './simd';

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
// relu: branch-free (the js twin's `x > 0 ? x : 0` mispredicts on activations of random sign).

/** out = x > 0 ? x : 0 (so NaN and −0 give +0, as in the js twin). */
export function relu(x: usize, out: usize, n: i32): void {
  const z = f32x4.splat(0);
  let j = 0;
  for (; j + 4 <= n; j += 4) v128.store(out + <usize>j * 4, f32x4.pmax(z, v128.load(x + <usize>j * 4)));
  for (; j < n; j++) {
    const v = load<f32>(x + <usize>j * 4);
    store<f32>(out + <usize>j * 4, v > 0 ? v : 0);
  }
}

/** dx = x > 0 ? dy : 0. */
export function reluBackward(x: usize, dy: usize, dx: usize, n: i32): void {
  const z = f32x4.splat(0);
  let j = 0;
  for (; j + 4 <= n; j += 4) {
    const q = <usize>j * 4;
    v128.store(dx + q, v128.and(v128.load(dy + q), f32x4.gt(v128.load(x + q), z)));
  }
  for (; j < n; j++) {
    const q = <usize>j * 4;
    store<f32>(dx + q, load<f32>(x + q) > 0 ? load<f32>(dy + q) : 0);
  }
}

// ---------------------------------------------------------------------------------------------
// gelu (exact erf form; erf by the Numerical Recipes erfc fit, as the js twin).

// @ts-ignore: decorator
@inline function erf4(x: v128): v128 {
  const z = f32x4.abs(x);
  const t = f32x4.div(f32x4.splat(1), fma(f32x4.splat(0.5), z, f32x4.splat(1)));
  let p = f32x4.splat(0.17087277);
  p = fma(p, t, f32x4.splat(-0.82215223));
  p = fma(p, t, f32x4.splat(1.48851587));
  p = fma(p, t, f32x4.splat(-1.13520398));
  p = fma(p, t, f32x4.splat(0.27886807));
  p = fma(p, t, f32x4.splat(-0.18628806));
  p = fma(p, t, f32x4.splat(0.09678418));
  p = fma(p, t, f32x4.splat(0.37409196));
  p = fma(p, t, f32x4.splat(1.00002368));
  p = fma(p, t, f32x4.splat(-1.26551223));
  const r = f32x4.mul(t, exp4(f32x4.sub(p, f32x4.mul(z, z))));
  const pos = f32x4.sub(f32x4.splat(1), r);
  // erf(x) = 1 − r for x ≥ 0, r − 1 otherwise: flip the sign of (1 − r) where x is negative.
  return v128.xor(pos, v128.and(x, f32x4.splat(-0.0)));
}

export function gelu(x: usize, out: usize, n: i32): void {
  const half = f32x4.splat(0.5), one = f32x4.splat(1), s = f32x4.splat(0.7071067811865476);
  let j = 0;
  for (; j + 4 <= n; j += 4) {
    const v = v128.load(x + <usize>j * 4);
    v128.store(out + <usize>j * 4, f32x4.mul(f32x4.mul(half, v), f32x4.add(one, erf4(f32x4.mul(v, s)))));
  }
  for (; j < n; j++) {
    const v = f32x4.splat(load<f32>(x + <usize>j * 4));
    store<f32>(
      out + <usize>j * 4,
      f32x4.extract_lane(f32x4.mul(f32x4.mul(half, v), f32x4.add(one, erf4(f32x4.mul(v, s)))), 0),
    );
  }
}

// @ts-ignore: decorator
@inline function geluGrad4(v: v128, d: v128): v128 {
  const cdf = f32x4.mul(
    f32x4.splat(0.5),
    f32x4.add(f32x4.splat(1), erf4(f32x4.mul(v, f32x4.splat(0.7071067811865476)))),
  );
  const pdf = f32x4.mul(f32x4.splat(0.3989422804014327), exp4(f32x4.mul(f32x4.splat(-0.5), f32x4.mul(v, v))));
  return f32x4.mul(d, fma(v, pdf, cdf));
}

export function geluBackward(x: usize, dy: usize, dx: usize, n: i32): void {
  let j = 0;
  for (; j + 4 <= n; j += 4) {
    const q = <usize>j * 4;
    v128.store(dx + q, geluGrad4(v128.load(x + q), v128.load(dy + q)));
  }
  for (; j < n; j++) {
    const q = <usize>j * 4;
    store<f32>(dx + q, f32x4.extract_lane(geluGrad4(f32x4.splat(load<f32>(x + q)), f32x4.splat(load<f32>(dy + q))), 0));
  }
}

// ---------------------------------------------------------------------------------------------
// gelu with the tanh approximation (GPT-2's gelu_new): ½x(1 + tanh(u)) = x·σ(2u), u = √(2/π)(x + 0.044715x³),
// computed as x · 1/(1 + e^(−2u)) with 2u = x(k0 + k1x²): no 1 + tanh cancellation for negative x, and e^(−2u)
// saturates (exp4 clamps) instead of overflowing. The js twin is the float64 tanh form.

// @ts-ignore: decorator
@inline function twoU4(v: v128): v128 {
  // 2u = x(2·√(2/π) + 2·√(2/π)·0.044715·x²)
  return f32x4.mul(v, fma(f32x4.splat(0.07135481627260025), f32x4.mul(v, v), f32x4.splat(1.5957691216057308)));
}

// @ts-ignore: decorator
@inline function sigmoid4(t: v128): v128 {
  return f32x4.div(f32x4.splat(1), f32x4.add(f32x4.splat(1), exp4(f32x4.neg(t))));
}

export function geluTanh(x: usize, out: usize, n: i32): void {
  let j = 0;
  for (; j + 4 <= n; j += 4) {
    const v = v128.load(x + <usize>j * 4);
    v128.store(out + <usize>j * 4, f32x4.mul(v, sigmoid4(twoU4(v))));
  }
  for (; j < n; j++) {
    const v = f32x4.splat(load<f32>(x + <usize>j * 4));
    store<f32>(out + <usize>j * 4, f32x4.extract_lane(f32x4.mul(v, sigmoid4(twoU4(v))), 0));
  }
}

// d/dx x·σ(2u) = σ + x·σ(1 − σ)·(2u)′, (2u)′ = k0 + 3k1x². Where |2u| > 87 the second term is below 1e-35 (or
// 0 · ∞ once x² overflows) and e^(−2u) is clamped: it is taken as 0 there.
// @ts-ignore: decorator
@inline function geluTanhGrad4(v: v128, d: v128): v128 {
  const t = twoU4(v);
  const s = sigmoid4(t);
  const du = fma(f32x4.splat(0.21406444881780076), f32x4.mul(v, v), f32x4.splat(1.5957691216057308));
  const ds = f32x4.mul(f32x4.mul(s, f32x4.sub(f32x4.splat(1), s)), du);
  const inRange = f32x4.le(f32x4.abs(t), f32x4.splat(87));
  return f32x4.mul(d, fma(v, v128.and(ds, inRange), s));
}

export function geluTanhBackward(x: usize, dy: usize, dx: usize, n: i32): void {
  let j = 0;
  for (; j + 4 <= n; j += 4) {
    const q = <usize>j * 4;
    v128.store(dx + q, geluTanhGrad4(v128.load(x + q), v128.load(dy + q)));
  }
  for (; j < n; j++) {
    const q = <usize>j * 4;
    store<f32>(
      dx + q,
      f32x4.extract_lane(geluTanhGrad4(f32x4.splat(load<f32>(x + q)), f32x4.splat(load<f32>(dy + q))), 0),
    );
  }
}

// SwiGLU's activation, silu(gate)·up with silu(g) = g·σ(g) (the gated feed-forward of Llama, Qwen2, Mistral).
// @ts-ignore: decorator
@inline function swiglu4(g: v128, u: v128): v128 {
  return f32x4.mul(f32x4.mul(g, sigmoid4(g)), u);
}

export function swiglu(gate: usize, up: usize, out: usize, n: i32): void {
  let j = 0;
  for (; j + 4 <= n; j += 4) {
    const q = <usize>j * 4;
    v128.store(out + q, swiglu4(v128.load(gate + q), v128.load(up + q)));
  }
  for (; j < n; j++) {
    const q = <usize>j * 4;
    const r = swiglu4(f32x4.splat(load<f32>(gate + q)), f32x4.splat(load<f32>(up + q)));
    store<f32>(out + q, f32x4.extract_lane(r, 0));
  }
}

// dgate = dy·u·σ(g)·(1 + g·(1 − σ(g))), dup = dy·g·σ(g).
export function swigluBackward(gate: usize, up: usize, dy: usize, dgate: usize, dup: usize, n: i32): void {
  const one = f32x4.splat(1);
  let j = 0;
  for (; j < n; j += 4) {
    const q = <usize>j * 4;
    const tail = n - j < 4;
    const g = tail ? f32x4.splat(load<f32>(gate + q)) : v128.load(gate + q);
    const u = tail ? f32x4.splat(load<f32>(up + q)) : v128.load(up + q);
    const d = tail ? f32x4.splat(load<f32>(dy + q)) : v128.load(dy + q);
    const s = sigmoid4(g);
    const dg = f32x4.mul(f32x4.mul(f32x4.mul(d, u), s), fma(g, f32x4.sub(one, s), one));
    const du = f32x4.mul(d, f32x4.mul(g, s));
    if (tail) {
      store<f32>(dgate + q, f32x4.extract_lane(dg, 0));
      store<f32>(dup + q, f32x4.extract_lane(du, 0));
      j -= 3; // one element at a time to the end
    } else {
      v128.store(dgate + q, dg);
      v128.store(dup + q, du);
    }
  }
}
