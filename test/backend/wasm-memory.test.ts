/**
 * The wasm memory's allocator and `isWasmView` when another shared WebAssembly.Memory in the same thread grows
 * (ONNX Runtime Web's threaded build, in the WebGPU benchmark): V8 then hands *every* shared memory of the
 * thread a new buffer object, ours included, without our memory growing. Views made after that are views of
 * a buffer object the allocator never saw grow; they must still count as wasm views after our memory grows
 * (before the fix, freeing one threw "wasm free: … is not an allocated block" at the end of a memoryScope).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, getBackend, memoryScope, setBackend, zeros } from '../../src/index.ts';
import { alloc, bytesInUse, free, isWasmView, memory, memoryShared } from '../../src/backend/wasm/memory.ts';

/** Grow another shared memory of this thread (as ONNX Runtime Web's does) and check that ours got a new buffer. */
function growForeignSharedMemory(): void {
  const before = memory.buffer;
  const other = new WebAssembly.Memory({ initial: 1, maximum: 2, shared: true });
  other.grow(1);
  assert.notEqual(memory.buffer, before, "precondition: V8 renews every shared memory's buffer object on a grow");
  assert.equal(memory.buffer.byteLength, before.byteLength, 'our memory did not grow');
}

/** Floats enough that allocating them must grow the memory. */
const moreThanFree = () => memory.buffer.byteLength / 4;

test('wasm memory: views made after another shared memory grew stay wasm views across our own grow, and free', {
  skip: !memoryShared && 'the memory is not shared here',
}, () => {
  const before = bytesInUse();
  const early = alloc(16);
  growForeignSharedMemory();
  const late = alloc(16);
  const lateBytes = new Int8Array(late.buffer, late.byteOffset, 64); // a view over the same buffer object
  assert.ok(isWasmView(early) && isWasmView(late) && isWasmView(lateBytes));
  const big = alloc(moreThanFree(), false); // grows the memory: a new buffer object again
  assert.notEqual(big.buffer, late.buffer);
  assert.ok(isWasmView(late), 'a view of the renewed buffer object is still a wasm view after our grow');
  assert.ok(isWasmView(lateBytes) && isWasmView(late.subarray(4)) && isWasmView(early) && isWasmView(big));
  assert.ok(!isWasmView(new Float32Array(4)) && !isWasmView(new Float32Array(new SharedArrayBuffer(16))));
  free(big);
  free(late);
  free(early);
  assert.equal(bytesInUse(), before);
  assert.throws(() => free(late), /wasm free: \d+ is not an allocated block/);
  // An ordinary array at an allocated block's offset: refused, and the block stays allocated.
  const block = alloc(4);
  const impostor = new Float32Array(new ArrayBuffer(block.byteOffset + 16), block.byteOffset, 4);
  assert.throws(() => free(impostor), /wasm free: the array at \d+ is not a view of the wasm memory/);
  free(block);
});

test('memoryScope: blocks made after another shared memory grew are released at the end of the scope', {
  skip: !memoryShared && 'the memory is not shared here',
}, async () => {
  // Scopes hold wasm blocks on the wasm backend: made current here on every pass, the one before restored.
  const previous = getBackend().name;
  await setBackend('wasm');
  try {
    scopeAfterForeignGrow();
  } finally {
    await setBackend(previous);
  }
});

function scopeAfterForeignGrow(): void {
  const x = zeros([64]).add(1);
  const before = bytesInUse();
  const sum = memoryScope(() => {
    const a = F.add(x, x); // a block of the buffer object from before
    growForeignSharedMemory();
    const b = F.mul(a, a); // a block of the renewed buffer object
    const n = moreThanFree();
    F.add(zeros([n]), zeros([n])); // a block that grows our memory
    assert.ok(isWasmView(b.dataSync<Float32Array>()), 'scoped storage is wasm memory');
    return b.sum().item();
  });
  assert.equal(sum, 64 * 4);
  assert.equal(bytesInUse(), before);
}
