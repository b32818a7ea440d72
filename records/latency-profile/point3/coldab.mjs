// Standalone A/B of gemvNTRange with B out of the caches: FLUSH_MB (default 32) of another buffer read before
// each call, each call timed alone (hrtime), 15 rounds of 40 calls, medians; builds as in abwat.mjs.
// usage: node coldab.mjs a.wasm b.wasm [c.wasm...] -- shapes...
import { readFileSync } from 'node:fs';
const argv = process.argv.slice(2), sep = argv.indexOf('--');
const files = argv.slice(0, sep), shapes = argv.slice(sep + 1);
const inst = await Promise.all(files.map(async (f) => {
  const memory = new WebAssembly.Memory({ initial: 1024, maximum: 65536, shared: true });
  const { instance } = await WebAssembly.instantiate(readFileSync(f), { env: { memory } });
  return { g: instance.exports, memory };
}));
const flush = new Float64Array(Number(process.env.FLUSH_MB ?? 32) * 131072);
let sink = 0;
const evict = () => { for (let i = 0; i < flush.length; i += 8) sink += flush[i]++; };
for (const shape of shapes) {
  const [m, n, k] = shape.split('x').map(Number);
  const a = 65536, b = a + m * k * 4 + 64, c = b + n * k * 4 + 64;
  for (const { memory } of inst) { const f = new Float32Array(memory.buffer); for (let i = a / 4; i < c / 4 + m * n; i++) f[i] = Math.sin(i); }
  for (const { g } of inst) for (let i = 0; i < 3000; i++) g.gemvNTRange(a, b, c, m, n, k, 0, 0, n);
  const reps = 40, rounds = 15, ts = inst.map(() => []);
  for (let r = 0; r < rounds; r++) for (let s = 0; s < inst.length; s++) {
    const g = inst[s].g; let tot = 0n;
    for (let i = 0; i < reps; i++) { evict(); const t0 = process.hrtime.bigint(); g.gemvNTRange(a, b, c, m, n, k, 0, 0, n); tot += process.hrtime.bigint() - t0; }
    ts[s].push(Number(tot) / reps / 1000);
  }
  const med = (x) => x.sort((u, v) => u - v)[rounds >> 1];
  const base = med(ts[0]);
  console.log(shape.padEnd(11), files.map((f, s) => `${f.replace('.wasm', '')} ${med(ts[s]).toFixed(2)}µs (${(med(ts[s]) / base).toFixed(2)})`).join('  '));
}
