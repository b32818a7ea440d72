/**
 * Translation in low precision (issue 50, point 4): the shipped EN→DE model's first member (models/multi30k-en-de)
 * translating the first val sentences with beam 4 (α 0.6), in batches of 32, in fp32, int8 and q4, on qkv (wasm;
 * `module.quantize` as `--dtype q8|q4` does at load) and on ONNX Runtime (onnxruntime-node, 2 intra-op threads, no
 * spinning) running qkv's exports of the same three models (MatMul, MatMulInteger, MatMulNBits), both driven by
 * the same search code (src/decode/search.ts). PyTorch has no implementation of this model's search here and
 * is not run (its rows are the GPT-2 table's).
 * Checked first: each engine's tokens are reported against qkv fp32's (the quantized ones may differ in a few
 * lines; ONNX Runtime's fp32 must equal qkv's, as bench/onnx.ts checks).
 *   npx tsx bench/translate-quantized.ts [--smoke]     (--smoke: 4 sentences, one run)
 * The last line printed is JSON: { sentences, rows: [{ engine, dtype, ms, same, sameAsQkv? }] } (ms: median of 3 runs).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { encodeLines } from '../src/decode/batch.ts';
import { beamSearch } from '../src/decode/search.ts';
import { readSeq2Seq } from '../src/folder/node.ts';
import { exportSeq2SeqOnnx } from '../src/io/onnx/export.ts';
import { setNumThreads } from '../src/backend/wasm/threads.ts';
import { memoryScope, nn, setBackend, Tensor } from '../src/index.ts';
import { Seq2Seq } from '../src/models/seq2seq.ts';
import { ortSeq2Seq } from './ort-seq2seq.ts';

const smoke = process.argv.includes('--smoke');
const root = fileURLToPath(new URL('..', import.meta.url));
setBackend('wasm');
const THREADS = 2;
setNumThreads(THREADS);
const { model: fp32, tokenizer, targetTokenizer } = readSeq2Seq(join(root, 'models/multi30k-en-de'));
fp32.eval();
const N = smoke ? 4 : 64;
const lines = gunzipSync(readFileSync(join(root, 'data/multi30k/val.en.gz')))
  .toString('utf8')
  .split('\n')
  .slice(0, N);
const ids = encodeLines(fp32, tokenizer, lines).ids;
/** The source batches of 32 as (B, S) tensors, padded. */
const batches: Tensor[] = [];
for (let at = 0; at < ids.length; at += 32) {
  const rows = ids.slice(at, at + 32);
  const S = Math.max(...rows.map((r) => r.length));
  const data = new Int32Array(rows.length * S).fill(tokenizer.padId);
  rows.forEach((r, b) => data.set(r, b * S));
  batches.push(new Tensor(data, [rows.length, S], 'int32'));
}
const opts = { bosId: targetTokenizer.bosId, eosId: targetTokenizer.eosId, beamSize: 4, lengthPenalty: 0.6 };
const RUNS = smoke ? 1 : 3;

async function median(fn: () => unknown): Promise<number> {
  await fn();
  const t: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await fn();
    t.push(performance.now() - t0);
  }
  return t.sort((a, b) => a - b)[t.length >> 1]!;
}

const models: Record<string, Seq2Seq> = { fp32 };
for (const dtype of ['int8', 'q4'] as const) {
  const m = nn.init.withoutInit(() => new Seq2Seq(fp32.config));
  m.loadStateDict(fp32.stateDict());
  models[dtype] = m.eval().quantize({ dtype });
}
const qkvTokens = (m: Seq2Seq) => batches.flatMap((src) => memoryScope(() => beamSearch(m, src, opts).tokens));
const joined = (tokens: number[][]) => tokens.map((t) => t.join());
const reference = joined(qkvTokens(fp32));
const agree = (a: string[], b: string[]) => a.filter((t, i) => t === b[i]).length;
const same = (tokens: number[][]) => agree(joined(tokens), reference);
const qkvOut: Record<string, string[]> = {};

interface Row {
  engine: 'qkv' | 'ONNX Runtime';
  dtype: string;
  ms: number;
  /** Translations equal to qkv fp32's. */
  same: number;
  /** ONNX Runtime: translations equal to qkv's in the same dtype. */
  sameAsQkv?: number;
}
const rows: Row[] = [];
for (const [dtype, m] of Object.entries(models)) {
  const out = qkvTokens(m);
  qkvOut[dtype] = joined(out);
  const s = same(out);
  rows.push({ engine: 'qkv', dtype, ms: await median(() => qkvTokens(m)), same: s });
}
for (const [dtype, m] of Object.entries(models)) {
  const exp = exportSeq2SeqOnnx(m.config, m.stateDict(), {
    dtype: dtype as 'fp32' | 'int8' | 'q4',
    withAttention: false,
  });
  const engine = await ortSeq2Seq(exp, THREADS);
  const run = async () => {
    const out: number[][] = [];
    for (const src of batches) out.push(...(await engine.beamSearch(src, opts)).tokens);
    return out;
  };
  const out = await run();
  const s = same(out);
  if (dtype === 'fp32' && s !== N)
    throw new Error(`check failed: ONNX Runtime fp32 translates ${N - s} of ${N} lines unlike qkv fp32`);
  const sameAsQkv = agree(joined(out), qkvOut[dtype]!);
  rows.push({ engine: 'ONNX Runtime', dtype, ms: await median(run), same: s, sameAsQkv });
}
for (const r of rows)
  console.log(
    `${r.engine} ${r.dtype}: ${N} val sentences, beam 4, in ${r.ms.toFixed(0)} ms; ${r.same}/${N} translations as qkv fp32's` +
      (r.sameAsQkv === undefined ? '' : `, ${r.sameAsQkv}/${N} as qkv ${r.dtype}'s`),
  );
console.log(JSON.stringify({ sentences: N, rows }));
