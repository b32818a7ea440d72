/** Multi30K (or any parallel corpus laid out the same way): SPLIT.LANG[.gz], one sentence a line. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { UserError } from './files.ts';

/** The corpus folder the commands read by default (relative to the working directory). */
export const DEFAULT_DATA = 'data/multi30k';

/**
 * Why a command cannot start without --data here: what the default corpus is, the files it would
 * read (`files`, e.g. train.en.gz) and where they come from. One line, as every user error.
 */
export function missingCorpus(files: readonly string[]): string {
  return (
    `no corpus: --data not given and there is no ${DEFAULT_DATA}/ in ${process.cwd()}. ` +
    'The default corpus is Multi30K (task 1: English captions of Flickr30K ' +
    'images with German and French translations; ' +
    '29,000 training, 1,014 val and 1,000 test_2016_flickr sentences), one sentence a line in SPLIT.LANG.gz files; ' +
    `this needs ${files.join(', ')}. ` +
    `Get them from qkv's repository (its ${DEFAULT_DATA}/ folder) or from ` +
    `https://github.com/multi30k/dataset (data/task1/raw/), ` +
    `then run from the folder that holds ${DEFAULT_DATA}/, or pass --data DIR`
  );
}

/** The lines of a text file, plain or gzipped: `path`, else `path.gz` (a path that ends in .gz is read as given). */
export function readLines(path: string): string[] {
  const gz = path.endsWith('.gz') ? null : `${path}.gz`;
  const file = existsSync(path) ? path : gz && existsSync(gz) ? gz : null;
  if (!file) throw new UserError(`corpus file not found: ${path}${gz ? ` (or ${gz})` : ''}`);
  const raw = readFileSync(file);
  const text = file.endsWith('.gz') ? gunzipSync(raw).toString('utf8') : raw.toString('utf8');
  const lines = text.split('\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

export function readParallel(
  dataDir: string,
  split: string,
  srcLang: string,
  tgtLang: string,
): { src: string[]; tgt: string[] } {
  const src = readLines(join(dataDir, `${split}.${srcLang}`));
  const tgt = readLines(join(dataDir, `${split}.${tgtLang}`));
  if (src.length !== tgt.length) {
    throw new UserError(`corpus ${split}: ${src.length} ${srcLang} lines but ${tgt.length} ${tgtLang} lines`);
  }
  return { src, tgt };
}
