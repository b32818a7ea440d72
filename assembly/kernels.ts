// Row-wise and fused kernels for the wasm backend: softmax, log-softmax, layer norm, gelu,
// cross-entropy and fused attention, forward and backward. Same contracts as the js twins in
// src/backend/js (see src/backend/backend.ts), with byte addresses instead of arrays; optional
// arrays are passed as address 0. Float32 arithmetic with 128-bit SIMD throughout; exp is a
// vectorised Cephes polynomial (≈1 ulp), so results agree with the js twins (which accumulate in
// float64 in places) to float32 rounding.

// @ts-ignore: decorator
@inline function fma(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    return f32x4.relaxed_madd(a, b, c);
  } else {
    return f32x4.add(c, f32x4.mul(a, b));
  }
}

// @ts-ignore: decorator
@inline function hsum(v: v128): f32 {
  return (f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1)) + (f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3));
}

// @ts-ignore: decorator
@inline function hmax(v: v128): f32 {
  return max(max(f32x4.extract_lane(v, 0), f32x4.extract_lane(v, 1)), max(f32x4.extract_lane(v, 2), f32x4.extract_lane(v, 3)));
}

/**
 * e^x on 4 lanes: Cephes expf (range reduction by ln 2, degree-6 polynomial, ≈1 ulp); 0 below
 * −87.34, NaN kept. Rounding to the nearest integer n uses the 1.5·2²³ trick, whose float bits
 * also carry n for building 2ⁿ, and pmin/pmax (one instruction each on x86, unlike min/max).
 */
// @ts-ignore: decorator
@inline function exp4(x: v128): v128 {
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
@inline function exp1(x: f32): f32 {
  return f32x4.extract_lane(exp4(f32x4.splat(x)), 0);
}

// ---------------------------------------------------------------------------------------------
// Row primitives on n floats at byte address p (unaligned loads are fine in wasm).

function rowMax(p: usize, n: i32): f32 {
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

function rowSum(p: usize, n: i32): f32 {
  let v = f32x4.splat(0);
  let j = 0;
  for (; j + 4 <= n; j += 4) v = f32x4.add(v, v128.load(p + <usize>j * 4));
  let s = hsum(v);
  for (; j < n; j++) s += load<f32>(p + <usize>j * 4);
  return s;
}

function rowDot(a: usize, b: usize, n: i32): f32 {
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
function rowExpSub(x: usize, out: usize, n: i32, m: f32): f32 {
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
function rowSumExp(x: usize, n: i32, m: f32): f32 {
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
function rowScale(x: usize, n: i32, s: f32): void {
  const sv = f32x4.splat(s);
  let j = 0;
  for (; j + 4 <= n; j += 4) v128.store(x + <usize>j * 4, f32x4.mul(v128.load(x + <usize>j * 4), sv));
  for (; j < n; j++) store<f32>(x + <usize>j * 4, load<f32>(x + <usize>j * 4) * s);
}

/** y[j] += a·x[j]. */
function rowAxpy(y: usize, x: usize, n: i32, a: f32): void {
  const av = f32x4.splat(a);
  let j = 0;
  for (; j + 8 <= n; j += 8) {
    const o = <usize>j * 4;
    v128.store(y + o, fma(av, v128.load(x + o), v128.load(y + o)));
    v128.store(y + o, fma(av, v128.load(x + o, 16), v128.load(y + o, 16)), 16);
  }
  for (; j + 4 <= n; j += 4) v128.store(y + <usize>j * 4, fma(av, v128.load(x + <usize>j * 4), v128.load(y + <usize>j * 4)));
  for (; j < n; j++) store<f32>(y + <usize>j * 4, load<f32>(y + <usize>j * 4) + a * load<f32>(x + <usize>j * 4));
}

// ---------------------------------------------------------------------------------------------
// Softmax family (rows × cols, row-major).

export function softmax(x: usize, out: usize, rows: i32, cols: i32): void {
  for (let r = 0; r < rows; r++) {
    const o = <usize>r * <usize>cols * 4;
    const m = rowMax(x + o, cols);
    const s = rowExpSub(x + o, out + o, cols, m);
    rowScale(out + o, cols, 1 / s);
  }
}

export function softmaxBackward(y: usize, dy: usize, dx: usize, rows: i32, cols: i32): void {
  for (let r = 0; r < rows; r++) {
    const o = <usize>r * <usize>cols * 4;
    const dot = f32x4.splat(rowDot(dy + o, y + o, cols));
    let j = 0;
    for (; j + 4 <= cols; j += 4) {
      const q = o + <usize>j * 4;
      v128.store(dx + q, f32x4.mul(v128.load(y + q), f32x4.sub(v128.load(dy + q), dot)));
    }
    const d = f32x4.extract_lane(dot, 0);
    for (; j < cols; j++) {
      const q = o + <usize>j * 4;
      store<f32>(dx + q, load<f32>(y + q) * (load<f32>(dy + q) - d));
    }
  }
}

export function logSoftmax(x: usize, out: usize, rows: i32, cols: i32): void {
  for (let r = 0; r < rows; r++) {
    const o = <usize>r * <usize>cols * 4;
    const m = rowMax(x + o, cols);
    const lse = m + Mathf.log(rowSumExp(x + o, cols, m));
    const lv = f32x4.splat(lse);
    let j = 0;
    for (; j + 4 <= cols; j += 4) v128.store(out + o + <usize>j * 4, f32x4.sub(v128.load(x + o + <usize>j * 4), lv));
    for (; j < cols; j++) store<f32>(out + o + <usize>j * 4, load<f32>(x + o + <usize>j * 4) - lse);
  }
}

export function logSoftmaxBackward(y: usize, dy: usize, dx: usize, rows: i32, cols: i32): void {
  for (let r = 0; r < rows; r++) {
    const o = <usize>r * <usize>cols * 4;
    const s = rowSum(dy + o, cols);
    const sv = f32x4.splat(s);
    let j = 0;
    for (; j + 4 <= cols; j += 4) {
      const q = o + <usize>j * 4;
      v128.store(dx + q, f32x4.sub(v128.load(dy + q), f32x4.mul(exp4(v128.load(y + q)), sv)));
    }
    for (; j < cols; j++) {
      const q = o + <usize>j * 4;
      store<f32>(dx + q, load<f32>(dy + q) - exp1(load<f32>(y + q)) * s);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Layer norm. mean and rstd: rows floats each.

export function layerNorm(x: usize, w: usize, b: usize, out: usize, mean: usize, rstd: usize, rows: i32, cols: i32, eps: f32): void {
  for (let r = 0; r < rows; r++) {
    const o = <usize>r * <usize>cols * 4;
    const mu = rowSum(x + o, cols) / <f32>cols;
    const mv = f32x4.splat(mu);
    let acc = f32x4.splat(0);
    let j = 0;
    for (; j + 4 <= cols; j += 4) {
      const d = f32x4.sub(v128.load(x + o + <usize>j * 4), mv);
      acc = fma(d, d, acc);
    }
    let v = hsum(acc);
    for (; j < cols; j++) {
      const d = load<f32>(x + o + <usize>j * 4) - mu;
      v += d * d;
    }
    const rs: f32 = 1 / Mathf.sqrt(v / <f32>cols + eps);
    store<f32>(mean + <usize>r * 4, mu);
    store<f32>(rstd + <usize>r * 4, rs);
    const rv = f32x4.splat(rs);
    j = 0;
    for (; j + 4 <= cols; j += 4) {
      const q = <usize>j * 4;
      let y = f32x4.mul(f32x4.sub(v128.load(x + o + q), mv), rv);
      if (w != 0) y = f32x4.mul(y, v128.load(w + q));
      if (b != 0) y = f32x4.add(y, v128.load(b + q));
      v128.store(out + o + q, y);
    }
    for (; j < cols; j++) {
      const q = <usize>j * 4;
      let y = (load<f32>(x + o + q) - mu) * rs;
      if (w != 0) y *= load<f32>(w + q);
      if (b != 0) y += load<f32>(b + q);
      store<f32>(out + o + q, y);
    }
  }
}

export function layerNormBackward(x: usize, w: usize, mean: usize, rstd: usize, dy: usize, dx: usize, dw: usize, db: usize, rows: i32, cols: i32): void {
  const one = f32x4.splat(1);
  for (let r = 0; r < rows; r++) {
    const o = <usize>r * <usize>cols * 4;
    const mu = load<f32>(mean + <usize>r * 4);
    const rs = load<f32>(rstd + <usize>r * 4);
    const mv = f32x4.splat(mu), rv = f32x4.splat(rs);
    let sgv = f32x4.splat(0), sgxv = sgv;
    let j = 0;
    for (; j + 4 <= cols; j += 4) {
      const q = <usize>j * 4;
      const xh = f32x4.mul(f32x4.sub(v128.load(x + o + q), mv), rv);
      const d = v128.load(dy + o + q);
      const g = f32x4.mul(d, w != 0 ? v128.load(w + q) : one);
      sgv = f32x4.add(sgv, g);
      sgxv = fma(g, xh, sgxv);
      if (dw != 0) v128.store(dw + q, fma(d, xh, v128.load(dw + q)));
      if (db != 0) v128.store(db + q, f32x4.add(v128.load(db + q), d));
    }
    let sg = hsum(sgv), sgx = hsum(sgxv);
    for (; j < cols; j++) {
      const q = <usize>j * 4;
      const xh = (load<f32>(x + o + q) - mu) * rs;
      const d = load<f32>(dy + o + q);
      const g = w != 0 ? d * load<f32>(w + q) : d;
      sg += g;
      sgx += g * xh;
      if (dw != 0) store<f32>(dw + q, load<f32>(dw + q) + d * xh);
      if (db != 0) store<f32>(db + q, load<f32>(db + q) + d);
    }
    sg /= <f32>cols;
    sgx /= <f32>cols;
    const sgvv = f32x4.splat(sg), sgxvv = f32x4.splat(sgx);
    j = 0;
    for (; j + 4 <= cols; j += 4) {
      const q = <usize>j * 4;
      const xh = f32x4.mul(f32x4.sub(v128.load(x + o + q), mv), rv);
      const g = f32x4.mul(v128.load(dy + o + q), w != 0 ? v128.load(w + q) : one);
      v128.store(dx + o + q, f32x4.mul(rv, f32x4.sub(f32x4.sub(g, sgvv), f32x4.mul(xh, sgxvv))));
    }
    for (; j < cols; j++) {
      const q = <usize>j * 4;
      const xh = (load<f32>(x + o + q) - mu) * rs;
      const d = load<f32>(dy + o + q);
      const g = w != 0 ? d * load<f32>(w + q) : d;
      store<f32>(dx + o + q, rs * (g - sg - xh * sgx));
    }
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
    store<f32>(out + <usize>j * 4, f32x4.extract_lane(f32x4.mul(f32x4.mul(half, v), f32x4.add(one, erf4(f32x4.mul(v, s)))), 0));
  }
}

// @ts-ignore: decorator
@inline function geluGrad4(v: v128, d: v128): v128 {
  const cdf = f32x4.mul(f32x4.splat(0.5), f32x4.add(f32x4.splat(1), erf4(f32x4.mul(v, f32x4.splat(0.7071067811865476)))));
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
// Cross-entropy with label smoothing (targets: i32). Returns the number of counted rows.

export function crossEntropy(logits: usize, targets: usize, losses: usize, rows: i32, cols: i32, ignoreIndex: i32, eps: f32): i32 {
  let count = 0;
  for (let r = 0; r < rows; r++) {
    const t = load<i32>(targets + <usize>r * 4);
    if (t == ignoreIndex) {
      store<f32>(losses + <usize>r * 4, 0);
      continue;
    }
    count++;
    const o = logits + <usize>r * <usize>cols * 4;
    const m = rowMax(o, cols);
    const lse = m + Mathf.log(rowSumExp(o, cols, m));
    const nll = lse - load<f32>(o + <usize>t * 4);
    const smooth = lse - rowSum(o, cols) / <f32>cols;
    store<f32>(losses + <usize>r * 4, (1 - eps) * nll + eps * smooth);
  }
  return count;
}

export function crossEntropyBackward(logits: usize, targets: usize, rowScale: usize, dlogits: usize, rows: i32, cols: i32, ignoreIndex: i32, eps: f32): void {
  const uniform = eps / <f32>cols;
  for (let r = 0; r < rows; r++) {
    const o = <usize>r * <usize>cols * 4;
    const t = load<i32>(targets + <usize>r * 4);
    if (t == ignoreIndex) {
      memory.fill(dlogits + o, 0, <usize>cols * 4);
      continue;
    }
    const m = rowMax(logits + o, cols);
    const sum = rowSumExp(logits + o, cols, m);
    const s = load<f32>(rowScale + <usize>r * 4);
    const a = s / sum;
    const av = f32x4.splat(a), mv = f32x4.splat(m), uv = f32x4.splat(s * uniform);
    let j = 0;
    for (; j + 4 <= cols; j += 4) {
      const q = o + <usize>j * 4;
      v128.store(dlogits + q, f32x4.sub(f32x4.mul(av, exp4(f32x4.sub(v128.load(logits + q), mv))), uv));
    }
    for (; j < cols; j++) {
      const q = o + <usize>j * 4;
      store<f32>(dlogits + q, a * exp1(load<f32>(logits + q) - m) - s * uniform);
    }
    const tq = dlogits + o + <usize>t * 4;
    store<f32>(tq, load<f32>(tq) - s * (1 - eps));
  }
}

// ---------------------------------------------------------------------------------------------
// Fused attention (flash-attention style). Keys are processed in blocks of BC: a block of K (and
// of V for the backward pass) is transposed into a (D, BC) panel so that a query's BC scores are
// SIMD dot products over keys; the running max, sum and output of every query row are updated with
// the online softmax, so no more than BC scores per row ever exist.

const BC: i32 = 64;

/** Scratch floats the attention kernels need. */
export function attentionScratchFloats(l: i32, d: i32, dv: i32): i32 {
  return BC * (d + dv) + 2 * BC + 3 * l + 16;
}

/** Transpose rows × d (row-major, rows <= BC) into a d × BC panel, zero-padded. */
function packPanel(src: usize, rows: i32, d: i32, dst: usize): void {
  for (let t = 0; t < d; t++) {
    const dt = dst + <usize>(t * BC) * 4;
    let s = src + <usize>t * 4;
    const ld = <usize>d * 4;
    for (let j = 0; j < rows; j++) {
      store<f32>(dt + <usize>j * 4, load<f32>(s));
      s += ld;
    }
    for (let j = rows; j < BC; j++) store<f32>(dt + <usize>j * 4, 0);
  }
}

/** out[j] = scale·Σ_t x[t]·panel[t][j] for j < 16·groups. */
function panelScores(x: usize, panel: usize, d: i32, groups: i32, out: usize, scale: f32): void {
  const sv = f32x4.splat(scale);
  for (let g = 0; g < groups; g++) {
    let p = panel + <usize>(g * 64);
    let a0 = f32x4.splat(0), a1 = a0, a2 = a0, a3 = a0;
    for (let t = 0; t < d; t++) {
      const xs = v128.load32_splat(x + <usize>t * 4);
      a0 = fma(xs, v128.load(p), a0);
      a1 = fma(xs, v128.load(p, 16), a1);
      a2 = fma(xs, v128.load(p, 32), a2);
      a3 = fma(xs, v128.load(p, 48), a3);
      p += <usize>BC * 4;
    }
    const o = out + <usize>(g * 64);
    v128.store(o, f32x4.mul(a0, sv));
    v128.store(o, f32x4.mul(a1, sv), 16);
    v128.store(o, f32x4.mul(a2, sv), 32);
    v128.store(o, f32x4.mul(a3, sv), 48);
  }
}

/** y[0..n) += Σ_{j<cnt} c[j]·rows[j][0..n), rows of pitch n floats; y kept in registers by 16s. */
function accumRows(y: usize, c: usize, rows: usize, cnt: i32, n: i32): void {
  const ld = <usize>n * 4;
  let t = 0;
  for (; t + 16 <= n; t += 16) {
    const yt = y + <usize>t * 4;
    let a0 = v128.load(yt), a1 = v128.load(yt, 16), a2 = v128.load(yt, 32), a3 = v128.load(yt, 48);
    let r = rows + <usize>t * 4;
    for (let j = 0; j < cnt; j++) {
      const cj = v128.load32_splat(c + <usize>j * 4);
      a0 = fma(cj, v128.load(r), a0);
      a1 = fma(cj, v128.load(r, 16), a1);
      a2 = fma(cj, v128.load(r, 32), a2);
      a3 = fma(cj, v128.load(r, 48), a3);
      r += ld;
    }
    v128.store(yt, a0);
    v128.store(yt, a1, 16);
    v128.store(yt, a2, 32);
    v128.store(yt, a3, 48);
  }
  for (; t + 4 <= n; t += 4) {
    const yt = y + <usize>t * 4;
    let a0 = v128.load(yt);
    let r = rows + <usize>t * 4;
    for (let j = 0; j < cnt; j++) {
      a0 = fma(v128.load32_splat(c + <usize>j * 4), v128.load(r), a0);
      r += ld;
    }
    v128.store(yt, a0);
  }
  for (; t < n; t++) {
    const yt = y + <usize>t * 4;
    let a: f32 = load<f32>(yt);
    let r = rows + <usize>t * 4;
    for (let j = 0; j < cnt; j++) {
      a += load<f32>(c + <usize>j * 4) * load<f32>(r);
      r += ld;
    }
    store<f32>(yt, a);
  }
}

/**
 * Scores of query row `qi` against key block [j0, j0+cnt): s[j] = scale·q·k + bias, and −∞ for
 * j in [cnt, roundup4(cnt)) so 4-wide passes over the row see no stray keys.
 */
// @ts-ignore: decorator
@inline function blockScores(qi: usize, panel: usize, d: i32, cnt: i32, s: usize, scale: f32, biasRow: usize, j0: i32): void {
  panelScores(qi, panel, d, (cnt + 15) >> 4, s, scale);
  if (biasRow != 0) {
    const br = biasRow + <usize>j0 * 4;
    let j = 0;
    for (; j + 4 <= cnt; j += 4) v128.store(s + <usize>j * 4, f32x4.add(v128.load(s + <usize>j * 4), v128.load(br + <usize>j * 4)));
    for (; j < cnt; j++) store<f32>(s + <usize>j * 4, load<f32>(s + <usize>j * 4) + load<f32>(br + <usize>j * 4));
  }
  const end = (cnt + 3) & ~3;
  for (let j = cnt; j < end; j++) store<f32>(s + <usize>j * 4, -Infinity);
}

export function attention(
  q: usize, k: usize, v: usize, out: usize, lse: usize, weights: usize,
  B: i32, H: i32, L: i32, S: i32, D: i32, DV: i32, scale: f32, causal: i32,
  bias: usize, bsB: i32, bsH: i32, bsL: i32, scratch: usize,
): void {
  attentionRange(q, k, v, out, lse, weights, B, H, L, S, D, DV, scale, causal, bias, bsB, bsH, bsL, scratch, 0, B * H);
}

/** `attention` for the (batch, head) pairs [bh0, bh1) only: one thread's share. */
export function attentionRange(
  q: usize, k: usize, v: usize, out: usize, lse: usize, weights: usize,
  B: i32, H: i32, L: i32, S: i32, D: i32, DV: i32, scale: f32, causal: i32,
  bias: usize, bsB: i32, bsH: i32, bsL: i32, scratch: usize, bh0: i32, bh1: i32,
): void {
  const panel = scratch;
  const srow = panel + <usize>(BC * (D + DV)) * 4;
  const mrow = srow + <usize>(2 * BC) * 4;
  const lrow = mrow + <usize>L * 4;
  const shift = S - L;
  for (let bh = bh0; bh < bh1; bh++) {
    const bi = bh / H, hi = bh % H;
    const qb = q + <usize>bh * <usize>L * <usize>D * 4;
    const kb = k + <usize>bh * <usize>S * <usize>D * 4;
    const vb = v + <usize>bh * <usize>S * <usize>DV * 4;
    const ob = out + <usize>bh * <usize>L * <usize>DV * 4;
    const biasB: usize = bias == 0 ? 0 : bias + (<usize>bi * <usize>bsB + <usize>hi * <usize>bsH) * 4;
    memory.fill(ob, 0, <usize>L * <usize>DV * 4);
    for (let i = 0; i < L; i++) {
      store<f32>(mrow + <usize>i * 4, -Infinity);
      store<f32>(lrow + <usize>i * 4, 0);
    }
    for (let j0 = 0; j0 < S; j0 += BC) {
      const bc = min(BC, S - j0);
      const iStart = causal != 0 ? max(0, j0 - shift) : 0;
      if (iStart >= L) break;
      packPanel(kb + <usize>j0 * <usize>D * 4, bc, D, panel);
      for (let i = iStart; i < L; i++) {
        const cnt = causal != 0 ? min(bc, i + shift + 1 - j0) : bc;
        const biasRow: usize = biasB == 0 ? 0 : biasB + <usize>i * <usize>bsL * 4;
        blockScores(qb + <usize>i * <usize>D * 4, panel, D, cnt, srow, scale, biasRow, j0);
        const mOld = load<f32>(mrow + <usize>i * 4);
        const mNew = max(mOld, rowMax(srow, (cnt + 3) & ~3));
        // Every key so far masked (−∞): nothing to add yet; a later block may still have keys.
        if (mNew == -Infinity) continue;
        const corr = exp1(mOld - mNew);
        const sum = rowExpSub(srow, srow, (cnt + 3) & ~3, mNew);
        store<f32>(lrow + <usize>i * 4, load<f32>(lrow + <usize>i * 4) * corr + sum);
        store<f32>(mrow + <usize>i * 4, mNew);
        const oi = ob + <usize>i * <usize>DV * 4;
        if (corr != 1) rowScale(oi, DV, corr);
        accumRows(oi, srow, vb + <usize>j0 * <usize>DV * 4, cnt, DV);
      }
    }
    for (let i = 0; i < L; i++) {
      const l = load<f32>(lrow + <usize>i * 4);
      const oi = ob + <usize>i * <usize>DV * 4;
      const li = lse + (<usize>bh * <usize>L + <usize>i) * 4;
      if (l == 0) {
        if (causal != 0 && i + shift < 0) {
          // Causal with no visible key (S < L): the js twin leaves zeros and lse = −∞.
          memory.fill(oi, 0, <usize>DV * 4);
          store<f32>(li, -Infinity);
        } else {
          // Every visible key masked by the bias: softmax of all −∞ is NaN (as in js and torch).
          for (let t = 0; t < DV; t++) store<f32>(oi + <usize>t * 4, NaN);
          store<f32>(li, NaN);
        }
      } else {
        rowScale(oi, DV, 1 / l);
        store<f32>(li, load<f32>(mrow + <usize>i * 4) + Mathf.log(l));
      }
    }
    if (weights != 0) {
      const wb = weights + <usize>bh * <usize>L * <usize>S * 4;
      for (let j0 = 0; j0 < S; j0 += BC) {
        const bc = min(BC, S - j0);
        packPanel(kb + <usize>j0 * <usize>D * 4, bc, D, panel);
        for (let i = 0; i < L; i++) {
          const wr = wb + (<usize>i * <usize>S + <usize>j0) * 4;
          const cnt = causal != 0 ? max(0, min(bc, i + shift + 1 - j0)) : bc;
          if (cnt > 0) {
            const biasRow: usize = biasB == 0 ? 0 : biasB + <usize>i * <usize>bsL * 4;
            blockScores(qb + <usize>i * <usize>D * 4, panel, D, cnt, srow, scale, biasRow, j0);
            rowExpSub(srow, srow, cnt, load<f32>(lse + (<usize>bh * <usize>L + <usize>i) * 4));
            memory.copy(wr, srow, <usize>cnt * 4);
          }
          if (cnt < bc) memory.fill(wr + <usize>cnt * 4, 0, <usize>(bc - cnt) * 4);
        }
      }
    }
  }
}

export function attentionBackward(
  q: usize, k: usize, v: usize, out: usize, dout: usize, lse: usize, dq: usize, dk: usize, dv: usize,
  B: i32, H: i32, L: i32, S: i32, D: i32, DV: i32, scale: f32, causal: i32,
  bias: usize, bsB: i32, bsH: i32, bsL: i32, scratch: usize,
): void {
  attentionBackwardRange(q, k, v, out, dout, lse, dq, dk, dv, B, H, L, S, D, DV, scale, causal, bias, bsB, bsH, bsL, scratch, 0, B * H);
}

/** `attentionBackward` for the (batch, head) pairs [bh0, bh1) only: one thread's share. */
export function attentionBackwardRange(
  q: usize, k: usize, v: usize, out: usize, dout: usize, lse: usize, dq: usize, dk: usize, dv: usize,
  B: i32, H: i32, L: i32, S: i32, D: i32, DV: i32, scale: f32, causal: i32,
  bias: usize, bsB: i32, bsH: i32, bsL: i32, scratch: usize, bh0: i32, bh1: i32,
): void {
  const kPanel = scratch;
  const vPanel = kPanel + <usize>(BC * D) * 4;
  const prow = vPanel + <usize>(BC * DV) * 4;
  const dsrow = prow + <usize>BC * 4;
  const delta = dsrow + <usize>BC * 4;
  const shift = S - L;
  const nbh = <usize>(bh1 - bh0);
  memory.fill(dq + <usize>bh0 * <usize>L * <usize>D * 4, 0, nbh * <usize>L * <usize>D * 4);
  memory.fill(dk + <usize>bh0 * <usize>S * <usize>D * 4, 0, nbh * <usize>S * <usize>D * 4);
  memory.fill(dv + <usize>bh0 * <usize>S * <usize>DV * 4, 0, nbh * <usize>S * <usize>DV * 4);
  const sv = f32x4.splat(scale);
  for (let bh = bh0; bh < bh1; bh++) {
    const bi = bh / H, hi = bh % H;
    const qb = q + <usize>bh * <usize>L * <usize>D * 4;
    const kb = k + <usize>bh * <usize>S * <usize>D * 4;
    const vb = v + <usize>bh * <usize>S * <usize>DV * 4;
    const ob = out + <usize>bh * <usize>L * <usize>DV * 4;
    const dob = dout + <usize>bh * <usize>L * <usize>DV * 4;
    const dqb = dq + <usize>bh * <usize>L * <usize>D * 4;
    const dkb = dk + <usize>bh * <usize>S * <usize>D * 4;
    const dvb = dv + <usize>bh * <usize>S * <usize>DV * 4;
    const biasB: usize = bias == 0 ? 0 : bias + (<usize>bi * <usize>bsB + <usize>hi * <usize>bsH) * 4;
    for (let i = 0; i < L; i++) {
      const o = <usize>i * <usize>DV * 4;
      store<f32>(delta + <usize>i * 4, rowDot(dob + o, ob + o, DV));
    }
    for (let j0 = 0; j0 < S; j0 += BC) {
      const bc = min(BC, S - j0);
      const iStart = causal != 0 ? max(0, j0 - shift) : 0;
      if (iStart >= L) break;
      packPanel(kb + <usize>j0 * <usize>D * 4, bc, D, kPanel);
      packPanel(vb + <usize>j0 * <usize>DV * 4, bc, DV, vPanel);
      const kj = kb + <usize>j0 * <usize>D * 4;
      const dkj = dkb + <usize>j0 * <usize>D * 4;
      const dvj = dvb + <usize>j0 * <usize>DV * 4;
      for (let i = iStart; i < L; i++) {
        const cnt = causal != 0 ? min(bc, i + shift + 1 - j0) : bc;
        const cnt4 = (cnt + 3) & ~3;
        const qi = qb + <usize>i * <usize>D * 4;
        const doi = dob + <usize>i * <usize>DV * 4;
        const biasRow: usize = biasB == 0 ? 0 : biasB + <usize>i * <usize>bsL * 4;
        blockScores(qi, kPanel, D, cnt, prow, scale, biasRow, j0);
        rowExpSub(prow, prow, cnt4, load<f32>(lse + (<usize>bh * <usize>L + <usize>i) * 4));
        panelScores(doi, vPanel, DV, (cnt + 15) >> 4, dsrow, 1);
        const dl = f32x4.splat(load<f32>(delta + <usize>i * 4));
        for (let j = 0; j < cnt4; j += 4) {
          const pj = v128.load(prow + <usize>j * 4);
          v128.store(dsrow + <usize>j * 4, f32x4.mul(f32x4.mul(pj, f32x4.sub(v128.load(dsrow + <usize>j * 4), dl)), sv));
        }
        // dq_i += Σ_j ds_j·k_j; dk_j += ds_j·q_i; dv_j += p_j·dO_i.
        accumRows(dqb + <usize>i * <usize>D * 4, dsrow, kj, cnt, D);
        for (let j = 0; j < cnt; j++) {
          const ds = load<f32>(dsrow + <usize>j * 4);
          const p = load<f32>(prow + <usize>j * 4);
          if (ds != 0) rowAxpy(dkj + <usize>j * <usize>D * 4, qi, D, ds);
          if (p != 0) rowAxpy(dvj + <usize>j * <usize>DV * 4, doi, DV, p);
        }
      }
    }
  }
}
