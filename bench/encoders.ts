/**
 * Sentence embeddings of a MiniLM-L6-shaped BERT (issue 57, point 6): all-MiniLM-L6-v2's shape (6 layers, 384
 * wide, 12 heads, feed-forward 1536, vocabulary 30522, 512 positions; random weights, torch seed 1), as a
 * sentence-transformers folder (mean pooling, then L2 normalizing), embedding the first N lines of Multi30K's
 * test_2016_flickr.en (N = 256 unless --sentences says), in batches of 32 longest first (the pipeline's order), on every engine in one run:
 *   - qkv, wasm backend, 2 threads: pipeline('feature-extraction', folder) in fp32 and with { dtype: 'q8' }
 *     (module.quantize: the layers' weights int8 per row, the tables int8; activations int8 per row);
 *   - ONNX Runtime (onnxruntime-node, CPU, 2 intra-op threads, no spinning) on the folder's
 *     `qkv export --format onnx` graphs, fp32 (MatMul) and int8 (MatMulInteger), fed by qkv's tokenizer,
 *     pooled and normalized in JavaScript as the pipeline does, in the pipeline's batches (longest first);
 *   - PyTorch 2.13 with transformers 5.18 (.venv-ref/bin/python, 2 threads): BertModel.from_pretrained on the
 *     same folder, its fast tokenizer, the same pooling and the same batches; fp32, and
 *     torch.ao.quantization.quantize_dynamic int8.
 * The folder is made by transformers itself (save_pretrained), with a WordPiece of up to 30522 pieces trained by
 * `tokenizers` on Multi30K's train.en, so every engine reads one folder.
 * Checked first: every engine's embeddings equal qkv fp32's (fp32 within 1e-4; the int8 rows within 0.05, and
 * ONNX Runtime int8 within 1e-3 of qkv int8: the same integer products, float steps in another order).
 * Timed: medians of RUNS runs of the whole list, qkv and ONNX Runtime alternating run by run in this process;
 * PyTorch in its own process (the same count of runs, after a warm-up run). Sentences per second = N / median.
 *   npx tsx bench/encoders.ts                   256 sentences, 5 runs (bench/index.ts runs it)
 *   npx tsx bench/encoders.ts --sentences 16    fewer sentences, one run each: to check the script works
 *   npx tsx bench/encoders.ts --no-peers        qkv only
 * The last line printed is JSON: { rows: [{ engine, dtype, ms, sps, note? }], sentences, tokens, cpu }.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import * as ort from 'onnxruntime-node';
import { numThreads, setNumThreads } from '../src/backend/wasm/threads.ts';
import { exportModel } from '../src/cli/commands/export.ts';
import { SESSION_OPTIONS } from '../src/cli/onnxruntime.ts';
import { setBackend } from '../src/index.ts';
import { pipeline, type FeatureExtractionPipeline } from '../src/pipelines/index.ts';
import { BATCH } from '../src/pipelines/encoder-batch.ts';
import { cpuName } from './results.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
};
const N = Number(arg('--sentences') ?? 256);
const small = N < 256;
const RUNS = small ? 1 : 5;
const withPeers = !process.argv.includes('--no-peers');
const THREADS = 2;
const PYTHON = join(root, '.venv-ref/bin/python');
const CPU = `${cpuName()} (${cpus().length} cores)`;

await setBackend('wasm');
setNumThreads(THREADS);
const lines = gunzipSync(readFileSync(join(root, 'data/multi30k/test_2016_flickr.en.gz')))
  .toString('utf8')
  .split('\n')
  .slice(0, N);
if (lines.length < N || lines.some((l) => l === '')) throw new Error(`test_2016_flickr.en has fewer than ${N} lines`);

// ---- The folder, made by transformers ------------------------------------------------------------------
const work = mkdtempSync(join(tmpdir(), 'qkv-bench-encoders-'));
const folder = join(work, 'minilm-l6-shape');
const make = `
import gzip, json, os, sys, torch
from pathlib import Path
from tokenizers import BertWordPieceTokenizer
from transformers import BertConfig, BertModel, BertTokenizerFast
os.environ["RAYON_NUM_THREADS"] = "1"
out = Path(sys.argv[1]); root = Path(sys.argv[2])
with gzip.open(root / "data/multi30k/train.en.gz", "rt", encoding="utf-8") as f:
    corpus = [l.rstrip("\\n") for l in f]
wp = BertWordPieceTokenizer(lowercase=True)
wp.train_from_iterator(corpus, vocab_size=30522, min_frequency=2,
                       special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False)
vocab = [t for t, _ in sorted(wp.get_vocab().items(), key=lambda kv: kv[1])]
out.mkdir(parents=True, exist_ok=True)
(out / "vocab.txt").write_text("".join(t + "\\n" for t in vocab), encoding="utf-8")
tok = BertTokenizerFast(vocab_file=str(out / "vocab.txt"), do_lower_case=True)
torch.manual_seed(1)
config = BertConfig(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                    intermediate_size=1536, max_position_embeddings=512, type_vocab_size=2)
BertModel(config).eval().save_pretrained(out)
tok.save_pretrained(out)
(out / "1_Pooling").mkdir(exist_ok=True)
(out / "modules.json").write_text(json.dumps([
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
(out / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 384,
    "pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False, "pooling_mode_max_tokens": False}))
print(json.dumps({"vocab": len(vocab)}))
`;
const made = spawnSync(PYTHON, ['-c', make, folder, root], { encoding: 'utf8', maxBuffer: 1 << 24 });
if (made.status !== 0) throw new Error(`making the folder failed: ${made.stderr}`);
const vocabPieces = (JSON.parse(made.stdout.trim().split('\n').pop()!) as { vocab: number }).vocab;

// ---- qkv ----------------------------------------------------------------------------------------------
interface Engine {
  engine: 'qkv' | 'ONNX Runtime' | 'PyTorch';
  dtype: 'fp32' | 'int8';
  run: () => Promise<Float32Array>;
  note?: string;
}
const qkvRun = (p: FeatureExtractionPipeline) => async () => (await p(lines)).data<Float32Array>();
const fp32 = await pipeline('feature-extraction', folder);
const int8 = await pipeline('feature-extraction', folder, { dtype: 'q8' });
const E = fp32.opened.model.config.dModel;
const tokens = lines.reduce((n, l) => n + fp32.opened.tokenizer.encodeInput(l).ids.length, 0);
const engines: Engine[] = [
  { engine: 'qkv', dtype: 'fp32', run: qkvRun(fp32) },
  { engine: 'qkv', dtype: 'int8', run: qkvRun(int8), note: 'module.quantize (layers int8 per row, tables int8)' },
];

// ---- ONNX Runtime on the folder's export ---------------------------------------------------------------
/**
 * The order every engine batches the lines in: the pipeline's (runEncoder: longest first by qkv's token count,
 * ties in input order, as sentence-transformers' encode() sorts), so that all pad the same batches.
 */
const ORDER = (() => {
  const n = lines.map((l) => fp32.opened.tokenizer.encodeInput(l).ids.length);
  return n.map((_, i) => i).sort((a, b) => n[b]! - n[a]!);
})();

/** The embeddings of every line from a session of the exported graph: qkv's tokenizer, batches of BATCH. */
async function ortEmbed(session: ort.InferenceSession): Promise<Float32Array> {
  const out = new Float32Array(lines.length * E);
  for (let start = 0; start < lines.length; start += BATCH) {
    const index = ORDER.slice(start, start + BATCH);
    const rows = index.map((i) => fp32.opened.tokenizer.encodeInput(lines[i]!));
    const [B, T] = [rows.length, Math.max(...rows.map((r) => r.ids.length))];
    const ids = new BigInt64Array(B * T);
    const mask = new BigInt64Array(B * T);
    rows.forEach((r, b) => {
      ids.set(Array.from(r.ids, BigInt), b * T); // padding: id 0 ([PAD]), mask 0
      mask.fill(1n, b * T, b * T + r.ids.length);
    });
    const feeds = {
      input_ids: new ort.Tensor('int64', ids, [B, T]),
      attention_mask: new ort.Tensor('int64', mask, [B, T]),
      token_type_ids: new ort.Tensor('int64', new BigInt64Array(B * T), [B, T]),
    };
    const h = (await session.run(feeds)).last_hidden_state!.data as Float32Array; // (B, T, E)
    rows.forEach((r, b) => out.set(meanNormalized(h, b, T, r.ids.length), index[b]! * E));
  }
  return out;
}

/** Row b's states over its n tokens, averaged and divided by their L2 norm (the pipeline's float32 steps). */
function meanNormalized(h: Float32Array, b: number, T: number, n: number): Float32Array {
  const v = new Float64Array(E);
  for (let t = 0; t < n; t++) for (let e = 0; e < E; e++) v[e] += h[(b * T + t) * E + e];
  const m = Float32Array.from(v, (x) => Math.fround(x) / n);
  const norm = Math.max(Math.sqrt(m.reduce((s, x) => s + x * x, 0)), 1e-12);
  return m.map((x) => x / norm);
}

const sessions: ort.InferenceSession[] = [];
if (withPeers) {
  for (const dtype of ['fp32', 'int8'] as const) {
    const dir = join(work, `onnx-${dtype}`);
    exportModel({ model: folder, out: dir, format: 'onnx', dtype: dtype === 'fp32' ? 'f32' : 'int8', log: () => {} });
    const s = await ort.InferenceSession.create(join(dir, 'model.onnx'), {
      ...SESSION_OPTIONS,
      intraOpNumThreads: THREADS,
    });
    sessions.push(s);
    const op = dtype === 'fp32' ? 'MatMul' : 'MatMulInteger';
    engines.push({ engine: 'ONNX Runtime', dtype, run: () => ortEmbed(s), note: `qkv export --format onnx, ${op}` });
  }
}

// ---- Check, then time qkv and ONNX Runtime alternating ------------------------------------------------
const worst = (a: Float32Array, b: Float32Array) => a.reduce((w, x, i) => Math.max(w, Math.abs(x - b[i]!)), 0);
const first: Record<string, Float32Array> = {};
for (const e of engines) first[`${e.engine} ${e.dtype}`] = await e.run();
const ref = first['qkv fp32']!;
const checks: string[] = [];
for (const [name, v] of Object.entries(first)) {
  const d = worst(v, ref);
  const bound = name.endsWith('fp32') ? 1e-4 : 0.05;
  if (!(d <= bound)) throw new Error(`check failed: ${name}'s embeddings are ${d} from qkv fp32's (bound ${bound})`);
  checks.push(`${name} ${d.toExponential(1)}`);
}
if (first['ONNX Runtime int8']) {
  const d = worst(first['ONNX Runtime int8'], first['qkv int8']!);
  if (!(d <= 1e-3)) throw new Error(`check failed: ONNX Runtime int8's embeddings are ${d} from qkv int8's`);
  checks.push(`ONNX Runtime int8 to qkv int8 ${d.toExponential(1)}`);
}
console.log(`check: max |embedding − qkv fp32's|: ${checks.join(', ')}`);

const times: number[][] = engines.map(() => []);
for (let r = 0; r < RUNS; r++)
  for (const [i, e] of engines.entries()) {
    const t0 = performance.now();
    await e.run();
    times[i]!.push(performance.now() - t0);
  }
for (const s of sessions) await s.release();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

interface Row {
  engine: string;
  dtype: string;
  ms: number;
  sps: number;
  note?: string;
}
const rows: Row[] = engines.map((e, i) => {
  const ms = median(times[i]!);
  return { engine: e.engine, dtype: e.dtype, ms, sps: (1000 * N) / ms, ...(e.note && { note: e.note }) };
});

// ---- PyTorch (transformers) in its own process ----------------------------------------------------------
if (withPeers) {
  const py = `
import json, sys, time, torch
import numpy as np
from transformers import BertModel, AutoTokenizer
torch.set_num_threads(${THREADS})
folder, runs = sys.argv[1], int(sys.argv[2])
given = json.loads(sys.stdin.read())
lines, order = given["lines"], given["order"]
tok = AutoTokenizer.from_pretrained(folder)
def embed(m):
    out = []
    with torch.no_grad():
        for s in range(0, len(lines), ${BATCH}):
            enc = tok([lines[i] for i in order[s:s + ${BATCH}]], padding=True, return_tensors="pt")
            h = m(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
            mean = (h * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)
            out.append(torch.nn.functional.normalize(mean, p=2, dim=1))
    emb = torch.cat(out)
    back = torch.empty_like(emb)
    back[torch.tensor(order)] = emb  # the input order again
    return back
def timed(m):
    first = embed(m); ts = []
    for _ in range(runs):
        t = time.perf_counter(); embed(m); ts.append((time.perf_counter() - t) * 1000)
    return first, sorted(ts)[len(ts) // 2]
m = BertModel.from_pretrained(folder).eval()
f32, f32_ms = timed(m)
engines = torch.backends.quantized.supported_engines
engine = "onednn" if "onednn" in engines else "fbgemm" if "fbgemm" in engines else "qnnpack"
torch.backends.quantized.engine = engine
q = torch.ao.quantization.quantize_dynamic(m, {torch.nn.Linear}, dtype=torch.qint8)
i8, i8_ms = timed(q)
print(json.dumps({"torch": torch.__version__, "engine": engine, "fp32": {"ms": f32_ms, "emb": f32.flatten().tolist()},
                  "int8": {"ms": i8_ms, "emb": i8.flatten().tolist()}}))
`;
  const p = spawnSync(PYTHON, ['-c', py, folder, String(RUNS)], {
    input: JSON.stringify({ lines, order: ORDER }),
    encoding: 'utf8',
    env: { ...process.env, OMP_WAIT_POLICY: 'PASSIVE', OMP_NUM_THREADS: String(THREADS) },
    maxBuffer: 1 << 28,
  });
  if (p.status !== 0) throw new Error(`PyTorch failed: ${p.stderr}`);
  type Out = { ms: number; emb: number[] };
  const t = JSON.parse(p.stdout.trim().split('\n').pop()!) as { torch: string; engine: string; fp32: Out; int8: Out };
  for (const dtype of ['fp32', 'int8'] as const) {
    const d = worst(Float32Array.from(t[dtype].emb), ref);
    const bound = dtype === 'fp32' ? 1e-4 : 0.05;
    if (!(d <= bound)) throw new Error(`check failed: PyTorch ${dtype}'s embeddings are ${d} from qkv fp32's`);
    console.log(`check: PyTorch ${dtype} max |embedding − qkv fp32's| ${d.toExponential(1)}`);
    const note =
      `torch ${t.torch}, transformers' BertModel` +
      (dtype === 'int8' ? `, quantize_dynamic on every nn.Linear (engine ${t.engine})` : '');
    rows.push({ engine: 'PyTorch', dtype, ms: t[dtype].ms, sps: (1000 * N) / t[dtype].ms, note });
  }
}
rmSync(work, { recursive: true, force: true });

console.log(
  `sentence embeddings, MiniLM-L6 shape (${(fp32.opened.model.numParameters() / 1e6).toFixed(1)}M parameters, ` +
    `WordPiece of ${vocabPieces} pieces trained on Multi30K), ${N} test_2016_flickr sentences (${tokens} tokens), ` +
    `batches of ${BATCH}; qkv wasm with ${numThreads()} threads; ${CPU}, load ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}; medians of ${RUNS} run(s)`,
);
const base = rows[0]!;
for (const r of rows)
  console.log(
    `${`${r.engine} ${r.dtype}`.padEnd(18)} ${r.ms.toFixed(0).padStart(7)} ms  ${r.sps.toFixed(1).padStart(7)} sentences/s  ` +
      `${(r.sps / base.sps).toFixed(2)}× qkv fp32${r.note ? `  (${r.note})` : ''}`,
  );
console.log(JSON.stringify({ rows, sentences: N, tokens, cpu: CPU }));
