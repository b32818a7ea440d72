import { backwardPass, record } from '../autograd/engine.ts';
import { normAxis, shapeToString, sizeOf } from '../tensor/shape.ts';
import type { Storage } from '../tensor/storage.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { empty, K, st, zerosF, zerosOf } from './util.ts';

/** Reorder dims (a copy: storage stays contiguous). out dim i = x dim perm[i]. */
export function permute(x: Tensor, perm: readonly number[]): Tensor {
  if (perm.length !== x.ndim) {
    throw new Error(
      `permute: perm [${perm.join(', ')}] has ${perm.length} dims, input has ` +
        `${x.ndim} (shape ${shapeToString(x.shape)})`,
    );
  }
  const p = perm.map((d) => normAxis(d, x.ndim, 'permute'));
  if (new Set(p).size !== p.length) throw new Error(`permute: perm [${perm.join(', ')}] repeats a dim`);
  const identity = p.every((d, i) => d === i);
  const shape = p.map((d) => x.shape[d]);
  if (identity) return x.reshape(shape);
  noPacked(x, 'permute');
  if (keepsOrder(x.shape, p)) return x.reshape(shape);
  const k = K(x);
  // Every element is written: float storage need not be zeroed first.
  const out = x.dtype === 'float32' ? empty(shape, k) : zerosOf(shape, x.dtype, k);
  k.permute(x.storage, x.shape, p, out.storage);
  if (x.dtype !== 'float32') return out;
  const inverse = new Array<number>(p.length);
  p.forEach((d, i) => (inverse[d] = i));
  return record(out, 'permute', [x], (g) => {
    const dx = empty(x.shape);
    K().permute(st(g), g.shape, inverse, st(dx));
    return [dx];
  });
}

/**
 * Whether perm moves only dims of size 1 (the others stay in their order): then the elements keep their
 * order in memory, and the permuted tensor is a view (a reshape), as a decoding step's head split
 * (N, 1, h, dK) -> (N, h, 1, dK) is.
 */
function keepsOrder(shape: readonly number[], perm: readonly number[]): boolean {
  let last = -1;
  for (const d of perm) {
    if (shape[d] === 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

/** Swap two dims. */
export function transpose(x: Tensor, dim0: number, dim1: number): Tensor {
  const a = normAxis(dim0, x.ndim, 'transpose');
  const b = normAxis(dim1, x.ndim, 'transpose');
  const perm = x.shape.map((_, i) => i);
  perm[a] = b;
  perm[b] = a;
  return permute(x, perm);
}

/** A view with a dim of size 1 inserted at `dim` (negative counts from the end), as torch.unsqueeze. */
export function unsqueeze(x: Tensor, dim: number): Tensor {
  const d = normAxis(dim, x.ndim + 1, 'unsqueeze');
  const shape = x.shape.slice();
  shape.splice(d, 0, 1);
  return x.reshape(shape);
}

/** A view without `dim` if its size is 1 (else `x` itself), as torch.squeeze(x, dim). */
export function squeeze(x: Tensor, dim: number): Tensor {
  const d = normAxis(dim, x.ndim, 'squeeze');
  if (x.shape[d] !== 1) return x;
  const shape = x.shape.slice();
  shape.splice(d, 1);
  return x.reshape(shape);
}

/**
 * Copy between x, of `shape` seen as (outer, size, inner) around dim `d`, and a slab (outer,
 * length, inner) of it starting at `start` along d: out of x when `fromX`, else into it.
 */
function copySlab(
  x: Storage,
  shape: readonly number[],
  d: number,
  slab: Storage,
  start: number,
  length: number,
  fromX: boolean,
): void {
  const outer = sizeOf(shape.slice(0, d));
  const size = shape[d];
  const inner = sizeOf(shape.slice(d + 1));
  const w = length * inner;
  if (fromX) K().copyRows(x, start * inner, size * inner, slab, 0, w, outer, w);
  else K().copyRows(slab, 0, w, x, start * inner, size * inner, outer, w);
}

/** Layout ops move whole elements: a packed 4-bit tensor has none to move. */
function noPacked(x: Tensor, op: string): void {
  if (x.dtype === 'q4')
    throw new Error(`${op}: q4 tensors are packed two to a byte and cannot be ${op}d; unpack them first`);
}

function checkRange(op: string, x: Tensor, dim: number, start: number, length: number): void {
  const size = x.shape[normAxis(dim, x.ndim, op)];
  if (!Number.isInteger(start) || !Number.isInteger(length) || start < 0 || length < 0 || start + length > size) {
    throw new Error(`${op}: range [${start}, ${start + length}) is out of bounds for dim ${dim} of size ${size}`);
  }
}

/** The elements [start, start + length) of x along dim d, as a new tensor (no gradient). */
function slab(x: Tensor, d: number, start: number, length: number): Tensor {
  const shape = x.shape.slice();
  shape[d] = length;
  noPacked(x, 'slice');
  const out = x.dtype === 'float32' ? empty(shape, K(x)) : zerosOf(shape, x.dtype, K(x));
  copySlab(x.storage, x.shape, d, out.storage, start, length, true);
  return out;
}

/** Elements [start, start+length) along `dim` (a copy), like torch.narrow. */
export function narrow(x: Tensor, dim: number, start: number, length: number): Tensor {
  const d = normAxis(dim, x.ndim, 'narrow');
  checkRange('narrow', x, dim, start, length);
  const out = slab(x, d, start, length);
  if (x.dtype !== 'float32') return out;
  return record(out, 'narrow', [x], (g) => {
    const dx = zerosF(x.shape);
    copySlab(dx.storage, x.shape, d, g.storage, start, length, false);
    return [dx];
  });
}

/**
 * Split into pieces of the given sizes along `dim` (copies). The pieces' gradients are written
 * into one gradient for x, each into its slice (a cat), where separate narrows would each give a
 * zero-padded copy of x's size for the engine to sum: for a fused QKV projection, one buffer
 * instead of three and two sums. The pieces consume a private view of x whose only gradient is
 * that buffer; the piece whose rule runs first in a backward pass creates it, zero-filled (a piece
 * no gradient reaches keeps zeros), and hands it to the engine, the others write their slice
 * into it before the view's own rule passes it on to x.
 */
export function split(x: Tensor, sizes: number[], dim = 0): Tensor[] {
  const d = normAxis(dim, x.ndim, 'split');
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total !== x.shape[d]) {
    throw new Error(`split: sizes [${sizes.join(', ')}] sum to ${total}, but dim ${dim} has size ${x.shape[d]}`);
  }
  const starts = sizes.map((_, i) => sizes.slice(0, i).reduce((a, b) => a + b, 0));
  const pieces = sizes.map((s, i) => slab(x, d, starts[i]!, s));
  if (x.dtype !== 'float32') return pieces;
  const hub = record(x.detach(), 'split', [x], (g) => [g]);
  if (!hub.requiresGrad) return pieces;
  let pass = -1;
  let buffer: Tensor | null = null;
  return pieces.map((piece, i) =>
    record(piece, 'split', [hub], (g) => {
      const first = buffer === null || pass !== backwardPass();
      if (first) {
        pass = backwardPass();
        buffer = zerosF(x.shape);
      }
      copySlab(buffer!.storage, x.shape, d, g.storage, starts[i]!, sizes[i]!, false);
      return [first ? buffer : null];
    }),
  );
}

/** Split into `chunks` equal pieces along `dim`. */
export function chunk(x: Tensor, chunks: number, dim = 0): Tensor[] {
  const d = normAxis(dim, x.ndim, 'chunk');
  if (x.shape[d] % chunks !== 0) {
    throw new Error(`chunk: dim ${dim} of size ${x.shape[d]} is not divisible into ${chunks} chunks`);
  }
  return split(x, new Array<number>(chunks).fill(x.shape[d] / chunks), d);
}

/** Concatenate along `dim`; all other dims must match. */
export function cat(xs: Tensor[], dim = 0): Tensor {
  if (xs.length === 0) throw new Error('cat: expected a non-empty list of tensors');
  const first = xs[0];
  const d = normAxis(dim, first.ndim, 'cat');
  for (const [i, t] of xs.entries()) {
    if (t.ndim !== first.ndim || t.dtype !== first.dtype || t.shape.some((s, j) => j !== d && s !== first.shape[j])) {
      throw new Error(
        `cat: tensor ${i} has shape ${shapeToString(t.shape)} (${t.dtype}), ` +
          `incompatible with ${shapeToString(first.shape)} (${first.dtype}) ` +
          `along dim ${dim}`,
      );
    }
  }
  const outer = sizeOf(first.shape.slice(0, d));
  const inner = sizeOf(first.shape.slice(d + 1));
  const total = xs.reduce((n, t) => n + t.shape[d], 0);
  const shape = first.shape.slice();
  shape[d] = total;
  noPacked(first, 'concatenate');
  const k = K(...xs);
  const out = first.dtype === 'float32' ? empty(shape, k) : zerosOf(shape, first.dtype, k);
  let off = 0;
  for (const t of xs) {
    const w = t.shape[d] * inner;
    k.copyRows(t.storage, 0, w, out.storage, off, total * inner, outer, w);
    off += w;
  }
  if (first.dtype !== 'float32') return out;
  return record(out, 'cat', xs, (g) => {
    const gd = st(g);
    let o2 = 0;
    return xs.map((t) => {
      const w = t.shape[d] * inner;
      const dx = empty(t.shape);
      const dd = st(dx);
      K().copyRows(gd, o2, total * inner, dd, 0, w, outer, w);
      o2 += w;
      return dx;
    });
  });
}

/** Stack along a new dim. */
export function stack(xs: Tensor[], dim = 0): Tensor {
  if (xs.length === 0) throw new Error('stack: expected a non-empty list of tensors');
  const d = normAxis(dim, xs[0].ndim + 1, 'stack');
  return cat(
    xs.map((t) => unsqueeze(t, d)),
    d,
  );
}
