/**
 * Compiled steps (issue 62, records/compiled): a GPT-2-124M-shaped GPT (bench/gpt2.ts's shape, random weights)
 * continues an 8-token prompt by 32 tokens, greedy, fp32, on the wasm backend (2 threads), five ways:
 *   - eager: today's generate (the dynamic KV cache, op by op);
 *   - static eager: the static KV cache (src/decode/static-gpt.ts) run op by op;
 *   - replayed, new decoder: the static cache's steps captured (src/compile) and replayed, a new decoder per
 *     generation (so its two captures, the prefill's and the first token's, are in the time);
 *   - replayed, decoder kept: the same decoder for every generation, so every step is a replay;
 *   - ONNX Runtime (onnxruntime-node, 2 intra-op threads, no spinning) on qkv's fp32 export (OrtGpt), driven by
 *     the same generation code, as bench/gpt2-quantized.ts runs it.
 * Checked first: all four give the same tokens. Then RUNS rounds, each engine once per round in turn (alternating,
 * as bench/onnx.ts), the median per engine. Prints a table and, last, one JSON line.
 *   npx tsx bench/compiled.ts [--smoke] [--no-peers]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { SESSION_OPTIONS } from '../src/cli/onnxruntime.ts';
import { generate, generateStreamAsync } from '../src/decode/gpt.ts';
import { OrtGpt } from '../src/decode/onnxruntime.ts';
import { generateStatic, StaticGPTDecoder } from '../src/decode/static-gpt.ts';
import { exportGptOnnx } from '../src/io/onnx/export.ts';
import { numThreads, setNumThreads } from '../src/backend/wasm/threads.ts';
import { manualSeed, memoryScope, models, noGrad, setBackend, Tensor } from '../src/index.ts';
import { acquireBenchLock } from './lock.ts';
import { cfg, prompt, smoke, withPeers } from './gpt2.ts';

acquireBenchLock();
const NEW = smoke ? 8 : 32;
const RUNS = smoke ? 1 : 9;
const THREADS = 2;
setBackend('wasm');
setNumThreads(THREADS);
manualSeed(1);
const model = new models.GPT(cfg).eval();
const options = { maxTokens: NEW, temperature: 0 };
// Kept across generations with its captures: every step of a second generation is a replay.
const kept = new StaticGPTDecoder(model, prompt.length + NEW);

const engines: { name: string; run: () => Promise<number[]> | number[] }[] = [
  { name: 'eager (dynamic cache)', run: () => generate(model, prompt, options).ids },
  { name: 'static cache, eager', run: () => generateStatic(model, prompt, { ...options, compiled: false }).ids },
  { name: 'replayed, new decoder', run: () => generateStatic(model, prompt, options).ids },
  { name: 'replayed, decoder kept', run: () => generateStatic(model, prompt, { ...options, decoder: kept }).ids },
];
let ortDir: string | null = null;
if (withPeers) {
  const exp = exportGptOnnx(cfg, model.stateDict(), { dtype: 'fp32', withAttention: false });
  ortDir = mkdtempSync(join(tmpdir(), 'qkv-compiled-ort-'));
  writeFileSync(join(ortDir, exp.manifest.graphs.decoder), exp.files[exp.manifest.graphs.decoder]!);
  const session = await ort.InferenceSession.create(join(ortDir, exp.manifest.graphs.decoder), {
    ...SESSION_OPTIONS,
    intraOpNumThreads: THREADS,
  });
  const lm = new OrtGpt(ort, session, exp.manifest);
  engines.push({
    name: 'ONNX Runtime fp32',
    run: async () => {
      const ids: number[] = [];
      for await (const t of generateStreamAsync(lm, prompt, options)) ids.push(t.id);
      return ids;
    },
  });
}

// Check (and warm up): the same tokens from every engine.
const reference = (await engines[0].run()).join();
for (const e of engines.slice(1)) {
  const ids = (await e.run()).join();
  if (ids !== reference) throw new Error(`check failed: ${e.name} generates ${ids}, eager ${reference}`);
}
console.log(`check: ${engines.length} engines give the same ${NEW} greedy tokens`);

// What one captured token step is: kernel calls, allocations, the plan's buffers.
const decoder = new StaticGPTDecoder(model, prompt.length + 2);
noGrad(() =>
  memoryScope(() => {
    decoder.step(new Tensor(Int32Array.from(prompt), [1, prompt.length], 'int32'));
    decoder.step(new Tensor(Int32Array.from([1]), [1, 1], 'int32'));
  }),
);
const stats = decoder.captures!.get('int32[1, 1];int32[1]')!.stats; // the ids and the position
console.log(`one token step: ${JSON.stringify(stats)}`);

const times = engines.map(() => [] as number[]);
// Process CPU time (user + system, every thread: qkv's wasm workers, ORT's pool) beside the wall time: on a loaded
// machine it moves less than the wall time, which waits for the cores.
const cpu = engines.map(() => [] as number[]);
const loadBefore = loadavg()[0];
for (let r = 0; r < RUNS; r++) {
  for (const [i, e] of engines.entries()) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await e.run();
    times[i].push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu[i].push((c.user + c.system) / 1000);
  }
}
const loadAfter = loadavg()[0];
if (ortDir) rmSync(ortDir, { recursive: true, force: true });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const rows = engines.map((e, i) => ({
  engine: e.name,
  median_ms: median(times[i]),
  tokens_per_s: (1000 * NEW) / median(times[i]),
  min_ms: Math.min(...times[i]),
  max_ms: Math.max(...times[i]),
  runs_ms: times[i].map((t) => Math.round(t)),
  cpu_median_ms: median(cpu[i]),
  cpu_runs_ms: cpu[i].map((t) => Math.round(t)),
}));
console.log(
  `GPT-2-124M-shaped, random weights, ${prompt.length}-token prompt + ${NEW} greedy tokens, fp32, qkv wasm ` +
    `(${numThreads()} threads), medians of ${RUNS} alternating runs (ms); ${cpus().length} cores, load ` +
    `${loadBefore.toFixed(2)} -> ${loadAfter.toFixed(2)}`,
);
for (const r of rows)
  console.log(
    `${r.engine.padEnd(26)} ${r.median_ms.toFixed(0).padStart(7)} ms  ${r.tokens_per_s.toFixed(1).padStart(6)} tokens/s` +
      `  (min ${r.min_ms.toFixed(0)}, max ${r.max_ms.toFixed(0)}; CPU ${r.cpu_median_ms.toFixed(0)} ms)`,
  );
console.log(
  JSON.stringify({
    workload: {
      config: smoke ? 'smoke' : 'GPT2_124M',
      prompt: prompt.length,
      tokens: NEW,
      runs: RUNS,
      threads: THREADS,
    },
    machine: { cpu: cpus()[0]?.model, cores: cpus().length, load_before: loadBefore, load_after: loadAfter },
    onnxruntime: withPeers ? ort.env.versions.common : null,
    step: stats,
    rows,
  }),
);
