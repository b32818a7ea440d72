/**
 * Layer norm on the GPU, forward and backward.
 *
 * Forward: one workgroup per row (softmax.ts's row kernel). The statistics are two-pass, never E[x²] − μ²:
 * μ₁ = Σx/C, then the mean's float32 residue μ₂ = Σ(x − μ₁)/C (so that x − μ = (x − μ₁) − μ₂ is as good as
 * the js twin's float64 difference even when |μ| ≫ σ), then σ² = Σ((x − μ₁) − μ₂)²/C; each sum is a tree in
 * workgroup memory. mean = μ₁ + μ₂ and rstd = 1/√(σ² + ε) are saved for the backward pass.
 *
 * Backward: dx per row (a workgroup per row, Σg and Σg·x̂ in one tree), then dweight and dbias accumulated
 * deterministically without atomics: a thread per column sums its column over a chunk of up to 64 rows in row
 * order; with one chunk it adds straight into dweight/dbias (the js twin's order), else the chunks' partial
 * sums go to a scratch buffer and a second pass adds them, in chunk order, into dweight/dbias.
 * Oracle: js/layernorm.ts.
 */
import type { Backend } from '../backend.ts';
import type { Storage } from '../../tensor/storage.ts';
import { f, MAX_GROUPS, u } from './context.ts';
import { buf } from './device.ts';
import { gpu, webgpuKernels } from './registry.ts';
import { rowKernel, runRows } from './softmax.ts';

/** Rows a column thread sums before its partial sum is written (the chunk of the backward's second pass). */
const CHUNK = 64;
/** Threads (columns) per workgroup of the column passes. */
const COL_WG = 64;

/** The handles that are given. */
function present<T>(list: (T | null)[]): T[] {
  return list.filter((s): s is T => s !== null);
}

/** Storage declarations from @binding(1), in order, for the bindings present. */
function decls(list: [name: string, mode: 'read' | 'read_write', present: boolean][]): string {
  return list
    .filter(([, , present]) => present)
    .map(([name, mode], k) => `@group(0) @binding(${k + 1}) var<storage, ${mode}> ${name}: array<f32>;`)
    .join('\n');
}

function forwardCode(hasW: boolean, hasB: boolean) {
  const declared = decls([
    ['x', 'read', true],
    ['w', 'read', hasW],
    ['b', 'read', hasB],
    ['o', 'read_write', true],
    ['mean', 'read_write', true],
    ['rstd', 'read_write', true],
  ]);
  return (wg: number) =>
    rowKernel(
      wg,
      'eps: f32',
      declared,
      /* wgsl */ `
  let c = f32(p.cols);
  var s = 0.0;
  for (var j = t; j < p.cols; j += WG) { s += x[base + j]; }
  let mu1 = sum_(s, t) / c;
  s = 0.0;
  for (var j = t; j < p.cols; j += WG) { s += x[base + j] - mu1; }
  let mu2 = sum_(s, t) / c;
  s = 0.0;
  for (var j = t; j < p.cols; j += WG) {
    let d = (x[base + j] - mu1) - mu2;
    s += d * d;
  }
  let rs = 1.0 / sqrt(sum_(s, t) / c + p.eps);
  if (t == 0u) {
    mean[row] = mu1 + mu2;
    rstd[row] = rs;
  }
  for (var j = t; j < p.cols; j += WG) {
    var y = ((x[base + j] - mu1) - mu2) * rs;
    ${hasW ? 'y = y * w[j];' : ''}
    ${hasB ? 'y = y + b[j];' : ''}
    o[base + j] = y;
  }`,
    );
}

export const layerNorm: Backend['layerNorm'] = (x, weight, bias, out, mean, rstd, rows, cols, eps) => {
  const bufs = present([x, weight, bias, out, mean, rstd]);
  const key = `layerNorm-${weight !== null}-${bias !== null}`;
  runRows(key, forwardCode(weight !== null, bias !== null), rows, cols, bufs, [f(eps)]);
};

function dxCode(hasW: boolean) {
  const declared = decls([
    ['x', 'read', true],
    ['w', 'read', hasW],
    ['mean', 'read', true],
    ['rstd', 'read', true],
    ['dy', 'read', true],
    ['dx', 'read_write', true],
  ]);
  const g = hasW ? 'dy[base + j] * w[j]' : 'dy[base + j]';
  return (wg: number) =>
    rowKernel(
      wg,
      '',
      declared,
      /* wgsl */ `
  let mu = mean[row];
  let rs = rstd[row];
  var a = vec2f(0.0);
  for (var j = t; j < p.cols; j += WG) {
    let xh = (x[base + j] - mu) * rs;
    let g = ${g};
    a += vec2f(g, g * xh);
  }
  let s = sum2_(a, t) / f32(p.cols);
  for (var j = t; j < p.cols; j += WG) {
    let xh = (x[base + j] - mu) * rs;
    let g = ${g};
    dx[base + j] = rs * (g - s.x - xh * s.y);
  }`,
    );
}

/**
 * WGSL of the column pass: thread (column j, chunk k) sums rows [k·chunk, min((k+1)·chunk, rows)) of column j
 * in row order, into dweight/dbias themselves (`direct`, a single chunk) or into partial sums pw/pb.
 */
function columnCode(hasDW: boolean, hasDB: boolean, direct: boolean): string {
  const declared = decls([
    ['x', 'read', hasDW],
    ['mean', 'read', hasDW],
    ['rstd', 'read', hasDW],
    ['dy', 'read', true],
    ['dw', 'read_write', hasDW],
    ['db', 'read_write', hasDB],
  ]);
  const into = (name: string, acc: string) => (direct ? `${name}[j] = ${acc};` : `${name}[k * p.cols + j] = ${acc};`);
  return /* wgsl */ `
struct P { rows: u32, cols: u32, chunk: u32 }
@group(0) @binding(0) var<uniform> p: P;
${declared}
@compute @workgroup_size(${COL_WG}) fn main(@builtin(global_invocation_id) gid: vec3u) {
  let j = gid.x;
  let k = gid.y;
  if (j >= p.cols) { return; }
  var sw = ${direct && hasDW ? 'dw[j]' : '0.0'};
  var sb = ${direct && hasDB ? 'db[j]' : '0.0'};
  let end = min((k + 1u) * p.chunk, p.rows);
  for (var r = k * p.chunk; r < end; r++) {
    let g = dy[r * p.cols + j];
    ${hasDW ? 'sw += g * ((x[r * p.cols + j] - mean[r]) * rstd[r]);' : ''}
    sb += g;
  }
  ${hasDW ? into('dw', 'sw') : ''}
  ${hasDB ? into('db', 'sb') : ''}
}`;
}

/** WGSL of the second pass: out[j] += Σ_k part[k·cols + j], in chunk order. */
const ADD_PARTIALS = /* wgsl */ `
struct P { cols: u32, chunks: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(${COL_WG}) fn main(@builtin(global_invocation_id) gid: vec3u) {
  let j = gid.x;
  if (j >= p.cols) { return; }
  var s = o[j];
  for (var k = 0u; k < p.chunks; k++) { s += part[k * p.cols + j]; }
  o[j] = s;
}`;

/** dweight += Σ_rows dy·x̂ and dbias += Σ_rows dy, per column, without atomics. */
function accumulateColumns(
  x: Storage,
  mean: Storage,
  rstd: Storage,
  dy: Storage,
  dweight: Storage | null,
  dbias: Storage | null,
  rows: number,
  cols: number,
) {
  if (rows === 0 || cols === 0 || (dweight === null && dbias === null)) return;
  const ctx = gpu();
  const chunk = Math.max(CHUNK, Math.ceil(rows / MAX_GROUPS));
  const chunks = Math.ceil(rows / chunk);
  const hasDW = dweight !== null;
  const hasDB = dbias !== null;
  const direct = chunks === 1;
  const key = `layerNormColumns-${hasDW}-${hasDB}-${direct}`;
  const program = ctx.program(key, columnCode(hasDW, hasDB, direct));
  const groups: [number, number] = [Math.ceil(cols / COL_WG), chunks];
  const params = [u(rows), u(cols), u(chunk)];
  const targets = present([dweight, dbias]).map(buf);
  // A binding the kernel does not use must not be bound (dbias alone needs only dy).
  const inputs = (hasDW ? [x, mean, rstd, dy] : [dy]).map(buf);
  if (direct) {
    ctx.run(program, [...inputs, ...targets], params, groups);
    return;
  }
  const parts = targets.map(() => ctx.alloc(4 * chunks * cols, false));
  ctx.run(program, [...inputs, ...parts], params, groups);
  const add = ctx.program('layerNormAddPartials', ADD_PARTIALS);
  targets.forEach((target, k) => {
    ctx.run(add, [parts[k], target], [u(cols), u(chunks)], [Math.ceil(cols / COL_WG)]);
    ctx.release(parts[k]);
  });
}

export const layerNormBackward: Backend['layerNormBackward'] = (
  x,
  weight,
  mean,
  rstd,
  dy,
  dx,
  dweight,
  dbias,
  rows,
  cols,
) => {
  const bufs = present([x, weight, mean, rstd, dy, dx]);
  runRows(`layerNormBackward-${weight !== null}`, dxCode(weight !== null), rows, cols, bufs);
  accumulateColumns(x, mean, rstd, dy, dweight, dbias, rows, cols);
};

webgpuKernels.register('layernorm', { layerNorm, layerNormBackward });
