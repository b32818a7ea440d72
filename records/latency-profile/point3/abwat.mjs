// Standalone A/B of assembly/gemm.ts's gemvNTRange, B warm (the same B every call): two builds of that file alone
// (npx asc assembly/gemm.ts -o X.wasm with scripts/build-wasm.mjs's flags), each on its own memory, alternating,
// CPU time, 11 rounds, medians. node [--experimental-wasm-relaxed-simd] abwat.mjs old.wasm new.wasm 1x8000x128 ...
// usage: node abwat.mjs old.wasm new.wasm shapes...
import { readFileSync } from 'node:fs';
const inst = await Promise.all(process.argv.slice(2, 4).map(async (f) => {
  const memory = new WebAssembly.Memory({ initial: 400, maximum: 65536, shared: true });
  const { instance } = await WebAssembly.instantiate(readFileSync(f), { env: { memory } });
  return { g: instance.exports, memory };
}));
for (const shape of process.argv.slice(4)) {
  const [m, n, k] = shape.split('x').map(Number);
  const a = 65536, b = a + m * k * 4 + 64, c = b + n * k * 4 + 64;
  for (const { memory } of inst) { const f = new Float32Array(memory.buffer); for (let i = a / 4; i < c / 4 + m * n; i++) f[i] = Math.sin(i); }
  const reps = Math.max(20, Math.round(2e7 / (m * n * k))), ts = [[], []];
  for (const { g } of inst) for (let i = 0; i < 3 * reps; i++) g.gemvNTRange(a, b, c, m, n, k, 0, 0, n);
  for (let r = 0; r < 11; r++) for (const s of [0, 1]) {
    const g = inst[s].g; const t0 = process.cpuUsage();
    for (let i = 0; i < reps; i++) g.gemvNTRange(a, b, c, m, n, k, 0, 0, n);
    const d = process.cpuUsage(t0); ts[s].push((d.user + d.system) / reps);
  }
  const med = (x) => x.sort((u, v) => u - v)[5];
  console.log(shape, 'old', med(ts[0]).toFixed(2), 'new', med(ts[1]).toFixed(2), 'new/old', (med(ts[1]) / med(ts[0])).toFixed(3));
}
