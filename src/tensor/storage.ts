/**
 * Storage belongs to a device (tinygrad's Allocator, tfjs's KernelBackend). A tensor holds its device and an
 * opaque handle; it never sees memory itself. The CPU backends' handles are typed arrays (so nothing costs
 * more than before), a GPU backend's are buffers, and code above the backends reads values only through the
 * device: `await t.data()`, or `t.dataSync()` where the device can answer synchronously.
 *
 * This file is the bottom of the storage system: the dtypes, the `Device` contract a backend fills in, the
 * host-memory device the CPU backends share, and `memoryScope`. The default device is chosen by `setBackend`
 * (src/backend/backend.ts), the only caller of {@link setDefaultDevice}.
 */

/**
 * A tensor's element type: `float32` values, `int32` ids, `bool` masks (one byte, 0 or 1), the byte dtypes
 * `uint8` and `int8`, `q4`: signed 4-bit integers (−8..7) packed two to a byte, element 2i in the low
 * nibble of byte i, and `float16`: IEEE half-precision values held as their bits (a q4 weight's scales; no
 * op computes on them). A quantized weight is a pair of tensors (its int8/q4 values and float32 or float16
 * scales), not a dtype of its own: see docs/design-backends.md.
 */
export type DType = 'float32' | 'int32' | 'bool' | 'uint8' | 'int8' | 'q4' | 'float16';
/**
 * The host arrays of the dtypes: Float32Array, Int32Array, Uint8Array (bool, uint8, q4 packed), Int8Array,
 * Uint16Array (float16's bits).
 */
export type TypedData = Float32Array | Int32Array | Uint8Array | Int8Array | Uint16Array;

declare const storageBrand: unique symbol;
/**
 * A device's handle to the memory of one tensor: opaque above the backends. `D` says what it holds, so a
 * kernel's signature says which dtype each argument must be.
 */
export type Storage<D extends DType = DType> = {
  /** Type-level only: the dtype the handle holds (no such property exists at run time). */
  readonly [storageBrand]: D;
};

/** How {@link Device.alloc} should place a block. */
export interface AllocOptions {
  /** Zero-filled (default true); false: the caller writes every element before reading any. */
  zero?: boolean;
  /** Long-lived (parameters, gradients, optimizer state): kept where kernels use it in place. */
  persistent?: boolean;
}

/** The memory of {@link memoryScope}: blocks handed out during a scope and released at its end. */
export interface ScopedAllocator {
  /** Float storage the scope owns; zero-filled if `zero`, else holding whatever the block held. */
  alloc(n: number, zero: boolean): Storage<'float32'>;
  /** Give a block back (no view of it may be used afterwards). */
  release(block: Storage): void;
  /**
   * The scope ends but `views` (the block itself, or on host devices subarrays of it) are still in use:
   * release the block once every one of them is garbage-collected.
   */
  retain(block: Storage, views: Storage[]): void;
}

/**
 * Where tensors live and how their values cross to the host: what a backend provides besides kernels
 * (tinygrad's `_alloc`, `_copyin`, `_copyout`, `_free`). Devices with one `name` share storage: the js and
 * wasm backends both compute on the host memory of device `cpu`.
 */
export interface Device {
  /** The device's name (`cpu`, `webgpu`, ...): tensors of two names never meet in one op. */
  readonly name: string;
  /** Storage for n elements of `dtype`. */
  alloc(dtype: DType, n: number, options?: AllocOptions): Storage;
  /** Storage holding `values` (n elements of dtype; q4 packed). A host device may keep the array itself. */
  fromHost(values: TypedData, dtype: DType): Storage;
  /** Copy `values` into storage, starting at element `offset` (0). */
  write(storage: Storage, dtype: DType, values: TypedData, offset?: number): void;
  /** Set n elements, from element `offset` (0), to `value`. */
  fill(storage: Storage, dtype: DType, value: number, n: number, offset?: number): void;
  /** Copy n elements from `src` to `dst` (both of this device and dtype). */
  copy(src: Storage, dst: Storage, dtype: DType, n: number): void;
  /** The values, when they are on the host: a copy the caller owns. Host devices resolve at once. */
  read(storage: Storage, dtype: DType, n: number): Promise<TypedData>;
  /**
   * The values now, where the device can give them synchronously (host devices: the storage itself, to be
   * treated as read-only); absent on devices that can only read back asynchronously.
   */
  readSync?(storage: Storage, dtype: DType, n: number): TypedData;
  /** Release storage now (optional: host storage is garbage-collected). */
  free(storage: Storage): void;
  /** Storage {@link memoryScope} hands out and releases, where the device has some. */
  readonly scoped?: ScopedAllocator;
  /** Whether `storage` is long-lived storage of this device (see AllocOptions.persistent). */
  isPersistent?(storage: Storage): boolean;
}

/** Host array elements that hold n elements of dtype (q4: two per byte). */
export function storageLength(dtype: DType, n: number): number {
  return dtype === 'q4' ? Math.ceil(n / 2) : n;
}

/** A zero-filled host array for n elements of `dtype`. */
export function hostArray(dtype: DType, n: number): TypedData {
  switch (dtype) {
    case 'float32':
      return new Float32Array(n);
    case 'int32':
      return new Int32Array(n);
    case 'int8':
      return new Int8Array(n);
    case 'bool':
    case 'uint8':
      return new Uint8Array(n);
    case 'q4':
      return new Uint8Array(storageLength('q4', n));
    case 'float16':
      return new Uint16Array(n);
  }
}

/** The host array type each dtype is held in, for error messages and checks. */
export function hostArrayFits(dtype: DType, data: TypedData): boolean {
  switch (dtype) {
    case 'float32':
      return data instanceof Float32Array;
    case 'int32':
      return data instanceof Int32Array;
    case 'int8':
      return data instanceof Int8Array;
    case 'float16':
      return data instanceof Uint16Array;
    default:
      return data instanceof Uint8Array;
  }
}

/** The storage of a host device as the array it is (backends of host devices only). */
export function hostView<T extends TypedData>(s: Storage): T {
  return s as unknown as T;
}

/**
 * Host memory, as ordinary typed arrays: the js backend's device, and the base of the wasm backend's (which
 * adds long-lived and scoped blocks in WebAssembly memory). The storage *is* the array, so reads cost nothing.
 */
export function hostDevice(
  extra: Pick<Device, 'scoped' | 'isPersistent'> & {
    /** Where long-lived float32 storage goes (the wasm backend: its memory). */
    persistentFloat32?: (n: number) => Float32Array;
    /**
     * Where long-lived int8, q4 and float16 storage (quantized weights and their half scales) goes: zeroed
     * bytes, as the dtype's array.
     */
    persistentBytes?: (dtype: 'int8' | 'q4' | 'float16', bytes: number) => Int8Array | Uint8Array | Uint16Array;
  } = {},
): Device {
  const { persistentFloat32, persistentBytes, ...rest } = extra;
  return {
    name: 'cpu',
    alloc(dtype, n, options) {
      if (dtype === 'float32' && options?.persistent && persistentFloat32) return persistentFloat32(n) as never;
      if ((dtype === 'int8' || dtype === 'q4') && options?.persistent && persistentBytes)
        return persistentBytes(dtype, storageLength(dtype, n)) as never;
      if (dtype === 'float16' && options?.persistent && persistentBytes) return persistentBytes(dtype, 2 * n) as never;
      return hostArray(dtype, n) as never;
    },
    fromHost: (values) => values as never,
    write(storage, _dtype, values, offset = 0) {
      (hostView<TypedData>(storage) as Float32Array).set(values as Float32Array, offset);
    },
    fill(storage, dtype, value, n, offset = 0) {
      (hostView<TypedData>(storage) as Float32Array).fill(value, offset, offset + storageLength(dtype, n));
    },
    copy(src, dst, dtype, n) {
      const s = hostView<TypedData>(src);
      (hostView<TypedData>(dst) as Float32Array).set((s as Float32Array).subarray(0, storageLength(dtype, n)));
    },
    read: (storage, dtype, n) => Promise.resolve(hostView<TypedData>(storage).slice(0, storageLength(dtype, n))),
    readSync: (storage) => hostView<TypedData>(storage),
    free() {},
    ...rest,
  };
}

/** The js backend's device: plain typed arrays. */
export const plainHost: Device = hostDevice();

let current: Device = plainHost;

/** The device new tensors are made on: the current backend's (see setBackend). */
export function defaultDevice(): Device {
  return current;
}

/** Called by setBackend only: new tensors are made on `d` from now on. Tensors made before keep theirs. */
export function setDefaultDevice(d: Device): void {
  current = d;
}

const namedDevices = new Map<string, Device>();

/** Make a backend's device reachable by the backend's name, for `t.to(name)` (setBackend's registry calls it). */
export function registerDeviceName(backendName: string, d: Device): void {
  namedDevices.set(backendName, d);
}

/** The device of the backend called `name`; throws naming the registered ones. */
export function deviceNamed(name: string, op: string): Device {
  const d = namedDevices.get(name);
  if (!d) throw new Error(`${op}: unknown device '${name}', registered: ${[...namedDevices.keys()].join(', ')}`);
  return d;
}

/**
 * Float storage on `device`, from a running memoryScope's block where the scope is on that device;
 * with `zero` false the block may hold anything (the caller writes every element before reading any).
 */
export function allocFloat32(device: Device, n: number, zero = true): Storage<'float32'> {
  const frame = frames[frames.length - 1];
  if (frame !== undefined && device.scoped !== undefined && frame.allocator === device.scoped) {
    const a = frame.allocator.alloc(n, zero);
    if (poison && !zero && a instanceof Float32Array) a.fill(Number.NaN);
    frame.blocks.push(a);
    return a;
  }
  return device.alloc('float32', n, { zero }) as Storage<'float32'>;
}

interface Frame {
  allocator: ScopedAllocator;
  blocks: Storage[];
}
const frames: Frame[] = [];
let poison =
  (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.QKV_POISON_SCOPES === '1';

/**
 * Fill released scope blocks, and uninitialised ones when handed out, with NaN, so that a tensor used after
 * its scope, or an element read before it is written, shows (for tests; the test runner sets
 * QKV_POISON_SCOPES=1).
 */
export function setScopePoisoning(on: boolean): void {
  poison = on;
}

let hostReadGuard: ((what: string) => void) | null = null;

/**
 * While a step is captured (src/compile), `guard` is called before any tensor's values are read on the host
 * (it throws naming the read); null ends it. Returns the guard before, to restore.
 */
export function setHostReadGuard(guard: ((what: string) => void) | null): ((what: string) => void) | null {
  const prev = hostReadGuard;
  hostReadGuard = guard;
  return prev;
}

/** Throws while a step is captured: `what` (dataSync, item, ...) reads a tensor's values on the host. */
export function checkHostRead(what: string): void {
  if (hostReadGuard !== null) hostReadGuard(what);
}

/** Whether a step is being captured now (ops skip their host-side checks of ids; the replay checks inputs). */
export function capturing(): boolean {
  return hostReadGuard !== null;
}

/** Storage of the tensors in `value`: a tensor, or arrays and plain objects of them (2 levels). */
function heldArrays(value: unknown, out: Storage[], depth = 0): void {
  if (value === null || typeof value !== 'object' || depth > 2) return;
  const storage = (value as { storage?: unknown }).storage;
  if (typeof storage === 'object' && storage !== null && Array.isArray((value as { shape?: unknown }).shape)) {
    out.push(storage as Storage);
    return;
  }
  if (Array.isArray(value)) for (const v of value) heldArrays(v, out, depth + 1);
  else if (Object.getPrototypeOf(value) === Object.prototype)
    for (const v of Object.values(value)) heldArrays(v, out, depth + 1);
}

/** Whether `view` is `block` or, on host devices, a subarray of it. */
function inside(view: Storage, block: Storage): boolean {
  if (view === block) return true;
  if (!(view instanceof Float32Array) || !(block instanceof Float32Array)) return false;
  return (
    view.buffer === block.buffer &&
    view.byteOffset >= block.byteOffset &&
    view.byteOffset + view.byteLength <= block.byteOffset + block.byteLength
  );
}

/**
 * Run `fn` with its float tensors in the default device's scoped memory (with the wasm backend: WebAssembly
 * memory, so kernels work on them in place, without copies), and release that memory as soon as `fn`
 * returns: a training step's activations are freed when the step ends, not whenever the garbage collector
 * runs. Tensors that `fn` returns (a tensor, or arrays/objects of them) are kept. Any other tensor made
 * inside must not be used after the scope: keep numbers (`item()`), not tensors. Parameters, gradients
 * (`.grad`) and optimizer state are never scoped storage. Scopes nest: what an inner scope returns belongs
 * to the outer one. On a device without scoped storage (the js backend's), this just calls `fn`.
 */
export function memoryScope<T>(fn: () => T): T {
  const allocator = current.scoped;
  if (allocator === undefined) return fn();
  const frame: Frame = { allocator, blocks: [] };
  frames.push(frame);
  let result: T;
  try {
    result = fn();
  } catch (e) {
    frames.splice(frames.indexOf(frame), 1);
    for (const b of frame.blocks) release(allocator, b);
    throw e;
  }
  frames.splice(frames.indexOf(frame), 1);
  const kept: Storage[] = [];
  heldArrays(result, kept);
  const outer = frames[frames.length - 1];
  for (const b of frame.blocks) {
    const views = kept.filter((v) => inside(v, b));
    if (views.length === 0) release(allocator, b);
    else if (outer !== undefined && outer.allocator === allocator) outer.blocks.push(b);
    else allocator.retain(b, views);
  }
  return result;
}

function release(allocator: ScopedAllocator, b: Storage): void {
  if (poison && b instanceof Float32Array) b.fill(Number.NaN);
  allocator.release(b);
}
