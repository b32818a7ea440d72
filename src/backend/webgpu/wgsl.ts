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
