/**
 * Where a model folder's files come from, and the two drivers of the one folder reader (./open.ts).
 * Browser-safe: a Node directory is `dirSource` in ./node.ts.
 *
 * The reader is written once, as a generator: each time it needs something from the source (a file's
 * bytes, a JSON file, a byte range of the weights, whether the folder exists) it yields what the
 * source answered, a value or a promise, and is given the value back. {@link runSync} drives it over
 * a source that answers at once (a Node directory, contents in memory): the CLI and the training loop
 * stay synchronous. {@link runAsync} drives it over any source (a URL, picked `File`s, a Node
 * directory too): `openFolder`. Both run the same checks in the same order, so every source gives the
 * same model and the same errors.
 */
import { FolderError, parseJsonText, type FileNamer } from './spec.ts';

/** A value, or a promise of it: what a source may answer. */
export type Awaitable<T> = T | Promise<T>;

/** A file read in byte ranges: a 500 MB GPT-2's weights are read one tensor at a time, never whole. */
export interface RangedFile {
  /** The file's length in bytes. */
  size: number;
  /** Bytes [begin, end) of the file (fewer where the file ends first). */
  read(begin: number, end: number): Awaitable<Uint8Array>;
}

/**
 * Where a folder's files come from. Each method may answer at once or with a promise: a source that
 * answers at once (a Node directory, contents in memory) can be read synchronously as well.
 */
export interface FolderSource {
  /** The whole file, or undefined when the folder has no such file. */
  read(file: string): Awaitable<Uint8Array | undefined>;
  /** How a file is named in messages (a path, a URL, a bare name). */
  name: FileNamer;
  /** The folder's name, for messages and logs. */
  label: string;
  /** A JSON file already parsed, where the source holds it so (contents given as objects); else read and parsed. */
  json?(file: string): Awaitable<unknown>;
  /** Whether the folder itself exists, where the source can tell (a Node directory); absent: it does. */
  exists?(): Awaitable<boolean>;
  /** A subfolder (ensemble members), where the source has them. */
  sub?(path: string): FolderSource;
  /** A file read in byte ranges, or undefined when the folder has no such file; absent: read whole. */
  range?(file: string): Awaitable<RangedFile | undefined>;
}

/** What the folder reader yields (a source's answer, or a promise of it) and returns: see the file's comment. */
export type Steps<T> = Generator<unknown, T, unknown>;

/** The value of `x`, in a reader: `const bytes = yield* wait(src.read(file))`. */
export function* wait<T>(x: Awaitable<T>): Steps<T> {
  return (yield x) as T;
}

function isThenable(x: unknown): x is PromiseLike<unknown> {
  return typeof x === 'object' && x !== null && typeof (x as PromiseLike<unknown>).then === 'function';
}

/**
 * Run a reader over a source that answers at once. A source that answers with a promise (a URL,
 * `File`s) is refused in one line: open it with the asynchronous door.
 */
export function runSync<T>(steps: Steps<T>): T {
  let r = steps.next();
  while (!r.done) {
    if (isThenable(r.value)) {
      // Not awaited: a rejection later must not be reported as unhandled.
      Promise.resolve(r.value).catch(() => {});
      steps.return(undefined as T);
      throw new Error(
        'this folder source answers asynchronously (a URL, File objects): open it with await openFolder(...)',
      );
    }
    r = steps.next(r.value);
  }
  return r.value;
}

/** Run a reader over any source; a source's failure is thrown into the reader, where its messages name the file. */
export async function runAsync<T>(steps: Steps<T>): Promise<T> {
  let r = steps.next();
  while (!r.done) {
    let value: unknown;
    try {
      value = await r.value;
    } catch (e) {
      r = steps.throw(e);
      continue;
    }
    r = steps.next(value);
  }
  return r.value;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A file's bytes, or undefined when the folder lacks it. */
export function* readBytes(src: FolderSource, file: string): Steps<Uint8Array | undefined> {
  return yield* wait(src.read(file));
}

/** A text file (UTF-8), or undefined when the folder lacks it. */
export function* readText(src: FolderSource, file: string): Steps<string | undefined> {
  const bytes = yield* readBytes(src, file);
  return bytes === undefined ? undefined : decoder.decode(bytes);
}

/** A JSON file, parsed (undefined when the folder lacks it; not JSON: a FolderError naming it). */
export function* readJson(src: FolderSource, file: string): Steps<unknown> {
  if (src.json) return yield* wait(src.json(file));
  const text = yield* readText(src, file);
  return text === undefined ? undefined : parseJsonText(text, file, src.name(file));
}

/** Whether the folder exists (sources that cannot tell: it does). */
export function* folderExists(src: FolderSource): Steps<boolean> {
  return src.exists ? yield* wait(src.exists()) : true;
}

/** A file for reading in ranges; a source without ranges reads it whole once and answers views of it. */
export function* readRanged(src: FolderSource, file: string): Steps<RangedFile | undefined> {
  if (src.range) return yield* wait(src.range(file));
  const bytes = yield* readBytes(src, file);
  return bytes === undefined ? undefined : { size: bytes.length, read: (b, e) => bytes.subarray(b, e) };
}

/** Whether the folder has `file`, without reading it whole where the source can avoid it. */
export function* hasFile(src: FolderSource, file: string): Steps<boolean> {
  if (src.range) return (yield* wait(src.range(file))) !== undefined;
  return (yield* readBytes(src, file)) !== undefined;
}

/** A file's contents as {@link contentsSource} takes them: bytes, text, or (a JSON file) the parsed value. */
export type FileContents = Uint8Array | string | object;

/** Contents by file name, as a Map or a plain object. */
export type FolderContents = Map<string, FileContents> | Record<string, FileContents>;

function bytesOf(x: FileContents): Uint8Array {
  if (x instanceof Uint8Array) return x;
  return encoder.encode(typeof x === 'string' ? x : JSON.stringify(x));
}

/**
 * A folder from its files' contents, by name ('member-2/model.safetensors' for a member's files).
 * A value that is neither bytes nor text is a JSON file already parsed. Files are named by `name`
 * (default: as given, members under their subfolder).
 */
export function contentsSource(
  files: FolderContents,
  label = 'folder',
  prefix = '',
  name: FileNamer = (f) => `${prefix}${f}`,
): FolderSource {
  const map = files instanceof Map ? files : new Map(Object.entries(files));
  const get = (f: string): FileContents | undefined => map.get(prefix + f);
  return {
    label: prefix ? `${label}/${prefix.slice(0, -1)}` : label,
    name,
    read: (f) => {
      const x = get(f);
      return x === undefined ? undefined : bytesOf(x);
    },
    json: (f) => {
      const x = get(f);
      if (x instanceof Uint8Array) return parseJsonText(decoder.decode(x), f, name(f));
      return typeof x === 'string' ? parseJsonText(x, f, name(f)) : x;
    },
    exists: () => prefix === '' || [...map.keys()].some((k) => k.startsWith(prefix)),
    range: (f) => {
      const x = get(f);
      if (x === undefined) return undefined;
      const bytes = bytesOf(x);
      return { size: bytes.length, read: (b, e) => bytes.subarray(b, e) };
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
 * name, and its subfolders' files for ensemble members. The weights are read in ranges (File.slice).
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
    exists: () => prefix === '' || [...byPath.keys()].some((k) => k.startsWith(prefix)),
    range: (f) => {
      const file = byPath.get(prefix + f);
      return file
        ? { size: file.size, read: async (b, e) => new Uint8Array(await file.slice(b, e).arrayBuffer()) }
        : undefined;
    },
    sub: (p) => filesSourceOf(byPath, label, `${prefix}${p}/`),
  };
}

/** Anything the door takes: a source, contents by file name, picked File objects, or a base URL (string or URL). */
export type FolderInput = FolderSource | FolderContents | Iterable<File> | URL | string;

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
  return contentsSource(input as Record<string, FileContents>);
}
