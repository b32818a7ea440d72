/**
 * RMS norm on the GPU, forward and backward. Forward: one workgroup per row (softmax.ts's row kernel), Σx² as a
 * tree in workgroup memory, r = 1/√(Σx²/C + ε) saved for the backward pass. Backward: dx per row (Σ g·x̂ in one
 * tree), then dweight += Σ_rows dy·x̂ by a thread per column summing its column in row order (no atomics).
 * Oracle: js/rmsnorm.ts.
 */
import type { Backend } from '../backend.ts';
import { f, grid, u } from './context.ts';
import { buf } from './device.ts';
import { gpu, webgpuKernels } from './registry.ts';
import { rowKernel, runRows } from './softmax.ts';

/** Threads (columns) per workgroup of the dweight pass. */
const COL_WG = 64;

function forwardCode(hasW: boolean) {
  const decls = [
    '@group(0) @binding(1) var<storage, read> x: array<f32>;',
    hasW ? '@group(0) @binding(2) var<storage, read> w: array<f32>;' : '',
    `@group(0) @binding(${hasW ? 3 : 2}) var<storage, read_write> o: array<f32>;`,
    `@group(0) @binding(${hasW ? 4 : 3}) var<storage, read_write> rstd: array<f32>;`,
  ].join('\n');
  return (wg: number) =>
    rowKernel(
      wg,
      'eps: f32',
      decls,
      /* wgsl */ `
  var s = 0.0;
  for (var j = t; j < p.cols; j += WG) { s += x[base + j] * x[base + j]; }
  let rs = 1.0 / sqrt(sum_(s, t) / f32(p.cols) + p.eps);
  if (t == 0u) { rstd[row] = rs; }
  for (var j = t; j < p.cols; j += WG) {
    o[base + j] = ${hasW ? '(x[base + j] * rs) * w[j]' : 'x[base + j] * rs'};
  }`,
    );
}

export const rmsNorm: Backend['rmsNorm'] = (x, weight, out, rstd, rows, cols, eps) => {
  const bufs = weight ? [x, weight, out, rstd] : [x, out, rstd];
  runRows(`rmsNorm-${weight !== null}`, forwardCode(weight !== null), rows, cols, bufs, [f(eps)]);
};

function dxCode(hasW: boolean) {
  const decls = [
    '@group(0) @binding(1) var<storage, read> x: array<f32>;',
    hasW ? '@group(0) @binding(2) var<storage, read> w: array<f32>;' : '',
    `@group(0) @binding(${hasW ? 3 : 2}) var<storage, read> rstd: array<f32>;`,
    `@group(0) @binding(${hasW ? 4 : 3}) var<storage, read> dy: array<f32>;`,
    `@group(0) @binding(${hasW ? 5 : 4}) var<storage, read_write> dx: array<f32>;`,
  ].join('\n');
  const g = hasW ? 'dy[base + j] * w[j]' : 'dy[base + j]';
  return (wg: number) =>
    rowKernel(
      wg,
      '',
      decls,
      /* wgsl */ `
  let rs = rstd[row];
  var a = 0.0;
  for (var j = t; j < p.cols; j += WG) { a += ${g} * (x[base + j] * rs); }
  let m = sum_(a, t) / f32(p.cols);
  for (var j = t; j < p.cols; j += WG) {
    dx[base + j] = rs * (${g} - (x[base + j] * rs) * m);
  }`,
    );
}

/** dweight[j] += Σ_r dy[r, j]·x[r, j]·rstd[r], a thread per column, rows in order. */
const DWEIGHT = /* wgsl */ `
struct P { rows: u32, cols: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> rstd: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dw: array<f32>;
@compute @workgroup_size(${COL_WG}) fn main(@builtin(global_invocation_id) gid: vec3u,
    @builtin(num_workgroups) nwg: vec3u) {
  let j = gid.x + gid.y * nwg.x * ${COL_WG}u;
  if (j >= p.cols) { return; }
  var s = dw[j];
  for (var r = 0u; r < p.rows; r++) { s += dy[r * p.cols + j] * (x[r * p.cols + j] * rstd[r]); }
  dw[j] = s;
}`;

export const rmsNormBackward: Backend['rmsNormBackward'] = (x, weight, rstd, dy, dx, dweight, rows, cols) => {
  const bufs = weight ? [x, weight, rstd, dy, dx] : [x, rstd, dy, dx];
  runRows(`rmsNormBackward-${weight !== null}`, dxCode(weight !== null), rows, cols, bufs);
  if (!dweight || rows === 0 || cols === 0) return;
  const ctx = gpu();
  ctx.run(
    ctx.program('rmsNormDweight', DWEIGHT),
    [x, rstd, dy, dweight].map(buf),
    [u(rows), u(cols)],
    grid(cols, COL_WG),
  );
};

webgpuKernels.register('rmsnorm', { rmsNorm, rmsNormBackward });
