/**
 * What bench/index.ts and bench/torchrun.ts share in bench/RESULTS.md: the CPU's name as the
 * figures need it, and the markers around bench:torchrun's section, which a full run keeps.
 */
import { readFileSync } from 'node:fs';
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
  return torchrunSection(text) !== undefined ? text.replace(TORCHRUN_SECTION, section) : `${text.trimEnd()}\n\n${section}\n`;
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
