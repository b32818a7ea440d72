/**
 * A fine-tuning run (`qkv finetune`): a Hugging Face folder (GPT-2, Llama-family, Marian) trained on the user's
 * lines, fully or with a LoRA adapter, by the training loop every qkv run uses (./loop.ts: evaluations,
 * history.json, the state committed atomically every `saveEvery` steps, --resume), validation loss as its metric.
 * The run folder `out`:
 *
 *   full   a Hugging Face folder: the base's config and tokenizer files, model.safetensors under the family's
 *          Hugging Face names (the best validation loss so far), so qkv and transformers open it as they open the base;
 *   LoRA   a PEFT adapter folder: adapter_config.json and adapter_model.safetensors (the best so far), which PEFT
 *          loads on the base, and qkv with `--adapter` (`qkv merge` makes it a plain folder);
 *
 * and train-state.safetensors (the trained weights, AdamW's moments, the position) and history.json. A LoRA state
 * holds only the pairs: resuming rereads the base from --model. The command (src/cli/commands/finetune.ts) reads the
 * flags and the lines; this file knows no flags.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Pair } from '../data/batching.ts';
import { ADAPTER_FILES } from '../folder/adapter.ts';
import { copyHfFiles, saveAdapterDir, saveHfWeights } from '../folder/node-hf.ts';
import { dirSource } from '../folder/node.ts';
import { openFolderSync } from '../folder/open.ts';
import { FILES } from '../folder/spec.ts';
import { tunable, type Tunable } from '../folder/tunable.ts';
import { attachLora, loraConfig, parseLoraConfig, type AttachedLora, type PeftLoraConfig } from '../models/hf/peft.ts';
import { quantizeForLora } from '../nn/qlora.ts';
import type { QuantDType } from '../ops/matmul.ts';
import { manualSeed } from '../tensor/random.ts';
import {
  ClassData,
  evaluateClassifier,
  type FineTuneData,
  type LabelledText,
  PairData,
  StreamData,
} from './finetune-data.ts';
import { FineTuner, type FineTuneOptions, type FineTuneStepResult } from './finetune.ts';
import { evaluateLm, VAL_LOSS, type LmHistoryEntry } from './lm.ts';
import { FRESH, resumeState, trainLoop, type ProgressBar } from './loop.ts';
import { evaluateSeq2Seq } from './trainer.ts';

/** The LoRA part of a run: what PEFT's LoraConfig says. */
export interface FineTuneLora {
  r: number;
  alpha: number;
  dropout: number;
  /**
   * Hugging Face module names (default: PEFT's for the family: GPT-2 ['c_attn'], Llama-family and Marian
   * ['q_proj', 'v_proj']).
   */
  targetModules?: string[] | string;
}

/** PEFT's default target_modules per model_type (peft/utils/constants.py, for LoRA). */
export const PEFT_DEFAULT_TARGETS: Record<Tunable['kind'], string[]> = {
  'hf-gpt2': ['c_attn'],
  'hf-llama': ['q_proj', 'v_proj'],
  'hf-encoder': ['query', 'value'],
  marian: ['q_proj', 'v_proj'],
};

export interface FineTuneRun {
  /** The base Hugging Face folder. */
  model: string;
  /** The run folder (checked beforehand with ./loop.ts `checkRunFolder`). */
  out: string;
  resume: boolean;
  /** LoRA's shape; undefined: full fine-tuning. */
  lora?: FineTuneLora;
  /** QLoRA: the frozen base held in int8 or q4 under the LoRA pairs (nn/qlora.ts); undefined: float32. */
  quantize?: QuantDType;
  /** Recompute each block's activations in the backward pass (language models: GPT.recompute). */
  recompute?: boolean;
  /**
   * Training and validation lines: text (a language model), `source<TAB>target` (a translation model),
   * `text<TAB>label` (a classifier).
   */
  train: string[];
  val: string[];
  /** Where they came from, for history and messages. */
  dataName: string;
  maxSteps: number;
  evalEvery: number;
  saveEvery: number;
  /** The recipe's fields given (the rest: FINETUNE_RECIPE). */
  recipe: Partial<FineTuneOptions>;
  /**
   * Language model: windows per batch (a classifier: texts per batch); tokens per window (default min(128, the
   * context)).
   */
  batchSize: number;
  seqLen?: number;
  /** Translation: padded tokens per batch. */
  maxTokens: number;
  labelSmoothing: number;
  /** Validation tokens scored at each evaluation (language model). */
  evalTokens: number;
  bar: ProgressBar;
  log: (line: string) => void;
}

/** Lines `source<TAB>target` as Marian pairs (source with EOS, target without); an error names the line. */
function pairsOf(t: Extract<Tunable, { task: 'seq2seq' }>, lines: string[], name: string): Pair[] {
  const tok = t.opened.tokenizer;
  return lines.map((line, i) => {
    const tab = line.indexOf('\t');
    if (tab < 0 || line.indexOf('\t', tab + 1) >= 0)
      throw new Error(`${name} line ${i + 1}: expected 'source<TAB>target' (one tab), got ${JSON.stringify(line)}`);
    const tgt = tok.encodeTarget(line.slice(tab + 1));
    return { src: tok.encode(line.slice(0, tab)), tgt: tgt.slice(0, -1) }; // the batch appends EOS to the target
  });
}

/**
 * The pairs whose source and target (with EOS, or the decoder's start) fit the model's positions; the others are
 * left out and counted in the log (Marian reads at most max_position_embeddings tokens).
 */
function fitting(pairs: Pair[], maxLen: number, name: string, log: (line: string) => void): Pair[] {
  const kept = pairs.filter((p) => p.src.length <= maxLen && p.tgt.length + 1 <= maxLen);
  if (kept.length === 0) throw new Error(`${name}: no pair fits the model's ${maxLen} positions`);
  if (kept.length < pairs.length)
    log(`${name}: left out ${pairs.length - kept.length} of ${pairs.length} pairs longer than ${maxLen} positions`);
  return kept;
}

/**
 * Lines `text<TAB>label` as labelled texts: the label by its name in config.json's id2label (or its id, where the
 * names are transformers' LABEL_i defaults), the text tokenized as the classifier reads it (special tokens added, cut
 * to the model's length). An error names the line and the labels.
 */
function labelledOf(t: Extract<Tunable, { task: 'classify' }>, lines: string[], name: string): LabelledText[] {
  const { labels } = t.opened.hf;
  const byName = new Map(labels.map((l, i) => [l, i]));
  return lines.map((line, i) => {
    const tab = line.lastIndexOf('\t');
    if (tab < 0) throw new Error(`${name} line ${i + 1}: expected 'text<TAB>label', got ${JSON.stringify(line)}`);
    const label = line.slice(tab + 1).trim();
    const id = byName.get(label);
    if (id === undefined)
      throw new Error(
        `${name} line ${i + 1}: label ${JSON.stringify(label)} is not one of the model's (config.json id2label: ` +
          `${labels.map((l) => JSON.stringify(l)).join(', ')})`,
      );
    return {
      ids: t.opened.tokenizer.encodeInput(line.slice(0, tab), { maxLength: t.opened.maxTokens }).ids,
      label: id,
    };
  });
}

/** PEFT's default target_modules for the folder's model_type (peft/utils/constants.py, LoRA). */
export function peftDefaultTargets(t: Tunable): string[] {
  if (t.kind === 'hf-encoder' && t.opened.hf.family === 'distilbert') return ['q_lin', 'v_lin'];
  return PEFT_DEFAULT_TARGETS[t.kind];
}

/** Text lines as one stream of ids, each line followed by the separator (GPT-2: <|endoftext|>). */
function streamOf(t: Extract<Tunable, { task: 'lm' }>, lines: string[]): Int32Array {
  const { tokenizer, separatorId } = t.opened;
  const ids: number[] = [];
  for (const line of lines) {
    for (const id of tokenizer.encode(line)) ids.push(id);
    ids.push(separatorId);
  }
  return Int32Array.from(ids);
}

/** Train to maxSteps: the folder or adapter, history.json and the training state in `out`. */
export async function runFineTune(a: FineTuneRun): Promise<void> {
  const t = tunable(openFolderSync(dirSource(a.model)));
  const model = t.model;
  let attached: AttachedLora | null = null;
  if (a.quantize) {
    if (!a.lora)
      throw new Error(`--quantize ${a.quantize} needs --lora: a quantized base is frozen, only adapters train on it`);
    quantizeForLora(model, a.quantize);
  }
  if (a.recompute) {
    if (t.task !== 'lm')
      throw new Error(
        `--recompute: only the language models (GPT-2, Llama-style) recompute their blocks, not ${t.kind}`,
      );
    t.model.recompute = true;
  }
  if (a.lora) {
    let config: PeftLoraConfig;
    if (a.resume) {
      const path = join(a.out, ADAPTER_FILES.config);
      if (!existsSync(path)) throw new Error(`--resume: ${path} not found (the run is not a LoRA run)`);
      config = parseLoraConfig(JSON.parse(readFileSync(path, 'utf8')), path);
    } else {
      config = loraConfig({
        r: a.lora.r,
        loraAlpha: a.lora.alpha,
        loraDropout: a.lora.dropout,
        targetModules: a.lora.targetModules ?? peftDefaultTargets(t),
        taskType: t.taskType,
        // PEFT's SEQ_CLS: the head trained in full beside the pairs (peft_model.py's classifier_module_names).
        modulesToSave: t.task === 'classify' ? ['classifier', 'score'] : null,
        baseModelNameOrPath: a.model,
      });
    }
    manualSeed(a.recipe.seed ?? 1); // A's draw
    attached = attachLora(model, t.sites(), config, t.saveable());
  } else if (a.resume && existsSync(join(a.out, ADAPTER_FILES.config))) {
    throw new Error(`--resume: ${a.out} holds a LoRA run; pass --lora to continue it`);
  }
  let data: FineTuneData<unknown>;
  let validate: () => number;
  if (t.task === 'seq2seq') {
    const { padId, eosId, decoderStartId } = t.opened.ids;
    const ids = { padId, bosId: decoderStartId, eosId };
    const trainPairs = fitting(pairsOf(t, a.train, a.dataName), t.model.config.maxLen, a.dataName, a.log);
    const valPairs = fitting(pairsOf(t, a.val, 'validation'), t.model.config.maxLen, 'validation', a.log);
    data = new PairData(trainPairs, ids, a.maxTokens, a.labelSmoothing) as FineTuneData<unknown>;
    validate = () => evaluateSeq2Seq(t.model, valPairs, ids, a.maxTokens);
  } else if (t.task === 'classify') {
    const padId = t.model.config.padId;
    const train = labelledOf(t, a.train, a.dataName);
    const val = labelledOf(t, a.val, 'validation');
    data = new ClassData(train, a.batchSize, padId) as FineTuneData<unknown>;
    validate = () => evaluateClassifier(t.model, val, padId, a.batchSize);
  } else {
    const { blockSize } = t.model.config;
    const seqLen = a.seqLen ?? Math.min(128, blockSize);
    if (seqLen > blockSize)
      throw new Error(`--seq-len ${seqLen} exceeds the model's context of ${blockSize} positions`);
    const stream = streamOf(t, a.train);
    const valStream = streamOf(t, a.val);
    data = new StreamData(stream, a.batchSize, seqLen) as FineTuneData<unknown>;
    validate = () => evaluateLm(t.model, valStream, { seqLen, batchSize: a.batchSize, maxTokens: a.evalTokens });
  }
  const trainer = new FineTuner(model, data, { ...a.recipe, totalSteps: a.maxSteps });
  const saveModel = attached
    ? () => saveAdapterDir(a.out, attached)
    : () => {
        copyHfFiles(a.model, a.out);
        saveHfWeights(a.out, t);
      };
  let resumed = FRESH;
  if (a.resume) {
    resumed = resumeState(trainer, a.out);
    a.log(`resumed at step ${trainer.position.step}`);
  } else {
    saveModel(); // the folder opens from the start: the base's weights, or the adapter's first draw
  }
  const trained = [...trainer.decayed.params, ...trainer.undecayed.params].reduce((n, p) => n + p.size, 0);
  a.log(
    `${t.kind} ${attached ? `LoRA (${attached.pairs.length} layers, r ${attached.config.r})` : 'full'}` +
      `${a.quantize ? ` over a frozen ${a.quantize} base` : ''}${a.recompute ? ', blocks recomputed' : ''}: ` +
      `${trained.toLocaleString('en-US')} of ${model.numParameters().toLocaleString('en-US')} parameters train; ` +
      `${data.describe()}`,
  );
  const history = await trainLoop<FineTuneStepResult, LmHistoryEntry>({
    out: a.out,
    command: 'qkv finetune',
    trainer,
    maxSteps: a.maxSteps,
    evalEvery: a.evalEvery,
    saveEvery: a.saveEvery,
    smoothing: [0.95, 0.05],
    resumed,
    metric: VAL_LOSS,
    patience: 0,
    checkpoints: null,
    countMinutes: false,
    evaluate: (r, ema, time) => {
      const valLoss = validate();
      return { entry: { step: r.step, trainLoss: ema, valLoss, seconds: time.sinceStart() }, detail: '' };
    },
    saveModel,
    modelFile: attached ? ADAPTER_FILES.weights : FILES.weights,
    bar: a.bar,
    barFields: () => ({}),
    log: a.log,
  });
  const best = history.reduce((m, h) => Math.min(m, h.valLoss), Infinity);
  a.log(`done: ${a.out} (${trainer.position.step} steps; best val loss ${best.toFixed(3)})`);
}
