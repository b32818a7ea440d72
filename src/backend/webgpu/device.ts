/**
 * The webgpu device: tensors in GPU buffers. float32 and int32 are 4 bytes an element; bool and uint8 are
 * widened to one 32-bit word an element (WGSL has no 8-bit type, and masks are small), int8, q4 and float16
 * stay packed (4, 8 and 2 values a word: quantized weights and their half scales keep their size). Reads are
 * asynchronous only: there is no `readSync`, so `t.dataSync()` of a GPU tensor throws naming `await t.data()`.
 */
/// <reference types="@webgpu/types" />
import type { Device, DType, ScopedAllocator, Storage, TypedData } from '../../tensor/storage.ts';
import { type GpuBuf, type GpuContext, grid, u } from './context.ts';

/** Bytes the device keeps for n elements of dtype. */
export function gpuBytes(dtype: DType, n: number): number {
  switch (dtype) {
    case 'int8':
      return n;
    case 'q4':
      return Math.ceil(n / 2);
    case 'float16':
      return 2 * n;
    default:
      return 4 * n;
  }
}

/** Whether the device keeps dtype as one 32-bit word an element. */
export function wordSized(dtype: DType): boolean {
  return dtype !== 'int8' && dtype !== 'q4' && dtype !== 'float16';
}

/** The handle of storage (for the backend's kernels). */
export function buf(s: Storage): GpuBuf {
  return s as unknown as GpuBuf;
}

const FILL = /* wgsl */ `
struct P { n: u32, offset: u32, bits: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> x: array<u32>;
const WG = 64u;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i < p.n) { x[p.offset + i] = p.bits; }
}`;

/** Host values in the device's layout (bool and uint8 widened to words). */
function toDevice(values: TypedData, dtype: DType): ArrayBufferView {
  if (dtype === 'bool' || dtype === 'uint8') return Uint32Array.from(values as Uint8Array);
  // An odd number of halves fills half a word: padded with a zero half to the whole word.
  if (dtype === 'float16' && values.length % 2 === 1) {
    const padded = new Uint16Array(values.length + 1);
    padded.set(values as Uint16Array);
    return padded;
  }
  return values;
}

/** Device bytes back as the dtype's host array (n elements). */
function toHost(bytes: ArrayBuffer, dtype: DType, n: number): TypedData {
  switch (dtype) {
    case 'float32':
      return new Float32Array(bytes, 0, n);
    case 'int32':
      return new Int32Array(bytes, 0, n);
    case 'bool':
    case 'uint8':
      return Uint8Array.from(new Uint32Array(bytes, 0, n));
    case 'int8':
      return new Int8Array(bytes, 0, n);
    case 'q4':
      return new Uint8Array(bytes, 0, Math.ceil(n / 2));
    case 'float16':
      return new Uint16Array(bytes, 0, n);
  }
}

/** The webgpu Device over a context. */
export function webgpuDevice(ctx: GpuContext): Device {
  const persistent = new WeakSet<object>();
  const scoped: ScopedAllocator = {
    alloc: (n, zero) => ctx.alloc(4 * n, zero) as never,
    release: (block) => ctx.release(buf(block)),
    // A block the scope's result still uses: the garbage collector releases it (the handle is registered).
    retain: () => {},
  };
  return {
    name: 'webgpu',
    alloc(dtype, n, options) {
      const h = ctx.alloc(gpuBytes(dtype, n), options?.zero ?? true);
      h.packed = !wordSized(dtype);
      h.half = dtype === 'float16';
      if (options?.persistent) persistent.add(h);
      return h as never;
    },
    fromHost(values, dtype) {
      const data = toDevice(values, dtype);
      const h = ctx.alloc(data.byteLength, false);
      h.packed = !wordSized(dtype);
      h.half = dtype === 'float16';
      ctx.write(h, data, 0, true);
      return h as never;
    },
    write(storage, dtype, values, offset = 0) {
      const at = gpuBytes(dtype, offset);
      if (at % 4 !== 0)
        throw new Error(`webgpu: writing ${dtype} values at element ${offset}: the offset must fall on a 4-byte word`);
      ctx.write(buf(storage), toDevice(values, dtype), at);
    },
    fill(storage, dtype, value, n, offset = 0) {
      const h = buf(storage);
      if (value === 0 && gpuBytes(dtype, offset) % 4 === 0 && gpuBytes(dtype, n) % 4 === 0) {
        ctx.clear(h, gpuBytes(dtype, offset), gpuBytes(dtype, n));
        return;
      }
      if (!wordSized(dtype)) throw new Error(`webgpu: fill of ${dtype} storage supports only 0 on whole words`);
      const bits = dtype === 'float32' ? new Uint32Array(new Float32Array([value]).buffer)[0] : (value | 0) >>> 0;
      const p = ctx.program('fill', FILL);
      ctx.run(p, [h], [u(n), u(offset), u(bits)], grid(n, 64));
    },
    copy(src, dst, dtype, n) {
      ctx.copy(buf(src), 0, buf(dst), 0, Math.ceil(gpuBytes(dtype, n) / 4) * 4);
    },
    async read(storage, dtype, n) {
      return toHost(await ctx.read(buf(storage), gpuBytes(dtype, n)), dtype, n);
    },
    free: (storage) => ctx.release(buf(storage)),
    scoped,
    isPersistent: (s) => persistent.has(s as object),
  };
}
