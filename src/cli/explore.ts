/**
 * `qkv explore`: the attention explorer. It serves the page built by Vite (dist/web, `npm run
 * build:web`) and the model folders it is given (every folder under ./models/ by default) with the
 * static server of src/server/static.ts; the page lists them in its model switcher, opens the one
 * chosen through the folder module (src/folder/, from its URL) and runs it in the browser with qkv.
 * Here: where the page and the default folders are, and the command's checks and messages. Every
 * folder is opened here through the folder module first, so a bad one is refused before the server
 * starts, with the module's message naming the file.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FILES, hfTokenizer, pytorchOnly, type FolderKind } from '../folder/index.ts';
import { folderKindOf, pathNamer, readFileIn, readGptShape, readJsonIn, readSeq2SeqShape } from '../folder/node.ts';
import { notFound } from '../folder/seq2seq.ts';
import {
  describeFolder,
  folderIds,
  isLoopback,
  startExploreServer,
  type ExploreServer,
  type ServedFolder,
} from '../server/static.ts';
import { asUserError, UserError } from './files.ts';

// The server moved to src/server/static.ts; these names stay importable from here for the tests and benches that use
// them.
export {
  MODEL_FILES,
  startExploreServer,
  type ExploreServer,
  type ExploreServerOptions,
  type ServedFolder,
} from '../server/static.ts';

/** The package root (two levels above this file, in src/cli or dist/cli). */
function packageRoot(): string {
  return fileURLToPath(new URL('../../', import.meta.url));
}

/** The built page: dist/web under the package root, if it has an index.html. */
export function findWebDir(): string | null {
  const dir = join(packageRoot(), 'dist', 'web');
  return existsSync(join(dir, 'index.html')) ? dir : null;
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The folders `qkv explore` serves without --model: every folder under models/ that holds a
 * config.json (by name), else the run folder (runs/NAME/) whose model.safetensors is newest;
 * looked up in the current folder, then in the package root. Empty when there is none.
 */
export function findDefaultModels(roots: readonly string[] = [process.cwd(), packageRoot()]): string[] {
  for (const root of [...new Set(roots.map((r) => resolve(r)))]) {
    const shipped = join(root, 'models');
    if (isDir(shipped)) {
      const dirs = readdirSync(shipped)
        .sort()
        .map((n) => join(shipped, n))
        .filter((d) => isDir(d) && existsSync(join(d, FILES.config)));
      if (dirs.length > 0) return dirs;
    }
    const runs = join(root, 'runs');
    if (!isDir(runs)) continue;
    let best: { dir: string; mtime: number } | null = null;
    for (const name of readdirSync(runs)) {
      const dir = join(runs, name);
      try {
        if (!isDir(dir) || !existsSync(join(dir, FILES.config))) continue;
        const mtime = statSync(join(dir, FILES.weights)).mtimeMs;
        if (!best || mtime > best.mtime) best = { dir, mtime };
      } catch {}
    }
    if (best) return [best.dir];
  }
  return [];
}

/**
 * Open `dir` through the folder module as the page will (config.json, the tokenizers, the weights'
 * presence; a Hugging Face GPT-2's weights are not read here): its kind, or a UserError naming the file.
 */
export function checkFolder(dir: string): FolderKind {
  return asUserError(() => {
    const kind = folderKindOf(dir);
    const name = pathNamer(dir);
    if (kind === 'seq2seq') readSeq2SeqShape(dir);
    else if (kind === 'gpt') readGptShape(dir);
    else {
      const tokenizer = readJsonIn(dir, FILES.tokenizer);
      hfTokenizer(
        tokenizer !== undefined
          ? { tokenizer }
          : { vocab: readJsonIn(dir, FILES.vocab), merges: textOf(readFileIn(dir, FILES.merges)) },
        name,
      );
      if (!existsSync(join(dir, FILES.weights)) && existsSync(join(dir, FILES.pytorchWeights))) throw pytorchOnly(name);
    }
    if (!existsSync(join(dir, FILES.weights))) throw notFound(FILES.weights, name);
    return kind;
  });
}

const textOf = (b: Uint8Array | undefined) => (b === undefined ? undefined : Buffer.from(b).toString('utf8'));

const KIND_LINES: Record<FolderKind, string> = {
  seq2seq: 'translation model, Translate view',
  gpt: 'language model, Generate view',
  'hf-gpt2': 'Hugging Face GPT-2, Generate view',
};

export interface ExploreCommandOptions {
  /** Model folders (--model, repeatable); none: findDefaultModels. */
  model?: string[];
  port: number;
  host: string;
  log: (line: string) => void;
}

/** The folders to serve, each checked and described through the folder module. */
export function servedFolders(given: readonly string[] | undefined, log: (line: string) => void): ServedFolder[] {
  let dirs: string[];
  if (given && given.length > 0) {
    dirs = given.map((d) => resolve(d));
    for (const [i, d] of dirs.entries()) {
      if (!isDir(d)) throw new UserError(`--model ${given[i]}: model folder not found: ${d}`);
    }
    const seen = new Set<string>();
    dirs = dirs.filter((d) => !seen.has(d) && Boolean(seen.add(d)));
  } else {
    dirs = findDefaultModels();
    if (dirs.length === 0) {
      log(`qkv explore: no model found (looked for folders under models/, then runs/*/ with a ${FILES.weights}).`);
      log('  The Translate view needs one: pass --model DIR, or train one with `qkv train --out runs/NAME`');
      log('  (or a language model with `qkv train-lm --out runs/NAME`: the page then shows the Generate view).');
      log('  The positional-encoding and step-by-step views work, and Generate opens a GPT folder from your disk.');
    }
  }
  const ids = folderIds(dirs);
  return dirs.map((d, i) => {
    checkFolder(d);
    return asUserError(() => describeFolder(d, ids[i]));
  });
}

export async function explore(o: ExploreCommandOptions): Promise<ExploreServer> {
  const webDir = findWebDir();
  if (!webDir)
    throw new UserError(
      `the explorer page is not built (no ` +
        `${join(packageRoot(), 'dist', 'web', 'index.html')}): run \`npm run ` +
        `build:web\``,
    );
  const models = servedFolders(o.model, o.log);
  const s = await startExploreServer({ webDir, models, host: o.host, port: o.port });
  for (const m of models) {
    const rel = relative(process.cwd(), m.dir);
    o.log(
      `qkv explore: model ` +
        `${rel === '' ? '.' : rel.startsWith('..') ? m.dir : rel} ` +
        `(${KIND_LINES[m.kind!]}: ${m.description})`,
    );
    const members =
      m.kind === 'seq2seq'
        ? (readJsonIn(m.dir, FILES.config) as { decoding?: { ensemble?: string[] } }).decoding?.ensemble
        : undefined;
    if (members)
      o.log(
        `  its ${FILES.config} names an ensemble (${members.join(', ')}) for ` +
          `qkv translate and eval; the page runs and shows the folder's own ` +
          `model alone`,
      );
  }
  if (!isLoopback(o.host))
    o.log(`qkv explore: listening on ${o.host}: anyone who can reach this address can load the page and the models`);
  o.log(`qkv explore: open ${s.url}  (Ctrl-C stops)`);
  return s;
}
