/**
 * Child process of bench/index.ts: multi-head self-attention forward (no weights, no grad) at one
 * length, batch 1, dModel 512, 8 heads, on the wasm backend. Prints {ms, peak_mb} where peak_mb is
 * the growth of the process's peak resident memory over the run (a fresh process per length, so
 * the number is this workload's own). Each call runs in a memoryScope, as the library's trainers
 * do: its tensors live in WebAssembly memory and are freed when it returns.
 */
import { memoryScope, nn, noGrad, randn, setBackend, manualSeed } from '../src/index.ts';

const L = Number(process.argv[2]);
setBackend(process.argv[3] ?? 'wasm');
manualSeed(0);
const mha = new nn.MultiheadAttention(512, 8, { batchFirst: true, dropout: 0 });
mha.eval();
const x = randn([1, L, 512]);
const before = process.memoryUsage().rss / 2 ** 20;
const ts: number[] = [];
noGrad(() => {
  for (let i = 0; i < 4; i++) {
    const t0 = performance.now();
    memoryScope(() => void mha.forward(x, x, x, { needWeights: false }));
    ts.push(performance.now() - t0);
  }
});
const timed = ts.slice(1).sort((a, b) => a - b);
console.log(JSON.stringify({ ms: timed[timed.length >> 1], peak_mb: process.resourceUsage().maxRSS / 1024 - before }));
