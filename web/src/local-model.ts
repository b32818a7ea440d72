/**
 * A GPT folder opened in the page (file picker or drag and drop): nothing is uploaded, the files are
 * read where they are, through the folder module's one door (`openFolder` over `filesSource`,
 * src/folder/), with the checks and messages the CLI gives: config.json first (a folder of another
 * kind is refused before its tokenizer is read), then the tokenizer, then the weights. A Hugging
 * Face GPT-2 folder's model.safetensors is read one tensor at a time (File.slice) straight into the
 * model's parameters, so a 124M model's 500 MB are held once (in WebAssembly memory with the wasm
 * backend), not twice; a qkv GPT folder (a few MB) is read whole. A model too large for the page is
 * refused before any weight is read.
 */
import {
  FILES,
  filesSource,
  KIND_NAMES,
  ofKind,
  openFolder,
  type FolderKind,
  type LoadedGpt,
  type OpenedEncoder,
} from '../../src/folder/index.ts';
import { memoryAvailable, memory as wasmMemory } from '../../src/backend/wasm/memory.ts';
import type { Module } from '../../src/nn/module.ts';
import { applyDType, heldDType } from '../../src/pipelines/options.ts';
import { storageLength } from '../../src/tensor/storage.ts';
import {
  checkPageLimit,
  type HeldMemory,
  mb,
  memoryLine,
  type MemoryPlan,
  type PageDType,
  type PageMemory,
} from './page-memory.ts';

export { checkPageLimit, type HeldMemory, JS_LIMIT_BYTES, WASM_LIMIT_BYTES } from './page-memory.ts';

/** The parts the views use: a Hugging Face folder's generation settings too (the page generates as the pipeline). */
function lmOf({ model, tokenizer, separatorId, generation }: LoadedGpt): LoadedGpt {
  return { model, tokenizer, separatorId, ...(generation && { generation }) };
}

/** How the page loads a Hugging Face decoder: the dtype chosen (Weights), and what the browser told of its memory. */
export interface PageLoad {
  dtype: PageDType;
  memory: PageMemory;
}

export const FP32_LOAD: PageLoad = { dtype: 'fp32', memory: { deviceMemoryGiB: null, jsHeapLimit: null } };

/** Bytes of a model's state dict as held (each tensor by its dtype and storage). */
export function heldBytes(model: Module): number {
  return Object.values(model.stateDict()).reduce(
    (n, t) =>
      n +
      storageLength(t.dtype, t.size) *
        (t.dtype === 'float32' || t.dtype === 'int32' ? 4 : t.dtype === 'float16' ? 2 : 1),
    0,
  );
}

/**
 * A Hugging Face decoder's config.json checked against the tab (refused before any weight is read when it cannot
 * hold it) and its plan said in a progress line.
 */
export function planLoad(
  config: unknown,
  backend: string,
  file: string,
  load: PageLoad,
  progress: (s: string) => void,
): MemoryPlan {
  const plan = checkPageLimit(config, backend, file, load.dtype, load.memory);
  progress(`${memoryLine(plan)}; the page can hold ${mb(plan.limit)}${plan.warning ? `; ${plan.warning}` : ''}`);
  return plan;
}

/** The weights' progress line: bytes read of the file's, and what the model will hold. */
export function readingLine(file: string, done: number, total: number, plan: MemoryPlan | null): string {
  return `reading ${file}: ${mb(done)} / ${mb(total)}${plan ? ` · ${memoryLine(plan)}` : ''}`;
}

/**
 * A loaded decoder made to hold its weights in the plan's dtype (the pipelines' applyDType: quantized in place; no
 * plan: as loaded), and what it holds then.
 */
export function holdAs(
  model: Module,
  plan: MemoryPlan | null,
  where: string,
  backend: string,
  progress: (s: string) => void,
): HeldMemory {
  if (plan && plan.dtype !== 'fp32') {
    progress(`quantizing ${where} to ${plan.dtype}…`);
    applyDType([model], plan.dtype, where);
  }
  const dtype = heldDType(model);
  return {
    dtype: dtype === 'int8' ? 'q8' : (dtype ?? 'fp32'),
    weights: heldBytes(model),
    fp32: 4 * model.numParameters(),
    wasmBytes: backend === 'wasm' && memoryAvailable ? wasmMemory.buffer.byteLength : null,
    warning: plan?.warning ?? null,
  };
}

export interface LocalModel {
  /** The GPT, where the folder is one (a qkv GPT or a Hugging Face GPT-2). */
  lm?: LoadedGpt;
  /** The encoder, where the folder is a BERT-family one (BERT, DistilBERT, RoBERTa, XLM-R). */
  encoder?: OpenedEncoder;
  name: string;
  /** 'Hugging Face GPT-2', 'qkv GPT' or the encoder's family ('Hugging Face bert'). */
  source: string;
  /** Bytes of model.safetensors and the seconds it took to load. */
  bytes: number;
  seconds: number;
  /** What a decoder holds (its dtype, its weights' bytes); undefined for an encoder. */
  memory?: HeldMemory;
}

/**
 * Load a GPT or a BERT-family encoder from a folder's files; `backend` decides the size limit; `progress` gets status
 * lines; a Hugging Face decoder is held in `load.dtype` (its plan said, and checked against the tab, before any
 * weight is read).
 */
export async function loadLocalModel(
  files: Iterable<File>,
  backend: string,
  progress: (s: string) => void,
  load: PageLoad = FP32_LOAD,
): Promise<LocalModel> {
  const t0 = performance.now();
  const src = filesSource(files);
  const name = src.label;
  const weights = `${name}/${FILES.weights}`;
  // Decided from config.json, before the tokenizer or any weight is read.
  const accept = (kind: FolderKind, config: unknown): void => {
    if (kind === 'seq2seq' || kind === 'marian')
      throw new Error(
        `${src.name(FILES.config)}: ${KIND_NAMES[kind]}: open it in Translate ` +
          `(or with qkv explore --model ${name}); this view opens GPTs`,
      );
    if (kind === 'm2m100' || kind === 't5')
      throw new Error(`${src.name(FILES.config)}: ${KIND_NAMES[kind]}: the explorer does not show this kind yet`);
    if (kind === 'hf-gpt2') plan = planLoad(config, backend, src.name(FILES.config), load, progress);
    else progress(`reading ${weights}`);
  };
  let plan: MemoryPlan | null = null;
  const opened = ofKind(
    await openFolder(src, {
      ensemble: false,
      accept,
      progress: (done, total) => progress(readingLine(weights, done, total, plan)),
    }),
    'gpt',
    'hf-gpt2',
    'hf-encoder',
  );
  // A Hugging Face decoder is held in the page's dtype; qkv's own GPTs (small) and encoders stay as read.
  const memory = opened.kind === 'hf-gpt2' ? holdAs(opened.model, plan, name, backend, progress) : undefined;
  return {
    ...(opened.kind === 'hf-encoder' ? { encoder: opened } : { lm: lmOf(opened) }),
    name,
    source:
      opened.kind === 'hf-encoder'
        ? `Hugging Face ${opened.hf.family}`
        : opened.kind === 'hf-gpt2'
          ? 'Hugging Face GPT-2'
          : 'qkv GPT',
    bytes: (await src.range?.(FILES.weights))?.size ?? 0,
    seconds: (performance.now() - t0) / 1000,
    ...(memory && { memory }),
  };
}
