/**
 * Where tensor memory comes from. The js backend uses ordinary typed arrays; a WebAssembly backend
 * installs an allocator that hands out views into its linear memory, so its kernels touch tensors in
 * place. Tensors only ever see a typed array, so nothing above this file knows the difference.
 */

/** A tensor's element type: `float32` values, `int32` ids, `bool` masks (stored as bytes 0/1). */
export type DType = 'float32' | 'int32' | 'bool';
/** The typed array behind each {@link DType}: Float32Array, Int32Array, Uint8Array. */
export type TypedData = Float32Array | Int32Array | Uint8Array;

/** What a backend provides to hand out tensor memory (see {@link setAllocator}). */
export interface Allocator {
  /** Storage for an ordinary float32 tensor of n elements, zero-filled. */
  float32(n: number): Float32Array;
  /**
   * Storage for long-lived tensors (parameters), which a backend may keep where its kernels read
   * them in place. Released by the allocator when the array is garbage-collected.
   */
  persistentFloat32?(n: number): Float32Array;
  /**
   * Storage for tensors made inside `memoryScope`, released explicitly when the scope ends. A
   * backend provides it when it can keep such tensors where its kernels work on them in place.
   */
  scoped?: ScopedAllocator;
}

/** The memory of {@link memoryScope}: blocks handed out during a scope and released at its end. */
export interface ScopedAllocator {
  /** An array the scope owns; zero-filled if `zero`, else holding whatever the block held. */
  alloc(n: number, zero: boolean): Float32Array;
  /** Give a block back (no view of it may be used afterwards). */
  release(block: Float32Array): void;
  /**
   * The scope ends but `views` (the block itself or subarrays of it) are still in use: release
   * the block once every one of them is garbage-collected.
   */
  retain(block: Float32Array, views: Float32Array[]): void;
}

const plainAllocator: Allocator = {
  float32: (n) => new Float32Array(n),
};

let current: Allocator = plainAllocator;

/** Install a backend's allocator (null: ordinary typed arrays again). Tensors made before keep their memory. */
export function setAllocator(a: Allocator | null): void {
  current = a ?? plainAllocator;
}

/**
 * Float storage: zero-filled, or with `zero` false uninitialised where the allocator can skip the
 * fill (inside a memoryScope; the caller then writes every element before reading any).
 */
export function allocFloat32(n: number, zero = true): Float32Array {
  const frame = frames[frames.length - 1];
  if (frame !== undefined && frame.allocator === current.scoped) {
    const a = frame.allocator.alloc(n, zero);
    if (poison && !zero) a.fill(Number.NaN);
    frame.blocks.push(a);
    return a;
  }
  return current.float32(n);
}

interface Frame {
  allocator: ScopedAllocator;
  blocks: Float32Array[];
}
const frames: Frame[] = [];
let poison =
  (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.QKV_POISON_SCOPES === '1';

/**
 * Fill released scope blocks, and uninitialised ones when handed out, with NaN, so that a tensor
 * used after its scope, or an element read before it is written, shows (for tests; the test
 * runner sets QKV_POISON_SCOPES=1).
 */
export function setScopePoisoning(on: boolean): void {
  poison = on;
}

/** Float arrays of the tensors in `value`: a tensor, or arrays and plain objects of them (2 levels). */
function heldArrays(value: unknown, out: Float32Array[], depth = 0): void {
  if (value === null || typeof value !== 'object' || depth > 2) return;
  const data = (value as { data?: unknown }).data;
  if (data instanceof Float32Array && Array.isArray((value as { shape?: unknown }).shape)) {
    out.push(data);
    return;
  }
  if (Array.isArray(value)) for (const v of value) heldArrays(v, out, depth + 1);
  else if (Object.getPrototypeOf(value) === Object.prototype)
    for (const v of Object.values(value)) heldArrays(v, out, depth + 1);
}

function inside(view: Float32Array, block: Float32Array): boolean {
  return (
    view.buffer === block.buffer &&
    view.byteOffset >= block.byteOffset &&
    view.byteOffset + view.byteLength <= block.byteOffset + block.byteLength
  );
}

/**
 * Run `fn` with its float tensors in the backend's own memory (with the wasm backend: WebAssembly
 * memory, so kernels work on them in place, without copies), and release that memory as soon as
 * `fn` returns: a training step's activations are freed when the step ends, not whenever the
 * garbage collector runs. Tensors that `fn` returns (a tensor, or arrays/objects of them) are
 * kept. Any other tensor made inside must not be used after the scope: keep numbers (`item()`),
 * not tensors. Parameters, gradients (`.grad`) and optimizer state are never scoped storage.
 * Scopes nest: what an inner scope returns belongs to the outer one. Without a backend that has
 * scoped storage (the js backend), this just calls `fn`.
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
  const kept: Float32Array[] = [];
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

function release(allocator: ScopedAllocator, b: Float32Array): void {
  if (poison) b.fill(Number.NaN);
  allocator.release(b);
}

const persistentArrays = new WeakSet<Float32Array>();

/** Long-lived float storage (module parameters); ordinary storage unless a backend provides some. */
export function allocPersistentFloat32(n: number): Float32Array {
  if (!current.persistentFloat32) return current.float32(n);
  const a = current.persistentFloat32(n);
  persistentArrays.add(a);
  return a;
}

/** Whether `a` came from allocPersistentFloat32 with a backend's long-lived storage (a parameter, say). */
export function isPersistentStorage(a: unknown): boolean {
  return a instanceof Float32Array && persistentArrays.has(a);
}

/** Whether this allocator keeps persistent storage apart from ordinary arrays. */
export function hasPersistentStorage(): boolean {
  return current.persistentFloat32 !== undefined;
}

/** Storage for n elements of `dtype`, zero-filled, from the current allocator for float32. */
export function allocData(dtype: DType, n: number): TypedData {
  switch (dtype) {
    case 'float32':
      return current.float32(n);
    case 'int32':
      return new Int32Array(n);
    case 'bool':
      return new Uint8Array(n);
  }
}
