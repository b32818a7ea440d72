import { type HostKernels, KernelTable } from '../backend.ts';

/**
 * The wasm backend's kernels: each family file (gemm.ts, softmax.ts, ...) registers its own, its
 * wasm kernels and, for what it has no wasm kernel for, its js twin by name.
 */
export const wasmKernels = new KernelTable<HostKernels>('wasm');
