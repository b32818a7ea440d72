/**
 * The scales of the q4 kernels (quantized.ts) in WGSL: float32 as older qkv wrote them, or float16 (llama.cpp's
 * Q4_0 layout, 4.5 bits a weight) two a word, scale k in bits 16(k%2) of word k/2, widened exactly.
 */

/**
 * WGSL: `scale(k)`, scale k of a q4 weight's `ws` as float32. Float16 scales (ws an array of u32, two halves a
 * word) are widened exactly on the bits, not by unpack2x16float (whose subnormal halves WGSL may flush): a
 * normal half rebiased into a float32's exponent, a subnormal one its integer mantissa times 2^-24 (an exact
 * product, a normal float32). The loader refuses infinite or NaN scales.
 */
export function scaleCode(half: boolean): string {
  if (!half) return 'fn scale(k: u32) -> f32 { return ws[k]; }';
  return /* wgsl */ `
fn scale(k: u32) -> f32 {
  let h = (ws[k / 2u] >> (16u * (k % 2u))) & 0xffffu;
  var v = bitcast<f32>(((h & 0x7fffu) + 0x1c000u) << 13u);
  if (((h >> 10u) & 31u) == 0u) { v = f32(h & 1023u) * 5.9604644775390625e-8; }
  return select(v, -v, (h & 0x8000u) != 0u);
}`;
}

/** A q4 kernel's WGSL with its scales float32 or float16 (`ws` declared as halves, two a word). */
export function withScales(code: string, half: boolean): string {
  const decl = 'var<storage, read> ws: array<f32>;';
  if (!code.includes(decl)) throw new Error('webgpu quantized: the q4 kernel declares no float32 scales');
  return `${half ? code.replace(decl, 'var<storage, read> ws: array<u32>;') : code}\n${scaleCode(half)}`;
}
