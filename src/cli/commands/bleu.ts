/**
 * `qkv bleu`: score translation files against references with sacreBLEU's corpus BLEU (and chrF),
 * and compare systems with a paired bootstrap (sacreBLEU's `sacrebleu REF -i HYP [-m bleu chrf]` and
 * `--paired-bs`), without decoding anything: for output written by `qkv eval --output`, `qkv
 * translate`, or any other system.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from '@commander-js/extra-typings';
import { corpusBleu, type BleuScore } from '../../text/bleu.ts';
import { corpusChrf, type ChrfScore } from '../../text/chrf.ts';
import { pairedBootstrap, type PairedBootstrapResult } from '../../text/significance.ts';
import { direction, int } from '../args.ts';
import { DEFAULT_DATA, readLines } from '../corpus.ts';
import { UserError } from '../files.ts';
import { dataOption, type FlagsOf, type Optional } from '../options.ts';

function flags() {
  const cmd = new Command('bleu')
    .description(
      'score translation files against references with BLEU (and chrF; ' +
        'sacreBLEU-compatible), and compare them with a paired bootstrap; no ' +
        'decoding',
    )
    .argument(
      '[files...]',
      'translations, one sentence a line (e.g. from qkv eval --output); with --paired-bs the first is the ' +
        'baseline; - reads stdin, as does giving none when stdin is not a terminal',
    )
    .option('--ref <file>', 'reference translations, one sentence a line (plain or .gz)')
    .option('--split <name>', 'or the references of a corpus split: DATA/SPLIT.TGT (e.g. val)');
  return dataOption(cmd, 'corpus folder, with --split', (o) =>
    o.split === undefined
      ? null
      : [`${o.split}.${(o.direction as { tgt: string } | undefined)?.tgt ?? o.tgt ?? 'de'}.gz`],
  )
    .option('--tgt <lang>', 'target language, with --split (default: de)')
    .option('--direction <src-tgt>', 'or the target language as a direction, e.g. en-fr', direction('--direction'))
    .option(
      '--paired-bs',
      "compare each file with the first by paired bootstrap resampling (Koehn 2004; sacreBLEU's --paired-bs)",
      false,
    )
    .option('--samples <n>', 'bootstrap resamples, with --paired-bs (default: 1000)', int('--samples'))
    .option('--chrf', "also chrF2, the character n-gram F-score (sacreBLEU's -m chrf), of each file", false)
    .option('--lowercase', "score case-insensitively (sacreBLEU's -lc, signature case:lc)", false)
    .option('--json', 'print the scores as one JSON array, an object per file, instead of lines', false)
    .addHelpText(
      'after',
      `
Prints sacreBLEU's line (BLEU = score, 1- to 4-gram precisions, brevity penalty, lengths) for each
file and its signature; with --chrf then each file's chrF2 and its signature. The paired bootstrap's p
is Koehn's one-sided count: the share of resamples (plus one) in which a file does not score above
the first; small means its lead holds. With --json: an array with an object per file (file, bleu,
and with --chrf chrf, each with its score and signature; with --paired-bs pairedBs against the first).`,
    );
}

export function bleuCommand() {
  return flags().action((files, o) => bleu({ ...o, files }));
}

/**
 * `qkv bleu`'s options and its hypothesis files (with pairedBs the first is the baseline); the
 * references come from `ref` or from DATA/SPLIT.TGT[.gz].
 */
export type BleuCommandOptions = Optional<
  FlagsOf<typeof flags>,
  'data' | 'pairedBs' | 'chrf' | 'lowercase' | 'json'
> & {
  files: string[];
};

/**
 * `won 98 of 1000 paired bootstrap resamples, p 0.9021 (needs < 0.05), Δ BLEU 95% [-1.05, 0.28]`: how every comparison
 * is reported.
 */
export function bootstrapSummary(t: PairedBootstrapResult, needed?: number): string {
  return (
    `won ${t.wins} of ${t.samples} paired bootstrap resamples, p ` +
    `${t.p.toFixed(4)}${needed === undefined ? '' : ` (needs < ${needed})`}, ` +
    `Δ BLEU 95% [${t.delta95[0].toFixed(2)}, ${t.delta95[1].toFixed(2)}]`
  );
}

/** The reference lines and where they came from, from --ref or --split. */
function references(o: BleuCommandOptions): { refs: string[]; from: string } {
  if (o.ref !== undefined && o.split !== undefined)
    throw new UserError('--ref and --split both given: the references come from one of them');
  if (o.ref === undefined && o.split === undefined)
    throw new UserError('no references: pass --ref FILE or --split NAME (e.g. --split val)');
  if (o.tgt !== undefined && o.direction !== undefined)
    throw new UserError('--tgt and --direction both given: pass one');
  if (o.ref !== undefined) {
    if (!existsSync(o.ref)) throw new UserError(`--ref: file not found: ${o.ref}`);
    return { refs: readLines(o.ref), from: o.ref };
  }
  const tgt = o.direction?.tgt ?? o.tgt ?? 'de';
  const path = join(o.data ?? DEFAULT_DATA, `${o.split}.${tgt}`);
  return { refs: readLines(path), from: path };
}

/** BLEU as --json prints it: sacreBLEU's numbers under qkv's names, with the signature. */
export function bleuJson(b: BleuScore): Record<string, unknown> {
  const { score, precisions, bp, ratio, sysLen, refLen, counts, totals, signature } = b;
  return { name: 'BLEU', score, precisions, bp, ratio, hypLen: sysLen, refLen, counts, totals, signature };
}

/** chrF as --json prints it. */
export function chrfJson(c: ChrfScore): Record<string, unknown> {
  return { name: c.name, score: c.score, signature: c.signature };
}

/** The hypothesis files, '-' (stdin) for none when stdin is not a terminal. */
function hypothesisFiles(files: string[]): string[] {
  if (files.length === 0 && !process.stdin.isTTY) return ['-'];
  if (files.length === 0) throw new UserError('no hypothesis files: pass one or more files to score (or - for stdin)');
  if (files.filter((f) => f === '-').length > 1)
    throw new UserError('- (stdin) given more than once: it can be read once');
  return files;
}

/** A hypothesis file's lines; '-' reads them from stdin. */
function hypothesisLines(file: string): string[] {
  if (file !== '-') {
    if (!existsSync(file)) throw new UserError(`hypothesis file not found: ${file}`);
    return readLines(file);
  }
  const lines = readFileSync(0, 'utf8').split('\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

export function bleu(o: BleuCommandOptions): void {
  const files = hypothesisFiles(o.files);
  if (o.pairedBs && files.length < 2)
    throw new UserError(`--paired-bs needs two or more files (the first is the baseline), got ${files.length}`);
  if (o.samples !== undefined && !o.pairedBs)
    throw new UserError('--samples without --paired-bs: it is the number of bootstrap resamples');
  const { refs, from } = references(o);
  const systems = files.map((file) => {
    const hyps = hypothesisLines(file);
    if (hyps.length !== refs.length) {
      throw new UserError(
        `${file === '-' ? 'stdin' : file} has ${hyps.length} lines but the references (${from}) have ` +
          `${refs.length}: one translation a line, in the references' order`,
      );
    }
    return { file, hyps };
  });
  const options = { lowercase: o.lowercase ?? false };
  // One file: sacreBLEU's lines as they are; several: each led by its file name.
  const named = (i: number, line: string) => (systems.length === 1 ? line : `${systems[i].file}: ${line}`);
  const scores = systems.map((s) => corpusBleu(s.hyps, refs, options));
  const chrf = o.chrf ? systems.map((s) => corpusChrf(s.hyps, refs, options)) : null;
  const [base, ...others] = systems;
  const tests = o.pairedBs
    ? others.map((s) => pairedBootstrap(base.hyps, s.hyps, refs, { samples: o.samples ?? 1000, bleu: options }))
    : [];
  if (o.json) {
    const json = systems.map((s, i) => ({
      file: s.file,
      bleu: bleuJson(scores[i]),
      ...(chrf && { chrf: chrfJson(chrf[i]) }),
      ...(i > 0 && o.pairedBs && { pairedBs: { against: base.file, ...tests[i - 1] } }),
    }));
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
    return;
  }
  const lines = scores.map((b, i) => named(i, b.toString()));
  tests.forEach((t, i) => {
    const s = others[i];
    lines.push(
      `${s.file} against ${base.file}: ` +
        `${t.system >= t.baseline ? '+' : ''}${(t.system - t.baseline).toFixed(2)} BLEU, ` +
        bootstrapSummary(t),
    );
  });
  lines.push(scores[0].signature);
  if (chrf) lines.push(...chrf.map((c, i) => named(i, c.toString())), chrf[0].signature);
  process.stdout.write(lines.map((l) => `${l}\n`).join(''));
}
