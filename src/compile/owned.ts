/**
 * Storage freed by its owner at once (issue 62): what a capture's plan and the static KV caches allocate.
 */
import type { Device, DType, Storage } from '../tensor/storage.ts';

/**
 * Long-lived, zero-filled storage that its owner frees at once with {@link releaseAll} (a capture's plan, a static
 * KV cache), not whenever the garbage collector runs: the wasm backend's long-lived blocks are freed only when
 * collected, and a translation of many batches, each with its caches and captures, would fill the wasm memory
 * first. Float32 storage comes from the device's scoped allocator where it has one (wasm memory: kernels use
 * it in place), other storage from `device.alloc`. Dropped without releaseAll, it is freed once its owner is
 * collected.
 */
export class OwnedStorage {
  private readonly blocks: Blocks;

  constructor(
    /** The device it allocates on. */
    readonly device: Device,
    /** Whose storage it is: once the owner is collected, the blocks are freed (if releaseAll was not called). */
    private readonly owner?: object,
  ) {
    this.blocks = { device, scoped: new Set(), other: new Set() };
    if (owner) collected.register(owner, this.blocks, owner);
  }

  /** n elements of dtype, zero-filled. */
  alloc(dtype: DType, n: number): Storage {
    const scoped = this.device.scoped;
    if (dtype === 'float32' && scoped) {
      const s = scoped.alloc(n, true) as unknown as Storage;
      this.blocks.scoped.add(s);
      return s;
    }
    const s = this.device.alloc(dtype, n, { zero: true, persistent: true });
    this.blocks.other.add(s);
    return s;
  }

  /** Free every block; none may be used afterwards. */
  releaseAll(): void {
    if (this.owner) collected.unregister(this.owner);
    freeBlocks(this.blocks);
  }
}

/** What an {@link OwnedStorage} holds: the blocks of its device's scoped allocator, and the others. */
interface Blocks {
  device: Device;
  scoped: Set<Storage>;
  other: Set<Storage>;
}

function freeBlocks(b: Blocks): void {
  for (const s of b.scoped) b.device.scoped!.release(s);
  for (const s of b.other) b.device.free(s);
  b.scoped.clear();
  b.other.clear();
}

const collected = new FinalizationRegistry<Blocks>(freeBlocks);
