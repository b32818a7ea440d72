/**
 * The one door to model folders (docs/model-folder.md, "Opening a folder in code"; over 500 lines: the door
 * of every kind is one place, the families' own steps live in ./gpt.ts, ./marian.ts, ./encoder.ts, ./decoder.ts):
 * every kind ('seq2seq' with its ensemble, 'gpt', 'hf-gpt2', 'marian', 'hf-encoder'), whole or its shape only,
 * from every
 * source (a Node directory, a URL, picked `File`s, contents in memory), is read by the generators of
 * this file: config.json first, and the kind it names decided (a Hugging Face model_type qkv does
 * not run is refused in one line naming it and the kinds qkv runs) before any tokenizer or weight
 * is requested; then the tokenizers, checked; then the weights. `openFolder` drives them
 * asynchronously, `openFolderSync` synchronously (./source.ts); the Node readers (./node.ts) and the
 * loaders from contents here (`seq2seqFromFiles`, `lmFromFiles`, ...) are these two over a source.
 */
import { hfGpt2Steps as hfGpt2WeightSteps } from '../io/hf.ts';
import { decoderConfigFromHf, HF_DECODER_TYPES } from '../models/hf/llama.ts';
import { hfDecoderModelSteps } from './decoder.ts';

/** A Llama, Qwen2 or Mistral config.json (read by models/hf/llama.ts; the 'hf-gpt2' kind's other family). */
function isDecoderConfig(config: unknown): boolean {
  const t = (config as { model_type?: unknown } | null)?.model_type;
  return typeof t === 'string' && (HF_DECODER_TYPES as readonly string[]).includes(t);
}
import type { GPTConfig } from '../models/gpt-config.ts';
import { GPT_FIELDS, SEQ2SEQ_FIELDS } from '../models/load-weights.ts';
import { gptConfigFromHf, isHfConfig } from '../models/hf/gpt2.ts';
import { GPT } from '../models/gpt.ts';
import type { HfLmGeneration } from '../models/hf/lm-generation.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import {
  checkedHf,
  checkHfVocab,
  gptShape,
  hfLmDefaults,
  hfTokenizer,
  hfWeightsError,
  type GptFiles,
  type GptTokenizer,
  type HfTokenizerFiles,
  type LoadedLm,
} from './gpt.ts';
import { encoderShapeSteps, encoderSteps, type EncoderShape, type LoadedEncoder } from './encoder.ts';
import type { HeadKind } from '../models/hf/bert.ts';
import {
  loadMarian,
  MARIAN_FILES,
  marianShape,
  type LoadedMarian,
  type MarianFiles,
  type MarianShape,
  type MarianWeights,
} from './marian.ts';
import { m2m100ShapeSteps, m2m100Steps, type LoadedM2M100, type M2M100Shape } from './m2m100.ts';
import { t5ShapeSteps, t5Steps, type LoadedT5, type T5Shape } from './t5.ts';
import {
  checkEnsemble,
  loadInto,
  notFound,
  seq2seqShape,
  type LoadedModel,
  type MemberCheck,
  type Seq2SeqFiles,
} from './seq2seq.ts';
import {
  contentsSource,
  folderExists,
  hasFile,
  readBytes,
  readJson,
  readRanged,
  readText,
  runAsync,
  runSync,
  toSource,
  wait,
  type FileContents,
  type FolderInput,
  type FolderSource,
  type Steps,
} from './source.ts';
import {
  bareNames,
  checkFormat,
  FILES,
  FolderError,
  folderKind,
  KIND_FORMATS,
  KIND_NAMES,
  type FileNamer,
  type FolderKind,
} from './spec.ts';

export {
  contentsSource,
  filesSource,
  toSource,
  urlSource,
  type Awaitable,
  type FileContents,
  type FolderContents,
  type FolderInput,
  type FolderSource,
  type RangedFile,
} from './source.ts';

/** A translation folder opened with its ensemble (the members its config.json names, unless `ensemble: false`). */
export interface OpenedSeq2Seq extends LoadedModel {
  /** Always 'seq2seq': tells this member of {@link OpenedFolder} apart. */
  kind: 'seq2seq';
  /** The model itself first, then the ensemble's other members. */
  members: Seq2Seq[];
  /** The members' folders as their sources name them (a path, a URL), in the same order: the folder itself first. */
  memberDirs: string[];
}

/** A language-model folder opened: a qkv GPT or a Hugging Face GPT-2, weights loaded, eval mode. */
export interface OpenedLm extends LoadedLm {
  /** 'gpt' (format 'qkv-gpt') or 'hf-gpt2' (Hugging Face model_type 'gpt2'), as config.json says. */
  kind: 'gpt' | 'hf-gpt2';
}

/** A Hugging Face Marian folder opened: weights loaded, eval mode. */
export interface OpenedMarian extends LoadedMarian {
  /** Always 'marian' (model_type 'marian'). */
  kind: 'marian';
}

/** A Hugging Face M2M100 / NLLB folder opened: weights loaded, eval mode. */
export interface OpenedM2M100 extends LoadedM2M100 {
  /** Always 'm2m100' (model_type 'm2m_100'). */
  kind: 'm2m100';
}

/** A Hugging Face encoder folder opened (BERT, RoBERTa, XLM-R, DistilBERT): weights loaded, eval mode. */
export interface OpenedEncoder extends LoadedEncoder {
  /** Always 'hf-encoder'. */
  kind: 'hf-encoder';
}

/**
 * What {@link openFolder} gives: by `kind`, a translation model with its ensemble, a language model,
 * a Marian or an M2M100 / NLLB translation model, or an encoder.
 */
export type OpenedFolder = OpenedSeq2Seq | OpenedLm | OpenedMarian | OpenedM2M100 | OpenedT5 | OpenedEncoder;

/** A Hugging Face T5 / Flan-T5 folder opened: weights loaded, eval mode. */
export interface OpenedT5 extends LoadedT5 {
  /** Always 't5'. */
  kind: 't5';
}

/**
 * A Hugging Face GPT-2 folder's shape: its tokenizer and config checked, none of its weights read (their presence
 * checked where the source has ranges).
 */
export interface HfGpt2Shape {
  /** Always 'hf-gpt2'. */
  kind: 'hf-gpt2';
  /** The folder's tokenizer (tokenizer.json, else vocab.json + merges.txt). */
  tokenizer: GptTokenizer;
  /** qkv's GPTConfig for the folder's config.json. */
  modelConfig: GPTConfig;
  /** The folder's generation defaults (generation_config.json, else config.json's generation keys). */
  generation: HfLmGeneration;
}

/** Anything of one kind: an opened folder, a folder's shape. */
export interface Kinded<K extends FolderKind = FolderKind> {
  /** The folder's kind, as its config.json says. */
  kind: K;
}

/** A folder's config.json and the kind it names. */
export interface FolderKindOf extends Kinded {
  /** config.json, parsed. */
  config: unknown;
}

/**
 * What {@link readFolderShape} gives, no weight read: a qkv folder's model (random weights, training
 * mode) and tokenizers; a Hugging Face folder's tokenizer and checked config.
 */
export type FolderShape =
  | (LoadedModel & Kinded<'seq2seq'>)
  | (LoadedLm & Kinded<'gpt'>)
  | HfGpt2Shape
  | (MarianShape & Kinded<'marian'>)
  | (M2M100Shape & Kinded<'m2m100'>)
  | (T5Shape & Kinded<'t5'>)
  | (EncoderShape & Kinded<'hf-encoder'>);

/** How the door opens a folder. */
export interface OpenOptions {
  /**
   * Load the ensemble members config.json names (default true; false: the folder's own model alone, as --no-ensemble).
   */
  ensemble?: boolean;
  /** More ensemble members after those config.json names (`--ensemble DIR`), each checked as they are. */
  members?: readonly FolderSource[];
  /** Status lines while large weights are read. */
  progress?: (bytes: number, total: number) => void;
  /**
   * The kinds wanted; another kind is refused in one line after config.json is read. With one qkv kind
   * among them, a config.json that is not a Hugging Face one is checked as that kind's (its format named).
   */
  kinds?: readonly FolderKind[];
  /** Called with the kind and config.json before any other file is read: throw to refuse the folder. */
  accept?: (kind: FolderKind, config: unknown) => void;
  /** A translation folder's weights file (default model.safetensors; the folder's own model only). */
  weightsFile?: string;
  /**
   * An encoder folder's head: 'auto' (default: as config.json's architectures names it), 'none' (the bare model,
   * other heads' weights left unread), 'masked-lm', 'classification'.
   */
  head?: HeadKind;
}

/** The kind of `config` (named `cname` in messages), refused unless among `kinds`. */
function decideKind(config: unknown, cname: string, kinds?: readonly FolderKind[]): FolderKind {
  if (kinds && !isHfConfig(config)) {
    const own = kinds.filter((k): k is 'seq2seq' | 'gpt' => k === 'seq2seq' || k === 'gpt');
    if (own.length === 1) {
      checkFormat(config, KIND_FORMATS[own[0]], cname);
      return own[0];
    }
  }
  const kind = folderKind(config, cname);
  if (kinds && !kinds.includes(kind))
    throw new FolderError(
      FILES.config,
      `${cname}: ${KIND_NAMES[kind]}, not ${kinds.map((k) => KIND_NAMES[k]).join(' or ')}`,
    );
  return kind;
}

/** The folder's config.json and its kind: the first thing the door reads (options: `kinds`, `accept`). */
export function* readKindSteps(
  src: FolderSource,
  options: Pick<OpenOptions, 'kinds' | 'accept'> = {},
): Steps<FolderKindOf> {
  if (!(yield* folderExists(src))) throw new FolderError('', `model folder not found: ${src.label}`);
  const config = yield* readJson(src, FILES.config);
  if (config === undefined) throw notFound(FILES.config, src.name);
  const kind = decideKind(config, src.name(FILES.config), options.kinds);
  options.accept?.(kind, config);
  return { kind, config };
}

/** A folder's config.json and the kind it names (a FolderError naming config.json when it names none). */
export function readKind(src: FolderSource): Promise<FolderKindOf> {
  return runAsync(readKindSteps(src));
}

// ---- Each kind: tokenizers first, then the weights ----------------------------------------------

function* seq2seqSteps(src: FolderSource, config: unknown, weightsFile: string | null): Steps<LoadedModel> {
  const loaded = seq2seqShape(
    {
      config,
      tokenizer: yield* readJson(src, FILES.tokenizer),
      // Read when present either way: a shared-vocabulary folder holding one is refused by name.
      targetTokenizer: yield* readJson(src, FILES.targetTokenizer),
    },
    src.name,
  );
  if (weightsFile === null) return loaded;
  const bytes = yield* readBytes(src, weightsFile);
  if (bytes === undefined) throw notFound(weightsFile, src.name);
  loadInto(loaded.model, bytes, loaded.config.model, SEQ2SEQ_FIELDS, src.name(weightsFile), weightsFile);
  loaded.model.eval();
  return loaded;
}

function* ensembleSteps(src: FolderSource, config: unknown, options: OpenOptions): Steps<OpenedSeq2Seq> {
  const first = yield* seq2seqSteps(src, config, options.weightsFile ?? FILES.weights);
  const declared = (options.ensemble ?? true) ? (first.config.decoding?.ensemble ?? []) : [];
  const named = [
    ...declared.map((p) => ({ what: `${src.name(FILES.config)} decoding.ensemble member ${p}`, sub: src.sub?.(p) })),
    ...(options.members ?? []).map((m) => ({ what: `--ensemble ${m.label}`, sub: m as FolderSource | undefined })),
  ];
  const members: MemberCheck[] = [];
  const folders = [src.label];
  for (const { what, sub } of named) {
    if (!sub) throw new FolderError(FILES.config, `${what}: this source has no subfolders to read it from`);
    if (!(yield* folderExists(sub))) throw new FolderError('', `${what}: model folder not found: ${sub.label}`);
    const c = yield* readJson(sub, FILES.config);
    if (c === undefined)
      throw new FolderError(FILES.config, `${what}: model config not found: ${sub.name(FILES.config)}`);
    decideKind(c, sub.name(FILES.config), ['seq2seq']);
    members.push({ what, loaded: yield* seq2seqSteps(sub, c, FILES.weights) });
    folders.push(sub.label);
  }
  return { kind: 'seq2seq', ...first, members: checkEnsemble(first, members, src.label), memberDirs: folders };
}

function* gptSteps(src: FolderSource, config: unknown, weights: boolean): Steps<LoadedLm> {
  const lm = gptShape({ config, tokenizer: yield* readJson(src, FILES.tokenizer) }, src.name);
  if (!weights) return lm;
  const bytes = yield* readBytes(src, FILES.weights);
  if (bytes === undefined) throw notFound(FILES.weights, src.name);
  loadInto(lm.model, bytes, lm.config.model as GPTConfig, GPT_FIELDS, src.name(FILES.weights), FILES.weights);
  lm.model.eval();
  return lm;
}

/** A Hugging Face folder's tokenizer: tokenizer.json, else vocab.json + merges.txt (read only then). */
function* hfTokenizerSteps(src: FolderSource): Steps<GptTokenizer> {
  const tokenizerConfig = yield* readJson(src, FILES.tokenizerConfig);
  const chatTemplate = yield* readText(src, FILES.chatTemplate);
  const tokenizer = yield* readJson(src, FILES.tokenizer);
  if (tokenizer !== undefined) return hfTokenizer({ tokenizer, tokenizerConfig, chatTemplate }, src.name);
  return hfTokenizer(
    {
      vocab: yield* readJson(src, FILES.vocab),
      merges: yield* readText(src, FILES.merges),
      tokenizerConfig,
      chatTemplate,
    },
    src.name,
  );
}

/** The one line for a GPT-2 folder that holds PyTorch's pickle instead of model.safetensors. */
export function pytorchOnly(name: FileNamer): FolderError {
  return new FolderError(
    FILES.weights,
    `model weights not found: ${name(FILES.weights)} (the folder holds ` +
      `${FILES.pytorchWeights}, a PyTorch pickle qkv does not read: download ` +
      `model.safetensors from the model's Hub page, or write it with python ` +
      `-c "from transformers import GPT2LMHeadModel as M; ` +
      `M.from_pretrained('DIR').save_pretrained('DIR')")`,
  );
}

function* hfWeightsMissing(src: FolderSource): Steps<FolderError> {
  return (yield* hasFile(src, FILES.pytorchWeights)) ? pytorchOnly(src.name) : notFound(FILES.weights, src.name);
}

function* hfGpt2ShapeSteps(src: FolderSource, config: unknown, withWeights = true): Steps<HfGpt2Shape> {
  const tokenizer = yield* hfTokenizerSteps(src);
  const generation = hfLmDefaults(config, yield* readJson(src, FILES.generationConfig), src.name);
  let modelConfig: GPTConfig;
  try {
    modelConfig = isDecoderConfig(config) ? decoderConfigFromHf(config) : gptConfigFromHf(config);
  } catch (e) {
    throw hfWeightsError(e, src.name);
  }
  checkHfVocab(tokenizer, modelConfig.vocabSize, src.name);
  // The weights' presence, where the source tells it without reading them (not a URL: that would fetch 500 MB).
  if (withWeights && src.range && !isDecoderConfig(config) && !(yield* hasFile(src, FILES.weights)))
    throw yield* hfWeightsMissing(src);
  return { kind: 'hf-gpt2', tokenizer, modelConfig, generation };
}

/**
 * A Hugging Face GPT-2 folder, its model.safetensors read one tensor (or 16 MiB of one) at a time
 * where the source reads ranges (a Node directory, `File`s): the file is never held whole beside the weights.
 */
function* hfGpt2Steps(src: FolderSource, config: unknown, progress: OpenOptions['progress']): Steps<LoadedLm> {
  const tokenizer = yield* hfTokenizerSteps(src); // named before any weight is read
  const generation = hfLmDefaults(config, yield* readJson(src, FILES.generationConfig), src.name);
  if (isDecoderConfig(config)) {
    const model = yield* hfDecoderModelSteps(src, config, progress);
    return checkedHf(model, tokenizer, src.name, src.label || undefined, generation);
  }
  const weights = yield* readRanged(src, FILES.weights);
  if (weights === undefined) throw yield* hfWeightsMissing(src);
  let model: GPT;
  try {
    const steps = hfGpt2WeightSteps(config, weights.size, progress);
    let r = steps.next();
    while (!r.done) r = steps.next(yield* wait(weights.read(...r.value)));
    model = r.value;
  } catch (e) {
    throw e instanceof FolderError ? e : hfWeightsError(e, src.name);
  }
  return checkedHf(model, tokenizer, src.name, src.label || undefined, generation);
}

/**
 * A Hugging Face decoder folder without its weights (what `qkv export --format onnx` writes beside its graph): its
 * tokenizer, generation defaults and a model of its shape (weights not drawn), for an engine that holds the weights
 * itself (ONNX Runtime).
 */
function* hfLmWithoutWeightsSteps(src: FolderSource): Steps<LoadedLm> {
  const { config } = yield* readKindSteps(src, { kinds: ['hf-gpt2'] });
  const { tokenizer, modelConfig, generation } = yield* hfGpt2ShapeSteps(src, config, false);
  // Its weights are never read (init false: no time spent drawing them).
  return checkedHf(
    new GPT(modelConfig, { init: false }).eval(),
    tokenizer,
    src.name,
    src.label || undefined,
    generation,
  );
}

/** A Hugging Face decoder folder without its weights (hfLmWithoutWeightsSteps), from a source that answers at once. */
export function hfLmWithoutWeightsSync(input: FolderInput): LoadedLm {
  return runSync(hfLmWithoutWeightsSteps(toSource(input)));
}

function* marianShapeSteps(src: FolderSource, config: unknown): Steps<MarianShape> {
  return marianShape(
    {
      config,
      generationConfig: yield* readJson(src, MARIAN_FILES.generationConfig),
      tokenizerConfig: yield* readJson(src, MARIAN_FILES.tokenizerConfig),
      vocab: yield* readJson(src, MARIAN_FILES.vocab),
      targetVocab: yield* readJson(src, MARIAN_FILES.targetVocab),
      sourceSpm: yield* readBytes(src, MARIAN_FILES.sourceSpm),
      targetSpm: yield* readBytes(src, MARIAN_FILES.targetSpm),
    },
    src.name,
  );
}

/** A Marian folder: its tokenizer and generation config checked, then model.safetensors, else pytorch_model.bin. */
function* marianSteps(src: FolderSource, config: unknown): Steps<LoadedMarian> {
  const shape = yield* marianShapeSteps(src, config);
  let weights: MarianWeights | undefined;
  for (const file of [FILES.weights, FILES.pytorchWeights]) {
    const bytes = yield* readBytes(src, file);
    if (bytes !== undefined) {
      weights = { file, bytes };
      break;
    }
  }
  return loadMarian(shape, weights, src.name);
}

// ---- The door ----------------------------------------------------------------------------------

/** A folder of any kind read through `src`, weights loaded, eval mode: the reader both drivers run. */
export function* readFolder(src: FolderSource, options: OpenOptions = {}): Steps<OpenedFolder> {
  const { kind, config } = yield* readKindSteps(src, options);
  if (kind === 'seq2seq') return yield* ensembleSteps(src, config, options);
  if (kind === 'gpt') return { kind, ...(yield* gptSteps(src, config, true)) };
  if (kind === 'marian') return { kind, ...(yield* marianSteps(src, config)) };
  if (kind === 'm2m100') return { kind, ...(yield* m2m100Steps(src, config)) };
  if (kind === 't5') return { kind, ...(yield* t5Steps(src, config)) };
  if (kind === 'hf-encoder') return { kind, ...(yield* encoderSteps(src, config, options.head ?? 'auto')) };
  return { kind, ...(yield* hfGpt2Steps(src, config, options.progress)) };
}

/** A folder's shape read through `src` (config.json and the tokenizers checked, no weight read). */
export function* readFolderShape(
  src: FolderSource,
  options: Pick<OpenOptions, 'kinds' | 'accept' | 'head'> = {},
): Steps<FolderShape> {
  const { kind, config } = yield* readKindSteps(src, options);
  if (kind === 'seq2seq') return { kind, ...(yield* seq2seqSteps(src, config, null)) };
  if (kind === 'gpt') return { kind, ...(yield* gptSteps(src, config, false)) };
  if (kind === 'marian') return { kind, ...(yield* marianShapeSteps(src, config)) };
  if (kind === 'm2m100') return { kind, ...(yield* m2m100ShapeSteps(src, config)) };
  if (kind === 't5') return { kind, ...(yield* t5ShapeSteps(src, config)) };
  if (kind === 'hf-encoder') return { kind, ...(yield* encoderShapeSteps(src, config, options.head ?? 'auto')) };
  return yield* hfGpt2ShapeSteps(src, config);
}

/** Open a model folder of any kind from any source: weights loaded, eval mode. */
export function openFolder(input: FolderInput, options: OpenOptions = {}): Promise<OpenedFolder> {
  return runAsync(readFolder(toSource(input), options));
}

/**
 * {@link openFolder} over a source that answers at once (a Node directory, contents in memory); a
 * source that answers with promises is refused in one line.
 */
export function openFolderSync(input: FolderInput, options: OpenOptions = {}): OpenedFolder {
  return runSync(readFolder(toSource(input), options));
}

/** A folder's shape (no weight read), synchronously: see {@link openFolderSync}. */
export function folderShapeSync(input: FolderInput, options: Pick<OpenOptions, 'kinds' | 'accept'> = {}): FolderShape {
  return runSync(readFolderShape(toSource(input), options));
}

/** What the door gave, as one of the kinds its `kinds` option allowed (it refused any other). */
export function ofKind<T extends Kinded, K extends T['kind']>(opened: T, ...kinds: K[]): Extract<T, Kinded<K>> {
  if (!kinds.includes(opened.kind as K))
    throw new Error(`internal: the door gave a '${opened.kind}' folder where ${kinds.join(' or ')} was asked`);
  return opened as Extract<T, Kinded<K>>;
}

// ---- Loaders from contents: the door over contents in memory ------------------------------------

/** Contents given as parsed JSON and bytes, by file name (undefined left out), named by `name`, synchronously. */
function fromContents(files: Record<string, FileContents | undefined>, name: FileNamer, options: OpenOptions) {
  const present = Object.fromEntries(Object.entries(files).filter(([, v]) => v !== undefined)) as Record<
    string,
    FileContents
  >;
  return openFolderSync(contentsSource(present, '', '', name), { ensemble: false, ...options });
}

/** A translation folder's model from its contents, weights loaded (fp32, fp16 or int8 safetensors), eval mode. */
export function seq2seqFromFiles(
  files: Seq2SeqFiles,
  name: FileNamer = bareNames,
  weightsFile: string = FILES.weights,
): LoadedModel {
  const { config, tokenizer, targetTokenizer, weights } = files;
  const contents = {
    [FILES.config]: config as FileContents | undefined,
    [FILES.tokenizer]: tokenizer as FileContents | undefined,
    [FILES.targetTokenizer]: targetTokenizer as FileContents | undefined,
    [weightsFile]: weights,
  };
  return ofKind(fromContents(contents, name, { kinds: ['seq2seq'], weightsFile }), 'seq2seq');
}

/** A qkv GPT folder's model from its contents, weights loaded, eval mode. */
export function gptFromFiles(files: GptFiles, name: FileNamer = bareNames): LoadedLm {
  return lmContents(files, name, ['gpt']);
}

/** A Hugging Face GPT-2 folder from its contents (model.safetensors in memory), eval mode. */
export function hfGpt2FromFiles(
  files: HfTokenizerFiles & { config: unknown; weights?: Uint8Array; generationConfig?: unknown },
  name: FileNamer = bareNames,
): LoadedLm {
  return lmContents(files, name, ['hf-gpt2']);
}

/** A language-model folder of either kind from its contents (qkv GPT or HF GPT-2), in eval mode. */
export function lmFromFiles(files: GptFiles & HfTokenizerFiles, name: FileNamer = bareNames): LoadedLm {
  return lmContents(files, name, ['gpt', 'hf-gpt2']);
}

function lmContents(
  files: Partial<GptFiles & HfTokenizerFiles & { generationConfig: unknown }>,
  name: FileNamer,
  kinds: readonly FolderKind[],
): LoadedLm {
  const contents = {
    [FILES.config]: files.config as FileContents | undefined,
    [FILES.tokenizer]: files.tokenizer as FileContents | undefined,
    [FILES.vocab]: files.vocab as FileContents | undefined,
    [FILES.merges]: files.merges,
    [FILES.tokenizerConfig]: files.tokenizerConfig as FileContents | undefined,
    [FILES.chatTemplate]: files.chatTemplate,
    [FILES.generationConfig]: files.generationConfig as FileContents | undefined,
    [FILES.weights]: files.weights,
  };
  return ofKind(fromContents(contents, name, { kinds }), 'gpt', 'hf-gpt2');
}

/** A Marian folder's model from its contents (weights loaded, eval mode) and tokenizer. */
export function marianFromFiles(
  files: MarianFiles & { weights?: MarianWeights },
  name: FileNamer = bareNames,
): LoadedMarian {
  const contents = {
    [FILES.config]: files.config as FileContents | undefined,
    [MARIAN_FILES.generationConfig]: files.generationConfig as FileContents | undefined,
    [MARIAN_FILES.tokenizerConfig]: files.tokenizerConfig as FileContents | undefined,
    [MARIAN_FILES.vocab]: files.vocab as FileContents | undefined,
    [MARIAN_FILES.targetVocab]: files.targetVocab as FileContents | undefined,
    [MARIAN_FILES.sourceSpm]: files.sourceSpm,
    [MARIAN_FILES.targetSpm]: files.targetSpm,
    ...(files.weights ? { [files.weights.file]: files.weights.bytes } : {}),
  };
  return ofKind(fromContents(contents, name, { kinds: ['marian'] }), 'marian');
}
