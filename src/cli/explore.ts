/**
 * `qkv explore`: the attention explorer. It serves the page built by Vite (dist/web, `npm run
 * build:web`) and the files of one model folder (a translation model from `qkv train` or a language
 * model from `qkv train-lm`) with the static server of src/server/static.ts; the page fetches them,
 * reads the kind from config.json's format and runs the model in the browser with qkv itself.
 * Here: where the page and the default model are, and the command's checks and messages.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isLoopback, MODEL_FILES, startExploreServer, type ExploreServer } from '../server/static.ts';
import { modelDirKind } from './export.ts';
import { loadModelShape, UserError } from './files.ts';

// The server moved to src/server/static.ts; these names stay importable from here for the tests and benches that use them.
export { MODEL_FILES, startExploreServer, type ExploreServer, type ExploreServerOptions } from '../server/static.ts';

/** The package root (two levels above this file, in src/cli or dist/cli). */
function packageRoot(): string {
  return fileURLToPath(new URL('../../', import.meta.url));
}

/** The built page: dist/web under the package root, if it has an index.html. */
export function findWebDir(): string | null {
  const dir = join(packageRoot(), 'dist', 'web');
  return existsSync(join(dir, 'index.html')) ? dir : null;
}

function isModelDir(dir: string): boolean {
  return MODEL_FILES.every((f) => existsSync(join(dir, f)));
}

/**
 * The model `qkv explore` opens without --model: models/multi30k-en-de if it exists, else the
 * run folder (runs/NAME/) whose model.safetensors is newest; looked up in the current folder,
 * then in the package root. Null when there is none.
 */
export function findDefaultModel(roots: readonly string[] = [process.cwd(), packageRoot()]): string | null {
  for (const root of [...new Set(roots.map((r) => resolve(r)))]) {
    const shipped = join(root, 'models', 'multi30k-en-de');
    if (isModelDir(shipped)) return shipped;
    const runs = join(root, 'runs');
    if (!existsSync(runs)) continue;
    let best: { dir: string; mtime: number } | null = null;
    for (const name of readdirSync(runs)) {
      const dir = join(runs, name);
      try {
        if (!statSync(dir).isDirectory() || !isModelDir(dir)) continue;
        const mtime = statSync(join(dir, 'model.safetensors')).mtimeMs;
        if (!best || mtime > best.mtime) best = { dir, mtime };
      } catch {
        continue;
      }
    }
    if (best) return best.dir;
  }
  return null;
}

export interface ExploreCommandOptions {
  model?: string;
  port: number;
  host: string;
  log: (line: string) => void;
}

export async function explore(o: ExploreCommandOptions): Promise<ExploreServer> {
  const webDir = findWebDir();
  if (!webDir) throw new UserError(`the explorer page is not built (no ${join(packageRoot(), 'dist', 'web', 'index.html')}): run \`npm run build:web\``);
  let modelDir: string | null;
  if (o.model) {
    modelDir = resolve(o.model);
    if (!existsSync(modelDir)) throw new UserError(`model folder not found: ${o.model}`);
    const missing = MODEL_FILES.filter((f) => !existsSync(join(modelDir!, f)));
    if (missing.length > 0) throw new UserError(`${o.model} lacks ${missing.join(', ')} (a model folder holds ${MODEL_FILES.join(', ')})`);
  } else {
    modelDir = findDefaultModel();
    if (!modelDir) {
      o.log('qkv explore: no model found (looked for models/multi30k-en-de, then runs/*/ with a model.safetensors).');
      o.log('  The Translate view needs one: pass --model DIR, or train one with `qkv train --out runs/NAME`');
      o.log('  (or a language model with `qkv train-lm --out runs/NAME`: the page then shows the Generate view).');
      o.log('  The positional-encoding and step-by-step views work without a model.');
    }
  }
  const dirKind = modelDir ? modelDirKind(modelDir) : null;
  // A translation model's config and tokenizers (target_tokenizer.json too, where the vocabularies are separate) are checked here, not in the page.
  const members = dirKind === 'seq2seq' ? loadModelShape(modelDir!).config.decoding?.ensemble : undefined;
  const kind = dirKind && (dirKind === 'gpt' ? 'language model, Generate view' : 'translation model, Translate view');
  const s = await startExploreServer({ webDir, modelDir, host: o.host, port: o.port });
  if (modelDir) {
    const rel = relative(process.cwd(), modelDir);
    o.log(`qkv explore: model ${rel === '' ? '.' : rel.startsWith('..') ? modelDir : rel} (${kind})`);
    if (members) o.log(`  its config.json names an ensemble (${members.join(', ')}) for qkv translate and eval; the page runs and shows the folder's own model alone`);
  }
  if (!isLoopback(o.host)) o.log(`qkv explore: listening on ${o.host}: anyone who can reach this address can load the page and the model`);
  o.log(`qkv explore: open ${s.url}  (Ctrl-C stops)`);
  return s;
}
