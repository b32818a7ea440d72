/**
 * The wasm backend's linear memory, and a first-fit allocator for float32 arrays in it.
 *
 * The memory is created here (not by a module) and imported by every wasm kernel module, so tensors
 * can live in it and kernels run on them in place, without copies.
 *
 * It is a *shared* memory with a fixed maximum. A plain (non-shared) WebAssembly.Memory detaches its
 * ArrayBuffer on every grow: every Float32Array handed out before the grow would suddenly have length
 * 0, and each tensor would have to re-derive its view after any allocation anywhere. A shared memory
 * is backed by a SharedArrayBuffer, which can never be detached: the engine reserves address space
 * for `maximum` up front and growing only commits more of it in place, so existing views stay valid,
 * pointing at the same bytes. Their length does not change, which is what we want for fixed-size tensors. Two
 * consequences, both handled here: `memory.buffer` returns a *new* SharedArrayBuffer object after
 * each grow (so "is this view in wasm memory?" must check every buffer object seen, see
 * `isWasmView`), and the maximum must be declared (4 GiB, the wasm32 limit; address space only).
 * V8 also renews the buffer object of *every* shared memory of a thread when any one of them grows
 * (ONNX Runtime Web's threaded build in the same page): ours then changes without growing, so the
 * buffer objects seen are recorded where views are made (`alloc`), not only where this file grows.
 * In browsers, SharedArrayBuffer needs cross-origin isolation (COOP/COEP). Without it the memory
 * is a plain one (`memoryShared` false): the kernels still run, single-threaded (workers need the
 * shared memory), and since a plain memory's views die on every grow, nothing long-lived holds a
 * view into it: tensors stay ordinary arrays, copied in and out around each kernel (stage.ts),
 * and the backend's own blocks are kept as addresses.
 */

export const PAGE_BYTES = 65536;
/** wasm32 limit; must match `--maximumMemory` in scripts/build-wasm.mjs. */
export const MAX_PAGES = 65536;
/**
 * Bytes at the bottom of the memory never handed out: the kernel modules' static data (checked
 * against their `heapBase()` at load) and address 0, so no array ever sits at the null pointer.
 */
export const RESERVED_BYTES = PAGE_BYTES;
const ALIGN = 16;

/**
 * Whether a shared memory may be used here: SharedArrayBuffer exists and the page, if it is one,
 * is cross-origin isolated (Node has no `crossOriginIsolated`). Some browsers still create a shared
 * WebAssembly.Memory on a page that is not isolated; it is not used there, so that every browser
 * takes the same path.
 */
function sharedAllowed(): boolean {
  return (
    typeof SharedArrayBuffer !== 'undefined' &&
    (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated !== false
  );
}

function createMemory(): { memory: WebAssembly.Memory; shared: boolean } | null {
  if (sharedAllowed()) {
    try {
      return { memory: new WebAssembly.Memory({ initial: 16, maximum: MAX_PAGES, shared: true }), shared: true };
    } catch {
      // Fall through to a plain memory.
    }
  }
  try {
    return { memory: new WebAssembly.Memory({ initial: 16, maximum: MAX_PAGES }), shared: false };
  } catch {
    return null; // no WebAssembly
  }
}

const created = createMemory();
/** Whether the memory could be created; if not, the wasm backend does not load. */
export const memoryAvailable = created !== null;
/**
 * Whether the memory is shared (a SharedArrayBuffer): then tensors may live in it and worker
 * threads run on it. If not (a page without cross-origin isolation), kernels run single-threaded
 * on arrays copied in and out.
 */
export const memoryShared = created?.shared ?? false;
/** The memory (undefined, never touched, when `memoryAvailable` is false). */
export const memory: WebAssembly.Memory = created?.memory as WebAssembly.Memory;

/**
 * Every buffer object of the memory that a view was made on: the start's, each grow's, and the ones V8 hands
 * out when another shared memory of this thread grows (see the header). A WeakSet: the renewals are not
 * bounded by our grows, and a buffer object no view uses any more may go.
 */
const buffers = new WeakSet<ArrayBufferLike>(memoryAvailable ? [memory.buffer] : []);

/**
 * The buffer object alloc last made a view on: a view of it is a wasm view without reading `memory.buffer`,
 * whose getter costs ~100 ns on a shared memory (isWasmView runs several times per kernel).
 */
let lastBuffer: ArrayBufferLike | null = memoryAvailable ? memory.buffer : null;

/** `memory.buffer` now, recorded as a buffer object of the memory (for isWasmView). */
function currentBuffer(): ArrayBufferLike {
  const b = memory.buffer;
  if (b !== lastBuffer) {
    lastBuffer = b;
    buffers.add(b);
  }
  return b;
}

/** Whether `x` is a view into the wasm memory (its byteOffset is then its address). */
export function isWasmView(x: ArrayBufferView): boolean {
  const b = x.buffer;
  if (b === lastBuffer) return true;
  // A shared memory's views are views of a SharedArrayBuffer: an ordinary array is none.
  if (!memoryAvailable || (memoryShared && !(b instanceof SharedArrayBuffer))) return false;
  // A view made on an earlier buffer object (before a grow, or before a renewal): still valid.
  if (memoryShared && buffers.has(b)) return true;
  // A plain memory's old buffers are detached on grow: only the current one's views are live.
  return b === currentBuffer();
}

interface Block {
  offset: number;
  size: number;
}

/** Free blocks, sorted by offset, never adjacent (coalesced on free). */
const freeList: Block[] = memoryAvailable
  ? [{ offset: RESERVED_BYTES, size: memory.buffer.byteLength - RESERVED_BYTES }]
  : [];
/** Allocated blocks: offset → size in bytes (rounded up to ALIGN). */
const allocated = new Map<number, number>();
/**
 * Every byte from here up has never been in a block handed out, so it still holds the zeros that a new
 * memory and memory.grow give: a zero-filled block needs filling only below this. Pages never written are
 * never made resident, so a model built to be loaded (nn/init's withoutInit) costs no memory for weights
 * that are replaced before they are written (a quantized folder's float32 shell).
 */
let untouched = RESERVED_BYTES;
let inUse = 0;

/** Grow the memory so that a free block of at least `bytes` exists at its end; at least doubles. */
function grow(bytes: number): void {
  const end = memory.buffer.byteLength;
  const last = freeList[freeList.length - 1];
  const tail = last !== undefined && last.offset + last.size === end ? last.size : 0;
  const needPages = Math.ceil((bytes - tail) / PAGE_BYTES);
  const havePages = end / PAGE_BYTES;
  const room = MAX_PAGES - havePages;
  if (needPages > room) {
    throw new RangeError(
      `wasm memory: cannot allocate ${bytes} bytes (${end} in memory, ` +
        `${inUse} in use, maximum ${MAX_PAGES * PAGE_BYTES})`,
    );
  }
  const pages = Math.min(room, Math.max(needPages, havePages));
  memory.grow(pages);
  const added = pages * PAGE_BYTES;
  if (tail > 0) last!.size += added;
  else freeList.push({ offset: end, size: added });
}

/**
 * A Float32Array of n elements in wasm memory, 16-byte aligned, zero-filled unless `zero` is false
 * (then it holds whatever the block held before). Release it with `free`.
 */
export function alloc(n: number, zero = true): Float32Array {
  if (!memoryAvailable) throw new Error('wasm alloc: this engine cannot create a WebAssembly.Memory');
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`wasm alloc: bad length ${n}`);
  const size = Math.max(ALIGN, Math.ceil((n * 4) / ALIGN) * ALIGN);
  let i = freeList.findIndex((b) => b.size >= size);
  if (i < 0) {
    grow(size);
    i = freeList.length - 1;
  }
  const block = freeList[i]!;
  const offset = block.offset;
  if (block.size === size) freeList.splice(i, 1);
  else {
    block.offset += size;
    block.size -= size;
  }
  allocated.set(offset, size);
  inUse += size;
  const view = new Float32Array(currentBuffer(), offset, n);
  // Freed blocks keep old contents, and tensors expect fresh storage to be zero (new memory is).
  if (zero && offset < untouched) view.fill(0, 0, Math.min(n, (untouched - offset) / 4));
  untouched = Math.max(untouched, offset + size);
  return view;
}

/** Release an array returned by `alloc` (a subarray of one is rejected). */
export function free(view: Float32Array): void {
  const offset = view.byteOffset;
  const size = allocated.get(offset);
  if (size === undefined)
    throw new Error(`wasm free: ${offset} is not an allocated block (double free, or not from alloc)`);
  if (!isWasmView(view)) throw new Error(`wasm free: the array at ${offset} is not a view of the wasm memory`);
  allocated.delete(offset);
  inUse -= size;
  // Insert sorted, merging with the neighbours it touches.
  let lo = 0;
  let hi = freeList.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (freeList[mid]!.offset < offset) lo = mid + 1;
    else hi = mid;
  }
  const prev = freeList[lo - 1];
  const next = freeList[lo];
  if (prev !== undefined && prev.offset + prev.size === offset) {
    prev.size += size;
    if (next !== undefined && prev.offset + prev.size === next.offset) {
      prev.size += next.size;
      freeList.splice(lo, 1);
    }
  } else if (next !== undefined && offset + size === next.offset) {
    next.offset = offset;
    next.size += size;
  } else {
    freeList.splice(lo, 0, { offset, size });
  }
}

/** Bytes currently allocated (each block rounded up to 16). */
export function bytesInUse(): number {
  return inUse;
}
