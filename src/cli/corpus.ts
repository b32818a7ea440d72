/** Multi30K (or any parallel corpus laid out the same way): SPLIT.LANG[.gz], one sentence a line. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { UserError } from './files.ts';

export function readLines(path: string): string[] {
  const gz = `${path}.gz`;
  const file = existsSync(path) ? path : existsSync(gz) ? gz : null;
  if (!file) throw new UserError(`corpus file not found: ${path} (or ${gz})`);
  const raw = readFileSync(file);
  const text = file.endsWith('.gz') ? gunzipSync(raw).toString('utf8') : raw.toString('utf8');
  const lines = text.split('\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

export function readParallel(dataDir: string, split: string, srcLang: string, tgtLang: string): { src: string[]; tgt: string[] } {
  const src = readLines(join(dataDir, `${split}.${srcLang}`));
  const tgt = readLines(join(dataDir, `${split}.${tgtLang}`));
  if (src.length !== tgt.length) {
    throw new UserError(`corpus ${split}: ${src.length} ${srcLang} lines but ${tgt.length} ${tgtLang} lines`);
  }
  return { src, tgt };
}
