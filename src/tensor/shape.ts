/** Shape arithmetic shared by every layer: sizes, strides, broadcasting, axis normalisation. */

/** A tensor's dims, outermost first (row-major). */
export type Shape = readonly number[];

/** The number of elements of a tensor of this shape (1 for a scalar's []). */
export function sizeOf(shape: Shape): number {
  let n = 1;
  for (let i = 0; i < shape.length; i++) n *= shape[i]!;
  return n;
}

/** Row-major (C-contiguous) strides, in elements. */
export function stridesOf(shape: Shape): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

/** `[2, 3]`, as error messages print shapes. */
export function shapeToString(shape: Shape): string {
  return `[${shape.join(', ')}]`;
}

/** Whether the two shapes have the same dims. */
export function sameShape(a: Shape, b: Shape): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** NumPy/PyTorch broadcasting: align trailing dims; each pair must be equal or contain a 1. */
export function broadcastShapes(a: Shape, b: Shape, what = 'broadcast'): number[] {
  const n = Math.max(a.length, b.length);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const da = i < n - a.length ? 1 : a[i - (n - a.length)];
    const db = i < n - b.length ? 1 : b[i - (n - b.length)];
    if (da !== db && da !== 1 && db !== 1) {
      throw new Error(
        `${what}: shapes ${shapeToString(a)} and ${shapeToString(b)} cannot be broadcast ` +
          `(dimension ${i - n} is ${da} vs ${db})`,
      );
    }
    out[i] = da === 1 ? db : da;
  }
  return out;
}

/** Strides of `shape` viewed as broadcast to `target` (0 where the dim is broadcast). */
export function broadcastStrides(shape: Shape, target: Shape): number[] {
  const st = stridesOf(shape);
  const off = target.length - shape.length;
  const out = new Array<number>(target.length).fill(0);
  for (let i = 0; i < shape.length; i++) {
    out[i + off] = shape[i] === 1 && target[i + off] !== 1 ? 0 : st[i];
  }
  return out;
}

/** Turn a possibly negative axis into 0..ndim-1, with an error that names the caller. */
export function normAxis(axis: number, ndim: number, what: string): number {
  const a = axis < 0 ? axis + ndim : axis;
  if (!Number.isInteger(axis) || a < 0 || a >= ndim) {
    throw new Error(`${what}: dim ${axis} is out of range for a tensor with ${ndim} dimension(s)`);
  }
  return a;
}

/** Resolve a reshape target that may contain one -1. */
export function inferShape(shape: Shape, total: number, what = 'reshape'): number[] {
  let neg = -1;
  let known = 1;
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i];
    if (d === -1) {
      if (neg >= 0) throw new Error(`${what}: only one dimension can be -1, got ${shapeToString(shape)}`);
      neg = i;
    } else if (!Number.isInteger(d) || d < 0) {
      throw new Error(`${what}: invalid dimension ${d} in ${shapeToString(shape)}`);
    } else known *= d;
  }
  const out = shape.slice();
  if (neg >= 0) {
    if (known === 0 || total % known !== 0) {
      throw new Error(`${what}: shape ${shapeToString(shape)} is invalid for a tensor of ${total} elements`);
    }
    out[neg] = total / known;
  } else if (known !== total) {
    throw new Error(`${what}: shape ${shapeToString(shape)} is invalid for a tensor of ${total} elements`);
  }
  return out;
}
