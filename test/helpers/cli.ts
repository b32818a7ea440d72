/**
 * What the CLI tests share: running `qkv` from the sources as a child process, and small corpora cut
 * from the shipped Multi30K files.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';

export const root = new URL('../../', import.meta.url).pathname;

/** `qkv ARGS` (src/cli/main.ts through tsx) in the repository root, with `input` on its stdin. */
export function qkv(args: string[], input?: string): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/cli/main.ts'), ...args], {
    encoding: 'utf8',
    input,
    cwd: root,
  });
}

/** The lines of one of data/multi30k's gzipped files, e.g. `train.en.gz`. */
export function multi30kLines(file: string): string[] {
  return gunzipSync(readFileSync(join(root, 'data/multi30k', file)))
    .toString('utf8')
    .split('\n');
}

/**
 * A corpus folder `dir` (created) with SPLIT.LANG files cut from Multi30K's training pairs: each
 * split `[name, from, to]` takes lines from..to of train.LANG.gz for every language.
 */
export function writeCorpus(
  dir: string,
  splits: readonly (readonly [string, number, number])[],
  langs: readonly string[] = ['en', 'de'],
): void {
  mkdirSync(dir, { recursive: true });
  for (const lang of langs) {
    const all = multi30kLines(`train.${lang}.gz`);
    for (const [split, a, b] of splits) writeFileSync(join(dir, `${split}.${lang}`), `${all.slice(a, b).join('\n')}\n`);
  }
}
