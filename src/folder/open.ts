/**
 * Opening a model folder from wherever its files are, without Node APIs: contents in memory (a map
 * from file name to bytes or text), a base URL (fetch), the File objects a page's folder picker
 * gives, or any async file getter. The folder's config.json says its kind ('seq2seq', 'gpt',
 * 'hf-gpt2'); the files are then read and checked as docs/model-folder.md says, errors naming the
 * file (its path, URL or name) and what was expected.
 */
import { readHfGpt2Streaming } from '../io/hf.ts';
import type { Seq2Seq } from '../models/seq2seq.ts';
import type { BpeTokenizer } from '../text/bpe.ts';
import { checkedHf, gptFromFiles, hfTokenizer, hfWeightsError, type LoadedLm } from './gpt.ts';
import { loadMarian, MARIAN_FILES, marianShape, type LoadedMarian, type MarianWeights } from './marian.ts';
import { notFound, seq2seqFromFiles, type LoadedModel } from './seq2seq.ts';
import { FILES, FolderError, folderKind, parseJsonText, type FileNamer, type FolderKind } from './spec.ts';

/** Where a folder's files come from. */
export interface FolderSource {
  /** The whole file, or undefined when the folder has no such file. */
  read(file: string): Promise<Uint8Array | undefined>;
  /** How a file is named in messages (a path, a URL, a bare name). */
  name: FileNamer;
  /** The folder's name, for messages and logs. */
  label: string;
  /** A subfolder (ensemble members), where the source has them. */
  sub?(path: string): FolderSource;
  /** Bytes [begin, end) of a file and its size, for weights read one tensor at a time (a 500 MB GPT-2). */
  range?(file: string): Promise<
    | {
        /** The file's length in bytes. */
        size: number;
        /** Bytes [begin, end) of the file (end at most `size`). */
        read(begin: number, end: number): Promise<Uint8Array>;
      }
    | undefined
  >;
}

/** Anything openFolder takes: a source, contents by file name, picked File objects, or a base URL (string or URL). */
export type FolderInput =
  | FolderSource
  | Map<string, Uint8Array | string>
  | Record<string, Uint8Array | string>
  | Iterable<File>
  | URL
  | string;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function bytesOf(x: Uint8Array | string): Uint8Array {
  return typeof x === 'string' ? encoder.encode(x) : x;
}

/** A folder from its files' contents, by name ('member-2/model.safetensors' for a member's files). */
export function contentsSource(
  files: Map<string, Uint8Array | string> | Record<string, Uint8Array | string>,
  label = 'folder',
  prefix = '',
): FolderSource {
  const map = files instanceof Map ? files : new Map(Object.entries(files));
  return {
    label: prefix ? `${label}/${prefix.slice(0, -1)}` : label,
    name: (f) => `${prefix}${f}`,
    read: async (f) => {
      const x = map.get(prefix + f);
      return x === undefined ? undefined : bytesOf(x);
    },
    sub: (p) => contentsSource(map, label, `${prefix}${p}/`),
  };
}

/**
 * A folder served over HTTP under `base` (a 404 is a missing file; other failures are errors naming the URL).
 * No folder file is HTML: an HTML page in answer to one is a single-page-app server's fallback for a
 * path it lacks (Vite's `vite preview`, many static hosts), so that file is missing too.
 */
export function urlSource(base: string | URL, fetchFn: typeof fetch = (...a) => fetch(...a)): FolderSource {
  const root = String(base).endsWith('/') ? String(base) : `${String(base)}/`;
  const get = async (f: string): Promise<Response | undefined> => {
    const r = await fetchFn(`${root}${f}`);
    if (r.status === 404) return undefined;
    if (r.ok && /^text\/html\b/i.test(r.headers.get('content-type') ?? '')) return undefined;
    if (!r.ok) throw new FolderError(f, `${root}${f}: HTTP ${r.status}`);
    return r;
  };
  return {
    label: root.replace(/\/$/, ''),
    name: (f) => `${root}${f}`,
    read: async (f) => {
      const r = await get(f);
      return r ? new Uint8Array(await r.arrayBuffer()) : undefined;
    },
    sub: (p) => urlSource(`${root}${p}/`, fetchFn),
  };
}

/**
 * The File objects a folder picker (webkitdirectory) or a drop gives: the folder's own files by
 * name, and its subfolders' files for ensemble members.
 */
export function filesSource(files: Iterable<File>, prefix = ''): FolderSource {
  const byPath = new Map<string, File>();
  let folder = '';
  for (const f of files) {
    const rel = (f as File & { webkitRelativePath?: string }).webkitRelativePath || f.name;
    const parts = rel.split('/');
    // A picked folder's paths start with its own name: drop it.
    const inFolder = parts.length > 1 ? parts.slice(1).join('/') : rel;
    if (parts.length > 1) folder = parts[0];
    byPath.set(inFolder, f);
  }
  return filesSourceOf(byPath, folder || 'local folder', prefix);
}

function filesSourceOf(byPath: Map<string, File>, label: string, prefix: string): FolderSource {
  return {
    label: prefix ? `${label}/${prefix.slice(0, -1)}` : label,
    name: (f) => `${prefix}${f}`,
    read: async (f) => {
      const file = byPath.get(prefix + f);
      return file ? new Uint8Array(await file.arrayBuffer()) : undefined;
    },
    range: async (f) => {
      const file = byPath.get(prefix + f);
      return file
        ? { size: file.size, read: async (b, e) => new Uint8Array(await file.slice(b, e).arrayBuffer()) }
        : undefined;
    },
    sub: (p) => filesSourceOf(byPath, label, `${prefix}${p}/`),
  };
}

function isSource(x: unknown): x is FolderSource {
  return (
    typeof x === 'object' &&
    x !== null &&
    typeof (x as FolderSource).read === 'function' &&
    typeof (x as FolderSource).name === 'function'
  );
}

/** The FolderSource of any FolderInput. */
export function toSource(input: FolderInput): FolderSource {
  if (isSource(input)) return input;
  if (typeof input === 'string' || input instanceof URL) return urlSource(input);
  if (input instanceof Map) return contentsSource(input);
  if (typeof (input as Iterable<File>)[Symbol.iterator] === 'function') return filesSource(input as Iterable<File>);
  return contentsSource(input as Record<string, Uint8Array | string>);
}

/** A JSON file of the folder (undefined when absent). */
export async function readJsonFile(src: FolderSource, file: string): Promise<unknown> {
  const bytes = await src.read(file);
  return bytes === undefined ? undefined : parseJsonText(decoder.decode(bytes), file, src.name(file));
}

/** A folder's config.json and the kind it names. */
export async function readKind(src: FolderSource): Promise<{
  /** The kind config.json names (a FolderError naming config.json when it names none). */
  kind: FolderKind;
  /** config.json, parsed. */
  config: unknown;
}> {
  const config = await readJsonFile(src, FILES.config);
  if (config === undefined) throw notFound(FILES.config, src.name);
  return { kind: folderKind(config, src.name(FILES.config)), config };
}

/**
 * A Marian folder from any source: config.json, the tokenizer's files and the generation config read and
 * checked first, then the weights, model.safetensors preferred, else pytorch_model.bin.
 */
export async function openMarian(src: FolderSource, config: unknown): Promise<LoadedMarian> {
  const shape = marianShape(
    {
      config,
      generationConfig: await readJsonFile(src, MARIAN_FILES.generationConfig),
      tokenizerConfig: await readJsonFile(src, MARIAN_FILES.tokenizerConfig),
      vocab: await readJsonFile(src, MARIAN_FILES.vocab),
      targetVocab: await readJsonFile(src, MARIAN_FILES.targetVocab),
      sourceSpm: await src.read(MARIAN_FILES.sourceSpm),
      targetSpm: await src.read(MARIAN_FILES.targetSpm),
    },
    src.name,
  );
  let weights: MarianWeights | undefined;
  for (const file of [FILES.weights, FILES.pytorchWeights]) {
    const bytes = await src.read(file);
    if (bytes !== undefined) {
      weights = { file, bytes };
      break;
    }
  }
  return loadMarian(shape, weights, src.name);
}

/** A translation folder opened with its ensemble (the members its config.json names, unless `ensemble: false`). */
export interface OpenedSeq2Seq extends LoadedModel {
  /** Always 'seq2seq': tells this member of {@link OpenedFolder} apart. */
  kind: 'seq2seq';
  /** The model itself first, then the ensemble's other members. */
  members: Seq2Seq[];
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

/**
 * What {@link openFolder} gives: by `kind`, a translation model with its ensemble, a language model,
 * or a Marian translation model.
 */
export type OpenedFolder = OpenedSeq2Seq | OpenedLm | OpenedMarian;

/** How {@link openFolder} opens a folder. */
export interface OpenOptions {
  /**
   * Load the ensemble members config.json names (default true; false: the folder's own model alone, as --no-ensemble).
   */
  ensemble?: boolean;
  /** Status lines while large weights are read. */
  progress?: (bytes: number, total: number) => void;
}

/** Open a model folder of any kind: weights loaded, eval mode. */
export async function openFolder(input: FolderInput, options: OpenOptions = {}): Promise<OpenedFolder> {
  const src = toSource(input);
  const { kind, config } = await readKind(src);
  if (kind === 'seq2seq') return openSeq2Seq(src, config, options);
  if (kind === 'marian') return { kind, ...(await openMarian(src, config)) };
  if (kind === 'gpt') {
    const lm = gptFromFiles(
      { config, tokenizer: await readJsonFile(src, FILES.tokenizer), weights: await src.read(FILES.weights) },
      src.name,
    );
    return { kind, ...lm };
  }
  return { kind, ...(await openHfGpt2(src, config, options)) };
}

async function readSeq2Seq(src: FolderSource, config: unknown): Promise<LoadedModel> {
  const separate = (config as { model?: { tgtVocabSize?: unknown } } | null)?.model?.tgtVocabSize !== undefined;
  return seq2seqFromFiles(
    {
      config,
      tokenizer: await readJsonFile(src, FILES.tokenizer),
      // Read when present either way: a shared-vocabulary folder holding one is refused by name.
      targetTokenizer:
        separate || (await src.read(FILES.targetTokenizer)) !== undefined
          ? await readJsonFile(src, FILES.targetTokenizer)
          : undefined,
      weights: await src.read(FILES.weights),
    },
    src.name,
  );
}

async function openSeq2Seq(src: FolderSource, config: unknown, options: OpenOptions): Promise<OpenedSeq2Seq> {
  const first = await readSeq2Seq(src, config);
  const declared = (options.ensemble ?? true) ? (first.config.decoding?.ensemble ?? []) : [];
  const members: MemberCheck[] = [];
  for (const p of declared) {
    const what = `${src.name(FILES.config)} decoding.ensemble member ${p}`;
    if (!src.sub) throw new FolderError(FILES.config, `${what}: this source has no subfolders to read it from`);
    const sub = src.sub(p);
    const c = await readJsonFile(sub, FILES.config);
    if (c === undefined) throw new FolderError(FILES.config, `${what}: model folder not found: ${sub.label}`);
    members.push({ what, loaded: await readSeq2Seq(sub, c) });
  }
  return { kind: 'seq2seq', ...first, members: checkEnsemble(first, members, src.label) };
}

/** One ensemble member as loaded, and how messages name it. */
export interface MemberCheck {
  /** How messages name the member, e.g. `runs/x/config.json decoding.ensemble member member-2` or `--ensemble DIR`. */
  what: string;
  /** The member's folder, loaded. */
  loaded: LoadedModel;
}

function sameTokenizer(a: BpeTokenizer, b: BpeTokenizer): boolean {
  return JSON.stringify(a.toJSON()) === JSON.stringify(b.toJSON());
}

/**
 * The ensemble's models, the folder's own first, after checking each member tokenizes as the
 * folder does (identical tokenizer.json, and target_tokenizer.json if any): an ensemble averages
 * next-token probabilities over one target vocabulary, fed the same source ids.
 */
export function checkEnsemble(first: LoadedModel, members: readonly MemberCheck[], dir: string): Seq2Seq[] {
  const out = [first.model];
  const sharedFirst = first.targetTokenizer === first.tokenizer;
  for (const { what, loaded: m } of members) {
    if (m.config.decoding?.ensemble)
      throw new FolderError(
        FILES.config,
        `${what}: its config.json names an ensemble of its own (decoding.ensemble); members must be single models`,
      );
    const shared = m.targetTokenizer === m.tokenizer;
    if (shared !== sharedFirst) {
      throw new FolderError(
        FILES.config,
        `${what}: ` +
          `${shared ? 'one shared vocabulary' : 'separate vocabularies'}, but ` +
          `--model ${dir} has ` +
          `${sharedFirst ? 'one shared vocabulary' : 'separate vocabularies'}: ` +
          `ensemble members must share their tokenizers`,
      );
    }
    if (!sameTokenizer(m.tokenizer, first.tokenizer))
      throw new FolderError(
        FILES.tokenizer,
        `${what}: its tokenizer.json differs from --model ${dir}'s: ensemble members must share their tokenizers`,
      );
    if (!sameTokenizer(m.targetTokenizer, first.targetTokenizer))
      throw new FolderError(
        FILES.targetTokenizer,
        `${what}: its ${FILES.targetTokenizer} differs from --model ${dir}'s: ` +
          `ensemble members must share their tokenizers`,
      );
    out.push(m.model);
  }
  return out;
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

/** Whether the folder has `file`, without reading a large one whole where the source can avoid it. */
async function has(src: FolderSource, file: string): Promise<boolean> {
  if (src.range) return (await src.range(file)) !== undefined;
  return (await src.read(file)) !== undefined;
}

async function openHfGpt2(src: FolderSource, config: unknown, options: OpenOptions): Promise<LoadedLm> {
  const tokenizerJson = await readJsonFile(src, FILES.tokenizer);
  const tokenizer = hfTokenizer(
    tokenizerJson !== undefined
      ? { tokenizer: tokenizerJson }
      : {
          vocab: await readJsonFile(src, FILES.vocab),
          merges: await src.read(FILES.merges).then((b) => (b === undefined ? undefined : decoder.decode(b))),
        },
    src.name,
  ); // named before any weight is read
  const ranged = await src.range?.(FILES.weights);
  let model: Awaited<ReturnType<typeof readHfGpt2Streaming>>;
  try {
    if (ranged) {
      model = await readHfGpt2Streaming(config, ranged.size, ranged.read, options.progress);
    } else {
      const bytes = await src.read(FILES.weights);
      if (bytes === undefined)
        throw (await has(src, FILES.pytorchWeights)) ? pytorchOnly(src.name) : notFound(FILES.weights, src.name);
      model = await readHfGpt2Streaming(config, bytes.length, async (b, e) => bytes.subarray(b, e), options.progress);
    }
  } catch (e) {
    throw e instanceof FolderError ? e : hfWeightsError(e, src.name);
  }
  return checkedHf(model, tokenizer, src.name, src.label);
}
