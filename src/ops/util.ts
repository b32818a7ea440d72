import { type Backend, type F32, getBackend, type I32 } from '../backend/backend.ts';
import '../backend/backends.ts';
import { allocFloat32, type DType } from '../tensor/storage.ts';
import { type Shape, shapeToString, sizeOf } from '../tensor/shape.ts';
import { Tensor } from '../tensor/tensor.ts';

/**
 * The backend ops run on: the current one (setBackend). Ops make exactly one hop from here to a kernel.
 * Tensors given are checked to live on its device: a tensor of another device is refused in one line naming
 * both devices.
 */
export function K(...ts: (Tensor | null | undefined)[]): Backend {
  const k = getBackend();
  for (const t of ts) if (t) onDevice(t, k, 'op', 'input');
  return k;
}

/** Throws `OP: ARG is on device 'x' but the current backend 'b' computes on 'y'` unless t is on k's device. */
export function onDevice(t: Tensor, k: Backend, op: string, arg: string): void {
  if (t.device !== k.device && t.device.name !== k.device.name) {
    throw new Error(
      `${op}: ${arg} is on device '${t.device.name}' but backend '${k.name}' computes on '${k.device.name}' ` +
        `(move tensors with t.to('${k.name}') or module.to('${k.name}'), or setBackend to theirs)`,
    );
  }
}

/**
 * Uninitialised float32 storage of n elements on backend `k`'s device, with no tensor around it: a kernel's
 * side output an op keeps for its backward (layer norm's row statistics, attention's log-sum-exp).
 */
export function scratch(n: number, k: Backend = getBackend()): F32 {
  return allocFloat32(k.device, n, false);
}

/** An uninitialised float32 tensor on backend `k`'s device: the caller writes every element. */
export function empty(shape: Shape, k: Backend = getBackend()): Tensor {
  return Tensor.fromStorage(k.device, allocFloat32(k.device, sizeOf(shape), false), shape, 'float32');
}

/** A zero-filled float32 tensor on backend `k`'s device. */
export function zerosF(shape: Shape, k: Backend = getBackend()): Tensor {
  return Tensor.fromStorage(k.device, allocFloat32(k.device, sizeOf(shape), true), shape, 'float32');
}

/** A zero-filled tensor of any dtype on backend `k`'s device. */
export function zerosOf(shape: Shape, dtype: DType, k: Backend = getBackend()): Tensor {
  if (dtype === 'float32') return zerosF(shape, k);
  return Tensor.fromStorage(k.device, k.device.alloc(dtype, sizeOf(shape)), shape, dtype);
}

/** A tensor of host values on backend `k`'s device (small inputs made on the host: biases, scales). */
export function upload(values: Float32Array | Int32Array, shape: Shape, k: Backend = getBackend()): Tensor {
  const dtype = values instanceof Float32Array ? 'float32' : 'int32';
  return Tensor.fromStorage(k.device, k.device.fromHost(values, dtype), shape, dtype);
}

/** The float32 storage of `t`, or an error naming the op and argument; `k`: the backend the op runs on. */
export function f32(t: Tensor, op: string, arg: string, k: Backend = getBackend()): F32 {
  if (!(t instanceof Tensor)) throw new Error(`${op}: ${arg} must be a Tensor, got ${describe(t)}`);
  if (t.dtype !== 'float32') throw new Error(`${op}: ${arg} must be float32, got ${t.dtype}`);
  onDevice(t, k, op, arg);
  return t.storage as F32;
}

/** The int32 storage of `t`, or an error naming the op and argument; `k`: the backend the op runs on. */
export function i32(t: Tensor, op: string, arg: string, k: Backend = getBackend()): I32 {
  if (!(t instanceof Tensor)) throw new Error(`${op}: ${arg} must be a Tensor, got ${describe(t)}`);
  if (t.dtype !== 'int32') throw new Error(`${op}: ${arg} must be int32, got ${t.dtype}`);
  onDevice(t, k, op, arg);
  return t.storage as I32;
}

/** The storage of a float32 tensor an op made itself (no check). */
export function st(t: Tensor): F32 {
  return t.storage as F32;
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
