/**
 * `qkv train-lm` and `qkv generate`: a GPT trained on a text file (one line = one document),
 * character-level or BPE, and sampled from with streaming output.
 *
 * A language-model folder holds config.json (format 'qkv-gpt'), tokenizer.json (a qkv-chars
 * tokenizer or a Hugging Face BPE tokenizer.json), model.safetensors (the weights of the best
 * validation loss so far), train-state.safetensors (for --resume) and history.json.
 */
import { generateStream, generateStreamAsync } from '../decode/gpt.ts';
import { openOnnxGpt, parseEngine } from './onnxruntime.ts';
import { GPT } from '../models/gpt.ts';
import { manualSeed } from '../tensor/random.ts';
import { BpeTokenizer } from '../text/bpe.ts';
import { CharTokenizer } from '../text/chars.ts';
import { checkRunFolder, FRESH, resumeState, trainLoop } from '../train/loop.ts';
import {
  LM_SMOOTHING,
  LmTrainer,
  VAL_LOSS,
  encodeLines,
  evaluateLm,
  type LmHistoryEntry,
  type LmStepResult,
  type LmTokenizer,
} from '../train/lm.ts';
import { PRESETS } from '../train/presets.ts';
import { idsText, lineSeparatorId, promptIds, type LoadedLm } from '../folder/gpt.ts';
import { readGptShape, readLm, saveLmDir } from '../folder/node.ts';
import { readLines } from './corpus.ts';
import { asUserError, UserError } from './files.ts';
import { progressBar } from './progress.ts';

type TokenizerKind = 'char' | 'bpe';

export type { LmConfigFile } from '../folder/spec.ts';
/** A language-model folder, opened (folder/gpt.ts). */
export type { LoadedLm } from '../folder/gpt.ts';

export const DEFAULT_LM_DATA = 'data/multi30k/train.en.gz';
export const DEFAULT_LM_VAL = 'data/multi30k/val.en.gz';

// ---- Model folders ----------------------------------------------------------------------------

/** The model (random weights) and tokenizer of a language-model folder. */
export function loadLmShape(dir: string): LoadedLm {
  return asUserError(() => readGptShape(dir));
}

/** Load a folder written by `qkv train-lm` (or a Hugging Face GPT-2 folder), weights included, in eval mode. */
export function loadLmDir(dir: string): LoadedLm {
  return asUserError(() => readLm(dir));
}

// A language-model folder's config.json and tokenizer.json are written by the folder module (the weights apart).
export { saveLmDir };

// ---- qkv train-lm -----------------------------------------------------------------------------

export interface TrainLmArgs {
  out: string;
  data?: string;
  val?: string;
  tokenizer: string;
  vocabSize?: number;
  preset: string;
  resume: boolean;
  maxSteps?: number;
  batchSize?: number;
  lr?: number;
  warmup?: number;
  evalEvery?: number;
  saveEvery?: number;
  evalTokens: number;
  seed?: number;
  log: (line: string) => void;
}

/** Training and validation lines: --val, the Multi30K val split for the default data, else the last 10% of --data. */
function readCorpus(a: TrainLmArgs): { train: string[]; val: string[]; valFrom: string } {
  const dataPath = a.data ?? DEFAULT_LM_DATA;
  const lines = readLines(dataPath);
  const valPath = a.val ?? (a.data === undefined ? DEFAULT_LM_VAL : undefined);
  if (valPath) return { train: lines, val: readLines(valPath), valFrom: valPath };
  if (lines.length < 2)
    throw new UserError(
      `${dataPath} has ${lines.length} line(s); give at least 2 (10% are held out for validation) or pass --val FILE`,
    );
  const nVal = Math.max(1, Math.floor(lines.length / 10));
  return { train: lines.slice(0, -nVal), val: lines.slice(-nVal), valFrom: `last ${nVal} lines of ${dataPath}` };
}

export async function trainLm(a: TrainLmArgs): Promise<void> {
  const preset = PRESETS.lm[a.preset];
  if (!preset)
    throw new UserError(`unknown preset '${a.preset}', expected one of: ${Object.keys(PRESETS.lm).join(', ')}`);
  if (a.tokenizer !== 'char' && a.tokenizer !== 'bpe')
    throw new UserError(`unknown tokenizer '${a.tokenizer}', expected char or bpe`);
  checkRunFolder(a.out, a.resume);

  const corpus = readCorpus(a);
  let lm: { model: GPT; tokenizer: LmTokenizer; kind: TokenizerKind };
  if (a.resume) {
    const loaded = loadLmShape(a.out); // the weights come from the training state below
    lm = { model: loaded.model, tokenizer: loaded.tokenizer, kind: loaded.config.tokenizer as TokenizerKind };
  } else {
    const kind = a.tokenizer as TokenizerKind;
    let tokenizer: LmTokenizer;
    if (kind === 'char') {
      tokenizer = CharTokenizer.learn(corpus.train);
    } else {
      const vocabSize = a.vocabSize ?? preset.bpeVocabSize;
      a.log(`learning a BPE vocabulary of ${vocabSize} on ${corpus.train.length} lines`);
      tokenizer = BpeTokenizer.learn(corpus.train, { vocabSize });
    }
    manualSeed(a.seed ?? preset.recipe.seed ?? 1);
    lm = { model: new GPT({ ...preset.model, vocabSize: tokenizer.vocabSize }), tokenizer, kind };
  }
  const { model, tokenizer } = lm;
  const sep = lineSeparatorId(tokenizer);
  const trainIds = encodeLines(tokenizer, corpus.train, sep);
  const valIds = encodeLines(tokenizer, corpus.val, sep);
  const maxSteps = a.maxSteps ?? preset.maxSteps;
  const recipe = {
    ...preset.recipe,
    decaySteps: maxSteps,
    ...(a.batchSize !== undefined && { batchSize: a.batchSize }),
    ...(a.lr !== undefined && { lr: a.lr, minLr: a.lr / 10 }),
    ...(a.warmup !== undefined && { warmup: a.warmup }),
    ...(a.seed !== undefined && { seed: a.seed }),
  };
  if (recipe.warmup !== undefined && recipe.warmup > maxSteps) recipe.warmup = maxSteps;
  let trainer: LmTrainer;
  try {
    trainer = new LmTrainer(model, trainIds, recipe);
  } catch (e) {
    throw new UserError((e as Error).message);
  }
  const training = {
    preset: a.preset,
    recipe: trainer.options,
    maxSteps,
    data: a.data ?? DEFAULT_LM_DATA,
    validation: corpus.valFrom,
  };
  let resumed = FRESH;
  if (a.resume) {
    resumed = resumeState(trainer, a.out);
    a.log(`resumed at step ${trainer.position.step}`);
  } else {
    saveLmDir(a.out, model, tokenizer, lm.kind, training);
  }
  const perStep = trainer.options.batchSize * trainer.options.seqLen;
  a.log(
    `${model.numParameters().toLocaleString('en-US')} parameters, ${lm.kind} vocabulary of ${tokenizer.vocabSize}, ` +
      `${trainIds.length.toLocaleString('en-US')} training tokens ` +
      `(${(trainIds.length / perStep).toFixed(0)} steps per epoch), ` +
      `${valIds.length.toLocaleString('en-US')} validation tokens`,
  );

  const history = await trainLoop<LmStepResult, LmHistoryEntry>({
    out: a.out,
    command: 'qkv train-lm',
    trainer,
    maxSteps,
    evalEvery: a.evalEvery ?? preset.evalEvery,
    saveEvery: a.saveEvery ?? preset.saveEvery,
    smoothing: LM_SMOOTHING,
    resumed,
    metric: VAL_LOSS,
    patience: 0,
    checkpoints: null,
    countMinutes: false,
    evaluate: (r, ema, time) => {
      const valLoss = evaluateLm(model, valIds, { batchSize: trainer.options.batchSize, maxTokens: a.evalTokens });
      return { entry: { step: r.step, trainLoss: ema, valLoss, seconds: time.sinceStart() }, detail: '' };
    },
    bar: progressBar('train-lm |{bar}| {value}/{total} | loss {loss} | lr {lr} | {tps} tok/s | ETA {eta_formatted}'),
    barFields: () => ({}),
    log: a.log,
  });
  const best = history.reduce((m, h) => Math.min(m, h.valLoss), Infinity);
  a.log(`done: ${a.out} (${trainer.position.step} steps; best val loss ${best.toFixed(3)})`);
}

// ---- qkv generate -----------------------------------------------------------------------------

export interface GenerateArgs {
  model: string;
  prompt: string;
  maxTokens: number;
  temperature: number;
  topK?: number;
  topP?: number;
  seed?: number;
  cache: boolean;
  /** qkv (default) or onnxruntime (model: a folder from qkv export --format onnx). */
  engine?: string;
  log: (line: string) => void;
  /** Where the text goes (default: stdout). */
  write?: (text: string) => void;
}

export async function generateText(a: GenerateArgs): Promise<void> {
  if (a.prompt === '') throw new UserError('--prompt is empty: give some text to continue');
  const onnx = parseEngine(a.engine) === 'onnxruntime' ? await openOnnxGpt(a.model) : null;
  const { model, tokenizer, separatorId } = onnx ? loadLmShape(a.model) : loadLmDir(a.model);
  const blockSize = model.config.blockSize;
  // Each line of the prompt ends with the separator, as in training; the first starts after one
  // (a line start) when there is room for it.
  const ids = promptIds(tokenizer, a.prompt, separatorId);
  if (ids.length > blockSize)
    throw new UserError(`the prompt is ${ids.length} tokens long; this model's context holds ${blockSize}`);
  if (tokenizer instanceof CharTokenizer || tokenizer instanceof BpeTokenizer) {
    const unknown = ids.filter((id) => id === tokenizer.unkId).length;
    if (unknown > 0)
      a.log(`warning: ${unknown} prompt token(s) are not in the model's vocabulary (encoded as unknown)`);
  }
  const prompt = ids.length < blockSize ? [separatorId, ...ids] : ids;
  const seed = a.seed ?? Math.floor(Math.random() * 2 ** 31);
  const write = a.write ?? ((s: string) => process.stdout.write(s));
  const all = ids.slice(); // the prompt and what follows it, as shown
  let shown = idsText(tokenizer, all, separatorId);
  write(shown);
  const t0 = performance.now();
  let n = 0;
  const options = {
    maxTokens: a.maxTokens,
    temperature: a.temperature,
    topK: a.topK,
    topP: a.topP,
    seed,
    useCache: a.cache,
  };
  for await (const t of onnx ? generateStreamAsync(onnx, prompt, options) : generateStream(model, prompt, options)) {
    all.push(t.id);
    n++;
    const text = idsText(tokenizer, all, separatorId);
    write(text.slice(shown.length));
    shown = text;
  }
  if (!shown.endsWith('\n')) write('\n');
  const s = (performance.now() - t0) / 1000;
  a.log(
    `${n} tokens in ${s.toFixed(2)} s ` +
      `(${((1000 * s) / Math.max(1, n)).toFixed(1)} ms/token, ` +
      `${a.cache ? 'KV cache' : 'no cache'}${onnx ? ', ONNX Runtime' : ''})` +
      (a.temperature > 0 ? `, seed ${seed}` : ''),
  );
}
