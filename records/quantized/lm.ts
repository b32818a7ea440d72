/**
 * Issue 50, point 3, the language models (run from the repository root):
 *   node --import tsx records/quantized/lm.ts > records/quantized/lm.json
 *
 * 1. The shipped char GPT (models/gpt-multi30k-char): validation loss (nats per token, every token of
 *    data/multi30k/val.en.gz as `qkv train-lm` encodes it, windows of blockSize) in fp32, int8 and q4
 *    compute (pipeline dtype 'fp32' / 'q8' / 'q4': module.quantize at load), and each quantized model's
 *    next-token KL divergence from the fp32 one over the same positions.
 * 2. A GPT-2-124M-shaped model (GPT2_124M, GPT-2's random initialisation, seed 50): next-token KL(fp32 ‖ q)
 *    over 4 sequences of 64 seeded random ids, with the top-1 agreement and the fp32 entropy beside it (a
 *    random model's distributions are flat: the KL says how far the kernels move them, not what a trained
 *    GPT-2 would lose).
 * The backend is wasm (QKV_BACKEND, as the CLI).
 */
import { readLines } from '../../src/cli/corpus.ts';
import { readLm } from '../../src/folder/node.ts';
import { GPT, GPT2_124M } from '../../src/models/gpt.ts';
import { manualSeed, noGrad, setBackend, Tensor } from '../../src/index.ts';
import { encodeLines } from '../../src/text/lines.ts';
import { evaluateLm } from '../../src/train/lm.ts';
import type { CharTokenizer } from '../../src/text/chars.ts';

setBackend((process.env.QKV_BACKEND as 'js' | 'wasm' | undefined) ?? 'wasm');

/** Mean KL(p ‖ q) in nats, top-1 agreement and p's mean entropy over the rows of two logit tensors (R, V). */
function compare(ref: Float32Array, got: Float32Array, V: number) {
  let kl = 0;
  let agree = 0;
  let entropy = 0;
  const rows = ref.length / V;
  const logSoftmax = (x: Float32Array, r: number) => {
    let m = -Infinity;
    for (let v = 0; v < V; v++) m = Math.max(m, x[r * V + v]!);
    let s = 0;
    for (let v = 0; v < V; v++) s += Math.exp(x[r * V + v]! - m);
    const lse = m + Math.log(s);
    return Float64Array.from({ length: V }, (_, v) => x[r * V + v]! - lse);
  };
  for (let r = 0; r < rows; r++) {
    const lp = logSoftmax(ref, r);
    const lq = logSoftmax(got, r);
    let argP = 0;
    let argQ = 0;
    for (let v = 0; v < V; v++) {
      const p = Math.exp(lp[v]!);
      kl += p * (lp[v]! - lq[v]!);
      entropy -= p * lp[v]!;
      if (lp[v]! > lp[argP]!) argP = v;
      if (lq[v]! > lq[argQ]!) argQ = v;
    }
    if (argP === argQ) agree++;
  }
  return { kl: kl / rows, top1Agreement: agree / rows, fp32Entropy: entropy / rows, positions: rows };
}

const out: Record<string, unknown> = { backend: process.env.QKV_BACKEND ?? 'wasm' };

// 1. The shipped char GPT on val.
{
  const dir = 'models/gpt-multi30k-char';
  const base = readLm(dir);
  const T = base.model.config.blockSize;
  const val = encodeLines(base.tokenizer as CharTokenizer, readLines('data/multi30k/val.en.gz'), base.separatorId);
  const windows = Math.floor((val.length - 1) / T);
  const x = new Tensor(
    Int32Array.from({ length: windows * T }, (_, i) => val[i]!),
    [windows, T],
    'int32',
  );
  const logits = (m: GPT) => noGrad(() => m.eval().forward(x)).dataSync() as Float32Array;
  const ref = logits(base.model).slice();
  const rows: Record<string, unknown> = {};
  for (const dtype of ['fp32', 'int8', 'q4'] as const) {
    const { model } = readLm(dir);
    if (dtype !== 'fp32') model.quantize({ dtype });
    const loss = evaluateLm(model, val, { batchSize: 16 });
    rows[dtype] = { valLoss: loss, ...(dtype === 'fp32' ? {} : compare(ref, logits(model), model.config.vocabSize)) };
    console.error(`gpt-multi30k-char ${dtype}: val loss ${loss.toFixed(4)}`);
  }
  out.shippedGpt = { folder: dir, valTokens: val.length - 1, ...rows };
}

// 2. A GPT-2-124M-shaped model, random weights.
{
  manualSeed(50);
  const fp32 = new GPT(GPT2_124M).eval();
  const [B, T] = [4, 64];
  let s = 12345;
  const ids = Int32Array.from({ length: B * T }, () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s % GPT2_124M.vocabSize;
  });
  const x = new Tensor(ids, [B, T], 'int32');
  const ref = (noGrad(() => fp32.forward(x)).dataSync() as Float32Array).slice();
  const sd = fp32.stateDict();
  const rows: Record<string, unknown> = {};
  for (const dtype of ['int8', 'q4'] as const) {
    const m = new GPT(GPT2_124M, { init: false }).eval();
    m.loadStateDict(sd);
    m.quantize({ dtype });
    const got = noGrad(() => m.forward(x)).dataSync() as Float32Array;
    rows[dtype] = compare(ref, got, GPT2_124M.vocabSize);
    console.error(`GPT-2 124M shape ${dtype}: ${JSON.stringify(rows[dtype])}`);
  }
  out.gpt2Shape = { config: 'GPT2_124M', seed: 50, batch: B, tokens: T, ...rows };
}

console.log(JSON.stringify(out, null, 2));
