/**
 * `qkv finetune` and `qkv merge`: their flags, their checks and the lines they read, for the run of
 * src/train/finetune-run.ts (a Hugging Face folder trained fully or with LoRA) and for merging a PEFT adapter into
 * its base as a plain folder.
 *
 * --data is, by the folder's task: text, one document per line (GPT-2, Llama-family); `source<TAB>target` pairs
 * (Marian); `text<TAB>label`, the label by its config.json id2label name (a BERT-style classifier).
 */
import { resolve } from 'node:path';
import { Command } from '@commander-js/extra-typings';
import { applyAdapter, readAdapterSync } from '../../folder/adapter.ts';
import { copyHfFiles, saveHfWeights } from '../../folder/node-hf.ts';
import { dirSource } from '../../folder/node.ts';
import { openFolderSync } from '../../folder/open.ts';
import { tunable } from '../../folder/tunable.ts';
import { runFineTune } from '../../train/finetune-run.ts';
import { checkRunFolder } from '../../train/loop.ts';
import { int, nonNegativeInt, nonNegativeNumber, num, rate } from '../args.ts';
import { readLines } from '../corpus.ts';
import { UserError } from '../files.ts';
import { log, type FlagsOf } from '../options.ts';
import { progressBar } from '../progress.ts';

function flags() {
  return new Command('finetune')
    .description(
      'fine-tune a Hugging Face folder (GPT-2, Llama/Qwen2/Mistral, Marian, BERT-style classifiers) on your ' +
        'lines, fully or with a LoRA adapter (PEFT format)',
    )
    .requiredOption(
      '--model <dir>',
      'the base folder (gpt2, llama, qwen2, mistral, marian; a bert/distilbert/roberta/xlm-roberta classifier)',
    )
    .requiredOption(
      '--data <file>',
      "training lines, plain or .gz: text (decoders), 'source<TAB>target' (Marian), 'text<TAB>label' (classifiers)",
    )
    .requiredOption('--out <dir>', 'run folder: the fine-tuned folder (or adapter), training state and history')
    .option('--val <file>', 'validation lines (default: the last 10% of --data)')
    .option('--resume', 'continue the run in --out from its last checkpoint', false)
    .option('--lora', 'train a LoRA adapter on the frozen base instead of every weight', false)
    .option('--r <n>', 'LoRA rank', int('--r'), 8)
    .option('--lora-alpha <x>', 'LoRA α (the update is scaled by α/r)', num('--lora-alpha'), 16)
    .option('--lora-dropout <p>', "dropout on the adapters' input", rate('--lora-dropout'), 0)
    .option(
      '--target-modules <names>',
      "comma-separated module names, or 'all-linear' (default PEFT's: GPT-2 c_attn, Llama and Marian q_proj,v_proj)",
    )
    .option('--quantize <dtype>', 'QLoRA (with --lora): hold the frozen base in int8 or q4, the adapters float32')
    .option('--recompute', "GPT-2/Llama: recompute each block's activations in the backward pass (less memory)", false)
    .option('--max-steps <n>', 'optimizer steps (the linear decay ends there)', int('--max-steps'), 1000)
    .option('--lr <x>', 'peak learning rate (default 5e-5, with --lora 2e-4)', num('--lr'))
    .option('--warmup <n>', 'linear warmup steps', nonNegativeInt('--warmup'), 0)
    .option('--schedule <kind>', 'linear (decay to 0 at --max-steps) | constant', 'linear')
    .option('--weight-decay <x>', 'AdamW weight decay on matrices and tables', nonNegativeNumber('--weight-decay'), 0)
    .option('--clip <x>', 'clip the gradient norm (0: off)', nonNegativeNumber('--clip'), 1)
    .option('--batch-size <n>', 'decoders: windows per step; classifiers: texts per step', int('--batch-size'), 8)
    .option('--seq-len <n>', 'decoders: tokens per window (default min(128, the context))', int('--seq-len'))
    .option('--max-tokens <n>', 'Marian: padded tokens per batch', int('--max-tokens'), 2048)
    .option('--label-smoothing <x>', 'Marian: label smoothing', rate('--label-smoothing'), 0)
    .option('--eval-every <n>', 'validation loss every n steps', int('--eval-every'), 100)
    .option('--save-every <n>', 'training state every n steps', int('--save-every'), 100)
    .option('--eval-tokens <n>', 'decoders: validation tokens scored at each evaluation', int('--eval-tokens'), 65536)
    .option('--seed <n>', 'random seed', int('--seed'), 1);
}

export type FineTuneArgs = FlagsOf<typeof flags> & { log: (line: string) => void };

export function finetuneCommand() {
  return flags().action(async (o) => {
    await finetune({ ...o, log });
  });
}

/** Training and validation lines: --val, else the last 10% of --data. */
function readData(a: FineTuneArgs): { train: string[]; val: string[] } {
  const lines = readLines(a.data).filter((l) => l.length > 0);
  if (a.val) return { train: lines, val: readLines(a.val).filter((l) => l.length > 0) };
  if (lines.length < 2)
    throw new UserError(
      `${a.data} has ${lines.length} line(s); give at least 2 (10% are held out for validation) or pass --val FILE`,
    );
  const nVal = Math.max(1, Math.floor(lines.length / 10));
  return { train: lines.slice(0, -nVal), val: lines.slice(-nVal) };
}

export async function finetune(a: FineTuneArgs): Promise<void> {
  if (a.schedule !== 'linear' && a.schedule !== 'constant')
    throw new UserError(`--schedule must be linear or constant, got '${a.schedule}'`);
  if (resolve(a.out) === resolve(a.model)) throw new UserError('--out must be another folder than --model');
  checkRunFolder(a.out, a.resume);
  if (a.quantize !== undefined && a.quantize !== 'int8' && a.quantize !== 'q4')
    throw new UserError(`--quantize must be int8 or q4, got '${a.quantize}'`);
  if (a.quantize && !a.lora) throw new UserError(`--quantize ${a.quantize} needs --lora (QLoRA: only adapters train)`);
  const targets = a.targetModules?.split(',').map((s) => s.trim());
  await runFineTune({
    model: a.model,
    out: a.out,
    resume: a.resume,
    lora: a.lora
      ? {
          r: a.r,
          alpha: a.loraAlpha,
          dropout: a.loraDropout,
          targetModules: targets?.length === 1 && targets[0] === 'all-linear' ? 'all-linear' : targets,
        }
      : undefined,
    quantize: a.quantize === 'int8' || a.quantize === 'q4' ? a.quantize : undefined,
    recompute: a.recompute,
    ...readData(a),
    dataName: a.data,
    maxSteps: a.maxSteps,
    evalEvery: a.evalEvery,
    saveEvery: a.saveEvery,
    recipe: {
      lr: a.lr ?? (a.lora ? 2e-4 : 5e-5),
      warmup: a.warmup,
      schedule: a.schedule,
      weightDecay: a.weightDecay,
      clipNorm: a.clip,
      seed: a.seed,
    },
    batchSize: a.batchSize,
    seqLen: a.seqLen,
    maxTokens: a.maxTokens,
    labelSmoothing: a.labelSmoothing,
    evalTokens: a.evalTokens,
    bar: progressBar('finetune |{bar}| {value}/{total} | loss {loss} | lr {lr} | {tps} tok/s | ETA {eta_formatted}'),
    log: a.log,
  });
}

export function mergeCommand() {
  return new Command('merge')
    .description('merge a LoRA adapter (PEFT format) into its base folder: a plain Hugging Face folder')
    .requiredOption('--model <dir>', 'the base folder the adapter was trained on')
    .requiredOption('--adapter <dir>', 'the adapter folder (adapter_config.json, adapter_model.safetensors)')
    .requiredOption('--out <dir>', 'the merged folder')
    .action((o) => {
      if (resolve(o.out) === resolve(o.model)) throw new UserError('--out must be another folder than --model');
      const t = tunable(openFolderSync(dirSource(o.model)));
      const a = applyAdapter(t, readAdapterSync(dirSource(o.adapter)), true);
      copyHfFiles(o.model, o.out);
      saveHfWeights(o.out, t);
      log(`merged ${a.pairs.length} adapted layers into ${o.out}`);
    });
}
