// Quantized linear layers (the js twin, src/backend/js/quantized.ts, defines every bit): x's rows
// quantized to int8 once (quantizeRowsI8), then dot products of int8 rows against the weight's rows
// summed exactly in int32 lanes, the scales applied once per sum in float32, as the twin does.
//
// Integer dot products of 16 int8 pairs: plain SIMD sign-extends both to i16 and uses
// i32x4.dot_i16x8_s (pmaddwd). Relaxed SIMD has i16x8.relaxed_dot_i8x16_i7x16_s (pair sums in i16
// lanes, widened and added here), exact only when its second operand is 7-bit (0..127; engines
// lower it to pmaddubsw, which reads that operand unsigned and saturates pair sums to i16). Not the
// fused i32x4.relaxed_dot_i8x16_i7x16_add_s: as asc emits it and Node 20's V8 (11.3, relaxed SIMD
// behind a flag) runs it, it gives wrong sums (lane 0 of dot(1..16, 1,1,1,1,2,2,2,2,..) + 100 comes
// out 20, not 110; which side is at fault is not pinned down). The activations are −127..127, so their
// sign moves onto the weight: w·x = (w·sign x)·|x|, with |x| in 0..127 and w·sign x in −127..127
// (int8 weights are −127..127, q4 −8..7: negating never overflows). Pair sums stay within
// 2·127·127 < 2¹⁵, no saturation: both builds give the same integers, hence the same bits.
//
// Dimension letters: R rows of x, I = inF, O = outF.

// @ts-ignore: decorator
@inline function dot16(w: v128, x: v128, acc: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    const neg = i8x16.lt_s(x, i8x16.splat(0));
    const ws = v128.bitselect(i8x16.neg(w), w, neg);
    return i32x4.add(acc, i32x4.extadd_pairwise_i16x8_s(i16x8.relaxed_dot_i8x16_i7x16_s(ws, i8x16.abs(x))));
  } else {
    const lo = i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(w), i16x8.extend_low_i8x16_s(x));
    const hi = i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_s(w), i16x8.extend_high_i8x16_s(x));
    return i32x4.add(acc, i32x4.add(lo, hi));
  }
}

// @ts-ignore: decorator
@inline function isum(v: v128): i32 {
  return i32x4.extract_lane(v, 0) + i32x4.extract_lane(v, 1) + i32x4.extract_lane(v, 2) + i32x4.extract_lane(v, 3);
}

/**
 * Quantize the R rows of x (R, I) as the twin's quantizeRow: row r's int8 values at q + r·I (for q4
 * weights, `q4` = 1, each block of 32 stored evens first, then odds, the order of the weight's low
 * and high nibbles), its scale sx at sx + 4r.
 */
export function quantizeRowsI8(x: usize, rows: i32, inF: i32, q: usize, sx: usize, q4: i32): void {
  for (let r = 0; r < rows; r++) {
    const xr = x + <usize>r * <usize>inF * 4;
    const qr = q + <usize>r * <usize>inF;
    let amax: f32 = 0;
    for (let i = 0; i < inF; i++) amax = max(amax, abs(load<f32>(xr + <usize>i * 4)));
    if (amax == 0) {
      memory.fill(qr, 0, <usize>inF);
      store<f32>(sx + <usize>r * 4, 0);
      continue;
    }
    const inv: f32 = <f32>127 / amax;
    for (let i = 0; i < inF; i++) {
      const v = <i8>(<i32>nearest<f32>(load<f32>(xr + <usize>i * 4) * inv));
      // Block of 32, element j: position j/2 when j is even, 16 + j/2 when odd.
      const at = q4 != 0 ? (i & ~31) + ((i & 1) << 4) + ((i & 31) >> 1) : i;
      store<i8>(qr + <usize>at, v);
    }
    store<f32>(sx + <usize>r * 4, amax / <f32>127);
  }
}

/** Outputs [o0, o1) of every row: out (R, O) from quantized rows (q, sx) and wq (O, I) int8, wScale (O). */
export function linearInt8Range(
  q: usize, sx: usize, wq: usize, wScale: usize, bias: usize, out: usize, rows: i32, inF: i32, outF: i32,
  o0: i32, o1: i32,
): void {
  // Weight rows outermost: each is read from memory once and stays in cache for every row of x.
  for (let o = o0; o < o1; o++) {
    const wo = wq + <usize>o * <usize>inF;
    for (let r = 0; r < rows; r++) {
      const qr = q + <usize>r * <usize>inF;
      const s = load<f32>(sx + <usize>r * 4);
      let a0 = i32x4.splat(0);
      let a1 = i32x4.splat(0);
      let p: i32 = 0;
      for (; p + 32 <= inF; p += 32) {
        a0 = dot16(v128.load(wo + <usize>p), v128.load(qr + <usize>p), a0);
        a1 = dot16(v128.load(wo + <usize>p + 16), v128.load(qr + <usize>p + 16), a1);
      }
      for (; p + 16 <= inF; p += 16) a0 = dot16(v128.load(wo + <usize>p), v128.load(qr + <usize>p), a0);
      let acc = isum(i32x4.add(a0, a1));
      for (; p < inF; p++) acc += <i32>load<i8>(wo + <usize>p) * <i32>load<i8>(qr + <usize>p);
      let y: f32 = <f32>acc * (s * load<f32>(wScale + <usize>o * 4));
      if (bias != 0) y += load<f32>(bias + <usize>o * 4);
      store<f32>(out + (<usize>r * <usize>outF + <usize>o) * 4, y);
    }
  }
}

/**
 * Outputs [o0, o1) of every row: out (R, O) from quantized rows (q in q4 order, sx) and wq (O, I) q4
 * packed, wScale (O, I/32); I a multiple of 32.
 */
export function linearQ4Range(
  q: usize, sx: usize, wq: usize, wScale: usize, bias: usize, out: usize, rows: i32, inF: i32, outF: i32,
  o0: i32, o1: i32,
): void {
  const nb = inF >> 5;
  for (let o = o0; o < o1; o++) {
    const wo = wq + (<usize>o * <usize>inF >> 1);
    const so = wScale + <usize>o * <usize>nb * 4;
    for (let r = 0; r < rows; r++) {
      const qr = q + <usize>r * <usize>inF;
      const s = load<f32>(sx + <usize>r * 4);
      let sum: f32 = 0;
      for (let b = 0; b < nb; b++) {
        const w = v128.load(wo + <usize>b * 16);
        const lo = i8x16.shr_s(i8x16.shl(w, 4), 4); // elements 2j: the low nibbles, sign-extended
        const hi = i8x16.shr_s(w, 4); // elements 2j + 1
        const qb = qr + <usize>b * 32;
        const acc = dot16(hi, v128.load(qb + 16), dot16(lo, v128.load(qb), i32x4.splat(0)));
        sum += <f32>isum(acc) * load<f32>(so + <usize>b * 4);
      }
      let y: f32 = sum * s;
      if (bias != 0) y += load<f32>(bias + <usize>o * 4);
      store<f32>(out + (<usize>r * <usize>outF + <usize>o) * 4, y);
    }
  }
}
