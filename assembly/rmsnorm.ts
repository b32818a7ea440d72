// RMS norm, forward and backward, for the wasm backend. Same contract as the js twin
// (src/backend/js/rmsnorm.ts), with byte addresses instead of arrays; the weight and dweight are passed as
// address 0 when absent. Float32 with 128-bit SIMD; the twin sums squares in float64, so the two agree to
// float32 rounding of a row sum.
import { fma, hsum } from './simd';

/** Σ x² over n floats at p. */
function rowSumSquares(p: usize, n: i32): f32 {
  let acc = f32x4.splat(0);
  let j = 0;
  for (; j + 4 <= n; j += 4) {
    const v = v128.load(p + <usize>j * 4);
    acc = fma(v, v, acc);
  }
  let s = hsum(acc);
  for (; j < n; j++) {
    const v = load<f32>(p + <usize>j * 4);
    s += v * v;
  }
  return s;
}

export function rmsNorm(x: usize, w: usize, out: usize, rstd: usize, rows: i32, cols: i32, eps: f32): void {
  for (let r = 0; r < rows; r++) {
    const o = <usize>r * <usize>cols * 4;
    const rs: f32 = 1 / Mathf.sqrt(rowSumSquares(x + o, cols) / <f32>cols + eps);
    store<f32>(rstd + <usize>r * 4, rs);
    const rv = f32x4.splat(rs);
    let j = 0;
    for (; j + 4 <= cols; j += 4) {
      const q = <usize>j * 4;
      let y = f32x4.mul(v128.load(x + o + q), rv);
      if (w != 0) y = f32x4.mul(y, v128.load(w + q));
      v128.store(out + o + q, y);
    }
    for (; j < cols; j++) {
      const q = <usize>j * 4;
      let y = load<f32>(x + o + q) * rs;
      if (w != 0) y *= load<f32>(w + q);
      store<f32>(out + o + q, y);
    }
  }
}

// With x̂ = x·r, g = dy·w: dx = r·(g − x̂·mean(g·x̂)); dw += Σ_rows dy·x̂.
export function rmsNormBackward(
  x: usize, w: usize, rstd: usize, dy: usize, dx: usize, dw: usize, rows: i32, cols: i32,
): void {
  for (let r = 0; r < rows; r++) {
    const o = <usize>r * <usize>cols * 4;
    const rs = load<f32>(rstd + <usize>r * 4);
    const rv = f32x4.splat(rs);
    let acc = f32x4.splat(0);
    let j = 0;
    for (; j + 4 <= cols; j += 4) {
      const q = <usize>j * 4;
      let g = v128.load(dy + o + q);
      if (w != 0) g = f32x4.mul(g, v128.load(w + q));
      acc = fma(g, f32x4.mul(v128.load(x + o + q), rv), acc);
    }
    let s = hsum(acc);
    for (; j < cols; j++) {
      const q = <usize>j * 4;
      let g = load<f32>(dy + o + q);
      if (w != 0) g *= load<f32>(w + q);
      s += g * load<f32>(x + o + q) * rs;
    }
    const m = s / <f32>cols;
    const mv = f32x4.splat(m);
    j = 0;
    for (; j + 4 <= cols; j += 4) {
      const q = <usize>j * 4;
      const d = v128.load(dy + o + q);
      const g = w != 0 ? f32x4.mul(d, v128.load(w + q)) : d;
      const xh = f32x4.mul(v128.load(x + o + q), rv);
      v128.store(dx + o + q, f32x4.mul(rv, f32x4.sub(g, f32x4.mul(xh, mv))));
      if (dw != 0) v128.store(dw + q, fma(d, xh, v128.load(dw + q)));
    }
    for (; j < cols; j++) {
      const q = <usize>j * 4;
      const d = load<f32>(dy + o + q);
      const g = w != 0 ? d * load<f32>(w + q) : d;
      const xh = load<f32>(x + o + q) * rs;
      store<f32>(dx + o + q, rs * (g - xh * m));
      if (dw != 0) store<f32>(dw + q, load<f32>(dw + q) + d * xh);
    }
  }
}
