/**
 * IEEE 754 binary16 (half precision) bits and float32 values: the conversions the safetensors reader and
 * writer use for F16, and the `float16` dtype holds (a q4 weight's scales, tensor/quantize.ts).
 */

const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

let f16Table: Float32Array | null = null;

/** All 65536 half-precision values as float32 (exact: every F16 value is representable). */
export function f16Table32(): Float32Array {
  if (f16Table) return f16Table;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) t[h] = f16BitsToNumber(h);
  f16Table = t;
  return t;
}

/** Decode IEEE 754 binary16 bits (subnormals, infinities and NaN included). */
export function f16BitsToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1024 + mant) * 2 ** (exp - 25);
}

/**
 * float32 -> binary16 bits, round to nearest even (as torch's `.half()` of a float32 tensor; `value` is first
 * rounded to float32); overflow gives infinity, NaN stays NaN.
 */
export function numberToF16Bits(value: number): number {
  scratchF32[0] = value;
  const x = scratchU32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) return mant ? sign | 0x7e00 | (mant >>> 13) : sign | 0x7c00;
  const e = exp - 112; // rebias 127 -> 15
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): value = m * 2^-24 with m = full / 2^(14 - e).
    if (e < -10) return sign; // below half the smallest subnormal: rounds to (signed) zero
    const full = mant | 0x800000;
    const shift = 14 - e;
    let m = full >>> shift;
    const rem = full & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && m & 1)) m++;
    return sign | m; // m may carry into the smallest normal, which is the right encoding
  }
  let h = sign | (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++; // a carry rolls into the exponent / to inf
  return h;
}

/** The first `n` halves of `bits` as float32 (exact). */
export function halvesToFloat32(bits: Uint16Array, n = bits.length): Float32Array {
  const t = f16Table32();
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = t[bits[i]];
  return out;
}

/** `values` as halves when every one of them is a finite half exactly, else null. */
export function exactHalves(values: Float32Array): Uint16Array | null {
  const t = f16Table32();
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const h = numberToF16Bits(values[i]);
    if ((h & 0x7c00) === 0x7c00 || t[h] !== values[i]) return null;
    out[i] = h;
  }
  return out;
}
