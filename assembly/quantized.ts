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
// sign moves onto the weight and |x| (0..127) is the 7-bit operand. An int8 weight is −128..127, and
// −(−128) does not fit in int8 (negated, it wraps to −128, so (−128)·(−1) came out −128: issue 61), so
// the int8 kernel takes the one's complement instead, ~w = −w − 1 (−128..127 for every w): where x < 0,
// w·x = (−w)·|x| = (~w)·|x| + |x|, and the |x| of x's negative elements, summed once per row of x by
// quantizeRowsI8, is added to each of that row's integer sums. Pair sums stay within
// 2·128·127 < 2¹⁵, no saturation: both builds give the same integers, hence the same bits, for every
// int8 weight. The q4 kernel's four-row path instead reads each nibble offset by 8 (0..15, the 7-bit
// operand as it is) and takes 8·Σx off again (q4block); its one-row path negates its −8..7 values
// (dot16q4). Integer sums are exact in any order; the float steps of each output (scales, block sums)
// are the twin's, in its order, whichever path computes it.
//
// Dimension letters: R rows of x, I = inF, O = outF.

/**
 * Σ w·x over 16 int8 pairs, in i32 lanes added to acc: exact in the plain build; in the relaxed build less
 * the |x| of x's negative elements (their weights enter as ~w = −w − 1; see the file comment), which the
 * caller adds back once per row of x (quantizeRowsI8's correction).
 */
// @ts-ignore: decorator
@inline function dot16(w: v128, x: v128, acc: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    const ws = v128.xor(w, i8x16.lt_s(x, i8x16.splat(0))); // ~w where x < 0, w elsewhere
    return i32x4.add(acc, i32x4.extadd_pairwise_i16x8_s(i16x8.relaxed_dot_i8x16_i7x16_s(ws, i8x16.abs(x))));
  } else {
    const lo = i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(w), i16x8.extend_low_i8x16_s(x));
    const hi = i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_s(w), i16x8.extend_high_i8x16_s(x));
    return i32x4.add(acc, i32x4.add(lo, hi));
  }
}

/** Σ w·x over 16 pairs, exact in both builds, for weights −127..127 (q4's −8..7): −w fits in int8. */
// @ts-ignore: decorator
@inline function dot16q4(w: v128, x: v128, acc: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    const neg = i8x16.lt_s(x, i8x16.splat(0));
    const ws = i8x16.sub(v128.xor(w, neg), neg); // −w where x < 0: (w ^ −1) − (−1)
    return i32x4.add(acc, i32x4.extadd_pairwise_i16x8_s(i16x8.relaxed_dot_i8x16_i7x16_s(ws, i8x16.abs(x))));
  } else {
    return dot16(w, x, acc);
  }
}

// @ts-ignore: decorator
@inline function isum(v: v128): i32 {
  return i32x4.extract_lane(v, 0) + i32x4.extract_lane(v, 1) + i32x4.extract_lane(v, 2) + i32x4.extract_lane(v, 3);
}

/**
 * Quantize the R rows of x (R, I) as the twin's quantizeRow: row r's int8 values at q + r·I (for q4
 * weights, `q4` = 1, each block of 32 stored evens first, then odds, the order of the weight's low
 * and high nibbles), its scale sx at sx + 4r. For q4 also each block's correction 8·Σx (an i32, see
 * q4block) at sx + 4R + 4(r·I/32 + b): computed once per row of x, not per block of every output. For
 * int8 in the relaxed build, the row's correction Σ|x| over its negative elements in the 16-lane part
 * [0, I − I mod 16) (an i32, see dot16) at sx + 4R + 4r.
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
  if (q4 == 0) {
    if (ASC_FEATURE_RELAXED_SIMD) {
      const n = inF & ~15;
      for (let r = 0; r < rows; r++) {
        const qr = q + <usize>r * <usize>inF;
        let c: i32 = 0;
        for (let i = 0; i < n; i++) c -= min(<i32>load<i8>(qr + <usize>i), 0);
        store<i32>(sx + <usize>rows * 4 + <usize>r * 4, c);
      }
    }
    return;
  }
  const nb = inF >> 5;
  const corr = sx + <usize>rows * 4;
  for (let r = 0; r < rows; r++) {
    const qr = q + <usize>r * <usize>inF;
    for (let b = 0; b < nb; b++) {
      const qb = qr + <usize>b * 32;
      const lo = i16x8.extadd_pairwise_i8x16_s(v128.load(qb));
      const s4 = i32x4.extadd_pairwise_i16x8_s(i16x8.add(lo, i16x8.extadd_pairwise_i8x16_s(v128.load(qb + 16))));
      store<i32>(corr + (<usize>r * <usize>nb + <usize>b) * 4, isum(s4) << 3);
    }
  }
}

/** [Σ lanes of a0, of a1, of a2, of a3] (exact integer sums; the lane order of the adds is free). */
// @ts-ignore: decorator
@inline function isum4(a0: v128, a1: v128, a2: v128, a3: v128): v128 {
  const s01 = i32x4.add(i32x4.shuffle(a0, a1, 0, 4, 1, 5), i32x4.shuffle(a0, a1, 2, 6, 3, 7));
  const s23 = i32x4.add(i32x4.shuffle(a2, a3, 0, 4, 1, 5), i32x4.shuffle(a2, a3, 2, 6, 3, 7));
  return i32x4.add(i32x4.shuffle(s01, s23, 0, 1, 4, 5), i32x4.shuffle(s01, s23, 2, 3, 6, 7));
}

/** Outputs [o0, o1) of every row: out (R, O) from quantized rows (q, sx) and wq (O, I) int8, wScale (O). */
export function linearInt8Range(
  q: usize, sx: usize, wq: usize, wScale: usize, bias: usize, out: usize, rows: i32, inF: i32, outF: i32,
  o0: i32, o1: i32,
): void {
  // Weight rows outermost, four at a time (the GEMV of decoding): each weight row is read from memory
  // once and stays in cache for every row of x; the four rows' sums are reduced together and their
  // scales and bias applied in the lanes of one vector. Within the four, row after row: reading the
  // four rows interleaved (x's vectors shared) was as fast from cache but 2.8 times slower for the
  // 38 MB vocabulary head streamed from memory (records/quantized/README.md). Each output's integer
  // sum is the same exact integer and its float steps are those of the one-row loop below: the same bits.
  const corr = sx + <usize>rows * 4; // relaxed build: row r's correction at corr + 4r (quantizeRowsI8)
  let o = o0;
  for (; o + 4 <= o1; o += 4) {
    const w0 = wq + <usize>o * <usize>inF;
    const w1 = w0 + <usize>inF;
    const w2 = w1 + <usize>inF;
    const w3 = w2 + <usize>inF;
    const scales = v128.load(wScale + <usize>o * 4);
    for (let r = 0; r < rows; r++) {
      const qr = q + <usize>r * <usize>inF;
      let a0 = i32x4.splat(0);
      let a1 = i32x4.splat(0);
      let a2 = i32x4.splat(0);
      let a3 = i32x4.splat(0);
      let p: i32 = 0;
      for (; p + 16 <= inF; p += 16) a0 = dot16(v128.load(w0 + <usize>p), v128.load(qr + <usize>p), a0);
      for (p = 0; p + 16 <= inF; p += 16) a1 = dot16(v128.load(w1 + <usize>p), v128.load(qr + <usize>p), a1);
      for (p = 0; p + 16 <= inF; p += 16) a2 = dot16(v128.load(w2 + <usize>p), v128.load(qr + <usize>p), a2);
      for (p = 0; p + 16 <= inF; p += 16) a3 = dot16(v128.load(w3 + <usize>p), v128.load(qr + <usize>p), a3);
      let acc = isum4(a0, a1, a2, a3);
      if (ASC_FEATURE_RELAXED_SIMD) acc = i32x4.add(acc, i32x4.splat(load<i32>(corr + <usize>r * 4)));
      if (p < inF) {
        let t0: i32 = 0, t1: i32 = 0, t2: i32 = 0, t3: i32 = 0;
        for (; p < inF; p++) {
          const xi = <i32>load<i8>(qr + <usize>p);
          t0 += <i32>load<i8>(w0 + <usize>p) * xi;
          t1 += <i32>load<i8>(w1 + <usize>p) * xi;
          t2 += <i32>load<i8>(w2 + <usize>p) * xi;
          t3 += <i32>load<i8>(w3 + <usize>p) * xi;
        }
        acc = i32x4.add(acc, i32x4.replace_lane(i32x4.replace_lane(i32x4.replace_lane(
          i32x4.splat(t0), 1, t1), 2, t2), 3, t3));
      }
      // Per lane: <f32>acc · (sx · wScale[o]), then + bias[o], as the one-row loop does.
      let y = f32x4.mul(f32x4.convert_i32x4_s(acc), f32x4.mul(f32x4.splat(load<f32>(sx + <usize>r * 4)), scales));
      if (bias != 0) y = f32x4.add(y, v128.load(bias + <usize>o * 4));
      v128.store(out + (<usize>r * <usize>outF + <usize>o) * 4, y);
    }
  }
  for (; o < o1; o++) {
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
      if (ASC_FEATURE_RELAXED_SIMD) acc += load<i32>(corr + <usize>r * 4);
      for (; p < inF; p++) acc += <i32>load<i8>(wo + <usize>p) * <i32>load<i8>(qr + <usize>p);
      let y: f32 = <f32>acc * (s * load<f32>(wScale + <usize>o * 4));
      if (bias != 0) y += load<f32>(bias + <usize>o * 4);
      store<f32>(out + (<usize>r * <usize>outF + <usize>o) * 4, y);
    }
  }
}

/**
 * The integer sums of one q4 block (32 weights of one row, 16 bytes at w) against x's block (xl its even
 * elements, xh its odd ones), in i32 lanes whose total is Σ x·(v + 8): the nibbles are read offset by 8
 * (n ^ 8 = v + 8, 0..15), and the block's correction 8·Σx (quantizeRowsI8) is taken off the total by the
 * caller, once for four rows. Relaxed SIMD: the offset nibbles are the 7-bit operand (pair sums within
 * 2·127·15, no saturation), summed in i16 lanes (each within 4·127·15) and widened; plain SIMD: widened to
 * i16 for i32x4.dot_i16x8_s.
 */
// @ts-ignore: decorator
@inline function q4block(w: v128, xl: v128, xh: v128): v128 {
  return q4dot(q4lo(w), q4hi(w), xl, xh);
}

/** A q4 block's low nibbles (its even elements), read offset by 8 (0..15): see q4block. */
// @ts-ignore: decorator
@inline function q4lo(w: v128): v128 {
  return v128.and(v128.xor(w, i8x16.splat(-120)), i8x16.splat(15)); // 0x88: each nibble n to n ^ 8
}

/** Its high nibbles (the odd elements), offset by 8. */
// @ts-ignore: decorator
@inline function q4hi(w: v128): v128 {
  return v128.and(i16x8.shr_u(v128.xor(w, i8x16.splat(-120)), 4), i8x16.splat(15));
}

/** q4block on nibbles already unpacked (lo, hi), so a block read once serves several rows of x. */
// @ts-ignore: decorator
@inline function q4dot(lo: v128, hi: v128, xl: v128, xh: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    const d = i16x8.add(i16x8.relaxed_dot_i8x16_i7x16_s(xl, lo), i16x8.relaxed_dot_i8x16_i7x16_s(xh, hi));
    return i32x4.extadd_pairwise_i16x8_s(d);
  } else {
    const d0 = i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_u(lo), i16x8.extend_low_i8x16_s(xl));
    const d1 = i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_u(lo), i16x8.extend_high_i8x16_s(xl));
    const d2 = i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_u(hi), i16x8.extend_low_i8x16_s(xh));
    const d3 = i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_u(hi), i16x8.extend_high_i8x16_s(xh));
    return i32x4.add(i32x4.add(d0, d1), i32x4.add(d2, d3));
  }
}

/**
 * Block b of four q4 weight rows, unpacked (l_k, h_k: row k's nibbles), against x's row at qr (its corrections
 * at cr): the four block sums, less x's block correction, scaled (lane k by scale's lane k) and added to sum's
 * lanes, sum + <f32>acc·scale.
 */
// @ts-ignore: decorator
@inline function q4unpacked(
  qr: usize, cr: usize, b: i32, l1: v128, h1: v128, l2: v128, h2: v128, l3: v128, h3: v128, l4: v128, h4: v128,
  scale: v128, sum: v128,
): v128 {
  const qb = qr + <usize>b * 32;
  const xl = v128.load(qb);
  const xh = v128.load(qb + 16);
  const raw = isum4(q4dot(l1, h1, xl, xh), q4dot(l2, h2, xl, xh), q4dot(l3, h3, xl, xh), q4dot(l4, h4, xl, xh));
  const acc = i32x4.sub(raw, i32x4.splat(load<i32>(cr + <usize>b * 4)));
  return f32x4.add(sum, f32x4.mul(f32x4.convert_i32x4_s(acc), scale));
}

/**
 * A float16 value (its bits h) as float32, exactly (the js twin's table): a normal half rebiased into a
 * float32's exponent on the bits; a subnormal one (or zero) as its integer mantissa times 2^-24, an exact
 * product whose result is a normal float32. Infinities and NaN are not expected (the loader refuses them).
 */
// @ts-ignore: decorator
@inline function halfToF32(h: u32): f32 {
  const e = (h >> 10) & 31;
  const v: f32 =
    e == 0 ? <f32>(h & 1023) * <f32>5.9604644775390625e-8 : reinterpret<f32>(((h & 0x7fff) + 0x1c000) << 13);
  return (h & 0x8000) != 0 ? -v : v;
}

/** Scale k of a q4 weight's scales at s: float32, or float16 where `half` is 1. */
// @ts-ignore: decorator
@inline function q4scale(s: usize, k: usize, half: i32): f32 {
  return half != 0 ? halfToF32(<u32>load<u16>(s + 2 * k)) : load<f32>(s + 4 * k);
}

/** The four rows' scales of block b, nb scales a row from row o's at s: lane k is row k's. */
// @ts-ignore: decorator
@inline function q4scales(s: usize, o: usize, nb: usize, b: usize, half: i32): v128 {
  const k = o * nb + b;
  let scale = f32x4.splat(q4scale(s, k, half));
  scale = f32x4.replace_lane(scale, 1, q4scale(s, k + nb, half));
  scale = f32x4.replace_lane(scale, 2, q4scale(s, k + 2 * nb, half));
  return f32x4.replace_lane(scale, 3, q4scale(s, k + 3 * nb, half));
}

/** Block b of the four q4 weight rows at w0 (rowBytes apart), unpacked here, against x's row at qr: q4unpacked. */
// @ts-ignore: decorator
@inline function q4step(qr: usize, cr: usize, w0: usize, rowBytes: usize, b: i32, scale: v128, sum: v128): v128 {
  const wb = w0 + <usize>b * 16;
  const w1 = v128.load(wb);
  const w2 = v128.load(wb + rowBytes);
  const w3 = v128.load(wb + 2 * rowBytes);
  const w4 = v128.load(wb + 3 * rowBytes);
  const l1 = q4lo(w1), h1 = q4hi(w1), l2 = q4lo(w2), h2 = q4hi(w2);
  return q4unpacked(qr, cr, b, l1, h1, l2, h2, q4lo(w3), q4hi(w3), q4lo(w4), q4hi(w4), scale, sum);
}

/**
 * Outputs [o0, o1) of every row: out (R, O) from quantized rows (q in q4 order, sx) and wq (O, I) q4
 * packed, wScale (O, I/32) float32, or float16 where `half` is 1; I a multiple of 32.
 */
export function linearQ4Range(
  q: usize, sx: usize, wq: usize, wScale: usize, bias: usize, out: usize, rows: i32, inF: i32, outF: i32,
  o0: i32, o1: i32, half: i32,
): void {
  const nb = inF >> 5;
  // Four weight rows at a time (the GEMV of decoding): x's block loaded once for the four, their
  // block sums reduced together and scaled and summed in the lanes of one f32x4, lane k being output
  // o + k's chain: sum = sum + <f32>acc·scale, block by block in order, as the one-row loop below and
  // the twin do (the same float32 operations on the same values: the same bits). Four independent
  // chains instead of one hide the latency that made the one-row loop slow.
  let o = o0;
  for (; o + 4 <= o1; o += 4) {
    const w0 = wq + (<usize>o * <usize>inF >> 1);
    const rowBytes = <usize>inF >> 1;
    const corr = sx + <usize>rows * 4;
    let r = 0;
    // Two rows of x at a time (beam search, prefill): each weight block loaded and unpacked once for both;
    // each row's chain is the one-row loop's, operation for operation.
    for (; r + 2 <= rows; r += 2) {
      const qa = q + <usize>r * <usize>inF;
      const qb2 = qa + <usize>inF;
      const ca = corr + <usize>r * <usize>nb * 4;
      const cb = ca + <usize>nb * 4;
      let sumA = f32x4.splat(0);
      let sumB = f32x4.splat(0);
      for (let b = 0; b < nb; b++) {
        const scale = q4scales(wScale, <usize>o, <usize>nb, <usize>b, half);
        const wb = w0 + <usize>b * 16;
        const w1 = v128.load(wb);
        const w2 = v128.load(wb + rowBytes);
        const w3 = v128.load(wb + 2 * rowBytes);
        const w4 = v128.load(wb + 3 * rowBytes);
        const l1 = q4lo(w1), h1 = q4hi(w1), l2 = q4lo(w2), h2 = q4hi(w2);
        const l3 = q4lo(w3), h3 = q4hi(w3), l4 = q4lo(w4), h4 = q4hi(w4);
        sumA = q4unpacked(qa, ca, b, l1, h1, l2, h2, l3, h3, l4, h4, scale, sumA);
        sumB = q4unpacked(qb2, cb, b, l1, h1, l2, h2, l3, h3, l4, h4, scale, sumB);
      }
      let yA = f32x4.mul(sumA, f32x4.splat(load<f32>(sx + <usize>r * 4)));
      let yB = f32x4.mul(sumB, f32x4.splat(load<f32>(sx + <usize>(r + 1) * 4)));
      if (bias != 0) {
        yA = f32x4.add(yA, v128.load(bias + <usize>o * 4));
        yB = f32x4.add(yB, v128.load(bias + <usize>o * 4));
      }
      v128.store(out + (<usize>r * <usize>outF + <usize>o) * 4, yA);
      v128.store(out + (<usize>(r + 1) * <usize>outF + <usize>o) * 4, yB);
    }
    for (; r < rows; r++) {
      const qr = q + <usize>r * <usize>inF;
      const cr = corr + <usize>r * <usize>nb * 4;
      let sum = f32x4.splat(0);
      for (let b = 0; b < nb; b++) {
        const scale = q4scales(wScale, <usize>o, <usize>nb, <usize>b, half);
        sum = q4step(qr, cr, w0, rowBytes, b, scale, sum);
      }
      let y = f32x4.mul(sum, f32x4.splat(load<f32>(sx + <usize>r * 4)));
      if (bias != 0) y = f32x4.add(y, v128.load(bias + <usize>o * 4));
      v128.store(out + (<usize>r * <usize>outF + <usize>o) * 4, y);
    }
  }
  for (; o < o1; o++) {
    const wo = wq + (<usize>o * <usize>inF >> 1);
    for (let r = 0; r < rows; r++) {
      const qr = q + <usize>r * <usize>inF;
      const s = load<f32>(sx + <usize>r * 4);
      let sum: f32 = 0;
      for (let b = 0; b < nb; b++) {
        const w = v128.load(wo + <usize>b * 16);
        const lo = i8x16.shr_s(i8x16.shl(w, 4), 4); // elements 2j: the low nibbles, sign-extended
        const hi = i8x16.shr_s(w, 4); // elements 2j + 1
        const qb = qr + <usize>b * 32;
        const acc = dot16q4(hi, v128.load(qb + 16), dot16q4(lo, v128.load(qb), i32x4.splat(0)));
        sum += <f32>isum(acc) * q4scale(wScale, <usize>o * <usize>nb + <usize>b, half);
      }
      let y: f32 = sum * s;
      if (bias != 0) y += load<f32>(bias + <usize>o * 4);
      store<f32>(out + (<usize>r * <usize>outF + <usize>o) * 4, y);
    }
  }
}
