/**
 * The rule for the cheap kernels (elementwise arithmetic, dropout's mask, layout, embedding,
 * Adam): they run in wasm only when every float array is already a view into wasm memory
 * (`isWasmView`: a `memoryScope`'s activations, parameters, gradients and Adam state under this
 * backend); otherwise they call their js twin, since copying would cost as much as the work.
 */
import { isWasmView } from './memory.ts';

/** How many calls of these kernels ran in wasm and how many went to the js twin (for tests). */
export const routeCounts = { wasm: 0, js: 0 };

/** Whether to run the wasm kernel: there is work (`nonEmpty`) and every array is a wasm view. */
export function inWasm(nonEmpty: boolean, ...xs: Float32Array[]): boolean {
  let ok = nonEmpty;
  for (const x of xs) if (ok && !isWasmView(x)) ok = false;
  if (ok) routeCounts.wasm++;
  else routeCounts.js++;
  return ok;
}

/** All arrays were wasm views, but the layout has no wasm kernel: count the call as the twin's. */
export function layoutToJs(): void {
  routeCounts.wasm--;
  routeCounts.js++;
}
