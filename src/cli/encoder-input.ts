/**
 * What `qkv embed`, `qkv fill-mask` and `qkv classify` share: the texts (the command's arguments, else one per
 * line of stdin, empty lines kept), --dtype as the pipeline's option, and warnings on stderr.
 */
import { readFileSync } from 'node:fs';
import type { PipelineWarning } from '../pipelines/index.ts';
import type { PipelineDType } from '../pipelines/options.ts';
import { UserError } from './files.ts';

/** The texts of a command: its arguments, else stdin's lines (a final line end ends the last line). */
export function inputTexts(args: readonly string[], command: string): string[] {
  if (args.length > 0) return [...args];
  const text = readFileSync(0, 'utf8');
  const lines = text.split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  if (lines.length === 0) throw new UserError(`${command}: no text: give it as arguments or on stdin, one per line`);
  return lines;
}

/** The pipeline options of --dtype. */
export function dtypeOf(dtype: string | undefined): { dtype?: PipelineDType } {
  return dtype ? { dtype: dtype as PipelineDType } : {};
}

/** A pipeline warning as the CLI prints it (stderr). */
export const warnTo =
  (log: (line: string) => void) =>
  (w: PipelineWarning): void =>
    log(`warning: ${w.message}`);
