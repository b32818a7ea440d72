/**
 * Rotary position embedding on the GPU: a thread per pair (i, i + D/2) of a head's features, x (outer, T,
 * heads, D) turned by row t of the (T, D/2) cos and sin tables (transformers' rotate_half layout). In place
 * (out = x) binds x once, read-write (WebGPU refuses a buffer bound both ways in one dispatch).
 * Oracle: js/rotary.ts.
 */
import type { Backend } from '../backend.ts';
import { f, u } from './context.ts';
import { buf } from './device.ts';
import { webgpuKernels } from './registry.ts';
import { perElement, runPerElement } from './wgsl.ts';

function code(inPlace: boolean): string {
  const decls = inPlace
    ? `@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> c: array<f32>;
@group(0) @binding(3) var<storage, read> sn: array<f32>;`
    : `@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> c: array<f32>;
@group(0) @binding(3) var<storage, read> sn: array<f32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;`;
  const src = inPlace ? 'o' : 'x';
  return perElement(
    'positions: u32, heads: u32, half: u32, sign: f32',
    decls,
    /* wgsl */ `
  let k = i % p.half;
  let head = i / p.half; // (outer·T + t)·heads + h
  let t = (head / p.heads) % p.positions;
  let base = head * 2u * p.half;
  let cs = c[t * p.half + k];
  let s = p.sign * sn[t * p.half + k];
  let a = ${src}[base + k];
  let b = ${src}[base + p.half + k];
  o[base + k] = a * cs - b * s;
  o[base + p.half + k] = b * cs + a * s;`,
  );
}

export const rotary: Backend['rotary'] = (x, cos, sin, out, outer, positions, heads, dim, inverse) => {
  const half = dim >> 1;
  const n = outer * positions * heads * half;
  const inPlace = x === out;
  const bufs = inPlace ? [buf(out), buf(cos), buf(sin)] : [buf(x), buf(cos), buf(sin), buf(out)];
  const params = [u(positions), u(heads), u(half), f(inverse ? -1 : 1)];
  runPerElement(`rotary-${inPlace}`, code(inPlace), n, bufs, params);
};

webgpuKernels.register('rotary', { rotary });
