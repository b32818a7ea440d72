/**
 * The fixtures made by the real reference libraries (issue 61): each script runs under the reference
 * environment's interpreter (REF_PYTHON, .venv-ref/: transformers 5.18, torch 2.13, python/ref-requirements.txt)
 * as `REF_PYTHON script OUT_DIR` and writes `files` into OUT_DIR (without it, into `folder`, where they are
 * committed). A new family's script is registered here and nowhere else: references.once.test.ts regenerates
 * and compares every entry, regenerate.once.test.ts (the PyTorch 1.13 scripts, which write the folders'
 * inputs) leaves these files alone, and scripts/fixtures/README.md lists them.
 */
import { readdirSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Every committed file under `folder` (from the repository root), relative to it, but the `inputs` it reads and the
 * files whose base name is in `others` (another script's).
 */
function committedFiles(folder: string, inputs: readonly string[] = [], others: readonly string[] = []): string[] {
  const base = join(ROOT, folder);
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const p = join(dir, name);
      return statSync(p).isDirectory() ? walk(p) : [relative(base, p)];
    });
  return walk(base)
    .filter((f) => !inputs.includes(f) && !others.includes(basename(f)))
    .sort();
}

export interface Reference {
  /** The script, from the repository root. */
  script: string;
  /** The folder of the committed files, from the repository root. */
  folder: string;
  /** The files the script writes, all of them committed in `folder`. */
  files: string[];
}

/** The files make_hf_encoder_attention.py writes in each masked-LM folder of make_hf_encoders.py's. */
const ENCODER_ATTENTION = ['attention.json', 'attention.safetensors'];

/** The files make_hf_seq2seq_attention.py writes in the T5, Flan-T5 and NLLB folders of make_hf_seq2seq.py's. */
const SEQ2SEQ_ATTENTION = ['attention.json', 'attention.safetensors'];

export const REFERENCES: readonly Reference[] = [
  {
    script: 'scripts/fixtures/ref_marian.py',
    folder: 'test/fixtures/marian-tiny',
    files: ['expected.json', 'expected.safetensors'],
  },
  {
    script: 'scripts/fixtures/ref_spm_marian.py',
    folder: 'test/fixtures/spm',
    files: ['marian.json'],
  },
  {
    script: 'scripts/fixtures/ref_hf_gpt2.py',
    folder: 'test/fixtures/hf-gpt2-tiny',
    files: ['expected.safetensors'],
  },
  {
    script: 'scripts/fixtures/make_hf_post_processors.py',
    folder: 'test/fixtures/hf-post-processors',
    files: ['cases.json'],
  },
  {
    // The encoder family's folders as save_pretrained writes them and transformers' outputs on them; the
    // tokenizers' trained vocabularies (trained.json) are an input (tokenizers' trainers break ties in hash order).
    script: 'scripts/fixtures/make_hf_encoders.py',
    folder: 'test/fixtures/hf-encoders',
    files: committedFiles('test/fixtures/hf-encoders', ['trained.json'], ENCODER_ATTENTION),
  },
  {
    // Each layer's attention per head on the masked-LM folders above (output_attentions, eager), for the explorer.
    script: 'scripts/fixtures/make_hf_encoder_attention.py',
    folder: 'test/fixtures/hf-encoders',
    files: ['bert-mlm', 'distilbert-mlm', 'roberta-mlm', 'xlm-roberta-mlm'].flatMap((m) =>
      ENCODER_ATTENTION.map((f) => `${m}/${f}`),
    ),
  },
  {
    // Marian (opus-mt's generation_config.json keys) and NLLB folders as save_pretrained writes them, and what
    // generate() returns on them; the SentencePiece models are trained by the script itself.
    script: 'scripts/fixtures/make_hf_seq2seq.py',
    folder: 'test/fixtures/hf-seq2seq',
    files: committedFiles('test/fixtures/hf-seq2seq', ['rules.json'], SEQ2SEQ_ATTENTION),
  },
  {
    // Every layer's encoder, decoder and cross-attention per head on the T5, Flan-T5 and NLLB folders above
    // (output_attentions, eager), and T5's relative position bias with its buckets, for the explorer.
    script: 'scripts/fixtures/make_hf_seq2seq_attention.py',
    folder: 'test/fixtures/hf-seq2seq',
    files: ['t5/t5', 't5/flan-t5', 'nllb'].flatMap((m) => SEQ2SEQ_ATTENTION.map((f) => `${m}/${f}`)),
  },
  {
    // generate()'s rules (repetition penalty, no-repeat n-grams, early_stopping, length penalty) and the T5 task
    // pipelines on the folders above.
    script: 'scripts/fixtures/make_hf_seq2seq_rules.py',
    folder: 'test/fixtures/hf-seq2seq',
    files: ['rules.json'],
  },
  {
    // Llama, Qwen2, Mistral and Llama-3-rope folders as save_pretrained writes them (bf16/fp16/sharded), their
    // logits and greedy continuations; the byte-level BPE is trained by the script itself on one thread.
    script: 'scripts/fixtures/make_hf_llama.py',
    folder: 'test/fixtures/hf-llama',
    files: committedFiles('test/fixtures/hf-llama'),
  },
  {
    // Chat folders (Llama, Qwen2, Llama 3 templates), what apply_chat_template renders and the pipeline generates.
    script: 'scripts/fixtures/make_hf_chat.py',
    folder: 'test/fixtures/hf-chat',
    files: committedFiles('test/fixtures/hf-chat'),
  },
  {
    // RMSNorm, SwiGLU, rotary tables and grouped-query attention with their gradients, by torch and transformers.
    script: 'scripts/fixtures/make_decoder_blocks.py',
    folder: 'test/fixtures/decoder-blocks',
    files: committedFiles('test/fixtures/decoder-blocks'),
  },
  {
    // q4's float16 scales as torch's .half() rounds them, and the values against the rounded scale (issue 58).
    script: 'scripts/fixtures/ref_q4_half.py',
    folder: 'test/fixtures/q4-half',
    files: ['expected.safetensors'],
  },
  {
    // QLoRA steps: PEFT on the tiny GPT-2 and Llama folders with their linear layers quantized as qkv does and
    // dequantized (float64, stored float32).
    script: 'scripts/fixtures/make_peft_qlora.py',
    folder: 'test/fixtures/peft-qlora',
    files: ['gpt2-int8', 'gpt2-q4', 'llama-int8'].flatMap((c) => [`${c}/data.json`, `${c}/expected.safetensors`]),
  },
  {
    // Fine-tuning steps of the newer families: PEFT LoRA and full on the tiny Llama (tied) and Qwen2 (biases,
    // untied) folders and the BERT, DistilBERT and XLM-R classifiers (float64, stored float32).
    script: 'scripts/fixtures/make_finetune_families.py',
    folder: 'test/fixtures/finetune',
    files: ['llama', 'qwen2', 'bert', 'distilbert', 'xlm-roberta', 'bert-seqcls', 'distilbert-seqcls'].flatMap((c) => [
      `${c}/data.json`,
      `${c}/expected.safetensors`,
    ]),
  },
];

/**
 * Folders of test/fixtures/ written by the reference environment's scripts that are not (yet) in REFERENCES:
 * peft/ (make_peft_lora.py, compared by peft-regenerate.once.test.ts at 1e-5), whose byte-for-byte regeneration
 * across CPUs is not yet shown; and q4-f32-scales/, written by an older qkv itself (scripts/fixtures/
 * make_q4_f32_scales.ts, from commit 145817a: no library can write it again). The PyTorch 1.13 regeneration
 * (regenerate.once.test.ts) leaves them alone too.
 */
export const OTHER_REFERENCE_FOLDERS: readonly string[] = ['test/fixtures/peft', 'test/fixtures/q4-f32-scales'];
