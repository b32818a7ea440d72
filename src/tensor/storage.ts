/**
 * Where tensor memory comes from. The js backend uses ordinary typed arrays; a WebAssembly backend
 * installs an allocator that hands out views into its linear memory, so its kernels touch tensors in
 * place. Tensors only ever see a typed array, so nothing above this file knows the difference.
 */
export type DType = 'float32' | 'int32' | 'bool';
export type TypedData = Float32Array | Int32Array | Uint8Array;

export interface Allocator {
  float32(n: number): Float32Array;
  /**
   * Storage for long-lived tensors (parameters), which a backend may keep where its kernels read
   * them in place. Released by the allocator when the array is garbage-collected.
   */
  persistentFloat32?(n: number): Float32Array;
}

const plainAllocator: Allocator = {
  float32: (n) => new Float32Array(n),
};

let current: Allocator = plainAllocator;

export function setAllocator(a: Allocator | null): void {
  current = a ?? plainAllocator;
}

export function allocFloat32(n: number): Float32Array {
  return current.float32(n);
}

/** Long-lived float storage (module parameters); ordinary storage unless a backend provides some. */
export function allocPersistentFloat32(n: number): Float32Array {
  return current.persistentFloat32 ? current.persistentFloat32(n) : current.float32(n);
}

/** Whether this allocator keeps persistent storage apart from ordinary arrays. */
export function hasPersistentStorage(): boolean {
  return current.persistentFloat32 !== undefined;
}

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
