/** Parsers for the command line's numeric flags (commander): each names the flag, what it wanted and what came. */
import { InvalidArgumentError } from 'commander';

function parser(check: (n: number) => boolean, want: string, name: string): (v: string) => number {
  return (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !check(n)) throw new InvalidArgumentError(`${name} must be ${want}, got '${v}'`);
    return n;
  };
}

export const int = (name: string) => parser((n) => Number.isInteger(n) && n > 0, 'a positive integer', name);
export const num = (name: string) => parser((n) => Number.isFinite(n) && n > 0, 'a positive number', name);
export const nonNegativeNumber = (name: string) => parser((n) => Number.isFinite(n) && n >= 0, 'a number >= 0', name);
export const nonNegativeInt = (name: string) => parser((n) => Number.isInteger(n) && n >= 0, 'an integer >= 0', name);
export const port = (name: string) =>
  parser((n) => Number.isInteger(n) && n >= 0 && n <= 65535, 'an integer from 0 to 65535', name);
export const probability = (name: string) => parser((n) => n > 0 && n <= 1, 'a number in (0, 1]', name);

/** Comma-separated numbers >= 0, e.g. "0.6,1,1.4". */
export function numList(name: string): (v: string) => number[] {
  return (v: string): number[] => {
    const xs = v.split(',').map((x) => x.trim());
    if (xs.some((x) => x === '' || !Number.isFinite(Number(x)) || Number(x) < 0)) {
      throw new InvalidArgumentError(`${name} must be comma-separated numbers >= 0 (e.g. 0.6,1,1.4), got '${v}'`);
    }
    return xs.map(Number);
  };
}

/** A probability that may be 0 but not 1: dropout, label smoothing. */
export const rate = (name: string) => parser((n) => n >= 0 && n < 1, 'a number in [0, 1)', name);

/** "en-de": two language codes, source and target. */
export function direction(name: string): (v: string) => { src: string; tgt: string } {
  return (v: string) => {
    const m = /^([a-z]{2,3})-([a-z]{2,3})$/.exec(v);
    if (!m || m[1] === m[2])
      throw new InvalidArgumentError(
        `${name} must be SRC-TGT with two different language codes (e.g. en-de, en-fr), got '${v}'`,
      );
    return { src: m[1], tgt: m[2] };
  };
}

/** One of a fixed set of words. */
export function choice<T extends string>(name: string, values: readonly T[]): (v: string) => T {
  return (v: string) => {
    if (!(values as readonly string[]).includes(v))
      throw new InvalidArgumentError(`${name} must be one of ${values.join(', ')}, got '${v}'`);
    return v as T;
  };
}

/** Comma-separated folder paths, e.g. "runs/a,runs/b" (none empty). */
export function dirList(name: string): (v: string) => string[] {
  return (v: string): string[] => {
    const xs = v.split(',').map((x) => x.trim());
    if (xs.some((x) => x === ''))
      throw new InvalidArgumentError(`${name} must be comma-separated folders (e.g. runs/a,runs/b), got '${v}'`);
    return xs;
  };
}
