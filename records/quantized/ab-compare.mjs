// Medians of ab.ts's runs (JSON lines on stdin, both checkouts, several rounds) as markdown tables:
//   node records/quantized/ab-compare.mjs A_ROOT B_ROOT < ab.jsonl
// GEMV: CPU ms per call, A and B, and B/A. Decoding: CPU ms for 64 tokens, tokens per CPU second,
// B/A, each dtype's speed against the same checkout's fp32, and whether B's tokens equal A's.
import { readFileSync } from 'node:fs';

const [a, b] = process.argv.slice(2);
if (!a || !b) throw new Error('ab-compare.mjs: expected arguments A_ROOT B_ROOT');
const runs = readFileSync(0, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const median = (xs) => {
  const s = [...xs].sort((p, q) => p - q);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const collect = (mode, root, key) => {
  const m = new Map();
  for (const run of runs.filter((r) => r.mode === mode && r.root === root))
    for (const row of run.rows) {
      const k = key(row);
      if (!m.has(k)) m.set(k, { cpu: [], ids: new Set() });
      m.get(k).cpu.push(row.cpu_ms);
      if (row.ids) m.get(k).ids.add(row.ids);
    }
  return m;
};
const gk = (r) => `${r.shape} | ${r.m} | ${r.dtype}`;
const ga = collect('gemv', a, gk);
const gb = collect('gemv', b, gk);
console.log('| shape | rows | dtype | A ms | B ms | B/A | rounds |\n| --- | --- | --- | --- | --- | --- | --- |');
for (const [k, va] of ga) {
  const vb = gb.get(k);
  const [ma, mb] = [median(va.cpu), median(vb.cpu)];
  console.log(`| ${k} | ${ma.toFixed(3)} | ${mb.toFixed(3)} | ${(mb / ma).toFixed(2)} | ${va.cpu.length}/${vb.cpu.length} |`);
}
const da = collect('decode', a, (r) => r.dtype);
const db = collect('decode', b, (r) => r.dtype);
const tps = (ms) => (64 * 1000) / ms;
console.log(
  '\n| dtype | A ms | B ms | A tok/CPU s | B tok/CPU s | B/A time | A vs fp32 | B vs fp32 | tokens equal | rounds |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const [k, va] of da) {
  const vb = db.get(k);
  const [ma, mb] = [median(va.cpu), median(vb.cpu)];
  const [fa, fb] = [median(da.get('fp32').cpu), median(db.get('fp32').cpu)];
  const same = va.ids.size === 1 && vb.ids.size === 1 && [...va.ids][0] === [...vb.ids][0];
  console.log(
    `| ${k} | ${ma.toFixed(0)} | ${mb.toFixed(0)} | ${tps(ma).toFixed(1)} | ${tps(mb).toFixed(1)} | ${(mb / ma).toFixed(2)} | ${(fa / ma).toFixed(2)}× | ${(fb / mb).toFixed(2)}× | ${same ? 'yes' : 'NO'} | ${va.cpu.length}/${vb.cpu.length} |`,
  );
}
