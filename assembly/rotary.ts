// Rotary position embedding for the wasm backend, transformers' rotate_half layout. Same contract as the js
// twin (src/backend/js/rotary.ts), with byte addresses: x and out (outer, T, heads, D), cos and sin (T, D/2);
// out may be x. Each product is rounded to float32 before the sum, as the twin (and torch in float32) does, so
// the two agree bit for bit where no fused multiply-add is used (the plain-SIMD build).

export function rotary(
  x: usize, cos: usize, sin: usize, out: usize, outer: i32, positions: i32, heads: i32, dim: i32, inverse: i32,
): void {
  const half = dim >> 1;
  const sgn: f32 = inverse != 0 ? -1 : 1;
  const sign = f32x4.splat(sgn);
  for (let o = 0; o < outer; o++) {
    for (let t = 0; t < positions; t++) {
      const tab = <usize>(t * half) * 4;
      for (let h = 0; h < heads; h++) {
        const base = <usize>(((o * positions + t) * heads + h) * dim) * 4;
        const hb = base + <usize>half * 4;
        let i = 0;
        for (; i + 4 <= half; i += 4) {
          const q = <usize>i * 4;
          const c = v128.load(cos + tab + q);
          const s = f32x4.mul(sign, v128.load(sin + tab + q));
          const a = v128.load(x + base + q);
          const b = v128.load(x + hb + q);
          v128.store(out + base + q, f32x4.sub(f32x4.mul(a, c), f32x4.mul(b, s)));
          v128.store(out + hb + q, f32x4.add(f32x4.mul(b, c), f32x4.mul(a, s)));
        }
        for (; i < half; i++) {
          const q = <usize>i * 4;
          const c = load<f32>(cos + tab + q);
          const s: f32 = sgn * load<f32>(sin + tab + q);
          const a = load<f32>(x + base + q);
          const b = load<f32>(x + hb + q);
          store<f32>(out + base + q, a * c - b * s);
          store<f32>(out + hb + q, b * c + a * s);
        }
      }
    }
  }
}
