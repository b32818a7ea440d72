/**
 * The CPU spread behind the WebGPU training check's bound (bench/web/page-train.ts, issue 61): the page
 * checks webgpu's parameters after two AdamW steps of the shipped EN→DE recipe (128×32 tokens) against
 * wasm's within max(2e-5, 4× that tensor's largest |wasm − js|). This measures, on the CPU, what that
 * multiplier rests on: the same two steps (page-train.ts's own trainer) on three backends that sum in
 * three orders (js; wasm's relaxed-SIMD build, fused multiply-adds; wasm's plain-SIMD build) and, per
 * parameter tensor, the largest difference between each pair after the two steps (the key part of each
 * in_proj_bias left out, as the check leaves it out), the share of its second step's gradient elements
 * whose js and wasm values differ by more than 1e-3 relative, and `ratio`: the largest pair's difference over
 * the relaxed wasm − js difference the bound is built on (the multiplier a third order of sums needed here).
 * The bound itself is then tried on the third order as the page tries it on the GPU: `thirdOverBound` is
 * |relaxed wasm − plain wasm| over max(2e-5, 4·|relaxed wasm − js|), which must stay at most 1.
 *
 *   npx tsx bench/web/train-spread.ts [OUT.json]     (default records/train-spread/spread.json)
 *   npx tsx bench/web/train-spread.ts --quick OUT    (8×8 tokens: a quick try of the script, not the record)
 *
 * The workload is page-bench.ts's full one (benchPlan), written out here: page-bench.ts imports the browser
 * peers, which Node's resolver cannot load outside the bundle.
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { setBackend } from '../../src/index.ts';
import { relaxedSimdSupported, setWasmVariant, type WasmVariant } from '../../src/backend/wasm/loader.ts';
import { RECIPE } from '../train-step.ts';
import { type TrainWork, trainer } from './page-train.ts';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const out = args.find((a) => !a.startsWith('--')) ?? 'records/train-spread/spread.json';
const work: TrainWork = quick
  ? { name: 'quick try: the shipped recipe on 8×8 tokens', shape: RECIPE, B: 8, T: 8 }
  : { name: 'train step Seq2Seq d128 4+4, shipped EN→DE recipe (128×32 tokens)', shape: RECIPE, B: 128, T: 32 };

interface Run {
  name: string;
  params: Float32Array[];
  grads: Float32Array[];
  losses: number[];
}

async function twoSteps(name: string, backend: string, variant?: WasmVariant): Promise<Run> {
  if (variant) {
    await setBackend('wasm');
    setWasmVariant(variant);
  }
  const t = await trainer(backend, work);
  const losses = [await t.step(), await t.step()];
  const params = await Promise.all(t.model.parameters().map((p) => p.data() as Promise<Float32Array>));
  const grads = await Promise.all(t.model.parameters().map((p) => p.grad!.data() as Promise<Float32Array>));
  return { name, params, grads, losses };
}

if (!relaxedSimdSupported())
  throw new Error('train-spread: this engine runs no relaxed SIMD: the page’s wasm build is the relaxed one');
const started = performance.now();
const js = await twoSteps('js', 'js');
const relaxed = await twoSteps('wasm relaxed-simd', 'wasm', 'relaxed-simd');
const plain = await twoSteps('wasm simd', 'wasm', 'simd');
const names = (await trainer('js', work)).model.namedParameters().map(([n]) => n);

const sig = (x: number) => Number(x.toPrecision(3));
const pairs: [string, Run, Run][] = [
  ['wasm relaxed-simd − js', relaxed, js],
  ['wasm simd − js', plain, js],
  ['wasm relaxed-simd − wasm simd', relaxed, plain],
];
const tensors = names.map((name, i) => {
  const E = relaxed.params[i]!.length / 3;
  const isKey = (k: number) => name.endsWith('in_proj_bias') && k >= E && k < 2 * E;
  const largest: Record<string, number> = {};
  for (const [pair, a, b] of pairs) {
    let d = 0;
    a.params[i]!.forEach((x, k) => {
      if (!isKey(k)) d = Math.max(d, Math.abs(x - b.params[i]![k]!));
    });
    largest[pair] = d;
  }
  let off = 0;
  const gj = js.grads[i]!;
  relaxed.grads[i]!.forEach((g, k) => {
    if (Math.abs(g - gj[k]!) > 1e-3 * Math.max(Math.abs(g), Math.abs(gj[k]!))) off++;
  });
  const spread = largest['wasm relaxed-simd − js']!;
  const widest = Math.max(...Object.values(largest));
  const bound = Math.max(2e-5, 4 * spread);
  return {
    name,
    elements: gj.length,
    largest: Object.fromEntries(Object.entries(largest).map(([k, v]) => [k, sig(v)])),
    ratio: spread > 0 ? sig(widest / spread) : null,
    bound: sig(bound),
    thirdOverBound: sig(largest['wasm relaxed-simd − wasm simd']! / bound),
    gradientOff1e3: sig(off / gj.length),
  };
});
const ratios = tensors.map((t) => t.ratio).filter((r): r is number => r !== null);
const matrices = tensors.filter((t) => /weight$/.test(t.name) && !/norm/.test(t.name));
const record = {
  about:
    'bench/web/train-spread.ts: two AdamW steps of page-train.ts on js and both wasm builds; per parameter the largest ' +
    'difference of each pair after them (key biases apart), ratio = the largest pair over relaxed wasm − js, ' +
    "gradientOff1e3 = share of the second step's gradient off by 1e-3 relative (relaxed wasm against js)",
  workload: work.name,
  machine: `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}, load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
  minutes: sig((performance.now() - started) / 60000),
  losses: Object.fromEntries([js, relaxed, plain].map((r) => [r.name, r.losses])),
  summary: {
    largestRatio: sig(Math.max(...ratios)),
    medianRatio: sig([...ratios].sort((a, b) => a - b)[Math.floor((ratios.length - 1) / 2)]!),
    largestSpread: sig(Math.max(...tensors.map((t) => t.largest['wasm relaxed-simd − js']!))),
    largestThirdOverBound: sig(Math.max(...tensors.map((t) => t.thirdOverBound))),
    tensorsThirdOverBound: tensors.filter((t) => t.thirdOverBound > 1).map((t) => t.name),
    weightMatricesGradientOff1e3: [
      sig(Math.min(...matrices.map((t) => t.gradientOff1e3))),
      sig(Math.max(...matrices.map((t) => t.gradientOff1e3))),
    ],
  },
  tensors,
};
writeFileSync(out, `${JSON.stringify(record, null, 1)}\n`);
console.log(`train-spread: ${out}: ${JSON.stringify(record.summary)}`);
