// The README's tables from the runs' JSON (bench/profile.ts's output):
//   node records/latency-profile/tables.mjs run-1.json run-2.json run-3.json
// Counts are the first run's (every run has the same); times and shares are given per run, "a / b / c".
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const files = process.argv.slice(2);
const runs = files.map((f) => JSON.parse(readFileSync(join(here, f), 'utf8')));
const each = (fn) => runs.map(fn).join(' / ');
const pct = (x) => `${Math.round(x * 1000) / 10}%`;
const n = (x, d = 0) => (Math.round(x * 10 ** d) / 10 ** d).toLocaleString('en-US');

const [first] = runs;
console.log(`runs: ${files.join(', ')}; wrapper cost per kernel call (µs): ${each((r) => r.wrapperUsPerKernelCall)}\n`);

console.log('| | ' + first.workloads.map((w) => w.name).join(' | ') + ' |');
console.log('| --- |' + first.workloads.map(() => ' --- |').join(''));
const row = (label, fn) =>
  console.log(`| ${label} | ${first.workloads.map((_, i) => fn(runs.map((r) => r.workloads[i]))).join(' | ')} |`);
row('steps per run', (ws) => n(ws[0].stepsPerRun, 2));
row('rows per step (median)', (ws) => (ws[0].medianStep.rows ? n(ws[0].medianStep.rows) : ''));
row('kernel calls per step (median)', (ws) => n(ws[0].medianStep.kernelCalls));
const sum = (w, key) => w.kernels.reduce((a, k) => a + k[key], 0);
row('kernel calls per step (mean)', (ws) => n(sum(ws[0], 'callsPerStep')));
row('allocations per step (median)', (ws) => n(ws[0].medianStep.allocs));
row('allocations per step (mean)', (ws) => n(sum(ws[0], 'allocsPerStep')));
row('KiB allocated per step (median)', (ws) => n(ws[0].medianStep.kbAllocated));
row('KiB allocated per step (mean)', (ws) => n(sum(ws[0], 'kbPerStep')));
row('tensor objects made per step (median)', (ws) => n(ws[0].medianStep.tensorsMade));
row('readSync calls per step (median)', (ws) => n(ws[0].medianStep.hostReads));
row('thread-pool launches per step (median)', (ws) => n(ws[0].medianStep.launches));
row('step wall µs, median', (ws) => ws.map((w) => n(w.medianStep.wallUs)).join(' / '));
row('step wall µs, mean', (ws) => ws.map((w) => n(w.meanStepWallUs)).join(' / '));
row('in kernels µs (median step)', (ws) => ws.map((w) => n(w.medianStep.kernelUs)).join(' / '));
row('outside kernels µs (median step)', (ws) => ws.map((w) => n(w.medianStep.outsideKernelsUs)).join(' / '));
row('share outside kernels (all steps)', (ws) => ws.map((w) => pct(w.shareOutsideKernels)).join(' / '));
row('run ms unwrapped, before / after', (ws) =>
  ws.map((w) => `${n(w.runMs.unwrapped, 1)}, ${n(w.runMs.unwrappedAfter, 1)}`).join(' / '),
);
row('run ms wrapped', (ws) => ws.map((w) => n(w.runMs.wrapped, 1)).join(' / '));
row('share of the run in steps', (ws) => ws.map((w) => pct(w.stepsShareOfRun)).join(' / '));
for (const part of ['model', 'reorder', 'forward', 'backward', 'optimizer'])
  row(`part: ${part}`, (ws) => (part in ws[0].partsShareOfWall ? ws.map((w) => pct(w.partsShareOfWall[part])).join(' / ') : ''));

for (const [i, w] of first.workloads.entries()) {
  console.log(`\n#### ${w.name}: kernels per step\n`);
  console.log('| kernel | calls | µs (run ' + files.map((_, j) => j + 1).join(' / ') + ') | median µs per call | launches | allocations | KiB allocated |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const k of w.kernels) {
    const us = runs.map((r) => n(r.workloads[i].kernels.find((x) => x.kernel === k.kernel)?.usPerStep ?? 0));
    const med = runs.map((r) => n(r.workloads[i].kernels.find((x) => x.kernel === k.kernel)?.medianUs ?? 0, 1));
    console.log(
      `| ${k.kernel} | ${n(k.callsPerStep, 2)} | ${us.join(' / ')} | ${med.join(' / ')} | ${n(k.launchesPerStep, 2)} | ` +
        `${n(k.allocsPerStep, 2)} | ${n(k.kbPerStep, 1)} |`,
    );
  }
  console.log(`\nreadSync callers per step: ${w.readers.map((r) => `${r.at} ${r.perStep}`).join('; ')}`);
  console.log(`\nKiB allocated per step, by the op that allocated: ${w.allocatorsKiB.map((r) => `${r.at} ${r.perStep}`).join('; ')}`);
  const withCpu = runs.map((r) => r.workloads[i].cpuProfile).filter(Boolean);
  if (withCpu.length === 0) continue;
  console.log(`\n#### ${w.name}: V8 sampling profile, self time by layer (unwrapped)\n`);
  console.log('| layer | share |');
  console.log('| --- | --- |');
  for (const l of withCpu[0].byLayer)
    console.log(`| ${l.where} | ${withCpu.map((c) => pct(c.byLayer.find((x) => x.where === l.where)?.share ?? 0)).join(' / ')} |`);
  console.log(`\ntop functions (self time, first run): ${withCpu[0].byFunction.slice(0, 12).map((f) => `${f.where.replace(/:\d+$/, '')} ${pct(f.share)}`).join('; ')}`);
}
