// Layer norm, forward and backward, for the wasm backend.
// Same contract as the js twin (src/backend/js/layernorm.ts), with byte
// addresses instead of arrays; optional arrays are passed as address 0. Float32 arithmetic with
// 128-bit SIMD throughout; exp is a vectorised Cephes polynomial (≈1 ulp), so results agree with the
// js twin (which accumulates in float64 in places) to float32 rounding.
import { fma, hsum, rowSum } from './simd';

// ---------------------------------------------------------------------------------------------
// Layer norm. mean and rstd: rows floats each.

export function layerNorm(
  x: usize, w: usize, b: usize, out: usize, mean: usize, rstd: usize, rows: i32, cols: i32, eps: f32,
): void {
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

export function layerNormBackward(
  x: usize, w: usize, mean: usize, rstd: usize, dy: usize, dx: usize, dw: usize, db: usize, rows: i32, cols: i32,
): void {
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
