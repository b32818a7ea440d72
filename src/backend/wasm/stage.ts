/**
 * Runs a kernel on arrays that may or may not live in wasm memory. Views into the wasm memory are
 * passed in place (their byteOffset is their address); any other array is copied into one staging
 * block first ('in', 'inout') and copied back after ('out', 'inout'). The staging block is reused
 * from call to call and only grows (to the largest call's need, doubling), so the steady state
 * allocates nothing.
 */
import { alloc, free, isWasmView, memory } from './memory.ts';

export type Mode = 'in' | 'out' | 'inout';
type View = Float32Array | Int32Array | Int8Array | Uint8Array | Uint16Array;
export interface Arg {
  x: View | null;
  mode: Mode;
}

/**
 * The staging block, kept as an address and a length, not as a view: a plain (non-shared) memory
 * detaches its views when it grows (see memory.ts).
 */
let block: { offset: number; bytes: number } | null = null;

function ensure(bytes: number): number {
  if (block === null || block.bytes < bytes) {
    const old = block?.bytes ?? 0;
    if (block) free(new Float32Array(memory.buffer, block.offset, block.bytes / 4));
    block = null;
    const view = alloc(Math.ceil(Math.max(bytes, 2 * old, 1 << 16) / 4), false);
    block = { offset: view.byteOffset, bytes: view.byteLength };
  }
  return block.offset;
}

const align = (n: number) => Math.ceil(n / 16) * 16;

/**
 * Calls fn with the address of every argument (0 for null) followed by the address of
 * `scratchBytes` of scratch space (16-byte aligned, contents undefined).
 */
export function staged<T>(args: readonly Arg[], scratchBytes: number, fn: (addr: number[]) => T): T {
  let need = align(scratchBytes);
  let copies = false; // any argument not in wasm memory (then the heap views below are needed)
  for (const a of args)
    if (a.x && !isWasmView(a.x)) {
      need += align(a.x.byteLength);
      copies = true;
    }
  const base = need > 0 ? ensure(need) : 0;
  const heap = copies ? new Uint8Array(memory.buffer) : null;
  const addr: number[] = [];
  let off = base;
  for (const a of args) {
    const x = a.x;
    if (!x) addr.push(0);
    else if (isWasmView(x)) addr.push(x.byteOffset);
    else {
      addr.push(off);
      if (a.mode !== 'out') heap!.set(new Uint8Array(x.buffer, x.byteOffset, x.byteLength), off);
      off += align(x.byteLength);
    }
  }
  addr.push(off);
  const r = fn(addr);
  if (!copies) return r;
  const after = new Uint8Array(memory.buffer);
  for (let i = 0; i < args.length; i++) {
    const { x, mode } = args[i]!;
    if (x && mode !== 'in' && !isWasmView(x))
      new Uint8Array(x.buffer, x.byteOffset, x.byteLength).set(after.subarray(addr[i]!, addr[i]! + x.byteLength));
  }
  return r;
}

/** Bytes held by the staging block. */
export function stagingBytes(): number {
  return block?.bytes ?? 0;
}
