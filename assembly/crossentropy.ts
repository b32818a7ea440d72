// Cross-entropy with label smoothing, forward and backward, for the wasm backend.
// Same contract as the js twin (src/backend/js/crossentropy.ts), with byte
// addresses instead of arrays; optional arrays are passed as address 0. Float32 arithmetic with
// 128-bit SIMD throughout; exp is a vectorised Cephes polynomial (≈1 ulp), so results agree with the
// js twin (which accumulates in float64 in places) to float32 rounding.
import { exp1, exp4, rowMax, rowSum, rowSumExp } from './simd';

// ---------------------------------------------------------------------------------------------
// Cross-entropy with label smoothing (targets: i32). Returns the number of counted rows.

export function crossEntropy(
  logits: usize, targets: usize, losses: usize, rows: i32, cols: i32, ignoreIndex: i32, eps: f32,
): i32 {
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

export function crossEntropyBackward(
  logits: usize, targets: usize, rowScale: usize, dlogits: usize, rows: i32, cols: i32, ignoreIndex: i32, eps: f32,
): void {
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
