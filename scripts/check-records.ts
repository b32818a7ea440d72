/**
 * `npm run check-records` (issue 40): every figure the project quotes is recomputed from a committed
 * file, and any difference fails. The figures are listed in records/claims.json, each with the file
 * behind it:
 *
 *   bleu     a translation output and its references: sacreBLEU's line (score, precisions, BP,
 *            lengths), recomputed with qkv's port of sacreBLEU (src/text/bleu.ts); and, where
 *            records/sacrebleu-check/sacrebleu.json holds real sacreBLEU's line for the same two files
 *            (scripts/sacrebleu-check.py under .venv-ref; test/records/sacrebleu.once.test.ts reruns it), equal to that line too
 *   chrf     the same for chrF2 (src/text/chrf.ts)
 *   paired   two outputs: the paired bootstrap line of `qkv bleu --paired-bs` (seeded, so exact)
 *   history  a run's history.json: the value of a field at a step (or of its averaged entry)
 *   curve    a history.json: a field at every evaluation from one step to another ("2.9, 3.9, …")
 *   params   a model.safetensors: its tensors' elements counted from the header, in millions ("2.88")
 *   size     committed files' bytes together, in MB or KB (powers of 10), MiB or KiB, rounded as quoted
 *   ratio    a benchmark results file (bench/results/): the ratio of two columns of one table row,
 *            the two cells as printed divided and rounded to the quoted decimals, exactly
 *   value    a benchmark results file: one cell, or one part of a cell that holds several ("222 / — /
 *            4173", peak MB of qkv / tfjs / torch), as printed (a ratio cell "3.13× time" is 3.13)
 *
 * A ratio or value from a run in bench/results/ also names its `rule` (scripts/run-rule.ts, issue 61):
 * "newest" (the newest run of its machine type), "median3" (the median of that type's three newest
 * runs) or "every" (every run of the type, oldest first, "1.97 / 1.47"). The figure must be what the
 * rule gives over the runs committed now, and the claim's file the newest of them: a newer run of the
 * same machine type fails every claim that still quotes an older one. A figure from a run with no rule
 * fails too.
 *
 * Each claim also names the files that quote it (`quoted`, "README" for README.md), and where in each
 * the figure stands: `at` gives, per file, the text around each place it is quoted (one string, or a
 * list where a file quotes it more than once); each must occur exactly once in that file (taken as one
 * line, outside generated blocks) and hold the figure: a BLEU or chrF claim's score, a paired claim's
 * difference (without its "+"), any other claim's `expect`. Where a file writes it in another form
 * ("341 training minutes" for 341.3), the claim's `as` gives that form for that file; a form must be
 * the figure rounded or a part of the claim's line.
 *
 * Then the reverse: every figure in the prose of README.md, docs/*.md and the model cards
 * (models/*\/README.md) must be one that a claim's `at` names there, stand in a generated block, or be
 * of a kind that is not a measurement (scripts/figures-in-prose.ts, with its short list). And the
 * generated blocks must be fresh: the speed figures (scripts/speed-section.ts) and docs/evidence.md's
 * table of the claims (`--table`).
 *
 *   npx tsx scripts/check-records.ts            check every claim; exit 1 on any difference
 *   npx tsx scripts/check-records.ts --table    print the claims as docs/evidence.md's table
 *   npx tsx scripts/check-records.ts --claims F  another claims file (the tests use this)
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootstrapSummary } from '../src/cli/commands/bleu.ts';
import { readLines } from '../src/cli/corpus.ts';
import { corpusBleu } from '../src/text/bleu.ts';
import { corpusChrf } from '../src/text/chrf.ts';
import { pairedBootstrap } from '../src/text/significance.ts';
import { around, figuresIn, oneLine } from './figures-in-prose.ts';
import { byRule, isRunFile, RULES, type Rule, seriesOf } from './run-rule.ts';
import { stalePieces } from './speed-section.ts';

/** The repository (or, with --root, the tree the tests build). */
let ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));

interface Base {
  id: string;
  /** The files that quote the figure, comma-separated; "README" is README.md. */
  quoted?: string;
  /** The form a quoted file writes the figure in, where it is not the figure itself. */
  as?: Record<string, string>;
  /** Per quoted file, the text around the figure where it stands (a list where it stands in several places). */
  at?: Record<string, string | string[]>;
  note?: string;
  /** For a ratio or value from a run of bench/results/: which run(s) the figure must come from (run-rule.ts). */
  rule?: Rule;
}
type Claim = Base &
  (
    | { kind: 'bleu' | 'chrf'; output: string; ref: string; expect: string; lowercase?: boolean }
    | { kind: 'paired'; baseline: string; system: string; ref: string; expect: string }
    | { kind: 'history'; file: string; step: number; averaged?: boolean; field: string; expect: string }
    | { kind: 'curve'; file: string; from: number; to: number; field: string; expect: string }
    | { kind: 'size'; files: string[]; unit: 'MB' | 'KB' | 'MiB' | 'KiB'; expect: string }
    | { kind: 'params'; file: string; expect: string }
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

/** A run's history.json, read once. */
function history(file: string): Record<string, unknown>[] {
  return once(`history ${file}`, () => JSON.parse(readFileSync(need(file, 'history'), 'utf8')));
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
      const h = history(c.file);
      const e = h.find((x) => x.step === c.step && (x.averaged !== undefined) === (c.averaged ?? false));
      if (!e) throw new Error(`${c.file}: no ${c.averaged ? 'averaged ' : ''}entry at step ${c.step}`);
      const v = e[c.field];
      if (typeof v !== 'number') throw new Error(`${c.file}: step ${c.step} has no number ${c.field}`);
      return v.toFixed(decimals(c.expect));
    }
    case 'curve': {
      // Every evaluation (not the averaged entry) from step `from` to step `to`, in step order, each
      // rounded to the decimals the claim writes it with ("54.5, 55.45").
      const written = c.expect.split(',').map((x) => x.trim());
      const values = history(c.file)
        .filter((e) => e.averaged === undefined && typeof e.step === 'number' && e.step >= c.from && e.step <= c.to)
        .filter((e) => typeof e[c.field] === 'number')
        .sort((a, b) => (a.step as number) - (b.step as number))
        .map((e, i) => (e[c.field] as number).toFixed(decimals(written[i] ?? written[0])));
      return values.join(', ');
    }
    case 'params': {
      // safetensors: an 8-byte little-endian header length, then the JSON header with every tensor's shape.
      const bytes = readFileSync(need(c.file, 'weights'));
      const n = Number(bytes.readBigUInt64LE(0));
      const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Record<string, { shape?: number[] }>;
      let count = 0;
      for (const [name, t] of Object.entries(header))
        if (name !== '__metadata__') count += (t.shape ?? []).reduce((a, b) => a * b, 1);
      return (count / 1e6).toFixed(decimals(c.expect));
    }
    case 'size': {
      const bytes = c.files.reduce((sum, f) => sum + statSync(need(f, 'file')).size, 0);
      const scale = { MB: 1e6, KB: 1e3, MiB: 2 ** 20, KiB: 2 ** 10 }[c.unit];
      return (bytes / scale).toFixed(decimals(c.expect));
    }
    case 'ratio': {
      const { got, x, y } = ratioIn(c, c.file);
      return got === c.expect ? got : `${got} (${x} / ${y})`;
    }
    case 'value':
      return valueIn(c, c.file);
  }
}

type RunClaim = Extract<Claim, { kind: 'ratio' | 'value' }>;

/**
 * A ratio claim's figure in run `file`: the two cells as the file prints them (51.1 ms, 2,262 ms), divided
 * and rounded to the quoted decimals; the figure is exactly that, not any ratio the cells' rounding would allow.
 */
function ratioIn(c: Extract<Claim, { kind: 'ratio' }>, file: string): { got: string; x: number; y: number } {
  const r = tableRow(file, c.row, c.table);
  const x = num(r.get(c.num), `${file} "${c.row}" ${c.num}`);
  const y = num(r.get(c.den), `${file} "${c.row}" ${c.den}`);
  // The rounding of the first run's decimals for a rule over several ("1.97 / 1.47").
  return { got: (x / y).toFixed(decimals(c.expect.split(' / ')[0])), x, y };
}

/** A value claim's cell in run `file`, as printed (a ratio column's "3.13× time" or "41.10× faster" is its number). */
function valueIn(c: Extract<Claim, { kind: 'value' }>, file: string): string {
  const cell = tableRow(file, c.row, c.table).get(c.column);
  return cell?.replace(/× (time|faster)$/, '') ?? `(no column ${c.column})`;
}

/** Whether run `file` holds the claim's row and column(s): only such runs are its series. */
function holds(c: RunClaim, file: string): boolean {
  try {
    const r = tableRow(file, c.row, c.table);
    return c.kind === 'value' ? r.has(c.column) : r.has(c.num) && r.has(c.den);
  } catch {
    return false;
  }
}

/**
 * A claim on a run of bench/results/ under its rule: what the rule gives now and what is wrong (no rule, an
 * unknown one, a newer run than the claim's file); null for a claim on any other file.
 */
function underRule(c: Claim): { got: string; problem: string | null } | null {
  if ((c.kind !== 'ratio' && c.kind !== 'value') || !isRunFile(c.file)) return null;
  if (c.rule === undefined)
    return { got: recompute(c), problem: `a figure from a run names no "rule" (${RULES.join(', ')}; run-rule.ts)` };
  if (!RULES.includes(c.rule)) return { got: recompute(c), problem: `unknown rule ${JSON.stringify(c.rule)}` };
  const series = seriesOf(ROOT, c.file, (f) => holds(c, f));
  if (!series.some((r) => r.path === c.file))
    throw new Error(`${c.file} has no row "${c.row}" with the claim's column(s)`);
  const figureOf = (f: string) => (c.kind === 'ratio' ? ratioIn(c, f).got : valueIn(c, f));
  const { figure, problem } = byRule(c.rule, c.file, series, figureOf);
  // The newest run is the claim's own file: its figure as recompute says it (a ratio with its two cells).
  return { got: c.rule === 'newest' && problem === null ? recompute(c) : figure, problem };
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

/** A quoted file's path from its name in `quoted` ("README" is README.md). */
const pathOf = (file: string) => (file === 'README' ? 'README.md' : file);

/** A file's text as one line with its generated blocks blanked (offsets kept): no claim stands in generated text. */
function quoting(file: string): string | null {
  const path = join(ROOT, pathOf(file));
  if (!existsSync(path)) return null;
  return once(`quoting ${path}`, () =>
    oneLine(readFileSync(path, 'utf8')).replace(/<!-- generated:([\w-]+) -->[\s\S]*?<!-- \/generated:\1 -->/g, (m) =>
      ' '.repeat(m.length),
    ),
  );
}

/** Where `form` stands in `text` as a figure of its own: 41.02 is not in 141.02 or 41.025, 673 not in 1,673; -1 if nowhere. */
function figureAt(text: string, form: string): number {
  const escaped = oneLine(form).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text.search(new RegExp(`(?<![\\d.]|\\d,)${escaped}(?!\\d|[.,]\\d)`));
}

/** Every place `needle` starts in `text`. */
function occurrences(text: string, needle: string): number[] {
  const at: number[] = [];
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) at.push(i);
  return at;
}

/** The numbers a claim names: its figure, its form per file, and every number of its line (a BLEU line's precisions). */
function numbersOf(c: Claim): Set<string> {
  const all = [c.expect, figure(c), ...Object.values(c.as ?? {})].join(' ');
  return new Set((all.match(/\d[\d,]*(\.\d+)?/g) ?? []).map((n) => n.replace(/,/g, '')));
}

/** Whether `n` (as a file writes it) is one of `numbers`, or one of them rounded to n's decimals (p 0.23 for 0.2298). */
function names(numbers: Set<string>, n: string): boolean {
  if (numbers.has(n)) return true;
  const d = decimals(n);
  return d > 0 && [...numbers].some((m) => decimals(m) > d && Number(m).toFixed(d) === n);
}

/** A stretch of a quoting file that a claim's context names, and the numbers it names there. */
interface Named {
  from: number;
  to: number;
  numbers: Set<string>;
}

/** What is wrong with the files that quote a claim: one line each, none when every one holds its figure where `at` says. */
function quoteProblems(c: Claim, named: Map<string, Named[]>): string[] {
  const fig = figure(c);
  const files = quotedIn(c);
  const problems: string[] = [];
  for (const [file, form] of Object.entries(c.as ?? {})) {
    if (!files.includes(file)) problems.push(`"as" gives a form for ${file}, which is not in "quoted"`);
    // The form's first number must be the figure rounded to that number's decimals (341 for 341.3),
    // or the form a piece of the claim's line (a paired bootstrap's interval; "14,610" of "14610 / 15310").
    const n = form.replace(/,/g, '').match(/-?\d+(\.\d+)?/)?.[0];
    const rounded = n !== undefined && Number(fig).toFixed(decimals(n)) === n;
    const bare = (t: string) => oneLine(t).replace(/,/g, '');
    if (!rounded && !bare(c.expect).includes(bare(form)))
      problems.push(`${file}'s form ${JSON.stringify(form)} is neither ${fig} rounded nor a part of the claim`);
  }
  for (const file of Object.keys(c.at ?? {}))
    if (!files.includes(file)) problems.push(`"at" gives a place in ${file}, which is not in "quoted"`);
  for (const file of files) {
    const text = quoting(file);
    const form = c.as?.[file] ?? fig;
    if (text === null) {
      problems.push(`quoted in ${file}, which is missing`);
      continue;
    }
    const at = c.at?.[file];
    if (at === undefined) {
      problems.push(`quoted in ${file}, but "at" does not say where`);
      continue;
    }
    for (const context of typeof at === 'string' ? [at] : at) {
      const where = occurrences(text, oneLine(context));
      // The context holds the figure (in the file's form), or another number with decimals from the claim's
      // line, or one rounded: a BLEU line's precisions or BP quoted on their own ("val 72.0/49.4"), a p value.
      const figures = new Set([fig.replace(/,/g, '')]);
      const numbers = numbersOf(c);
      const decimalsIn = (oneLine(context).match(/\d[\d,]*\.\d+/g) ?? []).map((n) => n.replace(/,/g, ''));
      const inside =
        figureAt(oneLine(context), form) >= 0 || decimalsIn.some((n) => names(numbers, n) && !names(figures, n));
      if (where.length !== 1)
        problems.push(
          `${file} holds the context ${JSON.stringify(context)} ${where.length === 0 ? 'nowhere' : `${where.length} times`}`,
        );
      else if (!inside)
        problems.push(`quoted in ${file}, where ${JSON.stringify(context)} does not hold ${JSON.stringify(form)}`);
      else {
        const list = named.get(pathOf(file)) ?? [];
        list.push({ from: where[0], to: where[0] + oneLine(context).length, numbers: numbersOf(c) });
        named.set(pathOf(file), list);
      }
    }
  }
  return problems;
}

/** The files whose every figure a claim must name: README.md, docs/*.md and the model cards. */
function checkedFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  const cards = readdirSync(join(ROOT, 'models'))
    .sort()
    .map((d) => `models/${d}/README.md`)
    .filter((f) => existsSync(join(ROOT, f)));
  return ['README.md', ...docs, ...cards];
}

/** The reverse check: each figure of the checked files that no claim's `at` names, with its surroundings. */
function unnamedFigures(named: Map<string, Named[]>): string[] {
  const problems: string[] = [];
  for (const file of checkedFiles()) {
    const { line, figures } = figuresIn(readFileSync(join(ROOT, file), 'utf8'));
    const spans = named.get(file) ?? [];
    for (const f of figures) {
      const n = f.text.replace(/,/g, '');
      if (spans.some((s) => f.at >= s.from && f.at < s.to && names(s.numbers, n))) continue;
      problems.push(`${file}: ${f.text} is named by no claim: ${around(line, f.at, f.text.length)}`);
    }
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
    case 'size':
      return c.files.join(', ');
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
    case 'curve':
      return `${c.field} at every evaluation, steps ${c.from} to ${c.to}`;
    case 'size':
      return `bytes together, in ${c.unit}`;
    case 'params':
      return 'parameters (millions), from the safetensors header';
    case 'ratio':
      return `"${c.row}": ${c.num} / ${c.den}${ruleWords(c.rule)}`;
    case 'value':
      return `"${c.row}": ${c.column}${ruleWords(c.rule)}`;
  }
}

/** A claim's rule as evidence.md's table says it. */
function ruleWords(rule: Rule | undefined): string {
  if (rule === 'newest') return ', the newest run of its machine';
  if (rule === 'median3') return ", the median of its machine's three newest runs";
  if (rule === 'every') return ', every run of its machine, oldest first';
  return '';
}

/** Real sacreBLEU's lines for the BLEU claims, as scripts/sacrebleu-check.py recorded them (none where it has not run). */
interface SacreBleuRecord {
  sacrebleu: string;
  claims: Record<string, { output: string; ref: string; output_sha256: string; ref_sha256: string; line: string }>;
}

function sacreBleuRecord(): SacreBleuRecord | null {
  const path = join(ROOT, 'records', 'sacrebleu-check', 'sacrebleu.json');
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as SacreBleuRecord) : null;
}

const sha256 = (path: string) =>
  createHash('sha256')
    .update(readFileSync(join(ROOT, path)))
    .digest('hex');

/**
 * A BLEU claim against real sacreBLEU's recorded line: 'same', a difference, or null where the record
 * has no line for these two files (a new output, or an output changed since sacreBLEU scored it).
 */
function againstSacreBleu(c: Claim, record: SacreBleuRecord | null): string | null {
  if (c.kind !== 'bleu' || record === null) return null;
  const r = record.claims[c.id];
  if (!r || r.output !== c.output || r.ref !== c.ref) return null;
  if (!existsSync(join(ROOT, c.output)) || sha256(c.output) !== r.output_sha256 || sha256(c.ref) !== r.ref_sha256)
    return null;
  return r.line === c.expect ? 'same' : `sacreBLEU ${record.sacrebleu} gives ${JSON.stringify(r.line)}`;
}

/** docs/evidence.md's table: every claim, its figure, the files quoting it and the file behind it. */
function table(claims: Claim[]): string {
  const lines = ['| figure | quoted in | file | recomputed (check-records claim) |', '| --- | --- | --- | --- |'];
  for (const c of claims) {
    const quoted = quotedIn(c)
      .map((f) => {
        const form = c.as?.[f];
        return form ? `${f} (as "${form}")` : f;
      })
      .join(', ');
    lines.push(`| ${c.expect.replace(/\|/g, '\\|')} | ${quoted} | \`${files(c)}\` | \`${c.id}\`: ${what(c)} |`);
  }
  return lines.join('\n');
}

function main(): number {
  const args = process.argv.slice(2);
  const rootAt = args.indexOf('--root');
  if (rootAt >= 0) ROOT = resolve(args[rootAt + 1]);
  const at = args.indexOf('--claims');
  const claimsPath = at >= 0 ? args[at + 1] : join(ROOT, 'records', 'claims.json');
  // With the whole claims file (no --claims), the reverse check and the generated blocks are checked too.
  const whole = at < 0;
  const { claims } = JSON.parse(readFileSync(claimsPath, 'utf8')) as { claims: Claim[] };
  const ids = new Set<string>();
  for (const c of claims) {
    if (ids.has(c.id)) throw new Error(`${claimsPath}: claim id ${c.id} twice`);
    ids.add(c.id);
  }
  if (args.includes('--table')) {
    console.log(table(claims));
    return 0;
  }
  let failed = 0;
  let misquoted = 0;
  const named = new Map<string, Named[]>();
  const record = sacreBleuRecord();
  let sameAsSacreBleu = 0;
  for (const c of claims) {
    let got: string;
    let ruled: ReturnType<typeof underRule> = null;
    try {
      ruled = underRule(c);
      got = ruled?.got ?? recompute(c);
    } catch (e) {
      got = `error: ${(e as Error).message}`;
    }
    // BLEU/chrF lines must match exactly; other kinds as the quoted figure is written (a value claim
    // is a whole cell or a whole part of one: 22 is not in "222 / — / 4173"; under "median3" or "every"
    // the rule's figure as a whole).
    const sacre = againstSacreBleu(c, record);
    if (sacre === 'same') sameAsSacreBleu++;
    const overRuns = c.rule === 'median3' || c.rule === 'every';
    const same = c.kind === 'value' && !overRuns ? got.split(' / ').includes(c.expect) : got === c.expect;
    const ok = same && (sacre ?? 'same') === 'same' && !ruled?.problem;
    const problems = quoteProblems(c, named);
    if (!ok) failed++;
    if (problems.length > 0) misquoted++;
    const source = overRuns ? `the rule "${c.rule}" gives` : 'the file gives';
    if (!same) console.log(`FAIL ${c.id}: quoted ${JSON.stringify(c.expect)}, ${source} ${JSON.stringify(got)}`);
    if (sacre !== null && sacre !== 'same') console.log(`FAIL ${c.id}: quoted ${JSON.stringify(c.expect)}, ${sacre}`);
    if (ruled?.problem) console.log(`FAIL ${c.id}: ${ruled.problem}`);
    for (const p of problems) console.log(`FAIL ${c.id}: ${p}`);
    if (ok && problems.length === 0) console.log(`ok   ${c.id}: ${c.expect}`);
  }
  const summary = [`check-records: ${claims.length - failed} of ${claims.length} figures recomputed from their files`];
  if (failed) summary.push(`${failed} differ`);
  if (misquoted) summary.push(`${misquoted} not found in a file said to quote them`);
  const bleu = claims.filter((c) => c.kind === 'bleu').length;
  if (record !== null)
    summary.push(
      `${sameAsSacreBleu} of ${bleu} BLEU lines also equal to sacreBLEU ${record.sacrebleu}'s (records/sacrebleu-check)`,
    );
  let unnamed: string[] = [];
  let stale: string[] = [];
  if (whole) {
    unnamed = unnamedFigures(named);
    stale = stalePieces(ROOT);
    const evidence = join(ROOT, 'docs', 'evidence.md');
    if (existsSync(evidence) && !readFileSync(evidence, 'utf8').includes(table(claims)))
      stale.push('docs/evidence.md: its table is not check-records --table (npx tsx scripts/check-records.ts --table)');
    for (const u of unnamed) console.log(`FAIL ${u}`);
    for (const p of stale) console.log(`FAIL ${p}`);
    if (unnamed.length) summary.push(`${unnamed.length} figures in README, docs and model cards named by no claim`);
    if (stale.length) summary.push(`${stale.length} generated blocks stale`);
  }
  console.log(summary.join(', '));
  return failed || misquoted || unnamed.length || stale.length ? 1 : 0;
}

process.exitCode = main();
