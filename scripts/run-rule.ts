/**
 * Which benchmark run a quoted speed figure may come from (issue 61, point 1). A figure quoted from a
 * results file of bench/results/ names a rule in its claim (records/claims.json, `rule`), and
 * check-records holds it to that rule over the runs of the same machine type:
 *
 *   newest   the figure is the newest run's: the claim's file must be that run
 *   median3  the figure is the median of the three newest runs' (each as printed; the claim's file
 *            must be the newest of them, and three must exist)
 *   every    the figure is every run's, oldest first, joined by " / " ("1.97 / 1.47"): two runs quoted
 *            side by side; the claim's file must be the newest
 *
 * A run's machine type is its header's: the "Machine:" line before the memory size (`npm run bench`:
 * "2 × AMD EPYC (cpu family 25, model 17, AVX-512)"), or for a GPU run its "Adapter:" line before the
 * features, on its "Host:" line's CPU. A file with neither is a type of its own, named by its file name
 * less the date and any `-N`. The runs of a type that count are those holding the claim's row (and
 * column): a newer run of other workloads says nothing of this figure. As for the generated speed
 * blocks (scripts/speed-section.ts), a file whose name ends in a commit hash is an A/B baseline of older
 * code and never counts, and runs are ordered by the date in the name, then by the `-N` suffix.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export type Rule = 'newest' | 'median3' | 'every';
export const RULES: readonly Rule[] = ['newest', 'median3', 'every'];

/** One results file as a run of a machine type. */
export interface RunFile {
  /** Its path from the repository root: bench/results/NAME.md. */
  path: string;
  machine: string;
  date: string;
  serial: number;
}

/** A results file's machine type (see the file comment), from its text and name. */
export function machineType(text: string, name: string): string {
  const machine = text.match(/^Machine: (.+?), \d+ GiB/m)?.[1];
  if (machine) return machine;
  const adapter = text.match(/^Adapter: ([^;\n]+)/m)?.[1];
  const host = text.match(/^Host: (.+?), \d+ GiB/m)?.[1];
  if (adapter) return `${adapter.trim()} on ${host ?? 'an unnamed host'}`;
  return `file ${name.replace(/^\d{4}-\d{2}-\d{2}-/, '').replace(/(-\d+)?\.md$/, '')}`;
}

/** The runs of bench/results/ under `root`, pinned-commit baselines left out. */
export function runFiles(root: string): RunFile[] {
  const dir = join(root, 'bench', 'results');
  const runs: RunFile[] = [];
  for (const file of readdirSync(dir).sort()) {
    const name = file.match(/^(\d{4}-\d{2}-\d{2})-(.+?)\.md$/);
    if (!name || /-[0-9a-f]{7,40}$/.test(name[2])) continue;
    const serial = Number(name[2].match(/-(\d+)$/)?.[1] ?? 1);
    const text = readFileSync(join(dir, file), 'utf8');
    runs.push({ path: `bench/results/${file}`, machine: machineType(text, file), date: name[1], serial });
  }
  return runs;
}

/** Whether a path is a run that a rule applies to (a results file of bench/results/). */
export const isRunFile = (path: string) => /^bench\/results\/[^/]+\.md$/.test(path);

/**
 * The runs of `file`'s machine type that hold the figure (`holds` says whether a run does), oldest first;
 * throws when `file` is not among them (a baseline, or a file without the row).
 */
export function seriesOf(root: string, file: string, holds: (path: string) => boolean): RunFile[] {
  const all = runFiles(root);
  const own = all.find((r) => r.path === file);
  if (!own) throw new Error(`${file} is not a run a rule can follow (a pinned-commit baseline, or no such file)`);
  const series = all.filter((r) => r.machine === own.machine && holds(r.path));
  series.sort((a, b) => a.date.localeCompare(b.date) || a.serial - b.serial);
  for (let i = 1; i < series.length; i++) {
    const [a, b] = [series[i - 1], series[i]];
    if (a.date === b.date && a.serial === b.serial)
      throw new Error(`${a.path} and ${b.path} are runs of ${own.machine} in no order (same date, same -N)`);
  }
  return series;
}

/** The median of three figures as printed: the middle one by value, as it is written. */
export function median3(figures: string[]): string {
  if (figures.length !== 3) throw new Error(`median3 takes three figures, got ${figures.length}`);
  return [...figures].sort((a, b) => Number(a) - Number(b))[1];
}

/**
 * What the rule gives for a figure over its series (`figureOf` reads one run's figure), and what is wrong
 * with the claim's file under the rule (null when nothing).
 */
export function byRule(
  rule: Rule,
  file: string,
  series: RunFile[],
  figureOf: (path: string) => string,
): { figure: string; problem: string | null } {
  const newest = series[series.length - 1];
  const machine = newest.machine;
  const problem =
    newest.path === file
      ? null
      : `rule "${rule}": ${newest.path} is a newer run of ${machine} than ${file} (it gives ${figureOf(newest.path)})`;
  switch (rule) {
    case 'newest':
      return { figure: figureOf(newest.path), problem };
    case 'median3': {
      if (series.length < 3)
        return {
          figure: '(no median)',
          problem: `rule "median3": ${machine} has ${series.length} run(s) holding this figure, not three`,
        };
      const last = series.slice(-3);
      return { figure: median3(last.map((r) => figureOf(r.path))), problem };
    }
    case 'every':
      return { figure: series.map((r) => figureOf(r.path)).join(' / '), problem };
  }
}
