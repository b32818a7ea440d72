/**
 * What bench/finetune.ts, its qkv rows (bench/finetune-step.ts) and bench/index.ts share: the run's shape (the
 * SmolLM2-135M-shaped Llama of bench/decoders-shape.ts, or with `--smoke` its tiny twin), the LoRA adapter, the
 * batch, and the table.
 */
import { HF_CONFIG, smoke } from './decoders-shape.ts';

export { HF_CONFIG, smoke, THREADS, cpuLine } from './decoders-shape.ts';

/** Tokens per sequence (the 256), and sequences per step. */
export const SEQ = smoke ? 16 : 256;
export const BATCH = 1;
/** Timed steps per row (medians), after one untimed step. */
export const STEPS = smoke ? 1 : 3;
/** The adapter: PEFT's LoraConfig with its default targets for llama (q_proj, v_proj), r 8, α 16, no dropout. */
export const LORA = { r: 8, alpha: 16, targets: ['q_proj', 'v_proj'] };
/** AdamW's learning rate (constant): Trainer's other defaults (β 0.9/0.999, ε 1e-8, no decay, clip 1). */
export const LR = 2e-4;

/** The step's ids: BATCH sequences of SEQ + 1 ids (inputs the first SEQ, targets the last SEQ), as flat rows. */
export function stepIds(): number[][] {
  const V = HF_CONFIG.vocab_size;
  return Array.from({ length: BATCH }, (_, b) =>
    Array.from({ length: SEQ + 1 }, (_, i) => ((b * (SEQ + 1) + i) * 7919 + 13) % V),
  );
}

/** One row of the table: an engine, its base's dtype, recomputation, and what its child process measured. */
export interface FinetuneRow {
  engine: 'qkv' | 'PyTorch + PEFT';
  /** The frozen base: fp32, or int8/q4 (QLoRA-style, qkv only). */
  dtype: 'fp32' | 'int8' | 'q4';
  recompute: boolean;
  /** Median milliseconds of a step (forward, backward, clipping, AdamW). */
  ms: number | null;
  /** Peak resident memory less the memory before the model, MiB. */
  peak_mib: number | null;
  /** The first step's loss (the adapter starts as a no-op: the base's loss). */
  loss0: number | null;
  /** The 1-minute load average when the row ran. */
  load: number;
  note?: string;
}

/** The rows as a Markdown table (bench/finetune.ts's results file, bench/index.ts's), the CPU on every row. */
export function finetuneTable(rows: FinetuneRow[], cpu: string): string {
  const tokens = SEQ * BATCH;
  return [
    `| ${smoke ? 'tiny Llama (--smoke)' : 'SmolLM2-135M shape'}, LoRA, ${BATCH} × ${SEQ} tokens | base | recompute | ` +
      'ms / step | tokens/s | peak MiB | first loss | CPU (lscpu) | load (1 min) | |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.engine} | ${r.dtype} | ${r.recompute ? 'yes' : 'no'} | ${r.ms == null ? '—' : r.ms.toFixed(0)} | ` +
        `${r.ms == null ? '—' : ((1000 * tokens) / r.ms).toFixed(0)} | ` +
        `${r.peak_mib == null ? '—' : r.peak_mib.toFixed(0)} | ${r.loss0 == null ? '—' : r.loss0.toFixed(4)} | ` +
        `${cpu} | ${r.load.toFixed(2)} | ${r.note ?? ''} |`,
    ),
  ].join('\n');
}
