/**
 * A/B timing of two checkouts on one machine (issue 39: "no slowdown"), for the workloads most
 * sensitive to per-call overhead in the TypeScript around the kernels: a training step of the shipped
 * EN→DE recipe (dModel 128, 4+4 layers, 128×32 tokens, AdamW), 2,000 small calls (layer norm, add and
 * a 1×128×128 linear) and a one-sentence forward. Copy this file and bench/train-step.ts (the workload,
 * shared with `npm run bench`) into the other checkout's bench/, then run the two alternately, a fresh
 * process each time, so that drift in the machine's speed falls on both:
 *   npx tsx bench/ab-step.ts     one JSON line: median ms of each workload
 * train-step.ts reads `PRESETS.seq2seq` (issue 39's name): for a checkout from before it, the run in
 * records/house-bench/ used a copy of this file with the same recipe written out.
 */
import { F, memoryScope, noGrad, randn, tensor } from '../src/index.ts';
import { batchIds, RECIPE, trainer } from './train-step.ts';
// AB_CLOCK=cpu: the process's CPU time (all threads) instead of wall time, for a machine shared with other
// jobs, whose preemptions inflate wall time but not the work done.
const cpuClock = process.env.AB_CLOCK === 'cpu';
const now = () => {
  if (!cpuClock) return performance.now();
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
function time(fn: () => void, n: number): number {
  fn();
  const ts: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    fn();
    ts.push(now() - t0);
  }
  return median(ts);
}
const { step, model } = trainer('wasm', RECIPE, 128, 32);
const train = time(() => void memoryScope(step), 7);
// Small calls: per-call overhead of the backend (layer norm and add on one row of 128, a 1x128x128 linear).
const x = randn([1, 128]),
  w = randn([128, 128]),
  g = randn([128]),
  bb = randn([128]);
const small = time(
  () =>
    noGrad(() =>
      memoryScope(() => {
        for (let i = 0; i < 2000; i++) {
          F.layerNorm(F.add(x, x), [128], g, bb, 1e-5);
          F.linear(x, w);
        }
      }),
    ),
  9,
);
const id1 = tensor(new Int32Array(batchIds(RECIPE.vocabSize, 1, 32)), [1, 32]);
const fwd1 = time(() => noGrad(() => memoryScope(() => void model.forward(id1, id1))), 15);
console.log(JSON.stringify({ train, small, fwd1 }));
