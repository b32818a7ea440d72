/**
 * Fine-tuning memory and speed (issue 60, point 4): LoRA on a SmolLM2-135M-shaped Llama (30 layers, 576 wide, 9 heads
 * over 3 KV heads, SwiGLU 1536, vocabulary 49152, tied head; bench/decoders-shape.ts), one sequence of 256 tokens a
 * step, PEFT's default adapter for llama (q_proj and v_proj, r 8, α 16), AdamW with Trainer's defaults (clip 1):
 *   - qkv, wasm backend, THREADS threads (bench/finetune-step.ts, a process per row): the fp32 base, with and without
 *     activation recomputation per block (GPT.recompute), and QLoRA-style int8 and q4 bases (nn/qlora.ts
 *     quantizeForLora: the layers held quantized, each product x·dequant(W)ᵀ in float32) with recomputation;
 *   - PyTorch + PEFT (.venv-ref: torch, transformers' LlamaForCausalLM, peft; THREADS threads; bench/peers/
 *     llama_peft.py, a process per row) on the same fp32 weights written as a Hugging Face folder, with and without
 *     transformers' gradient checkpointing. bitsandbytes, QLoRA's own quantized layers, has no CPU kernels here: the
 *     int8/q4 rows have no PyTorch twin.
 * Weights: bench/peak-weights.ts's seeded values, written as loading a folder writes them (no float copy of a
 * quantized base), the same in every process. Checked (fatal): every row's first loss is finite, and the fp32
 * rows' first losses agree within 1e-3 (the adapter starts as a no-op, so it is the base's loss: the engines hold
 * the same model). A qkv row whose process fails is printed as failed, with its last error line. Timed: the median
 * of STEPS steps after one untimed step. Peak MiB: the row's process's peak resident memory (VmHWM) less its memory
 * just before the model. The CPU (lscpu) and the 1-minute load average are printed beside every figure.
 *   npx tsx bench/finetune.ts             the real shape; writes bench/results/DATE-CPU-finetune.md
 *   npx tsx bench/finetune.ts --smoke     the tiny Llama (2 layers, 96 wide), 16 tokens, one timed step, no file
 *   npx tsx bench/finetune.ts --no-peers  qkv only
 *   --in-index                            run by bench/index.ts: no lock of its own, no results file
 * The last line printed is JSON: { rows: [{ engine, dtype, recompute, ms, peak_mib, loss0, load, note? }], seq,
 * batch, cpu, note? }.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decoderConfigFromHf } from '../src/models/hf/llama.ts';
import { models, setBackend } from '../src/index.ts';
import {
  BATCH,
  cpuLine,
  finetuneTable,
  type FinetuneRow,
  HF_CONFIG,
  LORA,
  LR,
  SEQ,
  smoke,
  STEPS,
  stepIds,
  THREADS,
} from './finetune-shape.ts';
import { writeHfLlamaFolder } from './decoders-shape.ts';
import { acquireBenchLock } from './lock.ts';
import { writeSeededWeights } from './peak-weights.ts';
import { codeVersion, cpuName, writeNewResults } from './results.ts';

const inIndex = process.argv.includes('--in-index');
const withPeers = !process.argv.includes('--no-peers');
if (!inIndex) acquireBenchLock();
const root = fileURLToPath(new URL('..', import.meta.url));
const PYTHON = join(root, '.venv-ref/bin/python');
const CPU = cpuLine();
const load1 = () => loadavg()[0]!;
const work = mkdtempSync(join(tmpdir(), 'qkv-bench-finetune-'));
const lastJson = <T>(stdout: string): T => JSON.parse(stdout.trim().split('\n').pop()!) as T;

// ---- qkv rows: a process each ------------------------------------------------------------------------------------
const rows: FinetuneRow[] = [];
const qkvRows: [FinetuneRow['dtype'], boolean][] = [
  ['fp32', false],
  ['fp32', true],
  ['int8', true],
  ['q4', true],
];
for (const [dtype, recompute] of qkvRows) {
  const args = ['--import', 'tsx', 'bench/finetune-step.ts', dtype, recompute ? 'recompute' : 'plain'];
  const p = spawnSync(process.execPath, [...args, ...(smoke ? ['--smoke'] : [])], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  const note = `wasm, ${THREADS} threads${dtype === 'fp32' ? '' : `; the base ${dtype}, products in float32 (QLoRA-style)`}`;
  if (p.status !== 0) {
    // A row that cannot run (out of WebAssembly's memory, say) is reported as such; the others still run.
    const why = (p.stderr || String(p.signal)).trim().split('\n').pop();
    console.log(`qkv ${dtype}${recompute ? ', recompute' : ''}: failed: ${why}`);
    rows.push({
      engine: 'qkv',
      dtype,
      recompute,
      ms: null,
      peak_mib: null,
      loss0: null,
      load: load1(),
      note: `${note}; failed: ${why}`,
    });
    continue;
  }
  const r = lastJson<{ ms: number; peak_mib: number; loss0: number }>(p.stdout);
  rows.push({
    engine: 'qkv',
    dtype,
    recompute,
    ms: r.ms,
    peak_mib: r.peak_mib,
    loss0: r.loss0,
    load: load1(),
    note,
  });
  console.log(`qkv ${dtype}${recompute ? ', recompute' : ''}: ${JSON.stringify(r)}`);
}

// ---- PyTorch + PEFT on the same weights, as a Hugging Face folder -------------------------------------------------
const probe = withPeers ? spawnSync(PYTHON, ['-c', 'import torch, transformers, peft'], { encoding: 'utf8' }) : null;
const torchSkipped =
  probe && probe.status !== 0
    ? `PyTorch + PEFT: skipped (${PYTHON} cannot import torch, transformers and peft: ` +
      `${(probe.stderr ?? probe.error?.message ?? '').trim().split('\n').pop()})`
    : '';
if (torchSkipped) console.log(torchSkipped);
if (withPeers && !torchSkipped) {
  const folder = join(work, 'hf-llama');
  writeHfFolder(folder);
  for (const recompute of [false, true]) {
    const p = spawnSync(
      PYTHON,
      [
        join(root, 'bench/peers/llama_peft.py'),
        folder,
        JSON.stringify(stepIds()),
        String(STEPS),
        String(THREADS),
        recompute ? '1' : '0',
        String(LORA.r),
        String(LORA.alpha),
        JSON.stringify(LORA.targets),
        String(LR),
      ],
      {
        encoding: 'utf8',
        env: { ...process.env, OMP_WAIT_POLICY: 'PASSIVE', OMP_NUM_THREADS: String(THREADS) },
        maxBuffer: 1 << 24,
      },
    );
    if (p.status !== 0) throw new Error(`PyTorch + PEFT failed: ${p.stderr}`);
    const r = lastJson<{ torch: string; transformers: string; peft: string; attn: string } & FinetuneRow>(p.stdout);
    rows.push({
      engine: 'PyTorch + PEFT',
      dtype: 'fp32',
      recompute,
      ms: r.ms,
      peak_mib: r.peak_mib,
      loss0: r.loss0,
      load: load1(),
      note:
        `torch ${r.torch}, transformers ${r.transformers} (${r.attn}), peft ${r.peft}, ${THREADS} threads` +
        (recompute ? '; gradient_checkpointing_enable' : ''),
    });
    console.log(`PyTorch + PEFT${recompute ? ', gradient checkpointing' : ''}: ${JSON.stringify(r)}`);
  }
}
rmSync(work, { recursive: true, force: true });

// ---- Checks: the engines trained the same model ------------------------------------------------------------------
for (const r of rows)
  if (r.ms !== null && !Number.isFinite(r.loss0))
    throw new Error(`check failed: ${r.engine} ${r.dtype}: first loss ${r.loss0}`);
const fp32 = rows.filter((r) => r.dtype === 'fp32' && r.loss0 !== null);
for (const r of fp32) {
  const d = Math.abs(r.loss0! - fp32[0]!.loss0!);
  if (!(d <= 1e-3 * Math.abs(fp32[0]!.loss0!)))
    throw new Error(
      `check failed: ${r.engine} fp32 first loss ${r.loss0} ≠ qkv's ${fp32[0]!.loss0}: the models differ`,
    );
}
console.log(
  `check: the fp32 rows' first losses agree within 1e-3 (${fp32.map((r) => r.loss0!.toFixed(5)).join(', ')})`,
);

// ---- Report ---------------------------------------------------------------------------------------------------
const head =
  `SmolLM2-135M shape${smoke ? ' (--smoke: a tiny Llama)' : ''}: ${HF_CONFIG.num_hidden_layers} layers, ` +
  `${HF_CONFIG.hidden_size} wide, ${HF_CONFIG.num_attention_heads} heads over ${HF_CONFIG.num_key_value_heads} KV ` +
  `heads, random weights; LoRA r ${LORA.r}, α ${LORA.alpha} on ${LORA.targets.join(', ')}; ${BATCH} × ${SEQ} ` +
  `tokens a step; AdamW lr ${LR}, clip 1; medians of ${STEPS} step(s) after one; ${THREADS} threads each`;
console.log(head);
const table = finetuneTable(rows, CPU);
console.log(table);
if (!inIndex && !smoke) {
  const written = writeNewResults(
    `# Fine-tuning: LoRA on the SmolLM2-135M shape\n\nWritten by \`npx tsx bench/finetune.ts\` on ` +
      `${new Date().toISOString().slice(0, 10)}, ${codeVersion()}.\n\nMachine: ${cpus().length} × ${cpuName()}, ` +
      `${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}; lscpu: ${CPU}.\n\n${head}.\n\n` +
      `${torchSkipped ? `${torchSkipped}.\n\n` : ''}` +
      'What each row is, how it is timed and checked: the header of bench/finetune.ts. Timings are only ' +
      'comparable within one run; a load average above the core count means other work took CPU.\n\n' +
      `${table}\n`,
    'finetune',
  );
  console.log(`wrote bench/${written}`);
}
console.log(JSON.stringify({ rows, seq: SEQ, batch: BATCH, cpu: CPU, ...(torchSkipped && { note: torchSkipped }) }));

/**
 * The fp32 rows' weights (a GPT made as finetune-step.ts makes it) under Hugging Face's names in `folder`: each HF
 * tensor sliced from qkv's by models/hf/llama.ts's map, every qkv parameter filled once (the loader's own plan).
 */
function writeHfFolder(folder: string): void {
  setBackend('js'); // the copies stay on the JS heap: this process is not measured
  const cfg = decoderConfigFromHf(HF_CONFIG);
  const m = new models.GPT(cfg, { init: false });
  writeSeededWeights(m);
  const weights = m.stateDict();
  writeHfLlamaFolder(folder, weights, cfg);
}
