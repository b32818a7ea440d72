/**
 * Compiled steps for the translation model (issue 62, records/compiled): the shipped models/multi30k-en-de
 * translates the first SENTENCES lines of Multi30K val (one batch, as `qkv translate` batches them), greedy and
 * beam 4, fp32, on the wasm backend (2 threads), three ways each:
 *   - eager: today's search (the dynamic decoder cache, op by op);
 *   - static cache, eager: the static cache (src/decode/static-seq2seq.ts) run op by op;
 *   - replayed: its step and its reorder captured once per row bucket (src/compile; the live rows up to four,
 *     else the next power of two) and replayed (the captures, one eager step each, are in the time: a search
 *     makes its own stepper). This is what the translation pipeline and `qkv translate` now run by default.
 * Checked first: the three give the same tokens. Then RUNS rounds, each engine once per round in turn
 * (alternating, as bench/onnx.ts), the median per engine. Prints a table and, last, one JSON line.
 *   npx tsx bench/compiled-seq2seq.ts [--smoke]
 */
import { cpus, loadavg } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { numThreads, setNumThreads } from '../src/backend/wasm/threads.ts';
import { loadModelDir } from '../src/cli/files.ts';
import { encodeLines } from '../src/decode/batch.ts';
import { beamSearch, greedy } from '../src/decode/search.ts';
import { setBackend, Tensor } from '../src/index.ts';
import { acquireBenchLock } from './lock.ts';

acquireBenchLock();
const smoke = process.argv.includes('--smoke');
const SENTENCES = smoke ? 2 : 8;
const RUNS = smoke ? 1 : 9;
const THREADS = 2;
setBackend('wasm');
setNumThreads(THREADS);
const root = join(import.meta.dirname, '..');
const { model, tokenizer, targetTokenizer } = loadModelDir(join(root, 'models/multi30k-en-de'));
const lines = gunzipSync(readFileSync(join(root, 'data/multi30k/val.en.gz')))
  .toString('utf8')
  .split('\n')
  .slice(0, SENTENCES);
const rowsIds = encodeLines(model, tokenizer, lines).ids;
const S = Math.max(...rowsIds.map((r) => r.length));
const ids = new Int32Array(rowsIds.length * S).fill(model.config.padId);
rowsIds.forEach((r, i) => ids.set(r, i * S));
const src = new Tensor(ids, [rowsIds.length, S], 'int32');
const o = { bosId: targetTokenizer.bosId, eosId: targetTokenizer.eosId };

const engines: { name: string; run: () => number[][] }[] = [];
for (const [search, beam] of [
  ['greedy', 1],
  ['beam 4', 4],
] as const) {
  const run = (staticCache: boolean | 'eager') => () =>
    beam === 1
      ? greedy(model, src, { ...o, staticCache }).tokens
      : beamSearch(model, src, { ...o, staticCache }).tokens;
  engines.push(
    { name: `${search}, eager (dynamic cache)`, run: run(false) },
    { name: `${search}, static cache, eager`, run: run('eager') },
    { name: `${search}, replayed`, run: run(true) },
  );
}

// Check (and warm up): each search gives the same tokens all three ways.
for (let g = 0; g < engines.length; g += 3) {
  const reference = JSON.stringify(engines[g].run());
  for (const e of engines.slice(g + 1, g + 3)) {
    const got = JSON.stringify(e.run());
    if (got !== reference) throw new Error(`check failed: ${e.name} gives ${got}, eager ${reference}`);
  }
}
console.log(`check: greedy and beam 4 give the same tokens eager, static and replayed (${SENTENCES} sentences)`);

const times = engines.map(() => [] as number[]);
const loadBefore = loadavg()[0];
for (let r = 0; r < RUNS; r++) {
  for (const [i, e] of engines.entries()) {
    const t0 = performance.now();
    e.run();
    times[i].push(performance.now() - t0);
  }
}
const loadAfter = loadavg()[0];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const rows = engines.map((e, i) => ({
  engine: e.name,
  median_ms: median(times[i]),
  min_ms: Math.min(...times[i]),
  max_ms: Math.max(...times[i]),
  runs_ms: times[i].map((t) => Math.round(t)),
}));
console.log(
  `models/multi30k-en-de, ${SENTENCES} Multi30K val sentences in one batch, fp32, qkv wasm (${numThreads()} ` +
    `threads), medians of ${RUNS} alternating runs (ms); ${cpus().length} cores, load ` +
    `${loadBefore.toFixed(2)} -> ${loadAfter.toFixed(2)}`,
);
for (const r of rows)
  console.log(
    `${r.engine.padEnd(32)} ${r.median_ms.toFixed(0).padStart(7)} ms  (min ${r.min_ms.toFixed(0)}, max ` +
      `${r.max_ms.toFixed(0)})`,
  );
console.log(
  JSON.stringify({
    workload: { model: 'multi30k-en-de', sentences: SENTENCES, runs: RUNS, threads: THREADS, smoke },
    machine: { cpu: cpus()[0]?.model, cores: cpus().length, load_before: loadBefore, load_after: loadAfter },
    rows,
  }),
);
