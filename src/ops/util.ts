import { getBackend, type Backend } from '../backend/backend.ts';
import '../backend/register.ts';
import { allocFloat32 } from '../tensor/storage.ts';
import { type Shape, shapeToString, sizeOf } from '../tensor/shape.ts';
import { Tensor } from '../tensor/tensor.ts';

/** The active backend: ops make exactly one hop from here to a kernel. */
export function K(): Backend {
  return getBackend();
}

/** An uninitialised float32 tensor from the backend's allocator: the caller writes every element. */
export function empty(shape: Shape): Tensor {
  return new Tensor(allocFloat32(sizeOf(shape), false), shape, 'float32');
}

/** A zero-filled float32 tensor from the backend's allocator. */
export function zerosF(shape: Shape): Tensor {
  const t = empty(shape);
  t.data.fill(0);
  return t;
}

/** The float32 storage of `t`, or an error naming the op and argument. */
export function f32(t: Tensor, op: string, arg: string): Float32Array {
  if (!(t instanceof Tensor)) throw new Error(`${op}: ${arg} must be a Tensor, got ${describe(t)}`);
  if (t.dtype !== 'float32') throw new Error(`${op}: ${arg} must be float32, got ${t.dtype}`);
  return t.data as Float32Array;
}

/** What a value is, for error messages: `float32 tensor of shape [2, 3]`, `null`, `an array`, `number`. */
export function describe(v: unknown): string {
  if (v instanceof Tensor) return `${v.dtype} tensor of shape ${shapeToString(v.shape)}`;
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v;
}

/** Throws `OP: ARG must be 2-D or 3-D, got shape [...]` unless t has one of `ranks`. */
export function expectRank(t: Tensor, ranks: number[], op: string, arg: string): void {
  if (!ranks.includes(t.ndim)) {
    const want =
      ranks.length === 1 ? `${ranks[0]}-D` : `${ranks.slice(0, -1).join('-D, ')}-D or ${ranks[ranks.length - 1]}-D`;
    throw new Error(`${op}: ${arg} must be ${want}, got shape ${shapeToString(t.shape)}`);
  }
}

/** Throws `OP: ARG must have size N in dim D, got shape [...]` unless dim `dim` of t is `size`. */
export function expectDim(t: Tensor, dim: number, size: number, op: string, arg: string, what?: string): void {
  const d = dim < 0 ? t.ndim + dim : dim;
  if (t.shape[d] !== size) {
    throw new Error(
      `${op}: ${arg} must have ${what ?? `size ${size}`} in dim ${dim}, got shape ${shapeToString(t.shape)}`,
    );
  }
}
