/**
 * Where a thread-pool launch pays (issue 51: "no thread launch for kernels below the size where it pays,
 * measured"): wall time of wasm kernels at the sizes a decoding step and a small training step call them,
 * run on the calling thread alone and split across the pool, alternately in one process (the pool stays up;
 * src/backend/wasm/parallel.ts's setParallelThreshold switches between the two), operands in wasm memory.
 *   npx tsx bench/ab-threads.ts [--rounds N]     one JSON document: per case its work, both medians, the ratio
 * Work is in threadsFor's units (a GEMM's 2·m·n·k). Threads' benefit is a wall-clock matter: run it on a
 * quiet machine and report its load (uptime) beside the numbers.
 */
import { availableParallelism, cpus } from 'node:os';
import { getBackend } from '../src/backend/backend.ts';
import type { AttentionParams, F32, GemmParams } from '../src/backend/contract.ts';
import { setParallelThreshold } from '../src/backend/wasm/parallel.ts';
import { numThreads, poolStats } from '../src/backend/wasm/threads.ts';
import { memoryScope, randn, setBackend } from '../src/index.ts';
import { empty } from '../src/ops/util.ts';

const args = process.argv.slice(2);
const ROUNDS = args.includes('--rounds') ? Number(args[args.indexOf('--rounds') + 1]) : 15;
setBackend('wasm');
const k = getBackend();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

interface Case {
  name: string;
  work: number;
  run: () => void;
}

/** Float storage of n random values in wasm memory (the bench runs inside one memoryScope). */
const buf = (n: number): F32 => empty([n]).write(randn([n]).dataSync()).storage as F32;

function gemmCase(m: number, n: number, kk: number, what: string): Case {
  const a = buf(m * kk);
  const b = buf(n * kk);
  const c = empty([m * n]).storage as F32;
  const p: GemmParams = {
    batch: 1,
    m,
    n,
    k: kk,
    transA: false,
    transB: true,
    strideA: 0,
    strideB: 0,
    strideC: 0,
    accumulate: false,
  };
  return { name: `gemm ${m}x${n}x${kk} (${what})`, work: 2 * m * n * kk, run: () => k.gemm(a, b, c, p) };
}

function attentionCase(b: number, h: number, l: number, s: number, d: number, what: string): Case {
  const q = buf(b * h * l * d);
  const kk = buf(b * h * s * d);
  const v = buf(b * h * s * d);
  const out = empty([b * h * l * d]).storage as F32;
  const lse = empty([b * h * l]).storage as F32;
  const p: AttentionParams = { b, h, l, s, d, dv: d, scale: 1 / Math.sqrt(d), causal: false, bias: null };
  return {
    name: `attention b${b} h${h} l${l} s${s} d${d} (${what})`,
    work: 2 * b * h * l * s * 2 * d,
    run: () => k.attention(q, kk, v, out, lse, null, p),
  };
}

function addCase(n: number): Case {
  const a = buf(n);
  const b = buf(n);
  const out = empty([n]).storage as F32;
  return {
    name: `binary add of ${n} (elementwise)`,
    work: 8 * n,
    run: () => k.binary('add', a, [1], b, [1], out, [n]),
  };
}

/** Median µs per call of `c.run` with the pool off (1) and on (2), and the launches the split made. */
function measure(c: Case) {
  // Calls per sample: about 2 ms of work, so the clock's resolution and one preemption weigh little.
  const t0 = performance.now();
  c.run();
  const once = Math.max(performance.now() - t0, 0.001);
  const calls = Math.max(3, Math.min(2000, Math.round(2 / once)));
  const single: number[] = [];
  const split: number[] = [];
  let launches = 0;
  for (let r = 0; r < ROUNDS; r++) {
    for (const on of r % 2 === 0 ? [false, true] : [true, false]) {
      setParallelThreshold(on ? 0 : Number.POSITIVE_INFINITY);
      c.run();
      const l0 = poolStats().launches;
      const s0 = performance.now();
      for (let i = 0; i < calls; i++) c.run();
      const us = ((performance.now() - s0) * 1000) / calls;
      if (on) {
        split.push(us);
        launches += poolStats().launches - l0;
      } else single.push(us);
    }
  }
  const one = median(single);
  const two = median(split);
  return {
    case: c.name,
    work: c.work,
    singleUs: Math.round(one * 100) / 100,
    splitUs: Math.round(two * 100) / 100,
    splitOverSingle: Math.round((two / one) * 1000) / 1000,
    launchesPerCall: Math.round((launches / (ROUNDS * calls)) * 100) / 100,
  };
}

const rows = memoryScope(() => {
  const cases: Case[] = [
    addCase(1 << 19),
    addCase(1 << 21),
    gemmCase(1, 8000, 128, 'greedy step: the vocabulary projection, few-row path'),
    gemmCase(2, 8000, 128, 'few-row path'),
    gemmCase(4, 8000, 128, 'beam 4 of one sentence: vocabulary projection, few-row path'),
    gemmCase(4, 512, 128, 'beam 4 of one sentence: feed-forward, few-row path'),
    gemmCase(32, 128, 128, 'output projection, 32 rows'),
    gemmCase(36, 384, 128, 'beam step, 36 rows: fused QKV projection'),
    gemmCase(36, 512, 128, 'beam step, 36 rows: feed-forward 1'),
    gemmCase(36, 128, 512, 'beam step, 36 rows: feed-forward 2'),
    gemmCase(64, 384, 128, '64 rows: fused QKV projection'),
    gemmCase(64, 512, 128, '64 rows: feed-forward 1'),
    gemmCase(128, 128, 128, 'beam step, 128 rows: output projection'),
    gemmCase(128, 384, 128, 'beam step, 128 rows: fused QKV projection'),
    gemmCase(128, 512, 128, 'beam step, 128 rows: feed-forward 1'),
    gemmCase(36, 8000, 128, 'beam step, 36 rows: vocabulary projection'),
    gemmCase(256, 256, 256, 'GEMM 256³'),
    attentionCase(8, 4, 16, 16, 32, 'small training batch'),
    attentionCase(32, 4, 32, 32, 32, 'training, 32 sentences x 32 tokens'),
    attentionCase(128, 4, 1, 33, 32, 'beam step, 128 rows over a 33-token source'),
  ];
  return cases.map((c) => measure(c));
});
setParallelThreshold(0);
const cpuModel = cpus()[0]?.model ?? 'unknown';
console.log(
  JSON.stringify(
    { cpu: cpuModel, availableParallelism: availableParallelism(), threads: numThreads(), rounds: ROUNDS, rows },
    null,
    1,
  ),
);
process.exit(0);
