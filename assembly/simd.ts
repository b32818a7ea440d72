// SIMD helpers shared by the kernel families (inlined where they are used; index.ts does not
// re-export this file, so none of it is a module export). Moved here unchanged from the kernel
// files that used them: the kernels' loops and their order are those they always were.

// @ts-ignore: decorator
@inline export function fma(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    return f32x4.relaxed_madd(a, b, c);
  } else {
    return f32x4.add(c, f32x4.mul(a, b));
  }
}

// @ts-ignore: decorator
@inline export function hsum(v: v128): f32 {
  return (f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1)) + (f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3));
}

// @ts-ignore: decorator
@inline export function hmax(v: v128): f32 {
  const lo = max(f32x4.extract_lane(v, 0), f32x4.extract_lane(v, 1));
  return max(lo, max(f32x4.extract_lane(v, 2), f32x4.extract_lane(v, 3)));
}

/**
 * e^x on 4 lanes: Cephes expf (range reduction by ln 2, degree-6 polynomial, ≈1 ulp); 0 below
 * −87.34, NaN kept. Rounding to the nearest integer n uses the 1.5·2²³ trick, whose float bits
 * also carry n for building 2ⁿ, and pmin/pmax (one instruction each on x86, unlike min/max).
 */
// @ts-ignore: decorator
@inline export function exp4(x: v128): v128 {
  const lo = f32x4.splat(-87.33654475);
  const magic = f32x4.splat(12582912.0);
  const xc = f32x4.pmin(f32x4.pmax(x, lo), f32x4.splat(88.37626266));
  const t = f32x4.add(f32x4.mul(xc, f32x4.splat(1.44269504088896341)), magic);
  const n = f32x4.sub(t, magic);
  let r = f32x4.sub(xc, f32x4.mul(n, f32x4.splat(0.693359375)));
  r = f32x4.add(r, f32x4.mul(n, f32x4.splat(2.12194440e-4)));
  let p = f32x4.splat(1.9875691500e-4);
  p = fma(p, r, f32x4.splat(1.3981999507e-3));
  p = fma(p, r, f32x4.splat(8.3334519073e-3));
  p = fma(p, r, f32x4.splat(4.1665795894e-2));
  p = fma(p, r, f32x4.splat(1.6666665459e-1));
  p = fma(p, r, f32x4.splat(5.0000001201e-1));
  p = fma(p, f32x4.mul(r, r), f32x4.add(r, f32x4.splat(1)));
  // bits(t) = bits(magic) + n, and bits(magic) << 23 vanishes mod 2³²: (bits(t) + 127) << 23 = 2ⁿ.
  const pow2 = i32x4.shl(i32x4.add(t, i32x4.splat(127)), 23);
  const y = f32x4.mul(p, pow2);
  // NaN fails both pmax and pmin comparisons and passes through as x; keep it NaN.
  return v128.bitselect(x, v128.andnot(y, f32x4.lt(x, lo)), f32x4.ne(x, x));
}

// @ts-ignore: decorator
@inline export function exp1(x: f32): f32 {
  return f32x4.extract_lane(exp4(f32x4.splat(x)), 0);
}

/** Two float32 at p as float64 lanes. */
// @ts-ignore: decorator
@inline export function load2d(p: usize): v128 {
  return f64x2.promote_low_f32x4(v128.load64_zero(p));
}

/** Two float64 lanes rounded to float32 and stored at p. */
// @ts-ignore: decorator
@inline export function store2d(p: usize, v: v128): void {
  v128.store64_lane(p, f32x4.demote_f64x2_zero(v), 0);
}

// @ts-ignore: decorator
@inline export function copyRow(dst: usize, src: usize, n: i32): void {
  let j = 0;
  for (; j + 4 <= n; j += 4) v128.store(dst + <usize>j * 4, v128.load(src + <usize>j * 4));
  for (; j < n; j++) store<f32>(dst + <usize>j * 4, load<f32>(src + <usize>j * 4));
}

// ---------------------------------------------------------------------------------------------
// Row primitives on n floats at byte address p (unaligned loads are fine in wasm).

export function rowMax(p: usize, n: i32): f32 {
  let j = 0;
  let m: f32 = -Infinity;
  if (n >= 4) {
    let v = v128.load(p);
    for (j = 4; j + 4 <= n; j += 4) v = f32x4.pmax(v, v128.load(p + <usize>j * 4));
    m = hmax(v);
  }
  for (; j < n; j++) m = max(m, load<f32>(p + <usize>j * 4));
  return m;
}

export function rowSum(p: usize, n: i32): f32 {
  let v = f32x4.splat(0);
  let j = 0;
  for (; j + 4 <= n; j += 4) v = f32x4.add(v, v128.load(p + <usize>j * 4));
  let s = hsum(v);
  for (; j < n; j++) s += load<f32>(p + <usize>j * 4);
  return s;
}

export function rowDot(a: usize, b: usize, n: i32): f32 {
  let v0 = f32x4.splat(0), v1 = v0;
  let j = 0;
  for (; j + 8 <= n; j += 8) {
    const o = <usize>j * 4;
    v0 = fma(v128.load(a + o), v128.load(b + o), v0);
    v1 = fma(v128.load(a + o, 16), v128.load(b + o, 16), v1);
  }
  for (; j + 4 <= n; j += 4) v0 = fma(v128.load(a + <usize>j * 4), v128.load(b + <usize>j * 4), v0);
  let s = hsum(f32x4.add(v0, v1));
  for (; j < n; j++) s += load<f32>(a + <usize>j * 4) * load<f32>(b + <usize>j * 4);
  return s;
}

/** out[j] = exp(x[j] − m); returns Σ out. */
export function rowExpSub(x: usize, out: usize, n: i32, m: f32): f32 {
  const mv = f32x4.splat(m);
  let acc = f32x4.splat(0);
  let j = 0;
  for (; j + 4 <= n; j += 4) {
    const e = exp4(f32x4.sub(v128.load(x + <usize>j * 4), mv));
    v128.store(out + <usize>j * 4, e);
    acc = f32x4.add(acc, e);
  }
  let s = hsum(acc);
  for (; j < n; j++) {
    const e = exp1(load<f32>(x + <usize>j * 4) - m);
    store<f32>(out + <usize>j * 4, e);
    s += e;
  }
  return s;
}

/** Σ exp(x[j] − m), nothing stored. */
export function rowSumExp(x: usize, n: i32, m: f32): f32 {
  const mv = f32x4.splat(m);
  let a0 = f32x4.splat(0), a1 = a0;
  let j = 0;
  for (; j + 8 <= n; j += 8) {
    const o = <usize>j * 4;
    a0 = f32x4.add(a0, exp4(f32x4.sub(v128.load(x + o), mv)));
    a1 = f32x4.add(a1, exp4(f32x4.sub(v128.load(x + o, 16), mv)));
  }
  for (; j + 4 <= n; j += 4) a0 = f32x4.add(a0, exp4(f32x4.sub(v128.load(x + <usize>j * 4), mv)));
  let s = hsum(f32x4.add(a0, a1));
  for (; j < n; j++) s += exp1(load<f32>(x + <usize>j * 4) - m);
  return s;
}

/** x[j] *= s. */
export function rowScale(x: usize, n: i32, s: f32): void {
  const sv = f32x4.splat(s);
  let j = 0;
  for (; j + 4 <= n; j += 4) v128.store(x + <usize>j * 4, f32x4.mul(v128.load(x + <usize>j * 4), sv));
  for (; j < n; j++) store<f32>(x + <usize>j * 4, load<f32>(x + <usize>j * 4) * s);
}

/** y[j] += a·x[j]. */
export function rowAxpy(y: usize, x: usize, n: i32, a: f32): void {
  const av = f32x4.splat(a);
  let j = 0;
  for (; j + 8 <= n; j += 8) {
    const o = <usize>j * 4;
    v128.store(y + o, fma(av, v128.load(x + o), v128.load(y + o)));
    v128.store(y + o, fma(av, v128.load(x + o, 16), v128.load(y + o, 16)), 16);
  }
  for (; j + 4 <= n; j += 4) {
    v128.store(y + <usize>j * 4, fma(av, v128.load(x + <usize>j * 4), v128.load(y + <usize>j * 4)));
  }
  for (; j < n; j++) store<f32>(y + <usize>j * 4, load<f32>(y + <usize>j * 4) + a * load<f32>(x + <usize>j * 4));
}
