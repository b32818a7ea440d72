import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { numThreads, setNumThreads } from '../src/backend/wasm/threads.ts';
import { wasmVariant } from '../src/backend/wasm/loader.ts';
import { SESSION_OPTIONS } from '../src/cli/onnxruntime.ts';
import { generateStreamAsync } from '../src/decode/gpt.ts';
import { OrtGpt } from '../src/decode/onnxruntime.ts';
import { exportGptOnnx } from '../src/io/onnx/export.ts';
import { decoderConfigFromHf } from '../src/models/hf/llama.ts';
import { decode, manualSeed, models, noGrad, setBackend, Tensor } from '../src/index.ts';
import { storageLength } from '../src/tensor/storage.ts';
import { acquireBenchLock } from './lock.ts';
import { codeVersion, cpuName, writeNewResults } from './results.ts';
import {
  cpuLine,
  decodersTable,
  type DecoderRow,
  HF_CONFIG,
  NEW,
  PROMPT,
  LAYER_SCALE,
  SEED,
  smoke,
  THREADS,
  writeHfLlamaFolder,
} from './decoders-shape.ts';

const inIndex = process.argv.includes('--in-index');
const withPeers = !process.argv.includes('--no-peers');
if (!inIndex) acquireBenchLock();
const root = fileURLToPath(new URL('..', import.meta.url));
const PYTHON = join(root, '.venv-ref/bin/python');
const RUNS = smoke ? 1 : 5;
const MiB = 2 ** 20;
const CPU = cpuLine();
const load1 = () => loadavg()[0]!;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
/** How many of a's tokens equal b's at the same place, and how long their common start is: "n/64 (first k)". */
const agree = (a: number[], b: number[]) => {
  const k = a.findIndex((x, i) => x !== b[i]);
  return `${a.filter((x, i) => x === b[i]).length}/${NEW} (first ${k < 0 ? a.length : k} the same)`;
};
const work = mkdtempSync(join(tmpdir(), 'qkv-bench-decoders-'));

setBackend('wasm');
setNumThreads(THREADS);
const cfg = decoderConfigFromHf(HF_CONFIG);

// ---- qkv: fp32, int8, q4 from one set of seeded weights ------------------------------------------------
manualSeed(SEED);
const fp32 = new models.GPT(cfg).eval();
// qkv's init (N(0, 0.02²), residual projections 0.02/√(2·layers)) leaves the token's own embedding to dominate the
// tied head's logits: the greedy continuation is one id repeated, and the engines' agreement says nothing. The
// layers' matrices ×LAYER_SCALE make the continuation vary (the run prints how many distinct ids it has).
noGrad(() => {
  for (const [name, t] of Object.entries(fp32.stateDict()))
    if (t.ndim === 2 && name !== 'wte.weight') t.write(t.dataSync<Float32Array>().map((x) => x * LAYER_SCALE));
});
const weights = fp32.stateDict();
const quantized = (o: Parameters<models.GPT['quantize']>[0]) => {
  const m = new models.GPT(cfg, { init: false }).eval();
  m.loadStateDict(weights);
  return m.quantize(o);
};
const qkvModels = { fp32, int8: quantized({ dtype: 'int8' }), q4: quantized({ dtype: 'q4' }) };
const bytesOf = (m: models.GPT) =>
  Object.values(m.stateDict()).reduce((n, t) => {
    const per = t.dtype === 'float32' ? 4 : t.dtype === 'float16' ? 2 : 1;
    return n + storageLength(t.dtype, t.size) * per;
  }, 0);
const qkvGen = (m: models.GPT, n = NEW, useCache = true) =>
  decode.generate(m, PROMPT, { maxTokens: n, temperature: 0, useCache }).ids;
for (const [dtype, m] of Object.entries(qkvModels)) {
  const a = qkvGen(m, 4);
  const b = qkvGen(m, 4, false);
  if (a.join() !== b.join()) throw new Error(`check failed: qkv ${dtype} with the KV cache (${a}) ≠ without (${b})`);
  console.log(`check: qkv ${dtype}: 4 greedy tokens with the KV cache = recomputing without it`);
}

interface Engine {
  engine: 'qkv' | 'ONNX Runtime' | 'PyTorch';
  dtype: 'fp32' | 'int8' | 'q4';
  run: () => Promise<number[]>;
  bytes: number;
  note?: string;
  /** For ONNX Runtime: the qkv model its graph was exported from, and that model's name in the report. */
  from?: { name: string; ids: number[] };
}
const engines: Engine[] = Object.entries(qkvModels).map(([dtype, m]) => ({
  engine: 'qkv',
  dtype: dtype as Engine['dtype'],
  run: async () => qkvGen(m),
  bytes: bytesOf(m),
  ...(dtype === 'q4' && { note: 'table (the tied head) q4' }),
}));

// ---- ONNX Runtime on qkv's exports --------------------------------------------------------------------------
const ortDirs: Record<string, string> = {};
const sessions: ort.InferenceSession[] = [];
if (withPeers)
  for (const dtype of ['fp32', 'int8', 'q4'] as const) {
    let src = qkvModels[dtype];
    let note = { fp32: 'MatMul', int8: 'MatMulInteger', q4: 'MatMulNBits' }[dtype];
    let exp: ReturnType<typeof exportGptOnnx>;
    try {
      exp = exportGptOnnx(cfg, src.stateDict(), { dtype, withAttention: false });
    } catch (e) {
      if (dtype !== 'q4') throw e;
      console.log(`ONNX export of qkv q4 (q4 table): ${(e as Error).message}; exporting q4 with an int8 table`);
      src = quantized({ dtype: 'q4', tables: 'int8' });
      exp = exportGptOnnx(cfg, src.stateDict(), { dtype, withAttention: false });
      note += ', table int8 (the export takes no q4 table)';
    }
    const from = src === qkvModels[dtype] ? undefined : { name: `qkv q4 with an int8 table`, ids: qkvGen(src) };
    const bytes = exp.files[exp.manifest.graphs.decoder]!;
    const dir = (ortDirs[dtype] = join(work, `onnx-${dtype}`));
    mkdirSync(dir);
    writeFileSync(join(dir, exp.manifest.graphs.decoder), bytes);
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify(exp.manifest));
    const session = await ort.InferenceSession.create(join(dir, exp.manifest.graphs.decoder), {
      ...SESSION_OPTIONS,
      intraOpNumThreads: THREADS,
    });
    sessions.push(session);
    const lm = new OrtGpt(ort, session, exp.manifest);
    const run = async () => {
      const ids: number[] = [];
      for await (const t of generateStreamAsync(lm, PROMPT, { maxTokens: NEW, temperature: 0 })) ids.push(t.id);
      return ids;
    };
    engines.push({ engine: 'ONNX Runtime', dtype, run, bytes: bytes.length, note, ...(from && { from }) });
  }

// ---- First run of each: the tokens (and a warm-up), then the timed runs, alternating ---------------------------
const tokens: Record<string, number[]> = {};
for (const e of engines) tokens[`${e.engine} ${e.dtype}`] = await e.run();
const base = tokens['qkv fp32']!;
console.log(`qkv fp32's tokens: ${base.join(' ')} (${new Set(base).size} distinct)`);
const sameAs: Record<string, string> = {};
for (const e of engines) {
  const t = tokens[`${e.engine} ${e.dtype}`]!;
  if (t.length !== NEW) throw new Error(`check failed: ${e.engine} ${e.dtype} made ${t.length} tokens, not ${NEW}`);
  const own = e.from ?? { name: `qkv ${e.dtype}`, ids: tokens[`qkv ${e.dtype}`]! };
  sameAs[`${e.engine} ${e.dtype}`] =
    `${agree(t, base)} as qkv fp32` +
    (e.engine !== 'qkv' && e.dtype !== 'fp32' ? `, ${agree(t, own.ids)} as ${own.name}` : '');
  console.log(`tokens: ${e.engine} ${e.dtype}: ${sameAs[`${e.engine} ${e.dtype}`]}`);
}
const times: number[][] = engines.map(() => []);
const loads: number[][] = engines.map(() => []);
for (let r = 0; r < RUNS; r++)
  for (const [i, e] of engines.entries()) {
    const t0 = performance.now();
    await e.run();
    times[i]!.push(performance.now() - t0);
    loads[i]!.push(load1());
  }
for (const s of sessions) await s.release();

const rows: DecoderRow[] = engines.map((e, i) => {
  const ms = median(times[i]!);
  const key = `${e.engine} ${e.dtype}`;
  return {
    engine: e.engine,
    dtype: e.dtype,
    ms,
    tps: (1000 * NEW) / ms,
    weight_mib: e.bytes / MiB,
    peak_mib: null,
    load: median(loads[i]!),
    tokens: sameAs[key]!,
    ...(e.note && { note: e.note }),
  };
});

// ---- PyTorch: transformers' LlamaForCausalLM on the same weights, as a Hugging Face folder -------------------
const folder = join(work, 'hf-llama');
const probe = withPeers ? spawnSync(PYTHON, ['-c', 'import torch, transformers'], { encoding: 'utf8' }) : null;
const torchSkipped =
  probe && probe.status !== 0
    ? `PyTorch: skipped (${PYTHON} cannot import torch and transformers: ` +
      `${(probe.stderr ?? probe.error?.message ?? '').trim().split('\n').pop()})`
    : '';
if (torchSkipped) console.log(torchSkipped);
if (withPeers && !torchSkipped) {
  // HF's names for every tensor of the checkpoint, mapped to qkv's places by models/hf/llama.ts, then sliced back;
  // on the js backend: the copies stay off WebAssembly memory (4 GiB at most), which holds the models.
  setBackend('js');
  const hfBytes = writeHfLlamaFolder(folder, weights, cfg);
  setBackend('wasm');

  const env = { ...process.env, OMP_WAIT_POLICY: 'PASSIVE', OMP_NUM_THREADS: String(THREADS) };
  const args = [folder, JSON.stringify(PROMPT), String(NEW), String(RUNS), String(THREADS)];
  const t0 = load1();
  const p = spawnSync(PYTHON, [join(root, 'bench/peers/llama_torch.py'), 'time', ...args], {
    encoding: 'utf8',
    env,
    maxBuffer: 1 << 26,
  });
  if (p.status !== 0) throw new Error(`PyTorch failed: ${p.stderr}`);
  const t = JSON.parse(p.stdout.trim().split('\n').pop()!) as {
    torch: string;
    transformers: string;
    attn: string;
    ms: number;
    ids: number[];
    logits: number[];
  };
  const ref = noGrad(() => {
    const x = new Tensor(Int32Array.from(PROMPT), [1, PROMPT.length], 'int32');
    const out = fp32.forward(x).dataSync<Float32Array>();
    return out.subarray(out.length - cfg.vocabSize);
  });
  const d = t.logits.reduce((w, x, i) => Math.max(w, Math.abs(x - ref[i]!)), 0);
  console.log(`check: PyTorch's logits at the prompt's last position: max |diff| to qkv fp32's ${d.toExponential(1)}`);
  if (!(d <= 1e-3)) throw new Error(`check failed: PyTorch's logits are ${d} from qkv fp32's: the weights differ`);
  const same = `${agree(t.ids, base)} as qkv fp32`;
  console.log(`tokens: PyTorch fp32: ${same}`);
  rows.push({
    engine: 'PyTorch',
    dtype: 'fp32',
    ms: t.ms,
    tps: (1000 * NEW) / t.ms,
    weight_mib: hfBytes / MiB,
    peak_mib: null,
    load: (t0 + load1()) / 2,
    tokens: same,
    note: `torch ${t.torch}, transformers ${t.transformers} LlamaForCausalLM (${t.attn}), generate()`,
  });
}

// ---- Peak memory: each row decoding once in a process of its own ---------------------------------------------
const peakOf = (cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): number | null => {
  const p = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', env, maxBuffer: 1 << 24 });
  if (p.status !== 0) {
    console.log(`peak memory: ${args.slice(-3).join(' ')} failed: ${p.stderr.trim().split('\n').pop()}`);
    return null;
  }
  return (JSON.parse(p.stdout.trim().split('\n').pop()!) as { peak_mib: number }).peak_mib;
};
const tsx = (args: string[]) =>
  peakOf(process.execPath, ['--import', 'tsx', 'bench/decoders-peak.ts', ...args, ...(smoke ? ['--smoke'] : [])]);
for (const r of rows) {
  if (r.engine === 'qkv') r.peak_mib = tsx(['qkv', r.dtype]);
  else if (r.engine === 'ONNX Runtime') r.peak_mib = tsx(['ort', ortDirs[r.dtype]!]);
  else
    r.peak_mib = peakOf(
      PYTHON,
      [
        join(root, 'bench/peers/llama_torch.py'),
        'peak',
        folder,
        JSON.stringify(PROMPT),
        String(NEW),
        '1',
        String(THREADS),
      ],
      { ...process.env, OMP_WAIT_POLICY: 'PASSIVE', OMP_NUM_THREADS: String(THREADS) },
    );
}
rmSync(work, { recursive: true, force: true });

// ---- Report ---------------------------------------------------------------------------------------------
const params = fp32.numParameters();
const head =
  `SmolLM2-135M shape${smoke ? ' (--smoke: a tiny Llama)' : ''}: ${HF_CONFIG.num_hidden_layers} layers, ` +
  `${HF_CONFIG.hidden_size} wide, ${HF_CONFIG.num_attention_heads} heads over ${HF_CONFIG.num_key_value_heads} KV ` +
  `heads, SwiGLU ${HF_CONFIG.intermediate_size}, vocabulary ${HF_CONFIG.vocab_size}, tied ` +
  `(${(params / 1e6).toFixed(1)}M parameters, random); ${PROMPT.length}-id prompt + ${NEW} greedy tokens, batch 1, ` +
  `KV cache; ${THREADS} threads each (qkv wasm ${wasmVariant()} with ${numThreads()}); medians of ${RUNS} run(s)`;
const fp = rows[0]!;
const line = (r: DecoderRow) =>
  `${`${r.engine} ${r.dtype}`.padEnd(18)} ${r.ms.toFixed(0).padStart(7)} ms ${r.tps.toFixed(1).padStart(7)} tokens/s ` +
  `${(r.tps / fp.tps).toFixed(2)}× qkv fp32  weights ${r.weight_mib.toFixed(1)} MiB  peak ` +
  `${r.peak_mib == null ? '—' : r.peak_mib.toFixed(0)} MiB  tokens ${r.tokens}  [${CPU}, load ${r.load.toFixed(2)}]` +
  `${r.note ? `  (${r.note})` : ''}`;
console.log(head);
for (const r of rows) console.log(line(r));
if (!inIndex && !smoke) {
  const table = decodersTable(rows, CPU);
  const written = writeNewResults(
    `# Today's decoders: SmolLM2-135M shape\n\nWritten by \`npx tsx bench/decoders.ts\` on ` +
      `${new Date().toISOString().slice(0, 10)}, ${codeVersion()}.\n\nMachine: ${cpus().length} × ${cpuName()}, ` +
      `${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}; lscpu: ${CPU}.\n\n${head}.\n\n` +
      `${torchSkipped ? `${torchSkipped}.\n\n` : ''}` +
      'What each row is, how it is timed and checked: the header of bench/decoders.ts. Timings are only ' +
      'comparable within one run; a load average above the core count means other work took CPU.\n\n' +
      `${table}\n`,
    'decoders',
  );
  console.log(`wrote bench/${written}`);
}
console.log(JSON.stringify({ rows, tokens: NEW, cpu: CPU, ...(torchSkipped && { note: torchSkipped }) }));
