/**
 * The thread pool's soak (issue 41): launches qkv's parallel kernels again and again with 2 and
 * more threads, with random pauses injected between every step of a launch on both sides (the
 * pool's test-only hooks: caller before the generation bump, between bump and notify, after the
 * notify, before the join; worker after waking, around its kernel, between its decrement and its
 * notify), alone, interleaved with ONNX Runtime sessions (two intra-op threads, no spinning: the
 * configuration of the two stalls) decoding the shipped translation model, and beside a second
 * qkv pool running the same soak in a worker thread (another Atomics.wait-based pool on V8's one
 * futex wait list). Every raw launch's output is checked element by element, and every decoded
 * batch against the other engine.
 *
 * Watchdogs: a join that waits over 1 s throws with every counter of the pool (the pool's
 * `watchdogMs` hook); a watchdog thread that sees no progress for `--stall-ms` (a hang anywhere,
 * ONNX Runtime's join included, where the main thread cannot report anything) writes the phase and
 * both pools' counters to stderr and kills the process. Exit 0 only if every launch completed.
 *
 * Run: node --import tsx scripts/soak-threads.ts [--launches N] [--threads 2,3] [--jitter-us 0,20,200]
 *        [--ort-every N] [--no-ort] [--no-second-pool] [--seed S] [--stall-ms MS] [--hang-after N]
 *   --launches: raw launches per (threads, jitter) pair; ONNX Runtime and qkv decode a batch of
 *   test sentences every --ort-every launches. Last stdout line: `soak: {json summary}`.
 *   --hang-after N: block the main thread for good after N launches (the watchdog's own test).
 */
import { MessageChannel, type MessagePort, Worker, isMainThread, workerData } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { requireKernels, wasmModule } from '../src/backend/wasm/loader.ts';
import { alloc, free } from '../src/backend/wasm/memory.ts';
import * as threads from '../src/backend/wasm/threads.ts';

// The pool before issue 41 (this script copied into a checkout of that commit) has no test hooks:
// it then soaks without pauses or the join's watchdog, the watchdog thread still catches a hang.
const { partsFor, runParallel, setNumThreads } = threads;
const hooked = 'setPoolTestHooks' in threads;
const setPoolTestHooks = (h: threads.PoolTestHooks) => (hooked ? threads.setPoolTestHooks(h) : undefined);
const poolStats = () =>
  hooked ? threads.poolStats() : { launches: 0, recovered: 0, renotified: 0, sync: null, workers: 0 };
const describeCounters = hooked ? threads.describeCounters : () => 'no counters in this version';

interface Options {
  launches: number;
  threads: number[];
  jitterUs: number[];
  ortEvery: number;
  ort: boolean;
  secondPool: boolean;
  seed: number;
  stallMs: number;
  hangAfter: number;
}

function parse(argv: string[]): Options {
  const o: Options = {
    launches: 20_000,
    threads: [2, 3],
    jitterUs: [0, 20, 200],
    ortEvery: 2_000,
    ort: true,
    secondPool: true,
    seed: 1,
    stallMs: 20_000,
    hangAfter: 0,
  };
  const list = (flag: string, v: string | undefined) => {
    const xs = (v ?? '').split(',').map(Number);
    if (xs.length === 0 || xs.some((x) => !Number.isInteger(x) || x < 0))
      throw new Error(`soak: ${flag} expects comma-separated integers >= 0, got '${v}'`);
    return xs;
  };
  const int = (flag: string, v: string | undefined, min: number) => {
    const x = Number(v);
    if (!Number.isInteger(x) || x < min) throw new Error(`soak: ${flag} expects an integer >= ${min}, got '${v}'`);
    return x;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--launches') o.launches = int(a, argv[++i], 1);
    else if (a === '--threads') o.threads = list(a, argv[++i]);
    else if (a === '--jitter-us') o.jitterUs = list(a, argv[++i]);
    else if (a === '--ort-every') o.ortEvery = int(a, argv[++i], 1);
    else if (a === '--no-ort') o.ort = false;
    else if (a === '--no-second-pool') o.secondPool = false;
    else if (a === '--seed') o.seed = int(a, argv[++i], 0);
    else if (a === '--stall-ms') o.stallMs = int(a, argv[++i], 1000);
    else if (a === '--hang-after') o.hangAfter = int(a, argv[++i], 1);
    else throw new Error(`soak: unknown argument '${a}'`);
  }
  if (o.threads.some((t) => t < 2 || t > 8))
    throw new Error(`soak: --threads expects counts from 2 to 8, got ${o.threads.join(',')}`);
  return o;
}

/**
 * Progress shared with the watchdog thread (Int32): [0] launches and decoded batches so far,
 * [1] phase (PHASES), [2] stop (for the second pool), [3] the second pool's launches.
 */
const PHASES = [
  'start',
  'qkv raw launch',
  'qkv decode',
  'ONNX Runtime decode',
  'pool start',
  'a hang injected by --hang-after',
];
const N = 4096; // floats per raw launch

/**
 * Raw launches of binaryFull (a + b) over N floats split among the threads, each output checked
 * element by element (NaN-filled before, so a part no thread wrote fails too).
 */
function rawLaunches(count: number, beat: Int32Array, cell: number, stop?: Int32Array): number {
  // The two exports this file calls directly (the binding files type the rest; see loader.ts declareExports).
  const k = requireKernels() as unknown as { binaryFull(...args: number[]): void; scratchBytes(): number };
  const a = alloc(N),
    b = alloc(N),
    out = alloc(N);
  for (let i = 0; i < N; i++) {
    a[i] = i;
    b[i] = 0.5 * i;
  }
  let done = 0;
  try {
    for (; done < count && !(stop && Atomics.load(stop, 2)); done++) {
      if (cell === 0) Atomics.store(beat, 1, 4);
      const parts = partsFor(wasmModule(), k.scratchBytes() / 4, 1 << 30);
      if (cell === 0) Atomics.store(beat, 1, 1);
      if (parts < 2) throw new Error('soak: the pool did not start (the work runs on one thread)');
      out.fill(NaN);
      const chunk = Math.ceil(N / parts);
      const part = (p: number) => {
        const i0 = Math.min(N, p * chunk),
          i1 = Math.min(N, (p + 1) * chunk);
        return [0, a.byteOffset + 4 * i0, b.byteOffset + 4 * i0, out.byteOffset + 4 * i0, i1 - i0];
      };
      runParallel(
        'binaryFull',
        Array.from({ length: parts - 1 }, (_, w) => part(w + 1)),
        () => k.binaryFull(...(part(0) as [number, number, number, number, number])),
      );
      for (let i = 0; i < N; i++)
        if (out[i] !== 1.5 * i)
          throw new Error(`soak: launch ${done}: out[${i}] = ${out[i]}, expected ${1.5 * i} (${parts} parts)`);
      Atomics.add(beat, cell, 1);
    }
  } finally {
    for (const x of [a, b, out]) free(x);
  }
  return done;
}

/** The watchdog thread: plain JS, its own event loop, so it runs whatever the main thread is blocked in. */
const WATCHDOG_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const { beat, stallMs, phases, second, port } = workerData;
const b = new Int32Array(beat);
const pools = {};
const show = (m) => { pools[m.name] = { s: new Int32Array(m.sync), n: m.workers }; };
parentPort.on('message', show);
port.on('message', show); // from the second pool directly: the main thread may be the one stuck
port.unref();
const counters = ${describeCounters.toString()};
// Each side must progress: the main thread (cell 0) and, until told to stop, the second pool (cell 3).
const last = [-1, -1], since = [Date.now(), Date.now()];
setInterval(() => {
  let stalled = 0;
  for (const [i, cell] of [[0, 0], [1, 3]]) {
    if (i === 1 && (!second || Atomics.load(b, 2))) continue;
    const now = Atomics.load(b, cell);
    if (now !== last[i]) { last[i] = now; since[i] = Date.now(); }
    stalled = Math.max(stalled, Date.now() - since[i]);
  }
  if (stalled < stallMs) return;
  const state = Object.entries(pools).map(([name, p]) => name + ': ' + counters(p.s, p.n)).join(' | ');
  writeSync(2, 'soak: STALL: no progress for ' + stalled + ' ms in phase ' + phases[Atomics.load(b, 1)] + ' after ' + Atomics.load(b, 0) + ' steps (second pool: ' + Atomics.load(b, 3) + ' launches) [' + state + ']\\n');
  process.kill(process.pid, 'SIGKILL');
}, 250);
`;

async function main(): Promise<void> {
  const o = parse(process.argv.slice(2));
  const t0 = Date.now();
  const beat = new Int32Array(new SharedArrayBuffer(16));
  const log = (line: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)} s] ${line}`);
  log(
    `node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model}), load average ${loadavg()
      .map((x) => x.toFixed(1))
      .join(
        ' ',
      )}; ${process.argv.slice(2).join(' ') || 'default options'}; pool hooks ${hooked ? 'available' : 'absent (the pool before issue 41)'}`,
  );
  // describeCounters' text runs in the watchdog: it uses the counters' layout constants by value.
  const src = WATCHDOG_SOURCE.replace(/\bPER_WORKER\b/g, '4')
    .replace(/\bCELLS\b/g, '3')
    .replace(/\bSTARTED\b/g, '0')
    .replace(/\bDONE\b/g, '1')
    .replace(/\bEXITED\b/g, '2')
    .replace(/\bGENERATION\b/g, '0')
    .replace(/\bRUNNING\b/g, '1')
    .replace(/\bREADY\b/g, '2')
    .replace(/\bGONE\b/g, '3');
  const { port1, port2 } = new MessageChannel();
  const watchdog = new Worker(src, {
    eval: true,
    execArgv: [],
    workerData: { beat: beat.buffer, stallMs: o.stallMs, phases: PHASES, second: o.secondPool, port: port1 },
    transferList: [port1],
  });
  watchdog.unref();
  const showPool = (name: string) => {
    const st = poolStats();
    if (st.sync) watchdog.postMessage({ name, sync: st.sync, workers: st.workers });
  };

  let second: Worker | null = null;
  let secondError: unknown = null;
  if (o.secondPool) {
    // A second qkv (its own module instance, memory and pool) soaking in a worker thread.
    // Node 20 does not apply an inherited `--import tsx` to a worker's entry file: register it first.
    const tsxApi = import.meta.resolve('tsx/esm/api'); // from this file, whatever the working directory
    const boot = `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(import.meta.url)}); })`;
    second = new Worker(boot, {
      eval: true,
      execArgv: [],
      workerData: { beat: beat.buffer, seed: o.seed + 1000, jitterUs: o.jitterUs, threads: o.threads[0], port: port2 },
      transferList: [port2],
    });
    second.on('error', (e) => {
      secondError = e;
    });
  }

  let ort: null | {
    decode: (ids: number[][]) => Promise<string[]>;
    qkv: (ids: number[][]) => string[];
    batches: number[][][];
  } = null;
  if (o.ort) {
    const ortm = await import('onnxruntime-node');
    const { setBackend } = await import('../src/index.ts');
    const { encodeLines, translateIds } = await import('../src/decode/batch.ts');
    const { DEFAULT_DECODING, loadModelDir } = await import('../src/cli/files.ts');
    const { SESSION_OPTIONS, translateIdsOnnx } = await import('../src/cli/onnxruntime.ts');
    const { OrtSeq2Seq } = await import('../src/decode/onnxruntime.ts');
    const { exportSeq2SeqOnnx } = await import('../src/io/onnx/export.ts');
    setBackend('wasm');
    const root = fileURLToPath(new URL('..', import.meta.url));
    const { model, tokenizer, targetTokenizer, config } = loadModelDir(join(root, 'models/multi30k-en-de'));
    const exp = exportSeq2SeqOnnx(model.config, model.stateDict(), { dtype: 'fp32', withAttention: false });
    const options = { ...SESSION_OPTIONS, intraOpNumThreads: 2, interOpNumThreads: 2 };
    const s = (f: string) => ortm.InferenceSession.create(exp.files[f]!, options);
    const engine = new OrtSeq2Seq(
      ortm,
      {
        encoder: await s(exp.manifest.graphs.encoder),
        decoder: await s(exp.manifest.graphs.decoder),
        decoderWithPast: await s(exp.manifest.graphs.decoderWithPast),
      },
      exp.manifest,
    );
    const lines = gunzipSync(readFileSync(join(root, 'data/multi30k/test_2016_flickr.en.gz')))
      .toString('utf8')
      .split('\n')
      .filter((l) => l !== '');
    const ids = encodeLines(model, tokenizer, lines).ids;
    const alpha = (config.decoding ?? DEFAULT_DECODING).alpha;
    const batches = Array.from({ length: Math.floor(ids.length / 8) }, (_, i) => ids.slice(8 * i, 8 * i + 8));
    let beam = 1;
    ort = {
      batches,
      qkv: (b) => translateIds(model, targetTokenizer, b, { beam, alpha }),
      decode: async (b) => {
        const r = await translateIdsOnnx(engine, targetTokenizer, b, { beam, alpha });
        beam = beam === 1 ? 4 : 1;
        return r;
      },
    };
    log(
      `ONNX Runtime ${ortm.env.versions.common}: the shipped translation model in 3 sessions, intra-op threads 2, no spinning`,
    );
  }

  let launches = 0,
    decoded = 0,
    batch = 0;
  for (const threads of o.threads) {
    for (const jitterUs of o.jitterUs) {
      setNumThreads(threads);
      setPoolTestHooks({ jitterUs, seed: o.seed + threads * 100 + jitterUs, watchdogMs: 1000 });
      let mine = 0;
      while (mine < o.launches) {
        const step = Math.min(o.ort ? o.ortEvery : 1000, o.launches - mine);
        mine += rawLaunches(step, beat, 0);
        showPool('main pool');
        if (o.hangAfter && launches + mine >= o.hangAfter) {
          // The watchdog's own check: block the main thread for good, as the two stalls did.
          Atomics.store(beat, 1, 5);
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
        }
        if (ort) {
          const b = ort.batches[batch++ % ort.batches.length]!;
          Atomics.store(beat, 1, 2);
          const want = ort.qkv(b);
          Atomics.add(beat, 0, 1);
          Atomics.store(beat, 1, 3);
          const got = await ort.decode(b);
          Atomics.add(beat, 0, 1);
          if (got.join('\n') !== want.join('\n'))
            throw new Error(`soak: batch ${batch}: ONNX Runtime and qkv translate differently`);
          decoded += b.length;
        }
        await new Promise((r) => setImmediate(r)); // let the event loop run (the second pool's and watchdog's messages)
        if (secondError) throw secondError;
      }
      launches += mine;
      log(
        `${threads} threads, jitter up to ${jitterUs} µs: ${mine} launches checked; ${launches} in all, ${decoded} sentences decoded by both engines, second pool ${Atomics.load(beat, 3)} launches`,
      );
    }
  }
  Atomics.store(beat, 2, 1);
  if (second) await new Promise((r) => second!.once('exit', r));
  if (secondError) throw secondError;
  log(
    `done; load average ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  // poolLaunches: every launch of the main thread's pool, the decoder's own (GEMMs, attention) included.
  const summary = {
    launches,
    poolLaunches: poolStats().launches,
    secondPoolLaunches: Atomics.load(beat, 3),
    sentencesDecoded: decoded,
    threads: o.threads,
    jitterUs: o.jitterUs,
    seconds: Math.round((Date.now() - t0) / 1000),
  };
  console.log(`soak: ${JSON.stringify(summary)}`);
  process.exit(0);
}

/** The second pool: raw launches with the same pauses until the main soak says stop. */
function secondPool(): void {
  const { beat, seed, jitterUs, threads, port } = workerData as {
    beat: SharedArrayBuffer;
    seed: number;
    jitterUs: number[];
    threads: number;
    port: MessagePort;
  };
  const b = new Int32Array(beat);
  setNumThreads(threads);
  for (let round = 0; !Atomics.load(b, 2); round++) {
    const j = jitterUs[round % jitterUs.length]!;
    setPoolTestHooks({ jitterUs: j, seed: seed + round, watchdogMs: 1000 });
    // Its progress goes to cell 3; cell 0 and the phase are the main thread's.
    rawLaunches(1, b, 3, b);
    const st = poolStats();
    if (st.sync) port.postMessage({ name: 'second pool', sync: st.sync, workers: st.workers });
    rawLaunches(1999, b, 3, b);
  }
}

if (isMainThread) {
  main().catch((e: unknown) => {
    console.error(`soak: FAILED: ${(e as Error)?.message ?? e}`);
    process.exit(1);
  });
} else secondPool();
