/**
 * A model folder opened in the page (file picker or drag and drop): nothing is uploaded, the
 * files are read where they are, and checked by the folder module (src/folder/) as the CLI checks them. A Hugging Face
 * GPT-2 folder's model.safetensors is read one
 * tensor at a time (File.slice) straight into the model's parameters, so a 124M model's 500 MB
 * are held once (in WebAssembly memory with the wasm backend), not twice; a qkv GPT folder (a few
 * MB) is read whole. A model too large for the page is refused before any weight is read.
 */
import {
  checkedHf,
  FILES,
  folderKind,
  hfTokenizer,
  hfWeightsError,
  lmFromFiles,
  parseJsonText,
  pytorchOnly,
  type LoadedGpt,
} from '../../src/folder/index.ts';
import { readHfGpt2Streaming } from '../../src/io/hf.ts';
import { gptParameterCount } from '../../src/models/gpt.ts';
import { gptConfigFromHf } from '../../src/models/hf/gpt2.ts';

/** What the page can hold: wasm32 memory is 4 GiB; keep room for activations, the KV cache and the page. */
export const WASM_LIMIT_BYTES = 4 * 2 ** 30 - 256 * 2 ** 20;
/** The js backend keeps each tensor in its own ArrayBuffer; past a few GB the tab runs out. */
export const JS_LIMIT_BYTES = 3 * 2 ** 30;

const NEEDED = [FILES.config, FILES.tokenizer, FILES.weights] as const;
/**
 * What a folder may hold besides (docs/model-folder.md): GPT-2's slow tokenizer files, PyTorch's pickle (refused by
 * name).
 */
const OPTIONAL = [FILES.vocab, FILES.merges, FILES.pytorchWeights] as const;

type Needed = (typeof NEEDED)[number];
type Optional = (typeof OPTIONAL)[number];
type Tokenizer = typeof FILES.tokenizer;
/**
 * The picked files by name: config.json and model.safetensors always, tokenizer.json unless GPT-2's slow tokenizer
 * files stand in.
 */
type Picked = Record<Exclude<Needed, Tokenizer>, File> & Partial<Record<Tokenizer | Optional, File>>;

/**
 * The folder's files, by name (the folder's own files only, not those of subfolders). A Hugging
 * Face folder may hold vocab.json and merges.txt instead of tokenizer.json.
 */
export function pickModelFiles(files: Iterable<File>): { files: Picked; folder: string } {
  const found: Partial<Record<string, File>> = {};
  let folder = '';
  for (const f of files) {
    const rel = (f as File & { webkitRelativePath?: string }).webkitRelativePath || f.name;
    const parts = rel.split('/');
    if (parts.length > 2) continue; // inside a subfolder
    if ((NEEDED as readonly string[]).includes(f.name) || (OPTIONAL as readonly string[]).includes(f.name)) {
      found[f.name] = f;
      if (parts.length === 2) folder = parts[0];
    }
  }
  if (!found[FILES.weights] && found[FILES.config] && found[FILES.pytorchWeights]) throw pytorchOnly((n) => n);
  const slowTokenizer = found[FILES.vocab] !== undefined && found[FILES.merges] !== undefined;
  const missing = NEEDED.filter((n) => !found[n] && !(n === FILES.tokenizer && slowTokenizer));
  if (missing.length > 0)
    throw new Error(
      `the folder lacks ${missing.join(', ')} (a model folder holds config.json, tokenizer.json and model.safetensors)`,
    );
  return { files: found as Picked, folder };
}

async function readJsonFile(f: File): Promise<unknown> {
  return parseJsonText(await f.text(), f.name);
}

/** The parts the views use. */
function lmOf({ model, tokenizer, separatorId }: LoadedGpt): LoadedGpt {
  return { model, tokenizer, separatorId };
}

function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0)} MB`;
}

/**
 * A Hugging Face GPT-2 config.json whose fp32 weights the page cannot hold: refused (named `file`) before any weight is
 * read.
 */
export function checkPageLimit(config: unknown, backend: string, file: string = FILES.config): void {
  const cfg = gptConfigFromHf(config);
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
  lm: LoadedGpt;
  name: string;
  /** 'Hugging Face GPT-2' or 'qkv GPT'. */
  source: string;
  /** Bytes of model.safetensors and the seconds it took to load. */
  bytes: number;
  seconds: number;
}

/** Load a GPT from a folder's files; `backend` decides the size limit; `progress` gets status lines. */
export async function loadLocalModel(
  files: Iterable<File>,
  backend: string,
  progress: (s: string) => void,
): Promise<LocalModel> {
  const t0 = performance.now();
  const { files: f, folder } = pickModelFiles(files);
  const name = folder || 'local folder';
  const config = await readJsonFile(f[FILES.config]);
  const kind = folderKind(config, FILES.config);
  if (kind === 'seq2seq')
    throw new Error(
      `config.json: a translation model (format 'qkv-seq2seq'): open it with ` +
        `qkv explore --model ${name}; this view opens GPTs`,
    );
  const tokenizerFile = f[FILES.tokenizer];
  const tokenizerJson = tokenizerFile ? await readJsonFile(tokenizerFile) : undefined;
  const w = f[FILES.weights];
  if (kind === 'hf-gpt2') {
    checkPageLimit(config, backend);
    // Named before any weight is read: tokenizer.json, else vocab.json + merges.txt.
    const tokenizer = hfTokenizer(
      tokenizerJson !== undefined
        ? { tokenizer: tokenizerJson }
        : { vocab: await readJsonFile(f[FILES.vocab]!), merges: await f[FILES.merges]!.text() },
    );
    const model = await readHfGpt2Streaming(
      config,
      w.size,
      async (b, e) => new Uint8Array(await w.slice(b, e).arrayBuffer()),
      (done, total) => {
        progress(`reading ${name}/model.safetensors: ${mb(done)} / ${mb(total)}`);
      },
    ).catch((e: Error) => {
      throw hfWeightsError(e);
    });
    return {
      lm: lmOf(checkedHf(model, tokenizer)),
      name,
      source: 'Hugging Face GPT-2',
      bytes: w.size,
      seconds: (performance.now() - t0) / 1000,
    };
  }
  progress(`reading ${name}/model.safetensors: ${mb(w.size)}`);
  const lm = lmOf(lmFromFiles({ config, tokenizer: tokenizerJson, weights: new Uint8Array(await w.arrayBuffer()) }));
  return { lm, name, source: 'qkv GPT', bytes: w.size, seconds: (performance.now() - t0) / 1000 };
}
