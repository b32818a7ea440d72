// Softmax and log-softmax, forward and backward, for the wasm backend.
// Same contract as the js twin (src/backend/js/softmax.ts), with byte
// addresses instead of arrays; optional arrays are passed as address 0. Float32 arithmetic with
// 128-bit SIMD throughout; exp is a vectorised Cephes polynomial (≈1 ulp), so results agree with the
// js twin (which accumulates in float64 in places) to float32 rounding.
import { exp1, exp4, rowDot, rowExpSub, rowMax, rowScale, rowSum, rowSumExp } from './simd';

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
