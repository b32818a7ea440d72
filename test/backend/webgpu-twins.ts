/**
 * Helpers for the tests that run each webgpu kernel family against its js twin
 * (test/backend/webgpu-<family>.once.test.ts, mirroring src/backend/webgpu/<family>.ts). Under Node the GPU is
 * Dawn (the npm package `webgpu`); without a GPU, on Chromium's SwiftShader (scripts/test.mjs sets
 * VK_ICD_FILENAMES when it is unset). A machine with neither fails these tests, naming what to install.
 */
import assert from 'node:assert/strict';
import { type HostBackend, hostBackend } from '../../src/backend/backend.ts';
import { loadErrorOf } from '../../src/backend/info.ts';
import { jsBackend as jsB } from '../../src/backend/js/index.ts';
import type { GpuContext } from '../../src/backend/webgpu/context.ts';
import { webgpuDevice } from '../../src/backend/webgpu/device.ts';
import { acquireContext } from '../../src/backend/webgpu/index.ts';
import type { DType, Storage, TypedData } from '../../src/tensor/storage.ts';
import { assertClose } from '../helpers/assert.ts';
import { missingToolMessage, hasTool } from '../helpers/tools.ts';

export const js: HostBackend = hostBackend(jsB);

if (!hasTool('vulkan')) assert.fail(missingToolMessage('vulkan'));
const acquired = await acquireContext();
if (acquired === null) assert.fail(`no WebGPU device: ${loadErrorOf('webgpu')}`);
/** The GPU the family under test runs on. */
export const ctx: GpuContext = acquired;
export const gpuDevice = webgpuDevice(ctx);

/** GPU storage as the kernels take it: any dtype's handle (the tests pick the right one). */
// biome-ignore lint/suspicious/noExplicitAny: a handle of whichever dtype the kernel under test takes.
export type AnyStorage = Storage<any>;

/** Host values on the GPU. */
export function up(values: TypedData, dtype: DType = 'float32'): AnyStorage {
  return gpuDevice.fromHost(values, dtype);
}

/** n values of `dtype` back from the GPU. */
export function down<T extends TypedData = Float32Array>(s: Storage, n: number, dtype: DType = 'float32'): Promise<T> {
  return gpuDevice.read(s, dtype, n) as Promise<T>;
}

/** GPU storage holding a copy of `init` (an output pre-filled, to catch cells a kernel leaves unwritten). */
export function out(init: Float32Array): AnyStorage {
  return up(init.slice());
}

/**
 * The GPU is float32 with WGSL's exp/log (3 ULP + 2|x| ULP) and no float64 sums: agreement with the js twin
 * to 1e-5 + 1e-5·|js| is asked unless a test says why it needs a wider bound.
 */
export function closeToJs(actual: Float32Array, expected: Float32Array, what: string, atol = 1e-5, rtol = 1e-5) {
  assertClose(actual, expected, what, atol, rtol);
}

/** Bit-for-bit equality (NaN matches NaN, −0 ≠ 0). */
export function sameBits(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++)
    if (!Object.is(actual[i], expected[i]))
      assert.fail(`${what}: element ${i} is ${actual[i]}, expected ${expected[i]}`);
}
