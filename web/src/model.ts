/**
 * The model `qkv explore` serves under model/: its config.json first (its format says which view
 * shows it: a translation model or a GPT), then its tokenizer and weights, with download progress.
 */
import { FILES, folderKind, parseJsonText, TARGET_TOKENIZER } from '../../src/folder/index.ts';

/** Which view shows a served model: a translation model, or a GPT (qkv's or Hugging Face GPT-2). */
export type ModelKind = 'seq2seq' | 'gpt';
import type { BackendChoice } from './backend.ts';

export interface ServedModel {
  kind: ModelKind;
  /** The folder's name (from the server's X-Qkv-Model header). */
  name: string;
  config: unknown;
}

/** What the server serves: a model, none (404), or an error (bad config, network). */
export type Served = { model: ServedModel | null; error: Error | null };

async function fetchOk(path: string): Promise<Response> {
  const r = await fetch(path);
  if (!r.ok) throw Object.assign(new Error(`${path}: HTTP ${r.status}`), { status: r.status });
  return r;
}

/** model/config.json and the kind it names; model null when no model is served. */
export async function fetchServedModel(): Promise<Served> {
  try {
    let res: Response;
    try {
      res = await fetchOk('model/config.json');
    } catch (e) {
      if ((e as { status?: number }).status === 404) return { model: null, error: null };
      throw e;
    }
    const name = decodeURIComponent(res.headers.get('X-Qkv-Model') ?? 'model');
    const config = parseJsonText(await res.text(), FILES.config, 'model/config.json');
    const kind = folderKind(config, 'model/config.json');
    return { model: { kind: kind === 'hf-gpt2' ? 'gpt' : kind, name, config }, error: null };
  } catch (e) {
    return { model: null, error: e as Error };
  }
}

/**
 * The ensemble members a served config.json names (`decoding.ensemble`: `qkv translate` and `eval`
 * decode with them too); the page runs the folder's own model alone.
 */
export function namedEnsemble(config: unknown): string[] {
  const e = (config as { decoding?: { ensemble?: unknown } } | null)?.decoding?.ensemble;
  return Array.isArray(e) ? e.filter((x): x is string => typeof x === 'string') : [];
}

/** Whether a served config.json describes a translation model with separate source and target vocabularies. */
function hasTargetTokenizer(config: unknown): boolean {
  const m = (config as { model?: { tgtVocabSize?: unknown } } | null)?.model;
  return m !== null && typeof m === 'object' && m.tgtVocabSize !== undefined;
}

/**
 * The tokenizer (parsed JSON) and the weights (bytes) of the served model, and its target tokenizer
 * when config.json says the vocabularies are separate.
 */
export async function fetchModelFiles(name: string, progress: (s: string) => void, config?: unknown): Promise<{ tokenizer: unknown; weights: Uint8Array; targetTokenizer?: unknown }> {
  const json = async (file: string) => parseJsonText(await (await fetchOk(`model/${file}`)).text(), file, `model/${file}`);
  const tokenizer = await json(FILES.tokenizer);
  const targetTokenizer = hasTargetTokenizer(config) ? await json(TARGET_TOKENIZER) : undefined;
  const wres = await fetchOk(`model/${FILES.weights}`);
  const total = Number(wres.headers.get('Content-Length') ?? 0);
  const reader = wres.body!.getReader();
  const chunks: Uint8Array[] = [];
  let got = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    got += value.length;
    progress(`loading ${name}: ${(got / 1e6).toFixed(1)}${total ? ` / ${(total / 1e6).toFixed(1)}` : ''} MB`);
  }
  const weights = new Uint8Array(got);
  let off = 0;
  for (const c of chunks) {
    weights.set(c, off);
    off += c.length;
  }
  return { tokenizer, weights, ...(targetTokenizer !== undefined && { targetTokenizer }) };
}

export interface ModelViewDeps {
  setModelStatus(text: string): void;
  backend(): BackendChoice | null;
  /** What the server serves (fetched once by the page). */
  served: Served;
}

/**
 * The served model's info line while it loads, and the messages when there is none or it fails.
 * Returns the loaded model, or null (the message is shown).
 */
export async function loadServed<T>(info: HTMLElement, deps: ModelViewDeps, load: (tokenizer: unknown, weights: Uint8Array, targetTokenizer?: unknown) => T): Promise<{ loaded: T; name: string } | null> {
  const fail = (message: string) => {
    info.textContent = `Could not load the model: ${message}`;
    info.classList.add('error');
    deps.setModelStatus('model failed to load');
    return null;
  };
  const { model: served, error } = deps.served;
  if (error) return fail(error.message);
  if (!served) {
    info.textContent = 'No model is being served. Start the explorer with a model folder: qkv explore --model DIR (a folder with config.json, tokenizer.json, model.safetensors, e.g. from qkv train or qkv train-lm). The other views work without one.';
    info.classList.add('warning');
    deps.setModelStatus('no model');
    return null;
  }
  try {
    const files = await fetchModelFiles(served.name, (s) => {
      info.textContent = s;
    }, served.config);
    return { loaded: load(files.tokenizer, files.weights, files.targetTokenizer), name: served.name };
  } catch (e) {
    return fail((e as Error).message);
  }
}
