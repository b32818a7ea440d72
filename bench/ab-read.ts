/**
 * Where a matrix-vector product's launch pays (records/compiled, run 4): greedy decoding of the GPT-2-124M shape
 * (bench/gpt2.ts) and of the SmolLM2-135M shape (bench/decoders-shape.ts), fp32, int8 and q4, on the wasm backend
 * with 2 threads, under two launch rules alternating run by run in one process: `flops` (readCost 0: a product is
 * split among the threads above 2^22 flops, the rule before) and `bytes` (parallel.ts's readCost: the weights a
 * product reads count too). Both rules give the same tokens (checked first: each output is computed by one thread
 * either way). Prints a table and, last, one JSON line.
 *   npx tsx bench/ab-read.ts [--runs N] [--tokens N] [--smoke]
 */
import { cpus, loadavg } from 'node:os';
import { setReadCost } from '../src/backend/wasm/parallel.ts';
import { setNumThreads } from '../src/backend/wasm/threads.ts';
import { decoderConfigFromHf } from '../src/models/hf/llama.ts';
import { decode, manualSeed, models, noGrad, setBackend } from '../src/index.ts';
import { acquireBenchLock } from './lock.ts';
import { HF_CONFIG, LAYER_SCALE, PROMPT, SEED } from './decoders-shape.ts';
import { cfg as gpt2Cfg, prompt as gpt2Prompt } from './gpt2.ts';

acquireBenchLock();
const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? dflt : Number(process.argv[i + 1]);
};
const smoke = process.argv.includes('--smoke');
const RUNS = arg('--runs', smoke ? 1 : 7);
const TOKENS = arg('--tokens', smoke ? 4 : 32);
setBackend('wasm');
setNumThreads(2);

const BYTES = setReadCost(0);
setReadCost(BYTES);
const RULES = { flops: 0, bytes: BYTES } as const;

function shapes(): { name: string; make: () => models.GPT; prompt: number[] }[] {
  const llama = decoderConfigFromHf(HF_CONFIG);
  return [
    {
      name: 'GPT-2 124M',
      prompt: gpt2Prompt,
      make: () => {
        manualSeed(1);
        return new models.GPT({ ...gpt2Cfg, dropout: 0 }).eval();
      },
    },
    {
      name: 'SmolLM2-135M',
      prompt: PROMPT,
      make: () => {
        manualSeed(SEED);
        const m = new models.GPT(llama).eval();
        noGrad(() => {
          for (const [n, t] of Object.entries(m.stateDict()))
            if (t.ndim === 2 && n !== 'wte.weight') t.write(t.dataSync<Float32Array>().map((x) => x * LAYER_SCALE));
        });
        return m;
      },
    },
  ];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const rows: { model: string; dtype: string; rule: string; median_ms: number; runs_ms: number[] }[] = [];
const load0 = loadavg()[0]!;
for (const s of shapes()) {
  const fp32 = s.make();
  const weights = fp32.stateDict();
  const variant = (dtype: 'int8' | 'q4') => {
    const m = s.make();
    m.loadStateDict(weights);
    return m.quantize({ dtype });
  };
  for (const [dtype, m] of [
    ['fp32', fp32],
    ['int8', variant('int8')],
    ['q4', variant('q4')],
  ] as const) {
    const gen = () => decode.generate(m, s.prompt, { maxTokens: TOKENS, temperature: 0 }).ids;
    const ids: Record<string, string> = {};
    for (const [rule, c] of Object.entries(RULES)) {
      setReadCost(c);
      ids[rule] = gen().join(',');
    }
    if (ids.flops !== ids.bytes) throw new Error(`${s.name} ${dtype}: the two rules gave other tokens`);
    const times: Record<string, number[]> = { flops: [], bytes: [] };
    for (let r = 0; r < RUNS; r++)
      for (const [rule, c] of r % 2 ? Object.entries(RULES).reverse() : Object.entries(RULES)) {
        setReadCost(c);
        const t0 = performance.now();
        gen();
        times[rule]!.push(performance.now() - t0);
      }
    for (const rule of Object.keys(RULES)) {
      const ms = median(times[rule]!);
      rows.push({ model: s.name, dtype, rule, median_ms: ms, runs_ms: times[rule]!.map(Math.round) });
    }
    const f = median(times.flops!),
      b = median(times.bytes!);
    console.log(
      `${s.name.padEnd(13)} ${dtype.padEnd(5)} flops rule ${f.toFixed(0).padStart(6)} ms   bytes rule ` +
        `${b.toFixed(0).padStart(6)} ms   bytes / flops ${(b / f).toFixed(2)}   (${TOKENS} tokens, median of ${RUNS})`,
    );
  }
}
setReadCost(BYTES);
console.log(
  JSON.stringify({
    tokens: TOKENS,
    runs: RUNS,
    readCost: BYTES,
    cpu: cpus()[0]?.model,
    load: [load0, loadavg()[0]],
    rows,
  }),
);
