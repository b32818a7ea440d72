import { record } from '../autograd/engine.ts';
import { normAxis, shapeToString, sizeOf } from '../tensor/shape.ts';
import { allocData } from '../tensor/storage.ts';
import { Tensor } from '../tensor/tensor.ts';
import { empty, K } from './util.ts';

/** Reorder dims (a copy: storage stays contiguous). out dim i = x dim perm[i]. */
export function permute(x: Tensor, perm: readonly number[]): Tensor {
  if (perm.length !== x.ndim) {
    throw new Error(`permute: perm [${perm.join(', ')}] has ${perm.length} dims, input has ${x.ndim} (shape ${shapeToString(x.shape)})`);
  }
  const p = perm.map((d) => normAxis(d, x.ndim, 'permute'));
  if (new Set(p).size !== p.length) throw new Error(`permute: perm [${perm.join(', ')}] repeats a dim`);
  const identity = p.every((d, i) => d === i);
  const shape = p.map((d) => x.shape[d]);
  if (identity) return x.reshape(shape);
  let out: Tensor;
  if (x.dtype === 'float32') {
    out = empty(shape);
    K().permute(x.data as Float32Array, x.shape, p, out.data as Float32Array);
  } else {
    // Integer/bool tensors go through a float copy: ids and masks are small and exact in float32
    // up to 2^24, far beyond any vocabulary.
    const tmp = new Float32Array(x.data);
    const o = new Float32Array(tmp.length);
    K().permute(tmp, x.shape, p, o);
    const data = allocData(x.dtype, o.length);
    for (let i = 0; i < o.length; i++) data[i] = o[i];
    return new Tensor(data, shape, x.dtype);
  }
  const inverse = new Array<number>(p.length);
  p.forEach((d, i) => (inverse[d] = i));
  return record(out, 'permute', [x], (g) => {
    const dx = empty(x.shape);
    K().permute(g.data as Float32Array, g.shape, inverse, dx.data as Float32Array);
    return [dx];
  });
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

export function unsqueeze(x: Tensor, dim: number): Tensor {
  const d = normAxis(dim, x.ndim + 1, 'unsqueeze');
  const shape = x.shape.slice();
  shape.splice(d, 0, 1);
  return x.reshape(shape);
}

export function squeeze(x: Tensor, dim: number): Tensor {
  const d = normAxis(dim, x.ndim, 'squeeze');
  if (x.shape[d] !== 1) return x;
  const shape = x.shape.slice();
  shape.splice(d, 1);
  return x.reshape(shape);
}

/** Elements [start, start+length) along `dim` (a copy), like torch.narrow. */
export function narrow(x: Tensor, dim: number, start: number, length: number): Tensor {
  const d = normAxis(dim, x.ndim, 'narrow');
  const size = x.shape[d];
  if (!Number.isInteger(start) || !Number.isInteger(length) || start < 0 || length < 0 || start + length > size) {
    throw new Error(`narrow: range [${start}, ${start + length}) is out of bounds for dim ${dim} of size ${size}`);
  }
  const outer = sizeOf(x.shape.slice(0, d));
  const inner = sizeOf(x.shape.slice(d + 1));
  const shape = x.shape.slice();
  shape[d] = length;
  const out = x.dtype === 'float32' ? empty(shape) : new Tensor(allocData(x.dtype, sizeOf(shape)), shape, x.dtype);
  const src = x.data;
  const dst = out.data;
  for (let o = 0; o < outer; o++) {
    const from = (o * size + start) * inner;
    dst.set(src.subarray(from, from + length * inner) as never, o * length * inner);
  }
  if (x.dtype !== 'float32') return out;
  return record(out, 'narrow', [x], (g) => {
    const dx = empty(x.shape);
    const dd = dx.data as Float32Array;
    dd.fill(0);
    const gd = g.data as Float32Array;
    for (let o = 0; o < outer; o++) dd.set(gd.subarray(o * length * inner, (o + 1) * length * inner), (o * size + start) * inner);
    return [dx];
  });
}

/** Split into pieces of the given sizes along `dim`. */
export function split(x: Tensor, sizes: number[], dim = 0): Tensor[] {
  const d = normAxis(dim, x.ndim, 'split');
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total !== x.shape[d]) {
    throw new Error(`split: sizes [${sizes.join(', ')}] sum to ${total}, but dim ${dim} has size ${x.shape[d]}`);
  }
  const out: Tensor[] = [];
  let start = 0;
  for (const s of sizes) {
    out.push(narrow(x, d, start, s));
    start += s;
  }
  return out;
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
      throw new Error(`cat: tensor ${i} has shape ${shapeToString(t.shape)} (${t.dtype}), incompatible with ${shapeToString(first.shape)} (${first.dtype}) along dim ${dim}`);
    }
  }
  const outer = sizeOf(first.shape.slice(0, d));
  const inner = sizeOf(first.shape.slice(d + 1));
  const total = xs.reduce((n, t) => n + t.shape[d], 0);
  const shape = first.shape.slice();
  shape[d] = total;
  const out = first.dtype === 'float32' ? empty(shape) : new Tensor(allocData(first.dtype, sizeOf(shape)), shape, first.dtype);
  let off = 0;
  for (const t of xs) {
    const w = t.shape[d] * inner;
    for (let o = 0; o < outer; o++) out.data.set(t.data.subarray(o * w, (o + 1) * w) as never, o * total * inner + off);
    off += w;
  }
  if (first.dtype !== 'float32') return out;
  return record(out, 'cat', xs, (g) => {
    const gd = g.data as Float32Array;
    let o2 = 0;
    return xs.map((t) => {
      const w = t.shape[d] * inner;
      const dx = empty(t.shape);
      const dd = dx.data as Float32Array;
      for (let o = 0; o < outer; o++) dd.set(gd.subarray(o * total * inner + o2, o * total * inner + o2 + w), o * w);
      o2 += w;
      return dx;
    });
  });
}

/** Stack along a new dim. */
export function stack(xs: Tensor[], dim = 0): Tensor {
  if (xs.length === 0) throw new Error('stack: expected a non-empty list of tensors');
  const d = normAxis(dim, xs[0].ndim + 1, 'stack');
  return cat(xs.map((t) => unsqueeze(t, d)), d);
}
