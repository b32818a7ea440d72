// Adam / AdamW for the wasm backend. Same contract as the js twin (src/backend/js/adam.ts), with
// byte addresses instead of arrays.
import { load2d, store2d } from './simd';

// ---------------------------------------------------------------------------------------------
// Adam / AdamW, in float64 exactly as the js twin (every operation in the same order), so the
// result is the same to the bit. The step constants come from the caller: c1 = 1 − β1,
// c2 = 1 − β2, stepSize = lr / (1 − β1ᵗ), bc2Sqrt = √(1 − β2ᵗ), shrink = 1 − lr·wd for AdamW
// (else 1), l2 = wd for Adam (else 0).

// @ts-ignore: decorator
@inline function adamLoop(
  hasL2: bool, p: usize, g: usize, m: usize, v: usize, n: i32,
  b1: f64, c1: f64, b2: f64, c2: f64, stepSize: f64, bc2Sqrt: f64, eps: f64, shrink: f64, l2: f64,
): void {
  const b1v = f64x2.splat(b1), c1v = f64x2.splat(c1), b2v = f64x2.splat(b2), c2v = f64x2.splat(c2);
  const sv = f64x2.splat(stepSize), bcv = f64x2.splat(bc2Sqrt), ev = f64x2.splat(eps);
  const shv = f64x2.splat(shrink), l2v = f64x2.splat(l2);
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
export function adam(
  p: usize, g: usize, m: usize, v: usize, n: i32,
  b1: f64, c1: f64, b2: f64, c2: f64, stepSize: f64, bc2Sqrt: f64, eps: f64, shrink: f64, l2: f64,
): void {
  if (l2 != 0) adamLoop(true, p, g, m, v, n, b1, c1, b2, c2, stepSize, bc2Sqrt, eps, shrink, l2);
  else adamLoop(false, p, g, m, v, n, b1, c1, b2, c2, stepSize, bc2Sqrt, eps, shrink, l2);
}
