import type { HostKernels } from '../backend.ts';
import { f16Table32, numberToF16Bits } from '../../tensor/half.ts';
import { jsKernels } from './registry.ts';

/**
 * Quantized linear layers: the reference. The weight is kept quantized (int8 with a scale per output row,
 * or q4 in blocks of 32 along inF with a scale per block, float16 as qkv quantizes or float32 as older qkv
 * wrote; a half scale is widened to float32 exactly and used as that float32 would be); each row of x is
 * quantized on the fly to int8 with one scale (dynamic quantization), products are summed exactly in
 * integers, and the scales are applied once per sum. Every float step is one float32 operation (Math.fround
 * of the double result, which for +, ·, ÷ of float32 operands is the correctly rounded float32 result), so
 * the wasm kernels (assembly/quantized.ts) compute the same bits.
 *
 * Dimension letters: R rows of x, I = inF, O = outF.
 */

/** Elements of a q4 block: one scale each, as ONNX MatMulNBits (block_size 32) and GGML's Q4_0. */
export const Q4_BLOCK = 32;

/** Round to the nearest integer, ties to even (IEEE roundTiesToEven, as torch.round and f32x4.nearest). */
export function roundHalfEven(v: number): number {
  const r = Math.round(v); // ties toward +∞
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * Quantize row r of x (R, I) to int8 into q[0, I): sx = fround(max|x|/127), q = roundHalfEven(fround(x·inv))
 * with inv = fround(127/max|x|), so |q| <= 127 and |q·sx − x| <= sx/2 (up to float32 rounding). A row of
 * zeros has sx = 0 and q = 0. Returns sx. Values must be finite.
 */
export function quantizeRow(x: Float32Array, r: number, inF: number, q: Int8Array): number {
  const base = r * inF;
  let amax = 0;
  for (let i = 0; i < inF; i++) amax = Math.max(amax, Math.abs(x[base + i]));
  if (amax === 0) {
    q.fill(0, 0, inF);
    return 0;
  }
  const inv = Math.fround(127 / amax);
  for (let i = 0; i < inF; i++) q[i] = roundHalfEven(Math.fround(x[base + i] * inv));
  return Math.fround(amax / 127);
}

/** Throws naming the argument when the arrays are too short for (rows, inF, outF). */
function checkSizes(
  name: string,
  x: Float32Array,
  wqLength: number,
  wqNeed: number,
  wScale: Float32Array | Uint16Array,
  scales: number,
  bias: Float32Array | null,
  out: Float32Array,
  rows: number,
  inF: number,
  outF: number,
): void {
  const short = (what: string, have: number, need: number) => {
    if (have < need) throw new RangeError(`${name}: ${what} has ${have} elements, expected at least ${need}`);
  };
  short('x', x.length, rows * inF);
  short('wq', wqLength, wqNeed);
  short('wScale', wScale.length, scales);
  if (bias) short('bias', bias.length, outF);
  short('out', out.length, rows * outF);
}

/**
 * out (R, O) = x (R, I) · Wᵀ + bias with W = wq (O, I) int8 · wScale (O): any int8 values, −128..127
 * (quantizeInt8 makes −127..127; the wasm kernels compute −128 exactly too, assembly/quantized.ts).
 */
export const linearInt8: HostKernels['linearInt8'] = (x, wq, wScale, bias, out, rows, inF, outF) => {
  checkSizes('linearInt8', x, wq.length, outF * inF, wScale, outF, bias, out, rows, inF, outF);
  const q = new Int8Array(inF);
  for (let r = 0; r < rows; r++) {
    const sx = quantizeRow(x, r, inF, q);
    for (let o = 0; o < outF; o++) {
      const wo = o * inF;
      let acc = 0; // |acc| <= 127·128·I: exact in int32 for I < 132 000
      for (let i = 0; i < inF; i++) acc += q[i] * wq[wo + i];
      const y = Math.fround(Math.fround(acc) * Math.fround(sx * wScale[o]));
      out[r * outF + o] = bias ? Math.fround(y + bias[o]) : y;
    }
  }
};

/**
 * out (R, O) = x (R, I) · Wᵀ + bias with W = wq (O, I) q4 · wScale (O, I/32): element (o, i) of W is the
 * nibble of byte (o·I + i)/2 (low for even i), times wScale[o·I/32 + i/32] (float32, or float16 widened).
 */
export const linearQ4: HostKernels['linearQ4'] = (x, wq, scales, bias, out, rows, inF, outF) => {
  if (inF % Q4_BLOCK !== 0) throw new RangeError(`linearQ4: inF ${inF} is not a multiple of ${Q4_BLOCK}`);
  const nb = inF / Q4_BLOCK;
  checkSizes('linearQ4', x, wq.length, (outF * inF) / 2, scales, outF * nb, bias, out, rows, inF, outF);
  const half = scales instanceof Uint16Array ? f16Table32() : null; // a half's bits -> its float32
  const q = new Int8Array(inF);
  for (let r = 0; r < rows; r++) {
    const sx = quantizeRow(x, r, inF, q);
    for (let o = 0; o < outF; o++) {
      let sum = 0;
      for (let b = 0; b < nb; b++) {
        const byte0 = (o * inF + b * Q4_BLOCK) / 2;
        let acc = 0; // |acc| <= 127·8·32
        for (let j = 0; j < Q4_BLOCK / 2; j++) {
          const v = wq[byte0 + j];
          const lo = ((v & 15) ^ 8) - 8; // sign-extend the low nibble
          const hi = ((v >> 4) ^ 8) - 8;
          acc += q[b * Q4_BLOCK + 2 * j] * lo + q[b * Q4_BLOCK + 2 * j + 1] * hi;
        }
        const k = o * nb + b;
        sum = Math.fround(sum + Math.fround(acc * (half ? half[scales[k]!]! : scales[k]!)));
      }
      const y = Math.fround(sum * sx);
      out[r * outF + o] = bias ? Math.fround(y + bias[o]) : y;
    }
  }
};

/**
 * A float32 weight (O, I) quantized to int8 per output row, as `linearInt8` takes it, by the rule of
 * tensor/quantize.ts (`qkv export --dtype int8`): scale = fround(max|row|/127), q = roundHalfEven(w/scale)
 * in −127..127, the quotient taken in float64. A row of zeros has scale 0 and q 0.
 */
export function quantizeInt8(w: Float32Array, outF: number, inF: number): { q: Int8Array; scale: Float32Array } {
  const q = new Int8Array(outF * inF);
  const scale = new Float32Array(outF);
  for (let o = 0; o < outF; o++) scale[o] = quantizeBlock(w, o * inF, inF, 127, q);
  return { q, scale };
}

/**
 * A float32 weight (O, I) quantized to q4 in blocks of 32 along I, as `linearQ4` takes it (llama.cpp's Q4_0
 * shape: 4.5 bits a weight): each block's scale is fround(max|block|/7) rounded to float16 to nearest even
 * (torch's `.half()`), returned as its bits, and the values are roundHalfEven(w/s) against that rounded
 * scale s (the quotient in float64), clamped to −7..7 (−8 unused): dequantized, a value is exactly q·s.
 * A block whose scale rounds to 0 is zeros. Packed two a byte, element 2i in the low nibble. A block whose
 * scale overflows float16 (max|w| above 7·65504) is an error naming it.
 */
export function quantizeQ4(w: Float32Array, outF: number, inF: number): { q: Uint8Array; scale: Uint16Array } {
  if (inF % Q4_BLOCK !== 0) throw new RangeError(`quantizeQ4: inF ${inF} is not a multiple of ${Q4_BLOCK}`);
  const n = outF * inF;
  const values = new Int8Array(n);
  const scale = new Uint16Array(n / Q4_BLOCK);
  const half = f16Table32(); // a half's bits -> its float32
  for (let b = 0; b < n / Q4_BLOCK; b++) {
    const at = b * Q4_BLOCK;
    let amax = 0;
    for (let i = at; i < at + Q4_BLOCK; i++) amax = Math.max(amax, Math.abs(w[i]));
    const h = numberToF16Bits(Math.fround(amax / 7));
    if (h >= 0x7c00)
      throw new RangeError(
        `quantizeQ4: block ${b % (inF / Q4_BLOCK)} of row ${Math.floor(b / (inF / Q4_BLOCK))} has max|w| ` +
          `${amax}, beyond float16 scales (at most ${7 * 65504})`,
      );
    scale[b] = h;
    const s = half[h];
    if (s === 0) continue;
    for (let i = at; i < at + Q4_BLOCK; i++) values[i] = Math.max(-7, Math.min(7, roundHalfEven(w[i] / s)));
  }
  const q = new Uint8Array(n / 2);
  for (let i = 0; i < n; i += 2) q[i >> 1] = (values[i] & 15) | ((values[i + 1] & 15) << 4);
  return { q, scale };
}

/** w[at, at + n) into q[at, at + n) as roundHalfEven(w/scale) in −top..top; returns scale = fround(max|w|/top). */
function quantizeBlock(w: Float32Array, at: number, n: number, top: number, q: Int8Array): number {
  let amax = 0;
  for (let i = at; i < at + n; i++) amax = Math.max(amax, Math.abs(w[i]));
  const scale = Math.fround(amax / top);
  if (scale === 0) return 0;
  for (let i = at; i < at + n; i++) q[i] = Math.max(-top, Math.min(top, roundHalfEven(w[i] / scale)));
  return scale;
}

/** Rows of an int8 table picked by ids, each value q·s rounded once to float32. */
export const embeddingInt8: HostKernels['embeddingInt8'] = (wq, wScale, ids, out, dim) => {
  for (let i = 0; i < ids.length; i++) {
    const r = ids[i];
    for (let c = 0; c < dim; c++) out[i * dim + c] = wq[r * dim + c] * wScale[r];
  }
};

/**
 * Rows of a q4 table picked by ids (element e in nibble e % 2 of byte e/2), each value q·s rounded once (s
 * float32, or float16 widened).
 */
export const embeddingQ4: HostKernels['embeddingQ4'] = (wq, wScale, ids, out, dim) => {
  const nb = dim / Q4_BLOCK;
  const half = wScale instanceof Uint16Array ? f16Table32() : null; // a half's bits -> its float32
  for (let i = 0; i < ids.length; i++) {
    const r = ids[i];
    for (let c = 0; c < dim; c++) {
      const e = r * dim + c;
      const v = (((wq[e >> 1] >> ((e & 1) * 4)) & 15) ^ 8) - 8; // the signed nibble
      const k = r * nb + Math.floor(c / Q4_BLOCK);
      out[i * dim + c] = v * (half ? half[wScale[k]] : wScale[k]);
    }
  }
};

jsKernels.register('quantized', { linearInt8, linearQ4, embeddingInt8, embeddingQ4 });
