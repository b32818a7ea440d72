/**
 * Attention maps cross from the model worker to the page as Float32Array rows on one buffer, transferred. As
 * nested arrays of numbers, a 120-word translation's maps (about a million numbers) took the page's main thread
 * over 100 ms to receive: structured cloning builds every number again. The values are float32 from the model
 * either way, so the page reads the same numbers; the views only index the rows and read their length, as they
 * do an array's.
 */
import type { AttentionStack } from '../../src/viz/attention-data.ts';

/** `stack` with its rows as views on one new buffer, pushed onto `transfer` (postMessage's transfer list). */
export function typedRows(stack: AttentionStack, transfer: Transferable[]): AttentionStack {
  let n = 0;
  for (const layer of stack) for (const head of layer) for (const row of head) n += row.length;
  const data = new Float32Array(n);
  let at = 0;
  const out = stack.map((layer) =>
    layer.map((head) =>
      head.map((row) => {
        data.set(row, at);
        at += row.length;
        return data.subarray(at - row.length, at);
      }),
    ),
  );
  transfer.push(data.buffer);
  // Rows are Float32Array: indexed and measured as the number[] rows they replace.
  return out as unknown as AttentionStack;
}
