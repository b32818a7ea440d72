/**
 * Over 500 lines: the page's one table of requests and the model of each view they run on (qkv's folders, GPT-2,
 * Llama, BERT-family, Marian, NLLB and T5), each handler a few lines, read together as the worker's protocol.
 *
 * The explorer's model worker: every model of the page lives and runs here, off the page's main
 * thread (opening a folder, translating, generating, the next-token and neuron views, training). The page
 * talks to it through runner.ts: one request at a time in arrival order (a request waits for the
 * one before it, so a translation asked while its model loads runs on that model), each answered
 * with its value or its error's message, with progress lines between. Cancelling is the page's:
 * it ends this worker and starts another.
 */
import {
  marianWithAttentionAsync,
  translateWithAttentionAsync,
  type TranslationAttention,
} from '../../src/viz/attention-data.ts';
import type { LoadedMarian } from '../../src/folder/marian.ts';
import {
  filesSource,
  openFolder,
  type OpenedM2M100,
  type OpenedMarian,
  type OpenedSeq2Seq,
  type OpenedT5,
} from '../../src/folder/open.ts';
import { t5TranslationTasks } from '../../src/pipelines/text2text.ts';
import {
  m2m100WithAttentionAsync,
  t5WithAttentionAsync,
  type T5PositionBias,
} from '../../src/viz/seq2seq-hf-attention.ts';
import {
  generateWithAttentionAsync,
  tokenLabel,
  type GenerateAttentionOptions,
  type GptAttention,
  type LoadedGpt,
} from '../../src/viz/gpt-attention.ts';
import { neuronViewAsync, type NeuronView } from '../../src/viz/neuron.ts';
import {
  flowOutline,
  flowSubject,
  textFlowAsync,
  type FlowOutline,
  type FlowRun,
  type FlowStage,
  type FlowSubject,
  type FlowText,
} from '../../src/viz/flow.ts';
import { lastLogitsAsync, nextTokenView, type NextTokenView } from '../../src/viz/next-token.ts';
import {
  encoderAttentionAsync,
  encoderNeuronViewAsync,
  fillMaskWithAttention,
  type EncoderAttention,
  type FillMaskAttention,
} from '../../src/viz/encoder-attention.ts';
import type { OpenedEncoder } from '../../src/folder/open.ts';
import type { HfLmGeneration } from '../../src/models/hf/lm-generation.ts';
import type { GPTConfig } from '../../src/models/gpt-config.ts';
import type { SamplingOptions } from '../../src/decode/sample.ts';
import type { Seq2Seq } from '../../src/models/seq2seq.ts';
import type { BpeTokenizer } from '../../src/text/bpe.ts';
import { ByteLevelBpeTokenizer } from '../../src/text/bytelevel.ts';
import { CharTokenizer } from '../../src/text/chars.ts';
import { poolStats, setNumThreads } from '../../src/backend/wasm/threads.ts';
import { chooseBackend, onGpu, openOnDevice, type BackendChoice, type BackendPref } from './backend.ts';
import { FP32_LOAD, loadLocalModel, type HeldMemory, type PageLoad } from './local-model.ts';
import type { PageDType, PageMemory } from './page-memory.ts';
import { trainHandlers, type TrainRequests } from './train-worker.ts';
import { typedRows } from './typed-rows.ts';
import { openServed, setPageBase, type ServedEntry } from './model.ts';

/** A translation model as the Translate view describes it. */
export interface TranslationInfo {
  /** config.json (its training direction, its ensemble). */
  config: unknown;
  dModel: number;
  numEncoderLayers: number;
  numDecoderLayers: number;
  nhead: number;
  vocabSize: number;
  /** The target vocabulary's size when the model has its own (null: shared). */
  targetVocabSize: number | null;
  parameters: number;
  /**
   * A Hugging Face M2M100 / NLLB folder: its language codes and the tokenizer's default source and target (null:
   * none set); a T5 folder: the tasks its config.json names (task_specific_params: their prefixes), in file order.
   */
  hf?:
    | { family: 'm2m100'; languages: string[]; srcLang: string; tgtLang: string | null }
    | { family: 't5'; tasks: { name: string; prefix: string }[] };
}

/** What the Translate view asks for beyond the text and the beam: an NLLB folder's languages, a T5 folder's task. */
export interface TranslateChoices {
  srcLang?: string;
  tgtLang?: string;
  task?: string;
}

/** A GPT as the Generate view describes it. */
export interface GptInfo {
  nLayer: number;
  nHead: number;
  nEmbd: number;
  blockSize: number;
  vocabSize: number;
  tokenizer: 'characters' | 'byte-level BPE' | 'BPE';
  parameters: number;
  /** KV heads (grouped-query attention where fewer than nHead: nHead / nKVHead query heads share each). */
  nKVHead: number;
  /** A Llama-family decoder's rotary positions (what rotaryAngles reads), or null (learned or sinusoidal). */
  rotary: Pick<GPTConfig, 'positions' | 'headDim' | 'nEmbd' | 'nHead' | 'rope'> | null;
  /**
   * A Hugging Face folder's generation settings (generation_config.json, else config.json's keys), which the
   * view starts from as the text-generation pipeline does; undefined for qkv's own folders.
   */
  generation?: HfLmGeneration;
  /** What a Hugging Face decoder holds once loaded in the page's dtype (Weights); undefined for a qkv GPT. */
  memory?: HeldMemory;
}

/** A BERT-family encoder as the Generate view describes it (it shows its attention and fill-mask instead). */
export interface EncoderInfo {
  kind: 'encoder';
  /** config.json's model_type: bert, distilbert, roberta, xlm-roberta. */
  family: string;
  nLayer: number;
  nHead: number;
  dModel: number;
  /** The longest input in tokens, special tokens included. */
  maxTokens: number;
  vocabSize: number;
  /** The head the folder has: 'masked-lm' fills masks. */
  head: 'none' | 'masked-lm' | 'classification';
  /** The mask token ([MASK], <mask>), or null where the tokenizer has none. */
  maskToken: string | null;
  parameters: number;
}

/** What opening a folder in the Generate view gives: a GPT, or an encoder. */
export type LmInfo = GptInfo | EncoderInfo;

/** The requests, by name: their arguments and what they answer (training's: train-worker.ts). */
export interface Requests extends TrainRequests {
  /**
   * `pref`: the backend asked for (the page's switch or ?backend=); `threads`: the wasm backend's thread count
   * (the page's ?threads=N; default: the cores, at most 8); `dtype`: what a Hugging Face decoder's weights are held
   * in (the page's Weights, ?dtype=; default fp32); `memory`: what the page's browser told of its memory.
   */
  init: {
    args: { pref: BackendPref; pageUrl: string; threads?: number; dtype?: PageDType; memory?: PageMemory };
    value: BackendChoice;
  };
  openServed: { args: { view: 'translate' | 'generate'; entry: ServedEntry }; value: TranslationInfo | LmInfo };
  openLocal: {
    args: { files: File[] };
    value: LmInfo & { name: string; source: string; bytes: number; seconds: number };
  };
  /** The open encoder's self-attention over a text (padded to `padTo` tokens where given). */
  encode: { args: { text: string; padTo?: number }; value: EncoderAttention };
  /** The open encoder's top `topK` tokens for the mask of a text, and the text's attention. */
  fillMask: { args: { text: string; topK: number }; value: FillMaskAttention };
  /** The neuron view of the open encoder over a text. */
  encoderNeuron: {
    args: { text: string; padTo?: number; layer: number; head: number; query: number };
    value: NeuronView;
  };
  /** A translation folder picked in the Translate view (qkv's, or a Hugging Face Marian one), opened in the page. */
  openLocalTranslation: { args: { files: File[] }; value: TranslationInfo & { name: string } };
  translate: {
    args: { text: string; beam: number } & TranslateChoices;
    /** `bias`: a T5's relative position bias per head over the positions, encoder's and decoder's. */
    value: {
      result: TranslationAttention;
      unknown: string[];
      bias?: { encoder: T5PositionBias; decoder: T5PositionBias | null };
      prefix?: string;
    };
  };
  generate: { args: { prompt: string; options: GenerateAttentionOptions }; value: GptAttention };
  nextToken: { args: { ids: number[] }; value: { vocabSize: number } };
  nextTokenView: {
    args: { options: SamplingOptions & { seed: number; greedy?: boolean } };
    value: { view: NextTokenView; labels: Record<number, string>; vocabSize: number };
  };
  neuron: { args: { ids: number[]; layer: number; head: number; query: number }; value: NeuronView };
  /**
   * The Flow view: one forward pass of a served folder (opened here once, apart from the other views') over a
   * text; its outline (the stages' numbers are asked for one stage at a time, with flowStage).
   */
  flow: {
    args: { entry: ServedEntry; text: string; target: string; dims: number };
    value: { outline: FlowOutline; text: FlowText };
  };
  /** One stage of the last flow, with its numbers. */
  flowStage: { args: { stage: string }; value: FlowStage };
  /** Every component of one stage of the last flow, [token][component]. */
  flowVectors: { args: { stage: string }; value: number[][] };
}
export type RequestName = keyof Requests;

/** Page → worker. */
export interface RequestMessage<K extends RequestName = RequestName> {
  id: number;
  op: K;
  args: Requests[K]['args'];
}

/** What the wasm backend's thread pool has done so far: kernels split among its threads (launches). */
export interface ThreadStats {
  launches: number;
}

/** Worker → page: a progress line, the value (with the pool's count so far), or the error's message. */
export type ReplyMessage =
  | { id: number; progress: string }
  | { id: number; value: unknown; threads: ThreadStats }
  | { id: number; error: string };

/** A translation model as the Translate view runs it: a qkv folder's, or a Hugging Face Marian, NLLB or T5 one. */
type Translation =
  | { kind: 'seq2seq'; model: Seq2Seq; tokenizer: BpeTokenizer; targetTokenizer: BpeTokenizer }
  | { kind: 'marian'; marian: LoadedMarian }
  | { kind: 'm2m100'; opened: OpenedM2M100 }
  | { kind: 't5'; opened: OpenedT5 };

let backend: BackendChoice | null = null;
/** How Hugging Face decoders are loaded: the page's dtype and memory (init). */
let pageLoad: PageLoad = FP32_LOAD;
let translation: Translation | null = null;
let gpt: LoadedGpt | null = null;
/** The Generate view's encoder, when the folder opened there is a BERT-family one (then `gpt` is null). */
let encoder: OpenedEncoder | null = null;
/** The logits after the prompt, for the next-token view's redraws. */
let logits: Float32Array | null = null;
/** The Flow view's model (the served folder of that id) and its last run, whose full vectors it asks for. */
let flowModel: { id: string; subject: FlowSubject } | null = null;
let flowRun: (FlowRun & { text: FlowText }) | null = null;

function gptInfo(lm: LoadedGpt, memory?: HeldMemory): GptInfo {
  const c = lm.model.config;
  return {
    nLayer: c.nLayer,
    nHead: c.nHead,
    nEmbd: c.nEmbd,
    blockSize: c.blockSize,
    vocabSize: lm.tokenizer.vocabSize,
    tokenizer:
      lm.tokenizer instanceof CharTokenizer
        ? 'characters'
        : lm.tokenizer instanceof ByteLevelBpeTokenizer
          ? 'byte-level BPE'
          : 'BPE',
    parameters: lm.model.numParameters(),
    nKVHead: c.nKVHead ?? c.nHead,
    rotary:
      c.positions === 'rotary'
        ? { positions: c.positions, headDim: c.headDim, nEmbd: c.nEmbd, nHead: c.nHead, rope: c.rope }
        : null,
    ...(lm.generation && { generation: lm.generation }),
    ...(memory && { memory }),
  };
}

/** Make an opened encoder folder the Generate view's model; what the view says of it. */
function useEncoder(opened: OpenedEncoder): EncoderInfo {
  encoder = opened;
  gpt = null;
  logits = null;
  const c = opened.model.config;
  const t = opened.tokenizer;
  const mask = ['[MASK]', '<mask>'].find((m) => t.tokenToId(m) !== undefined && t.isSpecial(t.tokenToId(m)!));
  return {
    kind: 'encoder',
    family: opened.hf.family,
    nLayer: c.numLayers,
    nHead: c.nhead,
    dModel: c.dModel,
    maxTokens: opened.maxTokens,
    vocabSize: t.vocabSize,
    head: c.head.kind,
    maskToken: mask ?? null,
    parameters: opened.model.numParameters(),
  };
}

function needEncoder(): OpenedEncoder {
  if (!encoder) throw new Error('no encoder is open');
  return encoder;
}

/** The characters of `text` that `tokenizer` reads as its unknown token (none when `ids` holds no unk). */
function unknownCharacters(
  tokenizer: { unkId: number; encode(text: string): number[] },
  text: string,
  ids: readonly number[],
): string[] {
  if (!ids.includes(tokenizer.unkId)) return [];
  const chars = new Set(Array.from(text).filter((c) => c.trim() !== ''));
  return [...chars].filter((c) => tokenizer.encode(c).includes(tokenizer.unkId));
}

/** The CPU backend folders are read on (the models then move to the GPU on webgpu): it decides the size limit. */
const cpuName = () => backend?.cpu ?? 'js';

/** A served folder opened through the page's URL source, its model on the worker's backend. */
const openOnBackend = (entry: ServedEntry, progress: (s: string) => void) =>
  openOnDevice(cpuName(), () => openServed(entry, cpuName(), progress, pageLoad));

/** Make an opened translation folder the Translate view's model; what the view says of it. */
function useTranslation(opened: OpenedSeq2Seq | OpenedMarian): TranslationInfo {
  const c = opened.model.config;
  const marian = opened.kind === 'marian';
  translation = marian
    ? { kind: 'marian', marian: opened }
    : { kind: 'seq2seq', model: opened.model, tokenizer: opened.tokenizer, targetTokenizer: opened.targetTokenizer };
  const separate = !marian && opened.targetTokenizer !== opened.tokenizer;
  return {
    config: opened.config,
    dModel: c.dModel,
    numEncoderLayers: c.numEncoderLayers,
    numDecoderLayers: c.numDecoderLayers,
    nhead: c.nhead,
    vocabSize: opened.tokenizer.vocabSize,
    targetVocabSize: separate ? opened.targetTokenizer.vocabSize : null,
    parameters: opened.model.numParameters(),
  };
}

/** Make an opened NLLB / M2M100 or T5 folder the Translate view's model; what the view says of it. */
function useHfTranslation(opened: OpenedM2M100 | OpenedT5): TranslationInfo {
  const parameters = opened.model.numParameters();
  if (opened.kind === 'm2m100') {
    translation = { kind: 'm2m100', opened };
    const c = opened.model.config;
    const t = opened.tokenizer;
    return {
      config: opened.config,
      dModel: c.dModel,
      numEncoderLayers: c.numEncoderLayers,
      numDecoderLayers: c.numDecoderLayers,
      nhead: c.nhead,
      vocabSize: t.vocabSize,
      targetVocabSize: null,
      parameters,
      hf: { family: 'm2m100', languages: [...t.languageCodes.keys()], srcLang: t.srcLang, tgtLang: t.tgtLang },
    };
  }
  // T5 builds its position bias on the host (models/hf/t5.ts): it runs on the CPU backends.
  if (onGpu())
    throw new Error(
      'a T5 folder runs on the wasm and js backends in the explorer (its position bias is built on the host): ' +
        'choose wasm in the backend switch',
    );
  translation = { kind: 't5', opened };
  const c = opened.model.config;
  const tsp = opened.config.task_specific_params as Record<string, { prefix?: unknown }> | undefined;
  const tasks = [
    ...(tsp && typeof tsp === 'object' && 'summarization' in tsp ? ['summarization'] : []),
    ...t5TranslationTasks(opened.config),
  ].map((name) => {
    const prefix = tsp?.[name]?.prefix;
    return { name, prefix: typeof prefix === 'string' ? prefix : '' };
  });
  return {
    config: opened.config,
    dModel: c.dModel,
    numEncoderLayers: c.numLayers,
    numDecoderLayers: c.numDecoderLayers,
    nhead: c.numHeads,
    vocabSize: opened.tokenizer.vocabSize,
    targetVocabSize: null,
    parameters,
    hf: { family: 't5', tasks },
  };
}

function needGpt(): LoadedGpt {
  if (!gpt) throw new Error('no GPT is open');
  return gpt;
}

const handlers: { [K in RequestName]: (a: Requests[K]['args'], progress: (s: string) => void) => unknown } = {
  ...trainHandlers,
  async init({ pref, pageUrl, threads, dtype, memory }) {
    setPageBase(pageUrl);
    pageLoad = { dtype: dtype ?? 'fp32', memory: memory ?? FP32_LOAD.memory };
    if (threads !== undefined) setNumThreads(threads);
    backend = await chooseBackend(pref);
    return backend;
  },
  async openLocalTranslation({ files }, progress) {
    progress('reading the folder…');
    const src = filesSource(files);
    const opened = await openOnDevice(cpuName(), () => openFolder(src, { ensemble: false }));
    if (opened.kind === 'm2m100' || opened.kind === 't5') return { ...useHfTranslation(opened), name: src.label };
    if (opened.kind !== 'seq2seq' && opened.kind !== 'marian')
      throw new Error(`${src.label} is a language model, not a translation model: open it in Generate`);
    return { ...useTranslation(opened), name: src.label };
  },
  async openServed({ view, entry }, progress) {
    const opened = await openOnBackend(entry, progress);
    if (view === 'translate' && opened.kind === 'marian') return useTranslation(opened);
    if (view === 'translate' && (opened.kind === 'm2m100' || opened.kind === 't5')) return useHfTranslation(opened);
    if (view === 'translate') {
      if (opened.kind !== 'seq2seq')
        throw new Error(
          `${entry.name} is a ${opened.kind === 'gpt' ? 'GPT' : 'GPT-2'}, not a translation model: see Generate`,
        );
      translation = {
        kind: 'seq2seq',
        model: opened.model,
        tokenizer: opened.tokenizer,
        targetTokenizer: opened.targetTokenizer,
      };
      const c = opened.model.config;
      const separate = opened.targetTokenizer !== opened.tokenizer;
      return {
        config: opened.config,
        dModel: c.dModel,
        numEncoderLayers: c.numEncoderLayers,
        numDecoderLayers: c.numDecoderLayers,
        nhead: c.nhead,
        vocabSize: opened.tokenizer.vocabSize,
        targetVocabSize: separate ? opened.targetTokenizer.vocabSize : null,
        parameters: opened.model.numParameters(),
      } satisfies TranslationInfo;
    }
    if (opened.kind === 'seq2seq' || opened.kind === 'marian' || opened.kind === 'm2m100' || opened.kind === 't5')
      throw new Error(`${entry.name} is a translation model, not a GPT: see Translate`);
    if (opened.kind === 'hf-encoder') return useEncoder(opened);
    // The folder's generation settings travel with it: the page feeds and stops as the text-generation pipeline.
    gpt = {
      model: opened.model,
      tokenizer: opened.tokenizer,
      separatorId: opened.separatorId,
      ...(opened.generation && { generation: opened.generation }),
    };
    encoder = null;
    logits = null;
    return gptInfo(gpt, opened.memory);
  },
  async openLocal({ files }, progress) {
    const r = await openOnDevice(cpuName(), async () => {
      const local = await loadLocalModel(files, cpuName(), progress, pageLoad);
      return { ...local, model: local.encoder ? local.encoder.model : local.lm!.model };
    });
    const info = r.encoder ? useEncoder(r.encoder) : gptInfo((gpt = r.lm!), r.memory);
    if (!r.encoder) encoder = null;
    logits = null;
    return { ...info, name: r.name, source: r.source, bytes: r.bytes, seconds: r.seconds };
  },
  async encode({ text, padTo }) {
    const a = await encoderAttentionAsync(needEncoder(), text, { padTo });
    return { ...a, attention: typedRows(a.attention, transfer) };
  },
  async fillMask({ text, topK }) {
    const enc = needEncoder();
    if (enc.model.config.head.kind !== 'masked-lm')
      throw new Error(
        `this folder's model has no masked-LM head (${enc.hf.family}, head '${enc.model.config.head.kind}'): ` +
          'fill-mask needs a *ForMaskedLM folder',
      );
    const f = await fillMaskWithAttention(enc, text, topK);
    return { ...f, attention: { ...f.attention, attention: typedRows(f.attention.attention, transfer) } };
  },
  encoderNeuron({ text, padTo, layer, head, query }) {
    return encoderNeuronViewAsync(needEncoder(), text, layer, head, query, { padTo });
  },
  // The models run through the viz functions' asynchronous forms on every backend: a GPU's tensors read back
  // only so, and on the CPU backends they give the synchronous forms' results, number for number.
  async translate({ text, beam, srcLang, tgtLang, task }) {
    if (!translation) throw new Error('no translation model is open');
    if (translation.kind === 'm2m100') {
      // generate()'s rules, the target language's code forced first, as pipeline('translation', { srcLang, tgtLang }).
      const { opened } = translation;
      const lang = srcLang ?? opened.tokenizer.srcLang;
      const result = withTypedRows(await m2m100WithAttentionAsync(opened, text, { beam, srcLang, tgtLang }));
      const tok = { unkId: opened.tokenizer.unkId, encode: (t: string) => opened.tokenizer.encode(t, lang) };
      return { result, unknown: unknownCharacters(tok, result.source, result.srcIds) };
    }
    if (translation.kind === 't5') {
      const { bias, prefix, ...t } = await t5WithAttentionAsync(translation.opened, text, { beam, task });
      return { result: withTypedRows(t), unknown: [], bias, prefix };
    }
    if (translation.kind === 'marian') {
      // Hugging Face's generate() rules, the beam the page asks for and the folder's length_penalty.
      const { marian } = translation;
      const result = withTypedRows(await marianWithAttentionAsync(marian, text, { beam }));
      return { result, unknown: unknownCharacters(marian.tokenizer, result.source, result.srcIds) };
    }
    const { model, tokenizer, targetTokenizer } = translation;
    const result = withTypedRows(
      await translateWithAttentionAsync(model, tokenizer, text, {
        beam,
        ...(targetTokenizer !== tokenizer && { targetTokenizer }),
      }),
    );
    return { result, unknown: unknownCharacters(tokenizer, result.source, result.srcIds) };
  },
  async generate({ prompt, options }, progress) {
    // Each token as it comes (the page shows the first's time): "token 1 of 64".
    const t0 = performance.now();
    const onToken = (_id: number, i: number) =>
      progress(`token ${i + 1} of ${options.maxTokens ?? 40} after ${(performance.now() - t0).toFixed(0)} ms`);
    const g = await generateWithAttentionAsync(needGpt(), prompt, { ...options, onToken });
    return { ...g, attention: typedRows(g.attention, transfer) };
  },
  async nextToken({ ids }) {
    logits = await lastLogitsAsync(needGpt().model, ids);
    return { vocabSize: logits.length };
  },
  nextTokenView({ options }) {
    const lm = needGpt();
    if (!logits) throw new Error('the next-token view has no prompt yet');
    const view = nextTokenView(logits, options);
    const labels: Record<number, string> = {};
    for (const id of [...view.top.map((t) => t.id), view.sampled])
      labels[id] = tokenLabel(lm.tokenizer, id, lm.separatorId);
    return { view, labels, vocabSize: logits.length };
  },
  neuron({ ids, layer, head, query }) {
    return neuronViewAsync(needGpt().model, ids, layer, head, query);
  },
  async flow({ entry, text, target, dims }, progress) {
    if (flowModel?.id !== entry.id) {
      flowModel = null;
      flowRun = null;
      flowModel = { id: entry.id, subject: flowSubject(await openOnBackend(entry, progress)) };
    }
    progress('running the model…');
    flowRun = await textFlowAsync(flowModel.subject, text, { target, dims });
    return { outline: flowOutline(flowRun.flow), text: flowRun.text };
  },
  flowStage({ stage }) {
    const s = flowRun?.flow.stages.find((x) => x.id === stage);
    if (!s) throw new Error(flowRun ? `the flow has no stage '${stage}'` : 'no flow has run yet: run it again');
    return s;
  },
  flowVectors({ stage }) {
    if (!flowRun) throw new Error('no flow has run yet: run it again');
    return flowRun.vectors(stage);
  },
};

/** Buffers the reply being made moves to the page (typedRows), rather than copies. */
const transfer: Transferable[] = [];

/** A translation with its three stacks of maps as typed rows, their buffers to be transferred. */
function withTypedRows<T extends TranslationAttention>(t: T): T {
  return {
    ...t,
    encoder: typedRows(t.encoder, transfer),
    decoder: typedRows(t.decoder, transfer),
    cross: typedRows(t.cross, transfer),
  };
}

/** Requests run one after another, in the order they came. */
let queue: Promise<void> = Promise.resolve();

self.onmessage = (e: MessageEvent<RequestMessage>) => {
  const { id, op, args } = e.data;
  const post = (m: ReplyMessage) => self.postMessage(m);
  queue = queue.then(async () => {
    try {
      const handler = handlers[op] as (a: unknown, p: (s: string) => void) => unknown;
      transfer.length = 0;
      const value = await handler(args, (progress) => post({ id, progress }));
      const reply: ReplyMessage = { id, value, threads: { launches: poolStats().launches } };
      self.postMessage(reply, { transfer: transfer.splice(0) });
    } catch (x) {
      post({ id, error: (x as Error).message ?? String(x) });
    }
  });
};
