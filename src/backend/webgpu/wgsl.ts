/**
 * What the webgpu kernel families share: a thread-per-element kernel template, parameter arrays as vec4
 * words (a uniform's arrays need a 16-byte stride), and WGSL helpers (−∞, erf).
 */
import { type GpuBuf, grid, type Param, u } from './context.ts';
import { gpu } from './registry.ts';

/** Most dims an N-d kernel (broadcast, permute, reduce) takes. */
export const MAX_DIMS = 8;

/** Threads per workgroup of the elementwise kernels. */
export const WG = 64;

/**
 * WGSL of a kernel with one thread per element i < p.n: `fields` are the parameter struct's members after
 * `n: u32` (each a 32-bit scalar, or after three u32 pads, vec4 arrays), `decls` the storage bindings from
 * @binding(1), `body` the code for element `i`.
 */
export function perElement(fields: string, decls: string, body: string, helpers = ''): string {
  return /* wgsl */ `
struct P { n: u32, ${fields} }
@group(0) @binding(0) var<uniform> p: P;
${decls}
const WG = ${WG}u;
${INF}
${helpers}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  ${body}
}`;
}

/** Run a {@link perElement} kernel over n elements. */
export function runPerElement(key: string, code: string, n: number, bufs: GpuBuf[], params: Param[] = []): void {
  if (n === 0) return;
  const ctx = gpu();
  ctx.run(ctx.program(key, code), bufs, [u(n), ...params], grid(n, WG));
}

/** `values` (at most MAX_DIMS) as u32 params padded to MAX_DIMS: two vec4 words in the struct. */
export function dimsParam(values: readonly number[], what: string): Param[] {
  if (values.length > MAX_DIMS)
    throw new Error(`webgpu: ${what} has ${values.length} dims, at most ${MAX_DIMS} are supported`);
  const out: Param[] = [];
  for (let k = 0; k < MAX_DIMS; k++) out.push(u(values[k] ?? 0));
  return out;
}

/** WGSL to read element k of a `array<vec4u, 2>` parameter. */
export const AT = 'fn at(v: array<vec4u, 2>, k: u32) -> u32 { return v[k / 4u][k % 4u]; }';

/**
 * −∞ and +∞ as WGSL expressions (WGSL has no infinite literals, and refuses them in constant expressions, so
 * they come from {@link INF}'s functions, which every kernel of {@link perElement} has).
 */
export const NEG_INF = 'neg_inf()';
export const POS_INF = 'pos_inf()';
export const INF = /* wgsl */ `
fn neg_inf() -> f32 { var bits = 0xff800000u; return bitcast<f32>(bits); }
fn pos_inf() -> f32 { var bits = 0x7f800000u; return bitcast<f32>(bits); }
fn nan_() -> f32 { var bits = 0x7fc00000u; return bitcast<f32>(bits); }`;

/**
 * x / y correctly rounded (to nearest, ties to even), as js's float32 division (a double quotient rounded
 * to float32 is the correctly rounded float32 quotient). WGSL's `/` need only be within 2.5 ULP, and on
 * NVIDIA's Vulkan driver it is not exact (a lent H100: −0.96679676 where the quotient rounds to
 * −0.96679670), so the division of binary and binaryScalar is done on the bits: specials first (NaN, ∞, 0),
 * subnormal operands normalized, 26 quotient bits by long division and a sticky bit, then one rounding,
 * to a subnormal or to ∞ where the exponent leaves float32's range.
 */
export const FDIV = /* wgsl */ `
fn fdiv(x: f32, y: f32) -> f32 {
  let a = bitcast<u32>(x);
  let b = bitcast<u32>(y);
  let sign = (a ^ b) & 0x80000000u;
  let ax = a & 0x7fffffffu;
  let bx = b & 0x7fffffffu;
  if (ax > 0x7f800000u || bx > 0x7f800000u || (ax == bx && (ax == 0u || ax == 0x7f800000u))) { return nan_(); }
  if (ax == 0x7f800000u || bx == 0u) { return bitcast<f32>(sign | 0x7f800000u); }
  if (ax == 0u || bx == 0x7f800000u) { return bitcast<f32>(sign); }
  var ma = ax & 0x7fffffu;
  var ea = i32(ax >> 23u);
  if (ea == 0) { let s = i32(countLeadingZeros(ma)) - 8; ma = ma << u32(s); ea = 1 - s; } else { ma |= 0x800000u; }
  var mb = bx & 0x7fffffu;
  var eb = i32(bx >> 23u);
  if (eb == 0) { let s = i32(countLeadingZeros(mb)) - 8; mb = mb << u32(s); eb = 1 - s; } else { mb |= 0x800000u; }
  var e = ea - eb + 127;
  if (ma < mb) { ma = ma << 1u; e -= 1; }
  var r = ma;
  var q = 0u;
  for (var i = 0; i < 26; i++) {
    q = q << 1u;
    if (r >= mb) { r -= mb; q |= 1u; }
    r = r << 1u;
  }
  let sticky = r != 0u;
  if (e >= 255) { return bitcast<f32>(sign | 0x7f800000u); }
  var sh = 2u;
  if (e <= 0) { sh = u32(min(3 - e, 27)); }
  let kept = q >> sh;
  let rest = q & ((1u << sh) - 1u);
  let half = 1u << (sh - 1u);
  let up = rest > half || (rest == half && (sticky || (kept & 1u) == 1u));
  let bits = (u32(max(e, 1) - 1) << 23u) + kept + select(0u, 1u, up);
  return bitcast<f32>(sign | min(bits, 0x7f800000u));
}`;

/**
 * erf with relative error below 1.2e-7 (Numerical Recipes' Chebyshev fit of erfc, as the js twin), in
 * float32.
 */
export const ERF = /* wgsl */ `
fn erf_(x: f32) -> f32 {
  let z = abs(x);
  let t = 1.0 / (1.0 + 0.5 * z);
  let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
    t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return select(r - 1.0, 1.0 - r, x >= 0.0);
}`;
