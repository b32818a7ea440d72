/**
 * The WebGPU backend's machinery beneath its kernels: buffers (size-bucketed pools, released by scope or by
 * the garbage collector), one open command encoder that records dispatches and copies in order, the
 * kernels' parameters in one uniform ring, pipelines cached by their source, and reads back through staging
 * buffers. The rules that keep it correct (docs/design-backends.md, "The WebGPU backend"):
 *
 * - A freed buffer returns to the pool only once the commands that used it are submitted; the pool never
 *   hands out a buffer an unsubmitted command still refers to.
 * - `queue.writeBuffer` runs before every command not yet submitted, so a write into storage that recorded
 *   commands use submits them first; a write into a buffer fresh from the pool needs no submit.
 * - Parameters are staged on the host and written into the ring just before the submit that reads them.
 * - A validation error (reported asynchronously by WebGPU) fails the next read, naming it.
 */
/// <reference types="@webgpu/types" />

/** What stays behind when a handle is collected: the buffer and whether it was released already. */
interface Held {
  buffer: GPUBuffer;
  cap: number;
  freed: boolean;
}

/** The storage handle of the webgpu device: a GPU buffer holding `bytes` bytes of one tensor. */
export interface GpuBuf {
  readonly buffer: GPUBuffer;
  /** Bytes in use (a multiple of 4). */
  readonly bytes: number;
  readonly held: Held;
  /** Packed int8/q4 values or float16 halves (set by the device), which the word kernels (layout) refuse. */
  packed: boolean;
  /** float16 storage, two halves a word (set by the device): q4 scales, which the q4 kernels read as halves. */
  half?: boolean;
}

/** A compute kernel: WGSL with its params (if any) at @binding(0) and storage buffers at 1, 2, ... */
export interface Program {
  readonly key: string;
  readonly pipeline: GPUComputePipeline;
  /** Whether the WGSL declares a `var<uniform>` at binding 0. */
  readonly hasParams: boolean;
  /** For each storage binding (from 1), whether the kernel writes it. */
  readonly writable: readonly boolean[];
}

/** Values of a kernel's parameter struct, each one 32-bit scalar, in the struct's order. */
export type Param = { u: number } | { i: number } | { f: number };
export const u = (v: number): Param => ({ u: v });
export const i = (v: number): Param => ({ i: v });
export const f = (v: number): Param => ({ f: v });

/** Bytes per parameter slot of the ring (the minimum uniform offset alignment); at most 64 parameters. */
const SLOT = 256;
const SLOTS = 256;
/** Dispatches recorded before the encoder is submitted on its own, so the GPU starts while more are recorded. */
const SUBMIT_EVERY = 64;
/** Most workgroups per grid dimension (WebGPU's default limit). */
export const MAX_GROUPS = 65535;

/** A buffer's size class: multiples of 256 B up to 64 KiB, then steps of 2^(1/4) (at most 19% unused). */
export function bucket(bytes: number): number {
  const b = Math.max(256, Math.ceil(bytes / 256) * 256);
  if (b <= 65536) return b;
  const step = 2 ** (Math.ceil(Math.log2(b) * 4) / 4);
  return Math.ceil(step / 256) * 256;
}

export class GpuContext {
  readonly queue: GPUQueue;
  private readonly pool = new Map<number, GPUBuffer[]>();
  /** Staging buffers of reads, by size class, reused (a training loop reads its loss every step). */
  private readonly staging = new Map<number, GPUBuffer[]>();
  private pendingFree: GPUBuffer[] = [];
  private encoder: GPUCommandEncoder | null = null;
  private pass: GPUComputePassEncoder | null = null;
  private recorded = 0;
  private readonly ring: GPUBuffer;
  private readonly staged = new ArrayBuffer(SLOT * SLOTS);
  private readonly stagedU = new Uint32Array(this.staged);
  private readonly stagedI = new Int32Array(this.staged);
  private readonly stagedF = new Float32Array(this.staged);
  private slots = 0;
  private readonly programs = new Map<string, Program>();
  private error: string | null = null;
  private readonly collected = new FinalizationRegistry<Held>((held) => this.free(held));
  /**
   * Bytes in buffers made and not destroyed (in use or pooled), and in use now; and counts of the work handed to
   * the GPU: dispatches recorded, command buffers submitted (issue 62 counts them per decoding step).
   */
  readonly stats = { allocatedBytes: 0, liveBytes: 0, buffersCreated: 0, dispatches: 0, submits: 0 };

  constructor(
    readonly device: GPUDevice,
    readonly adapter: string,
  ) {
    this.queue = device.queue;
    this.ring = device.createBuffer({ size: SLOT * SLOTS, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    device.addEventListener('uncapturederror', (e) => {
      this.error ??= (e as GPUUncapturedErrorEvent).error.message;
    });
  }

  /** A buffer of at least `bytes` (rounded up to 4), zero-filled in order with the recorded work if `zero`. */
  alloc(bytes: number, zero: boolean): GpuBuf {
    const size = Math.ceil(bytes / 4) * 4;
    const cap = bucket(size);
    const buffer =
      this.pool.get(cap)?.pop() ??
      this.create(cap, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST);
    const held: Held = { buffer, cap, freed: false };
    const h: GpuBuf = { buffer, bytes: size, held, packed: false };
    this.collected.register(h, held, held);
    this.stats.liveBytes += cap;
    if (zero) this.clear(h, 0, size);
    return h;
  }

  private create(size: number, usage: number): GPUBuffer {
    this.stats.allocatedBytes += size;
    this.stats.buffersCreated++;
    return this.device.createBuffer({ size, usage });
  }

  /** Release a buffer now (its handle must not be used again). */
  release(h: GpuBuf): void {
    this.collected.unregister(h.held);
    this.free(h.held);
  }

  private free(held: Held): void {
    if (held.freed) return;
    held.freed = true;
    this.stats.liveBytes -= held.cap;
    if (this.encoder !== null) this.pendingFree.push(held.buffer);
    else this.toPool(held.buffer);
  }

  private toPool(b: GPUBuffer): void {
    const list = this.pool.get(b.size);
    if (list) list.push(b);
    else this.pool.set(b.size, [b]);
  }

  /** Destroy every pooled buffer (memory no tensor holds). */
  trim(): void {
    for (const list of this.pool.values())
      for (const b of list) {
        this.stats.allocatedBytes -= b.size;
        b.destroy();
      }
    this.pool.clear();
  }

  private enc(): GPUCommandEncoder {
    this.encoder ??= this.device.createCommandEncoder();
    return this.encoder;
  }

  private endPass(): void {
    if (this.pass !== null) {
      this.pass.end();
      this.pass = null;
    }
  }

  /** Host bytes into `h` at `byteOffset`, after every recorded command (submitted first if any). */
  write(h: GpuBuf, data: ArrayBufferView, byteOffset = 0, fresh = false): void {
    if (!fresh && this.encoder !== null) this.flush();
    const view = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    // Host memory may be shared (the wasm backend's): hand WebGPU a plain copy of such bytes.
    const bytes = (view.buffer instanceof ArrayBuffer ? view : view.slice()) as Uint8Array<ArrayBuffer>;
    if (bytes.byteLength % 4 === 0) this.queue.writeBuffer(h.buffer, byteOffset, bytes);
    else {
      const padded = new Uint8Array(Math.ceil(bytes.byteLength / 4) * 4);
      padded.set(bytes);
      this.queue.writeBuffer(h.buffer, byteOffset, padded);
    }
  }

  /** Zero bytes [byteOffset, byteOffset + bytes) of h (multiples of 4), in order. */
  clear(h: GpuBuf, byteOffset: number, bytes: number): void {
    if (bytes === 0) return;
    this.endPass();
    this.enc().clearBuffer(h.buffer, byteOffset, bytes);
    this.count();
  }

  /** Copy bytes (multiples of 4) between buffers, in order. */
  copy(src: GpuBuf, srcOffset: number, dst: GpuBuf, dstOffset: number, bytes: number): void {
    if (bytes === 0) return;
    this.endPass();
    this.enc().copyBufferToBuffer(src.buffer, srcOffset, dst.buffer, dstOffset, bytes);
    this.count();
  }

  /** The compiled kernel for `code` (compiled once, cached by `key`). */
  program(key: string, code: string): Program {
    const cached = this.programs.get(key);
    if (cached) return cached;
    const module = this.device.createShaderModule({ code });
    const pipeline = this.device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
    const writable: boolean[] = [];
    for (const m of code.matchAll(/@binding\((\d+)\)\s*var<storage,\s*(read_write|read)>/g))
      if (Number(m[1]) > 0) writable[Number(m[1]) - 1] = m[2] === 'read_write';
    const p: Program = { key, pipeline, hasParams: /var<uniform>/.test(code), writable };
    this.programs.set(key, p);
    return p;
  }

  /**
   * Record one dispatch of `p` over `groups` workgroups, with `buffers` at bindings 1, 2, ... and `params`
   * at binding 0. A buffer the kernel writes that is also bound as another binding is given a copy of
   * itself for the reading binding (WebGPU refuses a writable buffer bound twice).
   */
  run(p: Program, buffers: readonly GpuBuf[], params: readonly Param[], groups: readonly [number, number?, number?]) {
    const [x, y = 1, z = 1] = groups;
    if (x === 0 || y === 0 || z === 0) return;
    const bound = this.unaliased(p, buffers);
    const entries: GPUBindGroupEntry[] = bound.map((b, k) => ({ binding: k + 1, resource: { buffer: b.buffer } }));
    if (p.hasParams) {
      if (this.slots === SLOTS) this.flush();
      const base = (this.slots * SLOT) / 4;
      if (params.length > SLOT / 4) throw new Error(`webgpu: kernel ${p.key} has more than ${SLOT / 4} parameters`);
      params.forEach((v, k) => {
        if ('u' in v) this.stagedU[base + k] = v.u;
        else if ('i' in v) this.stagedI[base + k] = v.i;
        else this.stagedF[base + k] = v.f;
      });
      entries.push({ binding: 0, resource: { buffer: this.ring, offset: this.slots * SLOT, size: SLOT } });
      this.slots++;
    }
    const group = this.device.createBindGroup({ layout: p.pipeline.getBindGroupLayout(0), entries });
    this.enc();
    this.pass ??= this.encoder!.beginComputePass();
    this.pass.setPipeline(p.pipeline);
    this.pass.setBindGroup(0, group);
    this.pass.dispatchWorkgroups(x, y, z);
    this.stats.dispatches++;
    for (const b of bound) if (!buffers.includes(b)) this.release(b);
    this.count();
  }

  private unaliased(p: Program, buffers: readonly GpuBuf[]): GpuBuf[] {
    const out = buffers.slice();
    for (let a = 0; a < out.length; a++) {
      for (let b = 0; b < out.length; b++) {
        if (a === b || out[a].buffer !== out[b].buffer || !p.writable[a] || p.writable[b]) continue;
        const copy = this.alloc(out[b].bytes, false);
        this.copy(out[b], 0, copy, 0, out[b].bytes);
        out[b] = copy;
      }
    }
    return out;
  }

  private count(): void {
    if (++this.recorded >= SUBMIT_EVERY) this.flush();
  }

  /** Submit everything recorded; freed buffers return to the pool. */
  flush(): void {
    this.endPass();
    if (this.slots > 0) {
      this.queue.writeBuffer(this.ring, 0, this.staged, 0, this.slots * SLOT);
      this.slots = 0;
    }
    if (this.encoder !== null) {
      this.queue.submit([this.encoder.finish()]);
      this.stats.submits++;
      this.encoder = null;
    }
    this.recorded = 0;
    for (const b of this.pendingFree) this.toPool(b);
    this.pendingFree = [];
  }

  /** The first `bytes` of h, once every recorded command has run. */
  async read(h: GpuBuf, bytes: number): Promise<ArrayBuffer> {
    if (bytes === 0) {
      await this.sync();
      return new ArrayBuffer(0);
    }
    const size = Math.max(4, Math.ceil(bytes / 4) * 4);
    const cap = bucket(size);
    const staging = this.staging.get(cap)?.pop() ?? this.create(cap, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    this.endPass();
    this.enc().copyBufferToBuffer(h.buffer, 0, staging, 0, size);
    this.flush();
    try {
      await staging.mapAsync(GPUMapMode.READ);
    } catch (e) {
      throw new Error(`webgpu: reading a tensor back failed: ${this.error ?? (e as Error).message}`);
    }
    this.failIfError();
    const out = staging.getMappedRange(0, size).slice(0, bytes);
    staging.unmap();
    const list = this.staging.get(cap);
    if (list) list.push(staging);
    else this.staging.set(cap, [staging]);
    return out;
  }

  /** Throws the first validation error WebGPU reported (asynchronously), naming it. */
  failIfError(): void {
    if (this.error !== null) {
      const e = this.error;
      this.error = null;
      throw new Error(`webgpu: a kernel was refused by the GPU: ${e}`);
    }
  }

  /** Resolves when every submitted command has run (and reports any error). */
  async sync(): Promise<void> {
    this.flush();
    await this.queue.onSubmittedWorkDone();
    this.failIfError();
  }
}

/** Workgroups covering `n` threads of groups of `wg`, folded into y past 65,535: (x, y). */
export function grid(n: number, wg: number): [number, number] {
  const groups = Math.ceil(n / wg);
  if (groups <= MAX_GROUPS) return [groups, 1];
  const y = Math.ceil(groups / MAX_GROUPS);
  return [Math.ceil(groups / y), y];
}

/**
 * WGSL for the flat index of a thread of a grid made by {@link grid} (`gid` the global invocation id, `nwg`
 * the number of workgroups, `WG` the workgroup size).
 */
export const FLAT_INDEX = 'gid.x + gid.y * nwg.x * WG';
