/**
 * What bench/index.ts and bench/torchrun.ts share: the CPU's name as the figures need it, and
 * where a run's results go: a new file in bench/results/ named by date and CPU, never one that
 * exists (issue 40: every quoted speed figure has the file of its own run behind it). The markers
 * of bench:torchrun's section are kept for reading the older bench/RESULTS.md of git history.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';

export const TORCHRUN_BEGIN = '<!-- bench:torchrun begin -->';
export const TORCHRUN_END = '<!-- bench:torchrun end -->';
const TORCHRUN_SECTION = new RegExp(`${TORCHRUN_BEGIN}[\\s\\S]*${TORCHRUN_END}`);

/** bench:torchrun's section of a RESULTS.md text, markers included, if it has one. */
export function torchrunSection(text: string): string | undefined {
  return text.match(TORCHRUN_SECTION)?.[0];
}

/** `text` with its bench:torchrun section replaced by `section` (or `section` appended). */
export function withTorchrunSection(text: string, section: string): string {
  return torchrunSection(text) !== undefined
    ? text.replace(TORCHRUN_SECTION, section)
    : `${text.trimEnd()}\n\n${section}\n`;
}

/**
 * The CPU's name, with its family/model numbers and whether it has AVX-512 where /proc/cpuinfo
 * says so: Node's name can be as bare as "AMD EPYC", and PyTorch's speed differs 3-5x between
 * such machines.
 */
export function cpuName(): string {
  const name = cpus()[0]?.model.trim() ?? 'unknown CPU';
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const field = (key: string) => info.match(new RegExp(`^${key}\\s*:\\s*(.*)$`, 'm'))?.[1]?.trim();
    const flags = field('flags') ?? '';
    const simd = /\bavx512f\b/.test(flags) ? 'AVX-512' : /\bavx2\b/.test(flags) ? 'AVX2, no AVX-512' : 'no AVX2';
    return `${name} (cpu family ${field('cpu family')}, model ${field('model')}, ${simd})`;
  } catch {
    return name;
  }
}

/**
 * The code a run measured: the commit, and whether the work tree had changes beside it (a results
 * file can then be tied to the code it timed, and two runs compared knowing what changed between them).
 * A bundle made by bench/webgpu/device-bench.sh (which builds only from a clean commit of main) runs with
 * that commit in QKV_BENCH_COMMIT: the results name it, whatever tree the bundle runs beside.
 */
export function codeVersion(): string {
  const bundled = process.env.QKV_BENCH_COMMIT?.trim();
  if (bundled) return `commit ${bundled.slice(0, 7)} (bundled from a clean tree by bench/webgpu/device-bench.sh)`;
  try {
    const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();
    const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
    return `commit ${git('rev-parse', '--short', 'HEAD')}${dirty ? ' with uncommitted changes' : ''}`;
  } catch {
    return 'commit unknown (not a git checkout)';
  }
}

/** A file-name part from the CPU's name: "AMD EPYC (cpu family 26, model 2, AVX-512)" → "amd-epyc-family-26-model-2-avx512". */
export function cpuSlug(name = cpuName()): string {
  return (
    name
      .toLowerCase()
      .replace(/\((r|tm)\)/g, '')
      .replace(/,? no avx-512/g, '')
      .replace(/\b(cpu|processor)\b/g, ' ')
      .replace(/avx-512/g, 'avx512')
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'unknown-cpu'
  );
}

/**
 * Write one benchmark run's results to a new file, bench/results/DATE-CPU[-KIND][-N].md (N from 2
 * when the name is taken: a file is never overwritten, `wx`); returns its path relative to bench/.
 */
export function writeNewResults(text: string, kind = ''): string {
  const dir = new URL('results/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  const stem = `${new Date().toISOString().slice(0, 10)}-${cpuSlug()}${kind ? `-${kind}` : ''}`;
  for (let n = 1; ; n++) {
    const name = `${stem}${n === 1 ? '' : `-${n}`}.md`;
    try {
      writeFileSync(new URL(name, dir), text, { flag: 'wx' });
      return `results/${name}`;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}
