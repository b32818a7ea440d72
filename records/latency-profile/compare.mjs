// Before/after tables of issue 51 point 2 from bench/profile.ts runs of two checkouts:
//   node records/latency-profile/compare.mjs before-1.json,before-2.json after-1.json,after-2.json
// Counts (calls, allocations, bytes, tensors, reads, launches) are the same in every run of a checkout: the
// first run's. Times are each run's ("a / b"): a shared machine's, so noisy.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const load = (list) => list.split(',').map((f) => JSON.parse(readFileSync(join(here, f), 'utf8')));
const [before, after] = [load(process.argv[2]), load(process.argv[3])];
const n = (x, d = 0) => (Math.round(x * 10 ** d) / 10 ** d).toLocaleString('en-US');
const pct = (x) => `${Math.round(x * 1000) / 10}%`;
const each = (runs, fn) => runs.map(fn).join(' / ');

console.log(`before: ${process.argv[2]}; after: ${process.argv[3]}\n`);
console.log('| | workload | before | after |');
console.log('| --- | --- | --- | --- |');
const names = before[0].workloads.map((w) => w.name);
const rows = [
  ['kernel calls per step (median)', (w) => n(w.medianStep.kernelCalls)],
  ['allocations per step (median)', (w) => n(w.medianStep.allocs)],
  ['KiB allocated per step (median)', (w) => n(w.medianStep.kbAllocated)],
  ['tensor objects per step (median)', (w) => n(w.medianStep.tensorsMade)],
  ['readSync calls per step (median)', (w) => n(w.medianStep.hostReads)],
  ['thread-pool launches per step (median)', (w) => n(w.medianStep.launches)],
];
for (const [i, name] of names.entries()) {
  for (const [label, fn] of rows) console.log(`| ${label} | ${name} | ${fn(before[0].workloads[i])} | ${fn(after[0].workloads[i])} |`);
  const times = [
    ['step wall µs, median', (w) => n(w.medianStep.wallUs)],
    ['outside kernels µs (median step)', (w) => n(w.medianStep.outsideKernelsUs)],
    ['run ms unwrapped (two timings a run)', (w) => `${n(w.runMs.unwrapped, 1)}, ${n(w.runMs.unwrappedAfter, 1)}`],
  ];
  for (const [label, fn] of times)
    console.log(
      `| ${label} | ${name} | ${each(before, (r) => fn(r.workloads[i]))} | ${each(after, (r) => fn(r.workloads[i]))} |`,
    );
}

for (const [i, name] of names.entries()) {
  console.log(`\n#### ${name}: kernel calls and KiB allocated per step (mean), before → after\n`);
  console.log('| kernel | calls | KiB allocated | launches |');
  console.log('| --- | --- | --- | --- |');
  const kb = before[0].workloads[i].kernels;
  const ka = after[0].workloads[i].kernels;
  const kernels = [...new Set([...kb.map((k) => k.kernel), ...ka.map((k) => k.kernel)])];
  const get = (ks, k) => ks.find((x) => x.kernel === k) ?? { callsPerStep: 0, kbPerStep: 0, launchesPerStep: 0 };
  for (const k of kernels) {
    const [b, a] = [get(kb, k), get(ka, k)];
    console.log(
      `| ${k} | ${n(b.callsPerStep, 2)} → ${n(a.callsPerStep, 2)} | ${n(b.kbPerStep, 1)} → ${n(a.kbPerStep, 1)} | ` +
        `${n(b.launchesPerStep, 2)} → ${n(a.launchesPerStep, 2)} |`,
    );
  }
  const alloc = (runs) => runs[0].workloads[i].allocatorsKiB.map((r) => `${r.at.replace(/ \(.*\)$/, '')} ${r.perStep}`);
  console.log(`\nKiB allocated per step by the op, before: ${alloc(before).join('; ')}`);
  console.log(`\nafter: ${alloc(after).join('; ')}`);
  const cpu = (runs) => runs.map((r) => r.workloads[i].cpuProfile).filter(Boolean);
  const [cb, ca] = [cpu(before), cpu(after)];
  if (cb.length === 0 || ca.length === 0) continue;
  console.log(`\n#### ${name}: V8 sampling profile, self time by layer (unwrapped), before → after\n`);
  console.log('| layer | before | after |');
  console.log('| --- | --- | --- |');
  const layers = [...new Set([...cb[0].byLayer, ...ca[0].byLayer].map((l) => l.where))];
  const share = (cs, l) => each(cs, (c) => pct(c.byLayer.find((x) => x.where === l)?.share ?? 0));
  for (const l of layers) console.log(`| ${l} | ${share(cb, l)} | ${share(ca, l)} |`);
  const top = (cs) =>
    cs[0].byFunction
      .slice(0, 10)
      .map((f) => `${f.where.replace(/:\d+$/, '')} ${pct(f.share)}`)
      .join('; ');
  console.log(`\ntop functions after (self time, first run): ${top(ca)}`);
}
