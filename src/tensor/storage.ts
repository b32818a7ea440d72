/**
 * Where tensor memory comes from. The js backend uses ordinary typed arrays; a WebAssembly backend
 * installs an allocator that hands out views into its linear memory, so its kernels touch tensors in
 * place. Tensors only ever see a typed array, so nothing above this file knows the difference.
 */
export type DType = 'float32' | 'int32' | 'bool';
export type TypedData = Float32Array | Int32Array | Uint8Array;

export interface Allocator {
  float32(n: number): Float32Array;
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
