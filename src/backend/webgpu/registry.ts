/// <reference types="@webgpu/types" />
import { KernelTable } from '../backend.ts';
import type { GpuContext } from './context.ts';

/** The webgpu backend's kernels: each family file (gemm.ts, softmax.ts, ...) registers its own. */
export const webgpuKernels = new KernelTable('webgpu');

let current: GpuContext | null = null;

/** The GPU the kernels run on (set once the backend has loaded). */
export function gpu(): GpuContext {
  if (current === null) throw new Error('webgpu: the backend has not loaded (await setBackend("webgpu"))');
  return current;
}

/** Called by the loader (index.ts) when a device is acquired. */
export function setGpu(ctx: GpuContext): void {
  current = ctx;
}
