/**
 * The model folders `qkv explore` serves: their list (models.json: id, name, kind, one line each),
 * and opening one through the folder module (src/folder/) from its URL, models/<id>/, with the
 * same checks and messages as the CLI (a file named by its URL). A Hugging Face GPT-2's weights are
 * fetched as a Blob (which the browser may keep on disk) and read one tensor at a time.
 */
import {
  FILES,
  openFolder,
  readKind,
  urlSource,
  type FolderKind,
  type FolderSource,
  type OpenedFolder,
} from '../../src/folder/index.ts';
import type { BackendChoice } from './backend.ts';
import { FP32_LOAD, holdAs, type HeldMemory, type PageLoad, planLoad, readingLine } from './local-model.ts';

/** One served folder, as models.json lists it. kind null: the server could not read it (opening it says why). */
export interface ServedEntry {
  id: string;
  name: string;
  kind: FolderKind | null;
  description: string;
  /** The model files the folder has: no other is asked for. */
  files: string[];
}

/**
 * The page's URL, where models.json and models/ are: set in the model worker, whose own URL (its
 * script, under assets/) relative URLs would otherwise resolve against. Files keep their relative
 * names (models/<id>/config.json) in messages.
 */
let pageBase: string | null = null;

export function setPageBase(url: string): void {
  pageBase = url;
}

const pageFetch: typeof fetch = (input, init) =>
  fetch(pageBase && typeof input === 'string' ? new URL(input, pageBase) : input, init);

/** What the server serves: its folders, or an error (network, a bad list). */
export interface Served {
  models: ServedEntry[];
  error: Error | null;
}

/** models.json; an empty list where the server has none. */
export async function fetchServedModels(): Promise<Served> {
  try {
    const r = await fetch('models.json');
    if (r.status === 404) return { models: [], error: null };
    if (!r.ok) throw new Error(`models.json: HTTP ${r.status}`);
    const list = (await r.json()) as unknown;
    if (!Array.isArray(list)) throw new Error('models.json: expected a list of served folders');
    return { models: list as ServedEntry[], error: null };
  } catch (e) {
    return { models: [], error: e as Error };
  }
}

/**
 * The view that shows a served folder: Translate for a translation model (qkv's, Marian, NLLB / M2M100, T5), Generate
 * for the rest (GPTs, encoders, and a folder that fails, whose message Generate shows).
 */
export function viewOf(m: ServedEntry): 'translate' | 'generate' {
  return m.kind === 'seq2seq' || m.kind === 'marian' || m.kind === 'm2m100' || m.kind === 't5'
    ? 'translate'
    : 'generate';
}

/** How the switcher names a kind. */
export const KIND_LABELS: Record<FolderKind, string> = {
  seq2seq: 'translation',
  gpt: 'GPT',
  'hf-gpt2': 'GPT-2',
  marian: 'Marian',
  'hf-encoder': 'BERT-style encoder',
  m2m100: 'M2M100 / NLLB',
  t5: 'T5',
};

/** Where a served folder's files are. */
export function servedBase(m: ServedEntry): string {
  return `models/${encodeURIComponent(m.id)}/`;
}

/**
 * The folder module's URL source, asking only for the files the server lists (a missing optional file: undefined, no
 * 404).
 */
function listedSource(m: ServedEntry): FolderSource {
  const src = urlSource(servedBase(m), pageFetch);
  const has = new Set(m.files);
  return { ...src, read: async (f) => (has.has(f) ? src.read(f) : undefined) };
}

/**
 * The listed URL source, plus byte ranges of model.safetensors from a Blob fetched once (GPT-2 is read tensor by
 * tensor).
 */
function servedSource(m: ServedEntry): FolderSource {
  const src = listedSource(m);
  const base = servedBase(m);
  const has = new Set(m.files);
  const blobs = new Map<string, Promise<Blob | undefined>>();
  const blob = (f: string) => {
    if (!blobs.has(f)) {
      blobs.set(
        f,
        !has.has(f)
          ? Promise.resolve(undefined)
          : pageFetch(`${base}${f}`).then((r) => {
              if (r.status === 404) return undefined;
              if (!r.ok) throw new Error(`${base}${f}: HTTP ${r.status}`);
              return r.blob();
            }),
      );
    }
    return blobs.get(f)!;
  };
  return {
    ...src,
    range: async (f) => {
      const b = await blob(f);
      return b
        ? { size: b.size, read: async (begin, end) => new Uint8Array(await b.slice(begin, end).arrayBuffer()) }
        : undefined;
    },
  };
}

/**
 * A served folder opened through the folder module: weights loaded, eval mode, the folder's own
 * model alone (its ensemble members are for qkv translate and eval). A Hugging Face decoder (GPT-2, Llama, Qwen2,
 * Mistral) has its memory in `load.dtype` said, and is refused when the tab cannot hold it, before any weight is
 * read; its weights' progress is bytes read of the file's; it is then held in that dtype (`memory`: what it holds).
 */
export async function openServed(
  m: ServedEntry,
  backend: string,
  progress: (s: string) => void,
  load: PageLoad = FP32_LOAD,
): Promise<OpenedFolder & { memory?: HeldMemory }> {
  progress(`loading ${m.name}…`);
  const src = listedSource(m);
  const { kind, config } = await readKind(src);
  if (kind === 'hf-gpt2') {
    const plan = planLoad(config, backend, src.name(FILES.config), load, progress);
    const opened = await openFolder(servedSource(m), {
      ensemble: false,
      progress: (done, total) => progress(readingLine(`${m.name}/${FILES.weights}`, done, total, plan)),
    });
    if (opened.kind !== 'hf-gpt2') return opened;
    return Object.assign(opened, { memory: holdAs(opened.model, plan, m.name, backend, progress) });
  }
  return openFolder(src, { ensemble: false });
}

/**
 * The ensemble members a served config.json names (`decoding.ensemble`: `qkv translate` and `eval`
 * decode with them too); the page runs the folder's own model alone.
 */
export function namedEnsemble(config: unknown): string[] {
  const e = (config as { decoding?: { ensemble?: unknown } } | null)?.decoding?.ensemble;
  return Array.isArray(e) ? e.filter((x): x is string => typeof x === 'string') : [];
}

export interface ModelViewDeps {
  setModelStatus(text: string): void;
  backend(): BackendChoice | null;
  /** What the server serves (fetched once by the page). */
  served: Served;
  /** A view's served model changed (the switcher follows). */
  onModel?(id: string): void;
}

/** The message of a view when no folder of its kind is served. */
export const NO_MODEL =
  'No model is being served. Start the explorer with a model folder: qkv ' +
  'explore --model DIR (a folder with config.json, tokenizer.json, ' +
  'model.safetensors, e.g. from qkv train or qkv train-lm; repeat ' +
  '--model to serve several). The other views work without one.';
