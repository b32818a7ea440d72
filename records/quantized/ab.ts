/**
 * CPU-time A/B of the quantized GEMV kernels and of greedy decoding, for one checkout (its src/ and its
 * built .wasm), to run alternately against another (issue 50, point 4; ab.txt says how it was run):
 *   node --import tsx records/quantized/ab.ts ROOT gemv     per-call CPU ms of one-row linear layers
 *   node --import tsx records/quantized/ab.ts ROOT decode   GPT-2-124M-shape greedy decoding (as
 *                                                           bench/gpt2-quantized.ts: seed 1, 8-token
 *                                                           prompt, 64 tokens, KV cache), fp32/int8/q4
 * ROOT is the checkout whose src/index.ts is imported. Prints one JSON line: { mode, rows: [...] }, each
 * row its shape or dtype with cpu_ms (process.cpuUsage, user + system, every thread) and wall_ms, the least
 * per call over several repetitions (the machine is shared: the least is the one least disturbed).
 */
import { pathToFileURL } from 'node:url';

const [root, mode] = process.argv.slice(2);
if (!root || (mode !== 'gemv' && mode !== 'decode'))
  throw new Error(`ab.ts: expected arguments ROOT gemv|decode, got ${process.argv.slice(2).join(' ')}`);
const qkv: typeof import('../../src/index.ts') = await import(pathToFileURL(`${root}/src/index.ts`).href);
const { decode, manualSeed, models, nn, noGrad, randn, setBackend } = qkv;
setBackend('wasm');

/** The least CPU and wall milliseconds a call of f over `reps` repetitions of n calls, after 2 warm-up calls. */
function time(f: () => unknown, n: number, reps: number): { cpu_ms: number; wall_ms: number } {
  for (let i = 0; i < 2; i++) f();
  let cpu = Infinity;
  let wall = Infinity;
  for (let k = 0; k < reps; k++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) f();
    const c = process.cpuUsage(c0);
    cpu = Math.min(cpu, (c.user + c.system) / 1000 / n);
    wall = Math.min(wall, (performance.now() - t0) / n);
  }
  return { cpu_ms: cpu, wall_ms: wall };
}

const rows: Record<string, unknown>[] = [];
if (mode === 'gemv') {
  manualSeed(1);
  for (const [inF, outF] of [[768, 768], [768, 2304], [768, 3072], [3072, 768], [768, 50257]] as const) {
    const lin = new nn.Linear(inF, outF);
    for (const m of [1, 4]) {
      const x = randn(m, inF);
      for (const dtype of ['fp32', 'int8', 'q4'] as const) {
        const l = new nn.Linear(inF, outF);
        l.loadStateDict(lin.stateDict());
        if (dtype !== 'fp32') l.quantize({ dtype });
        const n = Math.max(3, Math.round(4e7 / (inF * outF * m)));
        rows.push({ shape: `${inF}->${outF}`, m, dtype, ...time(() => noGrad(() => l.forward(x)), n, 7) });
      }
    }
  }
} else {
  manualSeed(1);
  const cfg = { ...models.GPT2_124M, dropout: 0 };
  const fp32 = new models.GPT(cfg).eval();
  const weights = fp32.stateDict();
  const prompt = Array.from({ length: 8 }, (_, i) => (i * 7919 + 13) % cfg.vocabSize);
  for (const dtype of ['fp32', 'int8', 'q4'] as const) {
    let m = fp32;
    if (dtype !== 'fp32') {
      m = new models.GPT(cfg, { init: false }).eval();
      m.loadStateDict(weights);
      m.quantize({ dtype });
    }
    let ids: number[] = [];
    const t = time(() => {
      ids = decode.generate(m, prompt, { maxTokens: 64, temperature: 0, useCache: true }).ids;
    }, 1, 3);
    rows.push({ dtype, tokens: 64, ...t, ids: ids.join(',') });
  }
}

console.log(JSON.stringify({ mode, root, rows }));
