/**
 * GPT-2 124M-shaped greedy decoding in low precision (issue 50, point 4): the model of bench/gpt2.ts (GPT-2
 * small's shape, random weights, seed 1) continues an 8-token prompt by 64 tokens, greedy, with the KV cache,
 * on every engine in one run:
 *   - qkv (wasm backend) in fp32, int8 and q4 (module.quantize: the layers' weights int8 or q4, the tables
 *     int8; int8 activations per row, int32 sums);
 *   - PyTorch 1.13 (/usr/bin/python3, 2 threads) in fp32, and torch.ao.quantization.quantize_dynamic int8
 *     (every nn.Linear, the tied head included; the embedding table stays fp32, as quantize_dynamic leaves
 *     it) on the quantized engine the build has (onednn, else qnnpack; printed);
 *   - ONNX Runtime (onnxruntime-node, 2 threads) on qkv's own exports of the three models: fp32 MatMul,
 *     int8 MatMulInteger, q4 MatMulNBits (src/io/onnx), driven by qkv's generation code (OrtGpt).
 * Weight MiB is what each holds for its weights: qkv the bytes of its state dict (float32 4, int8 1, q4 ½ a
 * value, scales float32), PyTorch its state dict as torch.save writes it, ONNX Runtime the graph's bytes.
 * Peak MiB: each row's model made and decoding once in a process of its own (bench/gpt2-peak.ts; PyTorch in
 * Python), its peak resident memory less its memory before the model.
 * Checked first: qkv's quantized generation with the KV cache equals recomputing without it, and ONNX
 * Runtime's int8 graph generates qkv int8's tokens.
 *   npx tsx bench/gpt2-quantized.ts              the real shape (bench/index.ts runs it)
 *   npx tsx bench/gpt2-quantized.ts --smoke      a tiny shape, one run each, to check the script works
 *   npx tsx bench/gpt2-quantized.ts --no-peers   qkv only
 * The last line printed is JSON: { rows: [{ engine, dtype, ms, tps, weight_mib, peak_mib, note? }], tokens }.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { SESSION_OPTIONS } from '../src/cli/onnxruntime.ts';
import { generateStreamAsync } from '../src/decode/gpt.ts';
import { OrtGpt } from '../src/decode/onnxruntime.ts';
import { exportGptOnnx } from '../src/io/onnx/export.ts';
import { manualSeed, models, setBackend } from '../src/index.ts';
import { storageLength } from '../src/tensor/storage.ts';
import { cfg, checkCache, NEW, prompt, RUNS, timeGreedy, withPeers } from './gpt2.ts';

setBackend('wasm');
const MiB = 2 ** 20;

interface Result {
  engine: 'qkv' | 'PyTorch' | 'ONNX Runtime';
  dtype: string;
  ms: number | null;
  tps: number | null;
  weight_mib: number | null;
  /** The process's peak resident memory decoding it, less its memory before the model (bench/gpt2-peak.ts). */
  peak_mib?: number | null;
  note?: string;
}
const rows: Result[] = [];
const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1]!;
const row = (engine: Result['engine'], dtype: string, ms: number, bytes: number, note?: string): Result => {
  const r: Result = { engine, dtype, ms, tps: (1000 * NEW) / ms, weight_mib: bytes / MiB, ...(note && { note }) };
  console.log(
    `${engine} ${dtype}: ${NEW} tokens in ${ms.toFixed(0)} ms = ${r.tps!.toFixed(1)} tokens/s, weights ${r.weight_mib!.toFixed(1)} MiB${note ? ` (${note})` : ''}`,
  );
  return r;
};

// ---- qkv --------------------------------------------------------------------------------------
manualSeed(1);
const fp32 = new models.GPT(cfg).eval();
const weights = fp32.stateDict();
const qkvModels: Record<string, models.GPT> = { fp32 };
for (const dtype of ['int8', 'q4'] as const) {
  const m = new models.GPT(cfg, { init: false }).eval();
  m.loadStateDict(weights);
  qkvModels[dtype] = m.quantize({ dtype });
}
const bytesOf = (m: models.GPT) =>
  Object.values(m.stateDict()).reduce(
    (n, t) => n + storageLength(t.dtype, t.size) * (t.dtype === 'float32' ? 4 : 1),
    0,
  );
const qkvTokens: Record<string, number[]> = {};
for (const [dtype, m] of Object.entries(qkvModels)) {
  checkCache(m, Math.min(NEW, 4), `qkv ${dtype}`);
  const { ms, ids } = timeGreedy(m);
  qkvTokens[dtype] = ids;
  rows.push(row('qkv', dtype, ms, bytesOf(m)));
}
const agree = (a: number[], b: number[]) => a.filter((x, i) => x === b[i]).length;
console.log(
  `greedy tokens equal to fp32's: int8 ${agree(qkvTokens.int8!, qkvTokens.fp32!)}/${NEW}, q4 ${agree(qkvTokens.q4!, qkvTokens.fp32!)}/${NEW}`,
);

// ---- ONNX Runtime on qkv's exports --------------------------------------------------------------
const THREADS = 2;
/** Each export's folder (the graph and manifest.json): timed from here, and read again by the peak-memory run. */
const ortDirs: Record<string, string> = {};
for (const dtype of ['fp32', 'int8', 'q4'] as const) {
  if (!withPeers) break;
  const m = qkvModels[dtype]!;
  const exp = exportGptOnnx(cfg, m.stateDict(), { dtype, withAttention: false });
  const bytes = exp.files[exp.manifest.graphs.decoder]!;
  const dir = (ortDirs[dtype] = mkdtempSync(join(tmpdir(), 'qkv-gpt2-ort-')));
  writeFileSync(join(dir, exp.manifest.graphs.decoder), bytes);
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(exp.manifest));
  const session = await ort.InferenceSession.create(join(dir, exp.manifest.graphs.decoder), {
    ...SESSION_OPTIONS,
    intraOpNumThreads: THREADS,
  });
  const lm = new OrtGpt(ort, session, exp.manifest);
  const gen = async () => {
    const ids: number[] = [];
    for await (const t of generateStreamAsync(lm, prompt, { maxTokens: NEW, temperature: 0 })) ids.push(t.id);
    return ids;
  };
  const first = await gen();
  if (dtype !== 'q4' && first.join() !== qkvTokens[dtype]!.join())
    throw new Error(`check failed: ONNX Runtime ${dtype} generates ${first}, qkv ${dtype} ${qkvTokens[dtype]}`);
  const times: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now();
    await gen();
    times.push(performance.now() - t0);
  }
  const op = { fp32: 'MatMul', int8: 'MatMulInteger', q4: 'MatMulNBits' }[dtype];
  const same = dtype === 'q4' ? `, ${agree(first, qkvTokens.q4!)}/${NEW} tokens as qkv q4` : ", qkv's tokens";
  rows.push(row('ONNX Runtime', dtype, median(times), bytes.length, `${op}${same}`));
  await session.release();
}

// ---- PyTorch: fp32 and quantize_dynamic int8 ------------------------------------------------------
const pyModel = `
import io, json, math, time, torch
from torch import nn
torch.set_num_threads(2); torch.manual_seed(1)
V, P, L, H, E, NEW, RUNS = ${cfg.vocabSize}, ${cfg.blockSize}, ${cfg.nLayer}, ${cfg.nHead}, ${cfg.nEmbd}, ${NEW}, ${RUNS}
d = E // H
class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln1, s.ln2 = nn.LayerNorm(E), nn.LayerNorm(E)
        s.attn, s.proj, s.fc, s.mproj = nn.Linear(E, 3 * E), nn.Linear(E, E), nn.Linear(E, 4 * E), nn.Linear(4 * E, E)
    def forward(s, x, cache):
        T = x.shape[0]
        q, k, v = s.attn(s.ln1(x)).split(E, -1)
        q, k, v = (u.view(T, H, d).transpose(0, 1) for u in (q, k, v))
        if cache[0] is not None:
            k = torch.cat([cache[0], k], 1); v = torch.cat([cache[1], v], 1)
        cache[0], cache[1] = k, v
        s_ = q @ k.transpose(-1, -2) / math.sqrt(d)
        if T > 1: s_ = s_.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float('-inf'))
        x = x + s.proj((torch.softmax(s_, -1) @ v).transpose(0, 1).reshape(T, E))
        return x + s.mproj(nn.functional.gelu(s.fc(s.ln2(x)), approximate='tanh'))
class GPT(nn.Module):
    def __init__(s):
        super().__init__()
        s.wte, s.wpe = nn.Embedding(V, E), nn.Embedding(P, E)
        s.h = nn.ModuleList(Block() for _ in range(L))
        s.lnf = nn.LayerNorm(E)
        s.head = nn.Linear(E, V, bias=False)
        for p in s.parameters():
            if p.dim() > 1: nn.init.normal_(p, 0, 0.02)
            elif p.dim() == 1: nn.init.zeros_(p)
        for m in s.modules():
            if isinstance(m, nn.LayerNorm): nn.init.ones_(m.weight)
        s.head.weight = s.wte.weight  # tied, as GPT-2
    def forward(s, ids, caches, t0):
        x = s.wte(ids) + s.wpe(torch.arange(t0, t0 + ids.shape[0]))
        for b, c in zip(s.h, caches): x = b(x, c)
        return s.head(s.lnf(x[-1:]))
def gen(m):
    ids = torch.tensor(${JSON.stringify(prompt)}); caches = [[None, None] for _ in range(L)]
    with torch.no_grad():
        logits = m(ids, caches, 0); n = ids.shape[0]; out = []
        for _ in range(NEW):
            nxt = logits[-1].argmax().view(1); out.append(int(nxt)); logits = m(nxt, caches, n); n += 1
    return out
`;
const py = `${pyModel}
def timed(m):
    gen(m); ts = []
    for _ in range(RUNS):
        t = time.perf_counter(); gen(m); ts.append((time.perf_counter() - t) * 1000)
    return sorted(ts)[len(ts) // 2]
def size(m):
    b = io.BytesIO(); torch.save(m.state_dict(), b); return b.tell()
engines = torch.backends.quantized.supported_engines
engine = 'onednn' if 'onednn' in engines else 'fbgemm' if 'fbgemm' in engines else 'qnnpack'
m = GPT().eval()
out = {'fp32': {'ms': timed(m), 'bytes': sum(p.numel() * 4 for p in m.parameters())}, 'engine': engine, 'engines': engines}
torch.backends.quantized.engine = engine
q = torch.ao.quantization.quantize_dynamic(m, {nn.Linear}, dtype=torch.qint8)
out['int8'] = {'ms': timed(q), 'bytes': size(q)}
out['agree'] = sum(a == b for a, b in zip(gen(m), gen(q)))
print(json.dumps(out))
`;
let torchNote = '';
let torchEngine = 'qnnpack';
if (withPeers) {
  const p = spawnSync('/usr/bin/python3', ['-c', py], {
    encoding: 'utf8',
    env: { ...process.env, OMP_WAIT_POLICY: 'PASSIVE', OMP_NUM_THREADS: '2' },
    maxBuffer: 1 << 24,
  });
  if (p.status === 0) {
    const t = JSON.parse(p.stdout.trim().split('\n').pop()!) as {
      fp32: { ms: number; bytes: number };
      int8: { ms: number; bytes: number };
      engine: string;
      engines: string[];
      agree: number;
    };
    torchNote = `quantized engine ${t.engine} (supported: ${t.engines.join(', ')})`;
    torchEngine = t.engine;
    rows.push(row('PyTorch', 'fp32', t.fp32.ms, t.fp32.bytes));
    rows.push(
      row(
        'PyTorch',
        'int8',
        t.int8.ms,
        t.int8.bytes,
        `quantize_dynamic, ${torchNote}; ${t.agree}/${NEW} tokens as fp32`,
      ),
    );
  } else {
    torchNote = `PyTorch: skipped (${p.stderr.trim().split('\n').pop() ?? 'no torch'})`;
    console.log(torchNote);
  }
}

// ---- Peak memory: each engine and dtype decoding in a process of its own -----------------------------
// qkv and ONNX Runtime through bench/gpt2-peak.ts (qkv's model made as a folder of that dtype loads it; ORT on
// the graph file it was timed on), PyTorch in Python: the model built (and, for int8,
// quantize_dynamic'd, as PyTorch users quantize: from the float model), then one decoding.
const pyPeak = `${pyModel}
import re, sys
status = lambda k: int(re.search(k + r':\\s+(\\d+)', open('/proc/self/status').read()).group(1)) / 1024
base = status('VmRSS')
m = GPT().eval()
if sys.argv[1] == 'int8':
    torch.backends.quantized.engine = sys.argv[2]
    m = torch.ao.quantization.quantize_dynamic(m, {nn.Linear}, dtype=torch.qint8)
gen(m)
print(json.dumps({'peak_mib': status('VmHWM') - base}))
`;
const peakOf = (cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): number | null => {
  const p = spawnSync(cmd, args, { encoding: 'utf8', env, maxBuffer: 1 << 24 });
  if (p.status !== 0) {
    console.log(`peak memory: ${cmd} ${args.slice(-2).join(' ')} failed: ${p.stderr.trim().split('\n').pop()}`);
    return null;
  }
  return (JSON.parse(p.stdout.trim().split('\n').pop()!) as { peak_mib: number }).peak_mib;
};
const tsx = (args: string[]) => peakOf(process.execPath, ['--import', 'tsx', 'bench/gpt2-peak.ts', ...args]);
for (const r of rows) {
  if (r.engine === 'qkv') r.peak_mib = tsx(['qkv', r.dtype]);
  else if (r.engine === 'ONNX Runtime') {
    r.peak_mib = tsx(['ort', ortDirs[r.dtype]!]);
    rmSync(ortDirs[r.dtype]!, { recursive: true, force: true });
  } else if (r.engine === 'PyTorch')
    r.peak_mib = peakOf('/usr/bin/python3', ['-c', pyPeak, r.dtype, torchEngine], {
      ...process.env,
      OMP_WAIT_POLICY: 'PASSIVE',
      OMP_NUM_THREADS: '2',
    });
  if (r.peak_mib != null) console.log(`${r.engine} ${r.dtype}: peak memory decoding ${r.peak_mib.toFixed(0)} MiB`);
}

const base = rows.find((r) => r.engine === 'qkv' && r.dtype === 'fp32')!;
for (const r of rows)
  if (r.ms !== null)
    console.log(
      `${r.engine} ${r.dtype}: ${(r.tps! / base.tps!).toFixed(2)}× qkv fp32's tokens/s, weights ${(base.weight_mib! / r.weight_mib!).toFixed(1)}× smaller`,
    );
console.log(JSON.stringify({ rows, tokens: NEW }));
