/**
 * `npm run check-records` (issue 40): every figure the project quotes is recomputed from a committed
 * file, and any difference fails. The figures are listed in records/claims.json, each with the file
 * behind it:
 *
 *   bleu     a translation output and its references: sacreBLEU's line (score, precisions, BP,
 *            lengths), recomputed with qkv's sacreBLEU-exact scorer (src/text/bleu.ts)
 *   chrf     the same for chrF2 (src/text/chrf.ts)
 *   paired   two outputs: the paired bootstrap line of `qkv bleu --paired-bs` (seeded, so exact)
 *   history  a run's history.json: the value of a field at a step (or of its averaged entry)
 *   ratio    a benchmark results file (bench/results/): the ratio of two columns of one table row,
 *            recomputed from the measurements and rounded as quoted
 *   value    a benchmark results file: one cell, or one part of a cell that holds several ("222 / — /
 *            4173", peak MB of qkv / tfjs / torch), as quoted
 *
 * Each claim also names the files that quote it (`quoted`, "README" for README.md), and each of them
 * must hold the figure: a BLEU or chrF claim's score, a paired claim's difference (without its "+"),
 * any other claim's `expect`. Where a file writes it in another form ("341 training minutes" for
 * 341.3), the claim's `as` gives that form for that file; a form must be the figure rounded or a
 * part of the claim's line.
 *
 *   npx tsx scripts/check-records.ts            check every claim; exit 1 on any difference
 *   npx tsx scripts/check-records.ts --table    print the claims as docs/evidence.md's table
 *   npx tsx scripts/check-records.ts --claims F  another claims file (the tests use this)
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootstrapSummary } from '../src/cli/commands/bleu.ts';
import { readLines } from '../src/cli/corpus.ts';
import { corpusBleu } from '../src/text/bleu.ts';
import { corpusChrf } from '../src/text/chrf.ts';
import { pairedBootstrap } from '../src/text/significance.ts';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));

interface Base {
  id: string;
  /** The files that quote the figure, comma-separated; "README" is README.md. */
  quoted?: string;
  /** The form a quoted file writes the figure in, where it is not the figure itself. */
  as?: Record<string, string>;
  note?: string;
}
type Claim = Base &
  (
    | { kind: 'bleu' | 'chrf'; output: string; ref: string; expect: string; lowercase?: boolean }
    | { kind: 'paired'; baseline: string; system: string; ref: string; expect: string }
    | { kind: 'history'; file: string; step: number; averaged?: boolean; field: string; expect: string }
    | { kind: 'ratio'; file: string; row: string; num: string; den: string; expect: string; table?: string }
    | { kind: 'value'; file: string; row: string; column: string; expect: string; table?: string }
  );

function need(path: string, what: string): string {
  const p = join(ROOT, path);
  if (!existsSync(p)) throw new Error(`${what} ${path} is missing: the figure has no file behind it`);
  return p;
}

const loaded = new Map<string, unknown>();
/** `load()`'s result, computed once per key: many claims name the same outputs, references and quoting files. */
function once<T>(key: string, load: () => T): T {
  if (!loaded.has(key)) loaded.set(key, load());
  return loaded.get(key) as T;
}

function lines(path: string, what: string): readonly string[] {
  return once(`lines ${path}`, () => readLines(need(path, what)));
}

/** The cells of the row whose first cell is `row`, by the header of its table (the first table with that row, or the one whose header starts with `table`). */
function tableRow(path: string, row: string, table?: string): Map<string, string> {
  const text = once(`rows ${path}`, () => readFileSync(need(path, 'results file'), 'utf8').split('\n'));
  const cells = (l: string) =>
    l
      .trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((c) => c.trim());
  let header: string[] | null = null;
  for (const l of text) {
    if (!l.trim().startsWith('|')) {
      header = null;
      continue;
    }
    const c = cells(l);
    if (header === null) {
      header = c;
      continue;
    }
    if (c.every((x) => /^-+$/.test(x))) continue;
    if (c[0] === row && (table === undefined || header[0].startsWith(table)))
      return new Map(header.map((h, i) => [h, c[i] ?? '']));
  }
  throw new Error(`${path}: no table row "${row}"${table ? ` under a header starting "${table}"` : ''}`);
}

/** The first number of a cell ("2,262", "3.05× faster", "2.78 s"). */
function num(cell: string | undefined, what: string): number {
  const m = cell?.replace(/,/g, '').match(/-?\d+(\.\d+)?/);
  if (!m) throw new Error(`${what}: no number in ${JSON.stringify(cell)}`);
  return Number(m[0]);
}

const decimals = (s: string) => (s.split('.')[1] ?? '').length;

/** What the claim's file gives now, in the claim's own format. */
function recompute(c: Claim): string {
  switch (c.kind) {
    case 'bleu':
      return corpusBleu(lines(c.output, 'output'), lines(c.ref, 'references'), {
        lowercase: c.lowercase ?? false,
      }).toString();
    case 'chrf':
      return corpusChrf(lines(c.output, 'output'), lines(c.ref, 'references'), {
        lowercase: c.lowercase ?? false,
      }).toString();
    case 'paired': {
      const refs = lines(c.ref, 'references');
      const t = pairedBootstrap(lines(c.baseline, 'baseline'), lines(c.system, 'system'), refs, { samples: 1000 });
      const d = t.system - t.baseline;
      return `${d >= 0 ? '+' : ''}${d.toFixed(2)} BLEU, ${bootstrapSummary(t)}`;
    }
    case 'history': {
      const h = once(`history ${c.file}`, (): Record<string, unknown>[] =>
        JSON.parse(readFileSync(need(c.file, 'history'), 'utf8')),
      );
      const e = h.find((x) => x.step === c.step && (x.averaged !== undefined) === (c.averaged ?? false));
      if (!e) throw new Error(`${c.file}: no ${c.averaged ? 'averaged ' : ''}entry at step ${c.step}`);
      const v = e[c.field];
      if (typeof v !== 'number') throw new Error(`${c.file}: step ${c.step} has no number ${c.field}`);
      return v.toFixed(decimals(c.expect));
    }
    case 'ratio': {
      // The file prints each measurement rounded (51.1 ms, 2,262 ms): the quoted ratio must be the
      // rounding of a ratio those printed values allow (each ± half its last digit).
      const r = tableRow(c.file, c.row, c.table);
      const [a, b] = [r.get(c.num), r.get(c.den)];
      const x = num(a, `${c.file} "${c.row}" ${c.num}`);
      const y = num(b, `${c.file} "${c.row}" ${c.den}`);
      const half = (cell: string | undefined) =>
        0.5 * 10 ** -decimals(cell!.replace(/,/g, '').match(/-?\d+(\.\d+)?/)![0]);
      const lo = (x - half(a)) / (y + half(b));
      const hi = (x + half(a)) / (y - half(b));
      const d = decimals(c.expect);
      const q = Number(c.expect);
      const unit = 0.5 * 10 ** -d;
      const fits = q + unit >= lo && q - unit <= hi;
      return fits
        ? c.expect
        : `${(x / y).toFixed(d)} (${x} / ${y}; ${lo.toFixed(d + 2)} to ${hi.toFixed(d + 2)} with the printed rounding)`;
    }
    case 'value':
      return tableRow(c.file, c.row, c.table).get(c.column) ?? `(no column ${c.column})`;
  }
}

/** The figure that a file quoting the claim must hold. */
function figure(c: Claim): string {
  switch (c.kind) {
    case 'bleu':
    case 'chrf':
      return c.expect.match(/= (\S+)/)?.[1] ?? c.expect;
    case 'paired':
      return c.expect.split(' ')[0].replace(/^\+/, '');
    default:
      return c.expect;
  }
}

const quotedIn = (c: Claim) =>
  (c.quoted ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f !== '');

/** The text as one line: Markdown wraps a figure and its words anywhere. */
const oneLine = (s: string) => s.replace(/\s+/g, ' ');

/** Whether `text` (already one line) holds `form` as a figure of its own: 41.02 is not in 141.02 or 41.025, 673 not in 1,673. */
function holds(text: string, form: string): boolean {
  const escaped = oneLine(form).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![\\d.]|\\d,)${escaped}(?!\\d|[.,]\\d)`).test(text);
}

/** What is wrong with the files that quote a claim: one line each, none when every one holds its figure. */
function quoteProblems(c: Claim): string[] {
  const fig = figure(c);
  const files = quotedIn(c);
  const problems: string[] = [];
  for (const [file, form] of Object.entries(c.as ?? {})) {
    if (!files.includes(file)) problems.push(`"as" gives a form for ${file}, which is not in "quoted"`);
    // The form's first number must be the figure rounded to that number's decimals (341 for 341.3),
    // or the form a piece of the claim's line (a paired bootstrap's interval).
    const n = form.replace(/,/g, '').match(/-?\d+(\.\d+)?/)?.[0];
    const rounded = n !== undefined && Number(fig).toFixed(decimals(n)) === n;
    if (!rounded && !oneLine(c.expect).includes(oneLine(form)))
      problems.push(`${file}'s form ${JSON.stringify(form)} is neither ${fig} rounded nor a part of the claim`);
  }
  for (const file of files) {
    const path = join(ROOT, file === 'README' ? 'README.md' : file);
    const form = c.as?.[file] ?? fig;
    if (!existsSync(path)) problems.push(`quoted in ${file}, which is missing`);
    else if (
      !holds(
        once(`quoting ${path}`, () => oneLine(readFileSync(path, 'utf8'))),
        form,
      )
    )
      problems.push(`quoted in ${file}, which does not hold ${JSON.stringify(form)}`);
  }
  return problems;
}

/** The file (or files) behind a claim. */
function files(c: Claim): string {
  switch (c.kind) {
    case 'bleu':
    case 'chrf':
      return c.output;
    case 'paired':
      return `${c.baseline}, ${c.system}`;
    default:
      return c.file;
  }
}

function what(c: Claim): string {
  switch (c.kind) {
    case 'bleu':
    case 'chrf':
      return `${c.kind === 'bleu' ? 'BLEU' : 'chrF2'}${c.lowercase ? ' (lowercased)' : ''} against ${c.ref}`;
    case 'paired':
      return `paired bootstrap (1,000 resamples) against ${c.ref}`;
    case 'history':
      return `${c.field} at step ${c.step}${c.averaged ? ' (averaged entry)' : ''}`;
    case 'ratio':
      return `"${c.row}": ${c.num} / ${c.den}`;
    case 'value':
      return `"${c.row}": ${c.column}`;
  }
}

function main(): number {
  const args = process.argv.slice(2);
  const at = args.indexOf('--claims');
  const claimsPath = at >= 0 ? args[at + 1] : join(ROOT, 'records', 'claims.json');
  const { claims } = JSON.parse(readFileSync(claimsPath, 'utf8')) as { claims: Claim[] };
  const ids = new Set<string>();
  for (const c of claims) {
    if (ids.has(c.id)) throw new Error(`${claimsPath}: claim id ${c.id} twice`);
    ids.add(c.id);
  }
  if (args.includes('--table')) {
    console.log('| figure | quoted in | file | recomputed (check-records claim) |');
    console.log('| --- | --- | --- | --- |');
    for (const c of claims) {
      const quoted = quotedIn(c)
        .map((f) => {
          const form = c.as?.[f];
          return form ? `${f} (as "${form}")` : f;
        })
        .join(', ');
      console.log(`| ${c.expect.replace(/\|/g, '\\|')} | ${quoted} | \`${files(c)}\` | \`${c.id}\`: ${what(c)} |`);
    }
    return 0;
  }
  let failed = 0;
  let misquoted = 0;
  for (const c of claims) {
    let got: string;
    try {
      got = recompute(c);
    } catch (e) {
      got = `error: ${(e as Error).message}`;
    }
    // BLEU/chrF lines must match exactly; other kinds as the quoted figure is written (a value claim
    // is a whole cell or a whole part of one: 22 is not in "222 / — / 4173").
    const ok = c.kind === 'value' ? got.split(' / ').includes(c.expect) : got === c.expect;
    const problems = quoteProblems(c);
    if (!ok) failed++;
    if (problems.length > 0) misquoted++;
    if (!ok) console.log(`FAIL ${c.id}: quoted ${JSON.stringify(c.expect)}, the file gives ${JSON.stringify(got)}`);
    for (const p of problems) console.log(`FAIL ${c.id}: ${p}`);
    if (ok && problems.length === 0) console.log(`ok   ${c.id}: ${c.expect}`);
  }
  console.log(
    `check-records: ${claims.length - failed} of ${claims.length} figures recomputed from their files${failed ? `, ${failed} differ` : ''}${misquoted ? `, ${misquoted} not found in a file said to quote them` : ''}`,
  );
  return failed || misquoted ? 1 : 0;
}

process.exitCode = main();
