/**
 * Layout kernels on the GPU: sums over axes (a workgroup an output, a tree in workgroup memory), permutes,
 * strided row copies and row gathers of any 32-bit dtype (bool and uint8 are words on this device; packed
 * int8 and q4 are refused, naming the kernel), argmax per row and a mask's additive bias.
 * Oracle: js/layout.ts.
 */
import type { Backend } from '../backend.ts';
import type { Storage } from '../../tensor/storage.ts';
import { grid, type GpuBuf, i, u } from './context.ts';
import { buf } from './device.ts';
import { gpu, webgpuKernels } from './registry.ts';
import { AT, dimsParam, INF, NEG_INF, perElement, runPerElement } from './wgsl.ts';

/** The handle of word-sized storage; packed int8/q4 storage is refused, naming the kernel. */
function words(s: Storage, kernel: string): GpuBuf {
  const h = buf(s);
  if (h.packed) throw new Error(`webgpu: ${kernel} of packed int8/q4 storage is not supported (quantized weights)`);
  return h;
}

const REDUCE = /* wgsl */ `
struct P { n: u32, nd: u32, r: u32, pad: u32, shape: array<vec4u, 2>, oshape: array<vec4u, 2> }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> o: array<f32>;
var<workgroup> part: array<f32, 64>;
${AT}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let out = wid.x + wid.y * nwg.x;
  var base = 0u;
  var rest = out;
  var stride = 1u;
  for (var d = i32(p.nd) - 1; d >= 0; d--) {
    let k = u32(d);
    let s = at(p.shape, k);
    if (at(p.oshape, k) == s) {
      base += (rest % s) * stride;
      rest = rest / s;
    }
    stride *= s;
  }
  var acc = 0.0;
  if (out < p.n) {
    for (var r = lid.x; r < p.r; r += 64u) {
      var left = r;
      var off = base;
      var st = 1u;
      for (var d = i32(p.nd) - 1; d >= 0; d--) {
        let k = u32(d);
        let s = at(p.shape, k);
        if (at(p.oshape, k) != s) {
          off += (left % s) * st;
          left = left / s;
        }
        st *= s;
      }
      acc += x[off];
    }
  }
  part[lid.x] = acc;
  workgroupBarrier();
  for (var w = 32u; w > 0u; w = w >> 1u) {
    if (lid.x < w) { part[lid.x] += part[lid.x + w]; }
    workgroupBarrier();
  }
  if (lid.x == 0u && out < p.n) { o[out] = part[0]; }
}`;

export const reduceSum: Backend['reduceSum'] = (x, shape, out, outShape) => {
  const nOut = outShape.reduce((a, b) => a * b, 1);
  const n = shape.reduce((a, b) => a * b, 1);
  if (nOut === 0) return;
  const ctx = gpu();
  const [gx, gy] = grid(nOut, 1);
  ctx.run(
    ctx.program('reduceSum', REDUCE),
    [buf(x), buf(out)],
    [
      u(nOut),
      u(shape.length),
      u(n === 0 ? 0 : n / nOut),
      u(0),
      ...dimsParam(shape, 'reduceSum'),
      ...dimsParam(outShape, 'reduceSum'),
    ],
    [gx, gy],
  );
};

const COPY_DECLS = /* wgsl */ `
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;`;

export const permute: Backend['permute'] = (x, shape, perm, out) => {
  const n = shape.reduce((a, b) => a * b, 1);
  const xst: number[] = new Array(shape.length);
  let s = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    xst[d] = s;
    s *= shape[d];
  }
  const code = perElement(
    'nd: u32, pad0: u32, pad1: u32, oshape: array<vec4u, 2>, st: array<vec4u, 2>',
    COPY_DECLS,
    /* wgsl */ `
  var rest = i;
  var off = 0u;
  for (var d = i32(p.nd) - 1; d >= 0; d--) {
    let k = u32(d);
    let size = at(p.oshape, k);
    off += (rest % size) * at(p.st, k);
    rest = rest / size;
  }
  dst[i] = src[off];`,
    AT,
  );
  runPerElement(
    'permute',
    code,
    n,
    [words(x, 'permute'), words(out, 'permute')],
    [
      u(shape.length),
      u(0),
      u(0),
      ...dimsParam(
        perm.map((q) => shape[q]),
        'permute',
      ),
      ...dimsParam(
        perm.map((q) => xst[q]),
        'permute',
      ),
    ],
  );
};

export const copyRows: Backend['copyRows'] = (src, srcOffset, srcStride, dst, dstOffset, dstStride, rows, width) => {
  const code = perElement(
    'width: u32, so: u32, ss: u32, dof: u32, ds: u32',
    COPY_DECLS,
    /* wgsl */ `
  let r = i / p.width;
  let j = i % p.width;
  dst[p.dof + r * p.ds + j] = src[p.so + r * p.ss + j];`,
  );
  runPerElement(
    'copyRows',
    code,
    rows * width,
    [words(src, 'copyRows'), words(dst, 'copyRows')],
    [u(width), u(srcOffset), u(srcStride), u(dstOffset), u(dstStride)],
  );
};

export const gatherRows: Backend['gatherRows'] = (src, rows, dst, width) => {
  const n = rows.length * width;
  if (n === 0) return;
  const ctx = gpu();
  const idx = ctx.alloc(4 * rows.length, false);
  ctx.write(idx, rows, 0, true);
  const code = perElement(
    'width: u32',
    /* wgsl */ `
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> rows: array<i32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;`,
    'dst[i] = src[u32(rows[i / p.width]) * p.width + i % p.width];',
  );
  runPerElement('gatherRows', code, n, [words(src, 'gatherRows'), idx, words(dst, 'gatherRows')], [u(width)]);
  ctx.release(idx);
};

const ARGMAX = /* wgsl */ `
struct P { rows: u32, cols: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> o: array<i32>;
var<workgroup> bv: array<f32, 64>;
var<workgroup> bi: array<u32, 64>;
${INF}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let row = wid.x + wid.y * nwg.x;
  var best = ${NEG_INF};
  var at = 0xffffffffu;
  if (row < p.rows) {
    for (var j = lid.x; j < p.cols; j += 64u) {
      let v = x[row * p.cols + j];
      if (at == 0xffffffffu || v > best) { best = v; at = j; }
    }
  }
  bv[lid.x] = best;
  bi[lid.x] = at;
  workgroupBarrier();
  for (var w = 32u; w > 0u; w = w >> 1u) {
    if (lid.x < w) {
      let v = bv[lid.x + w];
      let k = bi[lid.x + w];
      if (k != 0xffffffffu && (bi[lid.x] == 0xffffffffu || v > bv[lid.x] || (v == bv[lid.x] && k < bi[lid.x]))) {
        bv[lid.x] = v;
        bi[lid.x] = k;
      }
    }
    workgroupBarrier();
  }
  if (lid.x == 0u && row < p.rows) { o[row] = i32(bi[0]); }
}`;

export const argmax: Backend['argmax'] = (x, out, rows, cols) => {
  if (rows === 0) return;
  const ctx = gpu();
  ctx.run(ctx.program('argmax', ARGMAX), [buf(x), buf(out)], [u(rows), u(cols)], grid(rows, 1));
};

export const maskToBias: Backend['maskToBias'] = (mask, out, n, blockWhen) => {
  const code = perElement(
    'block: u32',
    /* wgsl */ `
@group(0) @binding(1) var<storage, read> m: array<u32>;
@group(0) @binding(2) var<storage, read_write> o: array<f32>;`,
    `o[i] = select(0.0, ${NEG_INF}, select(0u, 1u, m[i] != 0u) == p.block);`,
  );
  runPerElement('maskToBias', code, n, [words(mask, 'maskToBias'), buf(out)], [u(blockWhen)]);
};

export const equalScalar: Backend['equalScalar'] = (x, value, out, n) => {
  const code = perElement(
    'value: i32',
    /* wgsl */ `
@group(0) @binding(1) var<storage, read> x: array<i32>;
@group(0) @binding(2) var<storage, read_write> o: array<u32>;`,
    'o[i] = select(0u, 1u, x[i] == p.value);',
  );
  runPerElement('equalScalar', code, n, [buf(x), words(out, 'equalScalar')], [i(value)]);
};

webgpuKernels.register('layout', { reduceSum, permute, copyRows, gatherRows, argmax, maskToBias, equalScalar });
