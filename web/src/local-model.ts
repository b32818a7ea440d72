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
import { gptParameterCount } from '../../src/models/gpt.ts';
import { gptConfigFromHf } from '../../src/models/hf/gpt2.ts';
import { decoderConfigFromHf, HF_DECODER_TYPES } from '../../src/models/hf/llama.ts';

/** What the page can hold: wasm32 memory is 4 GiB; keep room for activations, the KV cache and the page. */
export const WASM_LIMIT_BYTES = 4 * 2 ** 30 - 256 * 2 ** 20;
/** The js backend keeps each tensor in its own ArrayBuffer; past a few GB the tab runs out. */
export const JS_LIMIT_BYTES = 3 * 2 ** 30;

/** The parts the views use: a Hugging Face folder's generation settings too (the page generates as the pipeline). */
function lmOf({ model, tokenizer, separatorId, generation }: LoadedGpt): LoadedGpt {
  return { model, tokenizer, separatorId, ...(generation && { generation }) };
}

function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0)} MB`;
}

/**
 * A Hugging Face GPT-2 config.json whose fp32 weights the page cannot hold: refused (named `file`) before any weight is
 * read.
 */
export function checkPageLimit(config: unknown, backend: string, file: string = FILES.config): void {
  // GPT-2's config.json, or a Llama, Qwen2 or Mistral one (the 'hf-gpt2' kind's other family).
  const type = (config as { model_type?: unknown } | null)?.model_type;
  const cfg = (HF_DECODER_TYPES as readonly unknown[]).includes(type)
    ? decoderConfigFromHf(config)
    : gptConfigFromHf(config);
  const need = gptParameterCount(cfg) * 4;
  const limit = backend === 'wasm' ? WASM_LIMIT_BYTES : JS_LIMIT_BYTES;
  if (need > limit) {
    throw new Error(
      `${file}: this model has ` +
        `${gptParameterCount(cfg).toLocaleString('en')} parameters, ` +
        `${mb(need)} in fp32, more than the page can hold ` +
        `(${mb(limit)} with the ${backend} ` +
        `backend${backend === 'wasm' ? ': WebAssembly memory is 4 GiB at most' : ''}); ` +
        'gpt2, distilgpt2, gpt2-medium and gpt2-large fit',
    );
  }
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
}

/**
 * Load a GPT or a BERT-family encoder from a folder's files; `backend` decides the size limit; `progress` gets status
 * lines.
 */
export async function loadLocalModel(
  files: Iterable<File>,
  backend: string,
  progress: (s: string) => void,
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
    if (kind === 'hf-gpt2') checkPageLimit(config, backend, src.name(FILES.config));
    else progress(`reading ${weights}`);
  };
  const opened = ofKind(
    await openFolder(src, {
      ensemble: false,
      accept,
      progress: (done, total) => progress(`reading ${weights}: ${mb(done)} / ${mb(total)}`),
    }),
    'gpt',
    'hf-gpt2',
    'hf-encoder',
  );
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
  };
}
