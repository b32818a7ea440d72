/**
 * The speed figures of README.md and docs/speed.md (issue 48, point 2), generated from the newest
 * full `npm run bench` run of each machine in bench/results/, never chosen by hand:
 *
 *   1. A full run is a results file with a "Machine:" line and the main table (its header starts
 *      "| workload | unit | qkv wasm"). Its machine is that line's text before the memory size.
 *   2. A file whose name ends in a commit hash (`...-3ef12d4.md`) is a run of an older commit kept
 *      as an A/B baseline (records/house-bench), not of the code as it stands: it is left out.
 *   3. Per machine the newest run wins: the latest date in the file name, then the highest `-N`
 *      suffix (`npm run bench` adds `-2`, `-3`, … when the name is taken). A tie left is an error.
 *   4. Every ratio quoted is a cell of that file as printed ("6.18× time", "27.90× faster"): no
 *      ratio is recomputed or rounded again here.
 *
 * Each generated piece stands between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` in its
 * file; `npm run check-records` fails when any piece differs from what this script writes now.
 *
 *   npx tsx scripts/speed-section.ts           write every piece into its file
 *   npx tsx scripts/speed-section.ts --check   exit 1 and name each piece that is stale
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));

/** One table of a results file: its header and its rows, each row's cells by the header's names. */
interface Table {
  header: string[];
  rows: Map<string, string>[];
}

/** One full benchmark run, as the results file prints it. */
export interface Run {
  /** The file's name under bench/results/. */
  file: string;
  /** The "Machine:" line's text before the memory size: "2 × AMD EPYC (cpu family 25, model 17, AVX-512)". */
  machine: string;
  date: string;
  /** The `-N` suffix of the file name (1 without one). */
  serial: number;
  main: Table;
  /** The table of decoding against ONNX Runtime, where the run has one. */
  decode?: Table;
}

const cellsOf = (line: string) =>
  line
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((c) => c.trim());

/** The Markdown tables of a text, in order. */
function tablesOf(text: string): Table[] {
  const tables: Table[] = [];
  let t: Table | null = null;
  for (const line of text.split('\n')) {
    if (!line.trim().startsWith('|')) {
      t = null;
      continue;
    }
    const c = cellsOf(line);
    if (t === null) {
      t = { header: c, rows: [] };
      tables.push(t);
    } else if (!c.every((x) => /^-+$/.test(x))) t.rows.push(new Map(t.header.map((h, i) => [h, c[i] ?? ''])));
  }
  return tables;
}

/** The full runs in `dir` (bench/results/), pinned-commit baselines left out (rule 2 above). */
export function fullRuns(dir = join(ROOT, 'bench', 'results')): Run[] {
  const runs: Run[] = [];
  for (const file of readdirSync(dir).sort()) {
    const name = file.match(/^(\d{4}-\d{2}-\d{2})-(.+?)\.md$/);
    if (!name) continue;
    const text = readFileSync(join(dir, file), 'utf8');
    const machine = text.match(/^Machine: (.+?), \d+ GiB/m)?.[1];
    const tables = tablesOf(text);
    const main = tables.find((t) => t.header.slice(0, 3).join('|') === 'workload|unit|qkv wasm');
    if (!machine || !main) continue;
    if (/-[0-9a-f]{7,40}$/.test(name[2])) continue;
    const serial = Number(name[2].match(/-(\d+)$/)?.[1] ?? 1);
    const decode = tables.find((t) => t.header[0].startsWith('decoding') && t.header.includes('qkv / ORT'));
    runs.push({ file, machine, date: name[1], serial, main, decode });
  }
  return runs;
}

/** The newest run of each machine (rule 3 above), oldest machine first. */
export function newestPerMachine(runs: Run[]): Run[] {
  const byMachine = new Map<string, Run>();
  for (const r of runs) {
    const best = byMachine.get(r.machine);
    const order = best === undefined ? 1 : r.date.localeCompare(best.date) || r.serial - best.serial;
    if (order === 0)
      throw new Error(`speed-section: ${r.file} and ${best!.file} are both the newest run of ${r.machine}`);
    if (order > 0) byMachine.set(r.machine, r);
  }
  return [...byMachine.values()].sort((a, b) => a.date.localeCompare(b.date) || a.file.localeCompare(b.file));
}

/** The number a ratio cell prints ("6.18× time", "0.93× faster", "2.44"), as printed; null for "—" or empty. */
function printed(cell: string | undefined): string | null {
  return cell?.match(/^\d+(\.\d+)?/)?.[0] ?? null;
}

const PYTORCH = 'qkv vs PyTorch';
const TFJS = 'qkv vs tfjs';

/** Every printed ratio of a column over the runs, with where it came from. */
function ratios(runs: Run[], column: string): { value: string; run: Run; workload: string }[] {
  return runs.flatMap((run) =>
    run.main.rows.flatMap((row) => {
      const value = printed(row.get(column));
      return value === null ? [] : [{ value, run, workload: row.get('workload')! }];
    }),
  );
}

/** Smallest, median and largest of printed values, each as printed (the median of an even count is the lower middle). */
function spread(values: string[]): { min: string; median: string; max: string; n: number } {
  const s = [...values].sort((a, b) => Number(a) - Number(b));
  return { min: s[0], median: s[Math.floor((s.length - 1) / 2)], max: s[s.length - 1], n: s.length };
}

/** A machine as a reader names it, from the "Machine:" line. */
function machineName(r: Run): string {
  const cpu = r.machine.replace(/^\d+ × /, '').replace(/\(R\)/g, '');
  const cores = r.machine.match(/^(\d+) × /)?.[1];
  return `${cores}-core ${cpu}`;
}

const link = (r: Run, from: string) => `[${r.file.replace(/\.md$/, '')}](${from}bench/results/${r.file})`;

/** The key workloads, matched by the start of the row's name (the names changed between runs). */
const KEY_ROWS: { label: string; row: RegExp }[] = [
  { label: 'GEMM 1024³ (A·B)', row: /^gemm 1024×1024×1024 NN$/ },
  { label: 'self-attention (32, 32, 512, 8), forward + backward', row: /^MHA \(32, 32, 512, 8\) fwd\+bwd$/ },
  { label: 'self-attention at length 8,192, forward', row: /^MHA \(1, 8192, 512, 8\) fwd, no weights$/ },
  {
    label: 'a training step, Seq2Seq dModel 256, 3+3 layers',
    row: /^train step Seq2Seq (d256 3\+3 )?\(128×32 tokens\)$/,
  },
  { label: 'a training step of the shipped EN→DE recipe', row: /^train step Seq2Seq d128 4\+4, shipped/ },
  { label: 'GPT-2 124M shape, 64 tokens with the KV cache', row: /^GPT-2 124M shape/ },
];

function keyCell(r: Run, row: RegExp, column: string): string {
  const found = r.main.rows.find((x) => row.test(x.get('workload')!));
  const v = printed(found?.get(column));
  return v === null ? '—' : v;
}

/** The README's sentence: the range and median of every printed ratio of the newest runs. */
function rangeSentence(runs: Run[]): string {
  const t = spread(ratios(runs, PYTORCH).map((x) => x.value));
  const f = spread(ratios(runs, TFJS).map((x) => x.value));
  return (
    `over the ${t.n} workloads of the newest run on each of ${runs.length} machines (2 cores each), qkv took ` +
    `${t.min}× to ${t.max}× PyTorch's time (median ${t.median}×) and ran ${f.min}× to ${f.max}× ` +
    `as fast as TensorFlow.js (median ${f.median}×, over ${f.n} workloads)`
  );
}

/** One row per machine: its run, and the spread of its printed ratios. */
function summaryTable(runs: Run[], from: string): string {
  const lines = [
    "| machine | newest run | workloads | qkv's time / PyTorch's: min, median, max | qkv vs TensorFlow.js (times as fast): min, median, max |",
    '| --- | --- | --- | --- | --- |',
  ];
  for (const r of runs) {
    const t = spread(ratios([r], PYTORCH).map((x) => x.value));
    const f = spread(ratios([r], TFJS).map((x) => x.value));
    lines.push(
      `| ${machineName(r)} | ${link(r, from)} | ${r.main.rows.length} | ${t.min}, ${t.median}, ${t.max} | ${f.min}, ${f.median}, ${f.max} |`,
    );
  }
  return lines.join('\n');
}

/** The key workloads (rows) on each machine's newest run (columns): qkv's time over PyTorch's. */
function keyTable(runs: Run[]): string {
  const lines = [
    `| qkv's time / PyTorch's | ${runs.map(machineName).join(' | ')} |`,
    `| --- | ${runs.map(() => '---').join(' | ')} |`,
  ];
  for (const k of KEY_ROWS) lines.push(`| ${k.label} | ${runs.map((r) => keyCell(r, k.row, PYTORCH)).join(' | ')} |`);
  const dec = (row: RegExp) =>
    runs.map(
      (r) => printed(r.decode?.rows.find((x) => row.test(x.get(r.decode!.header[0])!))?.get('qkv / ORT')) ?? '—',
    );
  lines.push(`| qkv's time / ONNX Runtime's: greedy, 20 tokens | ${dec(/^greedy/).join(' | ')} |`);
  lines.push(`| qkv's time / ONNX Runtime's: beam 4 over 32 sentences | ${dec(/^beam 4/).join(' | ')} |`);
  return lines.join('\n');
}

/** Every workload (rows) on each machine's newest run (columns): "PyTorch ratio · TF.js ratio". */
function fullTable(runs: Run[]): string {
  const workloads: string[] = [];
  for (const r of runs)
    for (const row of r.main.rows) if (!workloads.includes(row.get('workload')!)) workloads.push(row.get('workload')!);
  const lines = [
    `| workload | ${runs.map(machineName).join(' | ')} |`,
    `| --- | ${runs.map(() => '---').join(' | ')} |`,
  ];
  for (const w of workloads) {
    const cells = runs.map((r) => {
      const row = r.main.rows.find((x) => x.get('workload') === w);
      if (!row) return '';
      const t = printed(row.get(PYTORCH)) ?? '—';
      const f = printed(row.get(TFJS));
      return f === null ? t : `${t} · ${f}`;
    });
    lines.push(`| ${w} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** Issue 3's targets, judged on each machine's newest run from the printed ratios. */
function targetsTable(runs: Run[]): string {
  const gemmTargets = /^gemm (1024×1024×1024|4096×512×2048|4096×2048×512) (NN|NT|TN|TT)$/;
  const rowsOf = (r: Run, re: RegExp) => r.main.rows.filter((x) => re.test(x.get('workload')!));
  const judge = (ok: boolean | null, shown: string) => (ok === null ? '—' : `${ok ? 'met' : 'not met'} (${shown})`);
  const extreme = (r: Run, re: RegExp, column: string, pick: 'min' | 'max') => {
    const v = rowsOf(r, re)
      .map((x) => printed(x.get(column)))
      .filter((x): x is string => x !== null);
    if (v.length === 0) return null;
    const s = spread(v);
    return pick === 'min' ? s.min : s.max;
  };
  const one = (r: Run, re: RegExp, column: string) => {
    const v = printed(rowsOf(r, re)[0]?.get(column));
    return v === null ? null : v;
  };
  const peak = (r: Run, re: RegExp) => rowsOf(r, re)[0]?.get('peak MB qkv / tfjs / torch')?.split(' / ')[0] ?? null;
  const targets: { what: string; cell: (r: Run) => string }[] = [
    {
      what: 'GEMM at least 2.5× as fast as TensorFlow.js at 1024³ and at 4096×512×2048 and 4096×2048×512, every layout (the slowest of the 12)',
      cell: (r) => {
        const v = extreme(r, gemmTargets, TFJS, 'min');
        return judge(v === null ? null : Number(v) >= 2.5, `${v}×`);
      },
    },
    {
      what: "GEMM at half PyTorch's speed or better, same shapes: qkv's time at most 2× PyTorch's (the slowest of the 12)",
      cell: (r) => {
        const v = extreme(r, gemmTargets, PYTORCH, 'max');
        return judge(v === null ? null : Number(v) <= 2, `${v}×`);
      },
    },
    {
      what: "self-attention (32, 32, 512, 8) forward + backward in at most 2× PyTorch's time",
      cell: (r) => {
        const v = one(r, /^MHA \(32, 32, 512, 8\) fwd\+bwd$/, PYTORCH);
        return judge(v === null ? null : Number(v) <= 2, `${v}×`);
      },
    },
    {
      what: "a training step (dModel 256, 3+3 layers) in at most 1.5× PyTorch's time",
      cell: (r) => {
        const v = one(r, KEY_ROWS[3].row, PYTORCH);
        return judge(v === null ? null : Number(v) <= 1.5, `${v}×`);
      },
    },
    {
      what: "self-attention's memory linear in the length: qkv's peak MB at length 8,192 under 8× its peak at 2,048 (4× is linear, 16× quadratic)",
      cell: (r) => {
        const [a, b] = [peak(r, /^MHA \(1, 2048, 512, 8\)/), peak(r, /^MHA \(1, 8192, 512, 8\)/)];
        if (!a || !b) return '—';
        return judge(Number(b) < 8 * Number(a), `${a} → ${b} MB`);
      },
    },
  ];
  const lines = [`| target | ${runs.map(machineName).join(' | ')} |`, `| --- | ${runs.map(() => '---').join(' | ')} |`];
  for (const t of targets) lines.push(`| ${t.what} | ${runs.map(t.cell).join(' | ')} |`);
  return lines.join('\n');
}

/** Every generated piece: file → name → text. */
export function pieces(runs = newestPerMachine(fullRuns())): Map<string, Map<string, string>> {
  return new Map([
    [
      'README.md',
      new Map([
        ['speed-range', rangeSentence(runs)],
        [
          'speed-table',
          [
            'The newest full run of `npm run bench` on each machine (chosen by `scripts/speed-section.ts`, not',
            'by hand), every ratio as its file prints it:',
            '',
            summaryTable(runs, ''),
            '',
            keyTable(runs),
          ].join('\n'),
        ],
      ]),
    ],
    [
      'docs/speed.md',
      new Map([
        [
          'speed-runs',
          [
            `${rangeSentence(runs).replace(/^o/, 'O')}:`,
            '',
            summaryTable(runs, '../'),
            '',
            "Every workload: qkv's time over PyTorch's · how many times as fast as TensorFlow.js (no second",
            'figure where TensorFlow.js was not run; a blank cell where that run had no such workload):',
            '',
            fullTable(runs),
            '',
            keyTable(runs),
          ].join('\n'),
        ],
        ['speed-targets', targetsTable(runs)],
      ]),
    ],
  ]);
}

/** `text` with the piece `name` replaced by `content`; an error when its markers are missing. */
export function withPiece(text: string, name: string, content: string, file: string): string {
  const open = `<!-- generated:${name} -->`;
  const close = `<!-- /generated:${name} -->`;
  const a = text.indexOf(open);
  const b = text.indexOf(close);
  if (a < 0 || b < a) throw new Error(`${file}: no ${open} … ${close} markers`);
  // A block piece (a table) stands on lines of its own between the markers; an inline one (a sentence) does not.
  const inline = !text.slice(a, b).includes('\n');
  const body = inline ? content : `\n${content}\n`;
  return text.slice(0, a + open.length) + body + text.slice(b);
}

/** The pieces that differ from what would be generated now: "FILE: NAME" each (empty when none). */
export function stalePieces(root = ROOT, runs?: Run[]): string[] {
  const stale: string[] = [];
  for (const [file, byName] of pieces(runs ?? newestPerMachine(fullRuns(join(root, 'bench', 'results'))))) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const [name, content] of byName) {
      let fresh: string;
      try {
        fresh = withPiece(text, name, content, file);
      } catch (e) {
        stale.push(`${file}: ${(e as Error).message.replace(`${file}: `, '')}`);
        continue;
      }
      if (fresh !== text) stale.push(`${file}: generated:${name} is stale (run npx tsx scripts/speed-section.ts)`);
    }
  }
  return stale;
}

function main(): number {
  if (process.argv.includes('--check')) {
    const stale = stalePieces();
    for (const s of stale) console.log(`FAIL ${s}`);
    return stale.length > 0 ? 1 : 0;
  }
  for (const [file, byName] of pieces()) {
    const path = join(ROOT, file);
    let text = readFileSync(path, 'utf8');
    for (const [name, content] of byName) text = withPiece(text, name, content, file);
    writeFileSync(path, text);
    console.log(`wrote ${file}: ${[...byName.keys()].join(', ')}`);
  }
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main();
