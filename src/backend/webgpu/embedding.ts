/**
 * Embedding on the GPU: the gather (a thread per output element), and its backward, dweight[ids[i]] +=
 * dy[i] without float atomics and in the js twin's order, so the result is bit-identical to it (each float32
 * add is correctly rounded on both):
 * 1. a thread per position i finds next[i], the next position with the same id (scanning the ids forward in
 *    tiles of 256 held in workgroup memory, until every thread of the workgroup has found its own), and marks
 *    that position as having a predecessor; positions holding paddingIdx take no part;
 * 2. a thread per (position i, column j) where i is the first occurrence of its id walks the chain
 *    i → next[i] → ..., adding dy[k, j] in position order onto dweight[id, j].
 * Work: pass 1 scans, per position, up to its next occurrence (the whole tail for a last occurrence); pass 2
 * touches each dy element once. No sort, and no (vocabulary × positions) scan.
 * Oracle: js/embedding.ts.
 */
import type { Backend } from '../backend.ts';
import { grid, i, u } from './context.ts';
import { buf } from './device.ts';
import { gpu, webgpuKernels } from './registry.ts';
import { perElement, runPerElement } from './wgsl.ts';

export const embedding: Backend['embedding'] = (weight, ids, out, dim) => {
  const code = perElement(
    'dim: u32',
    /* wgsl */ `
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> ids: array<i32>;
@group(0) @binding(3) var<storage, read_write> o: array<f32>;`,
    'o[i] = w[u32(ids[i / p.dim]) * p.dim + i % p.dim];',
  );
  runPerElement('embedding', code, (buf(ids).bytes / 4) * dim, [buf(weight), buf(ids), buf(out)], [u(dim)]);
};

const TILE = 256;
/** No next occurrence. */
const NONE = 0xffffffff;

const NEXT = /* wgsl */ `
struct P { n: u32, pad: i32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> ids: array<i32>;
@group(0) @binding(2) var<storage, read_write> next: array<u32>;
@group(0) @binding(3) var<storage, read_write> hasPrev: array<u32>;
const WG = ${TILE}u;
const NONE = ${NONE}u;
var<workgroup> tile: array<i32, ${TILE}>;
var<workgroup> left: atomic<u32>;
var<workgroup> leftNow: u32;
@compute @workgroup_size(${TILE}) fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u,
    @builtin(num_workgroups) nwg: vec3u) {
  let first = (wid.x + wid.y * nwg.x) * WG;
  let i = first + lid.x;
  var id = 0;
  var searching = false;
  if (i < p.n) {
    id = ids[i];
    searching = id != p.pad;
  }
  if (lid.x == 0u) { atomicStore(&left, 0u); }
  workgroupBarrier();
  if (searching) { atomicAdd(&left, 1u); }
  var found = NONE;
  var start = first;
  loop {
    workgroupBarrier();
    if (lid.x == 0u) { leftNow = atomicLoad(&left); }
    if (workgroupUniformLoad(&leftNow) == 0u || start >= p.n) { break; }
    if (start + lid.x < p.n) { tile[lid.x] = ids[start + lid.x]; }
    workgroupBarrier();
    if (searching) {
      let end = min(WG, p.n - start);
      for (var c = 0u; c < end; c++) {
        if (start + c > i && tile[c] == id) {
          found = start + c;
          searching = false;
          atomicSub(&left, 1u);
          break;
        }
      }
    }
    start += WG;
  }
  if (i < p.n) {
    next[i] = found;
    if (found != NONE) { hasPrev[found] = 1u; }
  }
}`;

export const embeddingBackward: Backend['embeddingBackward'] = (dy, ids, dweight, dim, paddingIdx) => {
  const n = buf(ids).bytes / 4;
  if (n === 0 || dim === 0) return;
  const ctx = gpu();
  const next = ctx.alloc(4 * n, false);
  const hasPrev = ctx.alloc(4 * n, true);
  ctx.run(ctx.program('embeddingNext', NEXT), [buf(ids), next, hasPrev], [u(n), i(paddingIdx)], grid(n, TILE));
  const code = perElement(
    'dim: u32, pad: i32',
    /* wgsl */ `
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read> ids: array<i32>;
@group(0) @binding(3) var<storage, read> next: array<u32>;
@group(0) @binding(4) var<storage, read> hasPrev: array<u32>;
@group(0) @binding(5) var<storage, read_write> dw: array<f32>;`,
    /* wgsl */ `
  let pos = i / p.dim;
  let j = i % p.dim;
  let id = ids[pos];
  if (id == p.pad || hasPrev[pos] != 0u) { return; }
  let at = u32(id) * p.dim + j;
  var s = dw[at];
  var k = pos;
  loop {
    s += dy[k * p.dim + j];
    k = next[k];
    if (k == ${NONE}u) { break; }
  }
  dw[at] = s;`,
  );
  runPerElement(
    'embeddingBackward',
    code,
    n * dim,
    [buf(dy), buf(ids), next, hasPrev, buf(dweight)],
    [u(dim), i(paddingIdx)],
  );
  ctx.release(next);
  ctx.release(hasPrev);
};

webgpuKernels.register('embedding', { embedding, embeddingBackward });
