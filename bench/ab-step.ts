/**
 * A/B timing of two checkouts on one machine (issue 39: "no slowdown"), for the workloads most
 * sensitive to per-call overhead in the TypeScript around the kernels: a training step of the shipped
 * EN→DE recipe (dModel 128, 4+4 layers, 128×32 tokens, AdamW), 2,000 small calls (layer norm, add and
 * a 1×128×128 linear) and a one-sentence forward. Copy this file into the other checkout's bench/ and
 * run the two alternately, a fresh process each time, so that drift in the machine's speed falls on
 * both (records/house-bench/ has the runs and how they were summarised):
 *   npx tsx bench/ab-step.ts     one JSON line: median ms of each workload
 * It uses only the public API both checkouts share (randn with an array shape, as before issue 38).
 */
import { F, manualSeed, memoryScope, models, noGrad, optim, randn, setBackend, tensor } from '../src/index.ts';
setBackend('wasm');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
function time(fn: () => void, n: number): number {
  fn();
  const ts: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    fn();
    ts.push(performance.now() - t0);
  }
  return median(ts);
}
const RECIPE = {
  ...models.MULTI30K_SMALL,
  vocabSize: 8000,
  dModel: 128,
  nhead: 4,
  numEncoderLayers: 4,
  numDecoderLayers: 4,
  dimFeedforward: 512,
  dropout: 0.3,
  attentionDropout: 0,
  activationDropout: 0,
};
manualSeed(1);
const model = new models.Seq2Seq(RECIPE);
const opt = new optim.AdamW(model.parameters(), { lr: 1e-4, betas: [0.9, 0.98], eps: 1e-9, weightDecay: 1e-4 });
const B = 128,
  Tn = 32;
const idsArr: number[] = [];
for (let b = 0; b < B; b++)
  for (let t = 0; t < Tn; t++) idsArr.push(t < Tn - (b % 8) ? 4 + ((b * 31 + t * 17) % 7996) : 0);
const ids = tensor(new Int32Array(idsArr), [B, Tn]);
const step = () => {
  const loss = F.crossEntropy(model.forward(ids, ids), ids, { ignoreIndex: 0, labelSmoothing: 0.1 });
  opt.zeroGrad();
  loss.backward();
  opt.step();
  loss.item();
};
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
const id1 = tensor(new Int32Array(idsArr.slice(0, 32)), [1, 32]);
const fwd1 = time(() => noGrad(() => memoryScope(() => void model.forward(id1, id1))), 15);
console.log(JSON.stringify({ train, small, fwd1 }));
