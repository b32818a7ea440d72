import { type HostKernels, KernelTable } from '../backend.ts';

/** The js backend's kernels: each family file (gemm.ts, softmax.ts, ...) registers its own. */
export const jsKernels = new KernelTable<HostKernels>('js');
