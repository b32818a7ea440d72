/**
 * Where the explorer's page and its default model folders are on disk, and a folder checked as the page will open it.
 * Library code (the explore command, the tests and the benches use it): errors are the folder module's FolderErrors,
 * naming the file.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FILES, type FolderKind } from '../folder/index.ts';
import { pathNamer, readShapeDir } from '../folder/node.ts';
import { notFound } from '../folder/seq2seq.ts';

/** The package root (two levels above this file, in src/server or dist/server). */
export function packageRoot(): string {
  return fileURLToPath(new URL('../../', import.meta.url));
}

/** Where the built page should be: dist/web/index.html under the package root. */
export function webIndexPath(): string {
  return join(packageRoot(), 'dist', 'web', 'index.html');
}

/** The built page: dist/web under the package root, if it has an index.html. */
export function findWebDir(): string | null {
  const index = webIndexPath();
  return existsSync(index) ? dirname(index) : null;
}

export function isDir(p: string): boolean {
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
 * presence; a Hugging Face GPT-2's or Marian's weights are not read here; the page reads a Marian
 * folder's model.safetensors, never its pytorch_model.bin): its kind, or a FolderError naming the file.
 */
export function checkFolder(dir: string): FolderKind {
  const { kind } = readShapeDir(dir);
  if (!existsSync(join(dir, FILES.weights))) throw notFound(FILES.weights, pathNamer(dir));
  return kind;
}
