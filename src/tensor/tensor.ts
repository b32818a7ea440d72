import {
  allocFloat32,
  checkHostRead,
  type Device,
  type DType,
  defaultDevice,
  deviceNamed,
  hostArray,
  hostArrayFits,
  type Storage,
  storageLength,
  type TypedData,
} from './storage.ts';
import { inferShape, type Shape, shapeToString, sizeOf } from './shape.ts';
import { defaultGenerator, type Generator } from './random.ts';

export type { DType, TypedData } from './storage.ts';

/**
 * How a tensor was made, for the backward pass: the tensors it came from and a rule that turns the
 * gradient of the output into gradients of those inputs (null where an input needs none).
 */
export interface GradFn {
  readonly name: string;
  readonly inputs: readonly Tensor[];
  backward(gradOutput: Tensor): (Tensor | null)[];
}

/** A tensor's place: its device and the device's handle to its memory (see {@link Tensor.fromStorage}). */
export interface Placed {
  device: Device;
  storage: Storage;
}

/**
 * A dense, row-major tensor. float32 for values, int32 for token ids and indices, bool for masks, and the
 * byte dtypes (uint8, int8, packed q4). Its memory belongs to its device (`device`, `storage`): values are
 * read explicitly, `await t.data()` on every device or `t.dataSync()` where the device can answer at once
 * (the CPU backends). Storage is always contiguous: `reshape` shares it, every other layout change
 * (transpose, permute, slicing) copies, which keeps kernels simple and fast.
 */
export class Tensor {
  /** The device the storage belongs to; ops on this tensor run there. */
  device: Device;
  /** The device's handle to the elements (row-major, contiguous); opaque outside the backends. */
  storage: Storage;
  /** Size of each dim, outermost first (frozen); `[]` for a scalar. */
  readonly shape: readonly number[];
  /** Element type: `float32`, `int32` (token ids, indices), `bool` (masks), `uint8`, `int8`, `q4`. */
  readonly dtype: DType;
  /** Number of elements (the product of the shape; 1 for a scalar). */
  readonly size: number;
  /** Set on tensors whose gradient backward() should compute and store in `.grad`. */
  requiresGrad: boolean;
  /** Accumulated gradient (leaves only, or any tensor after retainGrad()). */
  grad: Tensor | null = null;
  /** The op that produced this tensor while gradients were being recorded; null for leaves. */
  gradFn: GradFn | null = null;
  /** Keep `.grad` on this non-leaf tensor after backward(). */
  retainsGrad = false;

  /**
   * A tensor of host values on the default device (the current backend's): `data` holds the elements
   * row-major (Float32Array for float32, Int32Array for int32, Uint8Array for bool/uint8 and packed q4,
   * Int8Array for int8). A CPU device keeps the array itself; others copy it.
   */
  constructor(data: TypedData | Placed, shape: Shape, dtype?: DType, requiresGrad = false) {
    const n = sizeOf(shape);
    if (ArrayBuffer.isView(data)) {
      const dt = dtype ?? dtypeOfData(data);
      if (!hostArrayFits(dt, data)) {
        throw new Error(`Tensor: dtype '${dt}' does not match data of type ${data.constructor.name}`);
      }
      const want = storageLength(dt, n);
      if (data.length !== want) {
        throw new Error(`Tensor: data has ${data.length} elements but shape ${shapeToString(shape)} needs ${want}`);
      }
      this.device = defaultDevice();
      this.storage = this.device.fromHost(data, dt);
      this.dtype = dt;
    } else {
      if (dtype === undefined) throw new Error('Tensor: a tensor made from storage needs its dtype');
      this.device = data.device;
      this.storage = data.storage;
      this.dtype = dtype;
    }
    // A frozen shape (another tensor's) is shared as it is: copying and freezing it again cost ~400 ns
    // a tensor in V8, ten times the rest of the constructor (issue 51, records/latency-profile).
    this.shape = Object.isFrozen(shape) ? shape : freezeCopy(shape);
    this.size = n;
    this.requiresGrad = requiresGrad;
  }

  /** A tensor over existing storage of `device` (for backends and ops: no copy, no check of the contents). */
  static fromStorage(device: Device, storage: Storage, shape: Shape, dtype: DType, requiresGrad = false): Tensor {
    return new Tensor({ device, storage }, shape, dtype, requiresGrad);
  }

  /** The name of the device the tensor lives on (`cpu` for the js and wasm backends, `webgpu`, ...). */
  get deviceName(): string {
    return this.device.name;
  }

  /** Number of dims (0 for a scalar). */
  get ndim(): number {
    return this.shape.length;
  }

  /** True for tensors not produced by a recorded op (parameters, inputs). */
  get isLeaf(): boolean {
    return this.gradFn === null;
  }

  /**
   * The values now: on the CPU backends the storage itself (treat it as read-only; write with
   * {@link Tensor.write}), on a device that reads back asynchronously an error naming `await t.data()`.
   */
  dataSync<T extends TypedData = TypedData>(): T {
    checkHostRead('dataSync (or item, toArray, tolist)');
    const read = this.device.readSync;
    if (read === undefined) {
      throw new Error(
        `dataSync: a ${this.dtype} tensor on device '${this.device.name}' can only be read asynchronously: ` +
          'use await t.data()',
      );
    }
    return read.call(this.device, this.storage, this.dtype, this.size) as T;
  }

  /** The values, as a host array the caller owns (a copy), on every device. */
  data<T extends TypedData = TypedData>(): Promise<T> {
    checkHostRead('data');
    return this.device.read(this.storage, this.dtype, this.size) as Promise<T>;
  }

  /** Overwrite the elements from host values (length = size; q4 packed), in place. */
  write(values: TypedData | ArrayLike<number>, offset = 0): this {
    const arr = ArrayBuffer.isView(values) ? (values as TypedData) : fromNumbers(this.dtype, values);
    this.device.write(this.storage, this.dtype, arr, offset);
    return this;
  }

  /** The values as a flat array of numbers (a copy). */
  toArray(): number[] {
    return Array.from(this.dataSync());
  }

  /** The values as nested arrays, like torch's tolist(). */
  tolist(): unknown {
    const data = this.dataSync();
    if (this.ndim === 0) return data[0];
    const build = (dim: number, offset: number): unknown[] => {
      const n = this.shape[dim];
      const stride = sizeOf(this.shape.slice(dim + 1));
      const out: unknown[] = [];
      for (let i = 0; i < n; i++) {
        out.push(dim === this.ndim - 1 ? data[offset + i] : build(dim + 1, offset + i * stride));
      }
      return out;
    };
    return build(0, 0);
  }

  /** The single value of a one-element tensor. */
  item(): number {
    if (this.size !== 1) throw new Error(`item: tensor has ${this.size} elements, expected 1`);
    return this.dataSync()[0];
  }

  /** The single value of a one-element tensor, on every device. */
  async itemAsync(): Promise<number> {
    if (this.size !== 1) throw new Error(`itemAsync: tensor has ${this.size} elements, expected 1`);
    return (await this.data())[0];
  }

  /** A view with a new shape over the same storage (one dim may be -1). Differentiable. */
  reshape(...shape: number[] | [Shape]): Tensor {
    const s = (Array.isArray(shape[0]) ? shape[0] : shape) as number[];
    const target = inferShape(s, this.size, 'reshape');
    return reshapeImpl(this, target);
  }

  /** Alias of reshape (storage is always contiguous, so every reshape is a view). */
  view(...shape: number[] | [Shape]): Tensor {
    return this.reshape(...shape);
  }

  /** A tensor over the same storage that is not part of any graph. */
  detach(): Tensor {
    return Tensor.fromStorage(this.device, this.storage, this.shape, this.dtype);
  }

  /** A deep copy of the values on the same device (not part of any graph). */
  clone(): Tensor {
    const storage =
      this.dtype === 'float32' ? allocFloat32(this.device, this.size) : this.device.alloc(this.dtype, this.size);
    this.device.copy(this.storage, storage, this.dtype, this.size);
    return Tensor.fromStorage(this.device, storage, this.shape, this.dtype);
  }

  /**
   * This tensor on the device of backend `name` ('js', 'wasm', ...): itself when it is there already (js and
   * wasm share the `cpu` device), else a copy (values identical, not part of any graph, requiresGrad kept).
   * Reading off a device that reads back only asynchronously needs {@link Tensor.toAsync}.
   */
  to(name: string): Tensor {
    const target = deviceNamed(name, 'to');
    if (target.name === this.device.name) return this;
    return this.placedOn(target, this.dataSync());
  }

  /** As {@link Tensor.to}, reading the values back asynchronously (from any device). */
  async toAsync(name: string): Promise<Tensor> {
    const target = deviceNamed(name, 'toAsync');
    if (target.name === this.device.name) return this;
    return this.placedOn(target, await this.data());
  }

  private placedOn(target: Device, values: TypedData): Tensor {
    const storage = target.alloc(this.dtype, this.size, { persistent: this.device.isPersistent?.(this.storage) });
    target.write(storage, this.dtype, values);
    return Tensor.fromStorage(target, storage, this.shape, this.dtype, this.requiresGrad);
  }

  /** In place: the storage moves to `device` (module.to: parameters keep their identity). */
  moveStorage_(device: Device, storage: Storage): this {
    this.device = device;
    this.storage = storage;
    return this;
  }

  /** In-place: mark as a leaf that collects gradients. Returns this, like torch's requires_grad_(). */
  requiresGrad_(flag = true): this {
    if (this.dtype !== 'float32' && flag) {
      throw new Error(`requiresGrad_: only float32 tensors can require gradients, this one is ${this.dtype}`);
    }
    this.requiresGrad = flag;
    return this;
  }

  /** Keep `.grad` on this non-leaf tensor after backward() (torch's retain_grad()). Returns this. */
  retainGrad(): this {
    this.retainsGrad = true;
    return this;
  }

  /** A short description, e.g. `Tensor(shape=[2, 3], dtype=float32)`; the values are left out. */
  toString(): string {
    return `Tensor(shape=${shapeToString(this.shape)}, dtype=${this.dtype})`;
  }
}

function fromNumbers(dtype: DType, values: ArrayLike<number>): TypedData {
  const out = hostArray(dtype, values.length);
  for (let i = 0; i < values.length; i++) out[i] = Number(values[i]);
  return out;
}

/** Hook filled in by the autograd layer so reshape records itself without importing upward. */
export let reshapeImpl: (t: Tensor, shape: number[]) => Tensor = (t, shape) =>
  Tensor.fromStorage(t.device, t.storage, shape, t.dtype);

export function setReshapeImpl(fn: (t: Tensor, shape: number[]) => Tensor): void {
  reshapeImpl = fn;
}

export function dtypeOfData(data: TypedData): DType {
  if (data instanceof Float32Array) return 'float32';
  if (data instanceof Int32Array) return 'int32';
  if (data instanceof Uint8Array) return 'bool';
  if (data instanceof Int8Array) return 'int8';
  if (data instanceof Uint16Array) return 'float16';
  throw new Error(`Tensor: unsupported storage ${(data as object).constructor.name}`);
}

type Nested = number | boolean | Nested[];

function flatten(data: Nested, out: number[], shape: number[], depth: number): void {
  if (Array.isArray(data)) {
    if (shape.length <= depth) shape.push(data.length);
    else if (shape[depth] !== data.length) {
      throw new Error(
        `tensor: ragged nested array (dimension ${depth} has lengths ${shape[depth]} and ${data.length})`,
      );
    }
    for (const d of data) flatten(d, out, shape, depth + 1);
  } else {
    if (shape.length !== depth) throw new Error('tensor: ragged nested array');
    out.push(typeof data === 'boolean' ? (data ? 1 : 0) : data);
  }
}

/** Options of {@link tensor} and {@link full}. */
export interface TensorOptions {
  /** Element type; defaults to what the data implies (float32 for plain numbers). */
  dtype?: DType;
  /** Make the tensor a leaf that collects gradients (float32 only). Default false. */
  requiresGrad?: boolean;
}

/**
 * Make a tensor from numbers. `tensor([[1, 2], [3, 4]])` infers the shape; `tensor(flat, [2, 2])`
 * takes a flat array or typed array and a shape. The dtype follows the data (booleans -> bool,
 * Int32Array -> int32, otherwise float32) unless given.
 */
export function tensor(
  data: Nested | ArrayLike<number> | TypedData,
  shape?: Shape,
  options: TensorOptions = {},
): Tensor {
  let flat: ArrayLike<number>;
  let inferred: number[];
  let dtype = options.dtype;
  if (ArrayBuffer.isView(data)) {
    flat = data as TypedData;
    inferred = [flat.length];
    dtype ??= dtypeOfData(data as TypedData);
  } else if (Array.isArray(data)) {
    const out: number[] = [];
    inferred = [];
    flatten(data as Nested, out, inferred, 0);
    if (dtype === undefined && containsBoolean(data as Nested)) dtype = 'bool';
    flat = out;
  } else if (typeof data === 'number' || typeof data === 'boolean') {
    flat = [typeof data === 'boolean' ? (data ? 1 : 0) : data];
    inferred = [];
    if (typeof data === 'boolean') dtype ??= 'bool';
  } else {
    flat = Array.from(data as ArrayLike<number>);
    inferred = [flat.length];
  }
  dtype ??= 'float32';
  const target = shape ? inferShape(shape, flat.length, 'tensor') : inferred;
  const values = hostArray(dtype, flat.length);
  for (let i = 0; i < flat.length; i++) values[i] = Number(flat[i]);
  return new Tensor(values, target, dtype, options.requiresGrad ?? false);
}

function containsBoolean(d: Nested): boolean {
  if (Array.isArray(d)) return d.length > 0 && containsBoolean(d[0]);
  return typeof d === 'boolean';
}

function shapeArg(shape: number[] | [Shape]): number[] {
  const s = (Array.isArray(shape[0]) ? shape[0] : shape) as number[];
  for (const d of s) {
    if (!Number.isInteger(d) || d < 0) throw new Error(`shape: invalid dimension ${d} in ${shapeToString(s)}`);
  }
  return s.slice();
}

/** A tensor of `shape` with every element `value` (float32 unless `options.dtype` says otherwise). */
export function full(shape: Shape, value: number, options: TensorOptions = {}): Tensor {
  const dtype = options.dtype ?? 'float32';
  const values = hostArray(dtype, sizeOf(shape));
  if (value !== 0) values.fill(value);
  return new Tensor(values, shapeArg([shape]), dtype, options.requiresGrad ?? false);
}

/** A float32 tensor of zeros: `zeros(2, 3)` or `zeros([2, 3])`. */
export function zeros(...shape: number[] | [Shape]): Tensor {
  return full(shapeArg(shape), 0);
}

/** A float32 tensor of ones: `ones(2, 3)` or `ones([2, 3])`. */
export function ones(...shape: number[] | [Shape]): Tensor {
  return full(shapeArg(shape), 1);
}

/** Zeros with the shape and dtype of `t` (no gradient). */
export function zerosLike(t: Tensor): Tensor {
  return full(t.shape, 0, { dtype: t.dtype });
}

/** Ones with the shape and dtype of `t` (no gradient). */
export function onesLike(t: Tensor): Tensor {
  return full(t.shape, 1, { dtype: t.dtype });
}

/**
 * The shape and options of randn/rand: `(2, 3)` as zeros takes it, or `([2, 3], ...rest)` with the
 * optional arguments after the shape.
 */
function randomArgs(name: string, args: readonly unknown[]): { shape: number[]; rest: unknown[] } {
  if (args.length === 0) return { shape: [], rest: [] }; // a scalar, as zeros()
  if (typeof args[0] === 'number') {
    const bad = args.findIndex((a) => typeof a !== 'number');
    if (bad >= 0)
      throw new Error(
        `${name}: with dimensions as numbers (${name}(2, 3)) every argument is ` +
          `a dimension; argument ${bad} is ${typeof args[bad]} (pass the shape ` +
          `as an array for a generator: ${name}([2, 3], generator))`,
      );
    return { shape: shapeArg(args as number[]), rest: [] };
  }
  if (!Array.isArray(args[0]))
    throw new Error(`${name}: expected a shape (${name}(2, 3) or ${name}([2, 3])), got ${typeof args[0]}`);
  return { shape: shapeArg([args[0] as number[]]), rest: args.slice(1) };
}

/**
 * Standard normal samples from `generator` (the default, seeded by manualSeed, if omitted): randn(2, 3) or randn([2,
 * 3], generator).
 */
export function randn(...shape: number[]): Tensor;
export function randn(shape: Shape, generator?: Generator): Tensor;
export function randn(...args: unknown[]): Tensor {
  const { shape, rest } = randomArgs('randn', args);
  const generator = (rest[0] as Generator | undefined) ?? defaultGenerator;
  const d = new Float32Array(sizeOf(shape));
  for (let i = 0; i < d.length; i++) d[i] = generator.normal();
  return new Tensor(d, shape, 'float32');
}

/** Uniform samples in [low, high): rand(2, 3) or rand([2, 3], generator, low, high). */
export function rand(...shape: number[]): Tensor;
export function rand(shape: Shape, generator?: Generator, low?: number, high?: number): Tensor;
export function rand(...args: unknown[]): Tensor {
  const { shape, rest } = randomArgs('rand', args);
  const generator = (rest[0] as Generator | undefined) ?? defaultGenerator;
  const low = (rest[1] as number | undefined) ?? 0;
  const high = (rest[2] as number | undefined) ?? 1;
  const d = new Float32Array(sizeOf(shape));
  for (let i = 0; i < d.length; i++) d[i] = low + (high - low) * generator.uniform();
  return new Tensor(d, shape, 'float32');
}

/** Integers in [low, high) as an int32 tensor. */
export function randint(low: number, high: number, shape: Shape, generator: Generator = defaultGenerator): Tensor {
  const d = new Int32Array(sizeOf(shape));
  for (let i = 0; i < d.length; i++) d[i] = low + generator.int(high - low);
  return new Tensor(d, shapeArg([shape]), 'int32');
}

/** 0, 1, ..., n-1 (or start..end by step) as float32. */
export function arange(start: number, end?: number, step = 1): Tensor {
  if (end === undefined) [start, end] = [0, start];
  const n = Math.max(0, Math.ceil((end - start) / step));
  const d = new Float32Array(n);
  for (let i = 0; i < n; i++) d[i] = start + i * step;
  return new Tensor(d, [n], 'float32');
}

/** A frozen copy of a shape (element by element: cheaper than freeze(slice()) here). */
function freezeCopy(s: Shape): readonly number[] {
  const n = s.length;
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(s[i]!);
  return Object.freeze(out);
}
