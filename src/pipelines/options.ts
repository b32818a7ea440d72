/**
 * What every pipeline checks its option objects with, so the API is as strict as the CLI: an
 * unknown name is an Error with the nearest known one ("did you mean"), as commander answers an
 * unknown flag; a value of the wrong kind is an Error naming the option, what it expects and what
 * came, type included (`translation: beam: expected a positive integer, got string '4'`). One
 * validator for `pipeline(task, folder, options)` and for each call's options.
 *
 * Also here: the warnings a pipeline gives its caller (what the CLI prints on stderr), and the `dtype` a
 * pipeline computes in, which the CLI's --dtype maps onto (applyDType).
 */
import type { Module } from '../nn/module.ts';
import type { QuantDType } from '../ops/matmul.ts';

/** The kinds of value an option takes, each with what its error says it expects. */
const KINDS = {
  positiveInt: { expected: 'a positive integer', ok: (v: unknown) => Number.isInteger(v) && (v as number) > 0 },
  nonNegativeInt: { expected: 'an integer >= 0', ok: (v: unknown) => Number.isInteger(v) && (v as number) >= 0 },
  nonNegativeNumber: {
    expected: 'a finite number >= 0',
    ok: (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0,
  },
  positiveNumber: {
    expected: 'a finite number > 0',
    ok: (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v > 0,
  },
  probability: {
    expected: 'a number in (0, 1]',
    ok: (v: unknown) => typeof v === 'number' && v > 0 && v <= 1,
  },
  boolean: { expected: 'true or false', ok: (v: unknown) => typeof v === 'boolean' },
  device: {
    expected: "'webgpu', 'wasm', 'cpu' or 'js'",
    ok: (v: unknown) => v === 'webgpu' || v === 'wasm' || v === 'cpu' || v === 'js',
  },
  function: { expected: 'a function', ok: (v: unknown) => typeof v === 'function' },
  languageCode: {
    expected: "a language code such as 'eng_Latn'",
    ok: (v: unknown) => typeof v === 'string' && v.length > 0,
  },
  pooling: {
    expected: "'mean', 'cls' or 'none'",
    ok: (v: unknown) => v === 'mean' || v === 'cls' || v === 'none',
  },
  folder: {
    expected: 'a folder (a path, a URL, File objects or a map of file contents)',
    ok: (v: unknown) => (typeof v === 'string' && v.length > 0) || (typeof v === 'object' && v !== null),
  },
  dtype: {
    expected: "'fp32', 'q8' (or 'int8') or 'q4'",
    ok: (v: unknown) => typeof v === 'string' && Object.hasOwn(DTYPES, v),
  },
  strings: {
    expected: 'an array of non-empty strings',
    ok: (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string' && x.length > 0),
  },
  signal: {
    expected: 'an AbortSignal',
    ok: (v: unknown) =>
      typeof v === 'object' && v !== null && typeof (v as AbortSignal).aborted === 'boolean' && 'reason' in v,
  },
} as const;

/** The kind of value an option takes (see KINDS). */
export type OptionKind = keyof typeof KINDS;

/** An option object's known names and the kind of value each takes. */
export type OptionSpec = Readonly<Record<string, OptionKind>>;

/**
 * How a value is named in an error: its type and, where short, the value itself (`string '4'`,
 * `number 1.5`, `null`, `an array`).
 */
export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (typeof v === 'string') return `string ${JSON.stringify(v).replace(/^"|"$/g, "'")}`;
  if (typeof v === 'number' || typeof v === 'boolean') return `${typeof v} ${String(v)}`;
  if (typeof v === 'bigint') return `bigint ${v}n`;
  if (typeof v === 'function') return 'a function';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'symbol') return 'a symbol';
  return `an object (${Object.prototype.toString.call(v).slice(8, -1)})`;
}

/** Edit distance (insertions, deletions, substitutions) between two short strings. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length];
}

/** A name without case, '_' or '-': `max_new_tokens` and `maxNewTokens` compare equal. */
const fold = (name: string): string => name.toLowerCase().replace(/[_-]/g, '');

/**
 * The known name nearest to `name`, if one is near: equal but for case and '_' / '-', else within
 * an edit distance of about a third of its length (commander's rule for flags is similar).
 */
export function didYouMean(name: string, known: readonly string[]): string | undefined {
  const f = fold(name);
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const d = distance(f, fold(k));
    if (d < bestD) {
      best = k;
      bestD = d;
    }
  }
  return best !== undefined && bestD <= Math.max(1, Math.floor(fold(best).length / 3)) ? best : undefined;
}

/**
 * Checks `options` against `spec`, throwing an Error that starts with `where: ` for the first
 * problem: not an object, an unknown name (with the nearest known one), or a value of another kind
 * than the spec's. Undefined values count as left out.
 */
export function checkOptions(where: string, options: unknown, spec: OptionSpec): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw new Error(`${where}: options: expected an object, got ${describeValue(options)}`);
  const known = Object.keys(spec);
  for (const [name, value] of Object.entries(options)) {
    const kind = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (kind === undefined) {
      const near = didYouMean(name, known);
      throw new Error(
        `${where}: unknown option '${name}'${near ? ` (did you mean '${near}'?)` : ''}; ` +
          `it takes ${known.join(', ')}`,
      );
    }
    if (value !== undefined && !KINDS[kind].ok(value))
      throw new Error(`${where}: ${name}: expected ${KINDS[kind].expected}, got ${describeValue(value)}`);
  }
}

/**
 * Something a pipeline did to its input that its caller should know, as the CLI says it on stderr:
 * a sentence longer than the model reads truncated (or with `skipLong` left untranslated), an empty
 * one (only with `warnEmpty`), prompt characters the model's vocabulary does not hold.
 */
export interface PipelineWarning {
  /** What happened. */
  kind: 'truncated' | 'skipped' | 'empty' | 'unknown-tokens';
  /** One line for a person: `line 7: 289 tokens, truncated to 256`. */
  message: string;
  /** Translation: the sentence's place in the input, counted from 1. */
  line?: number;
}

/** Where warnings go: the caller's `onWarning`, else console.warn (never nowhere). */
export function warner(onWarning: ((w: PipelineWarning) => void) | undefined): (w: PipelineWarning) => void {
  return onWarning ?? ((w) => console.warn(`qkv: ${w.message}`));
}

/**
 * The `dtype` option of `pipeline(task, folder, { dtype })`, as transformers.js users write it: 'fp32' float
 * compute, 'q8' (or qkv's name 'int8') int8 weights and activations, 'q4' 4-bit weights in blocks of 32 (tables
 * int8). What each becomes in module.quantize's terms (null: float).
 */
export const DTYPES = { fp32: null, q8: 'int8', int8: 'int8', q4: 'q4' } as const satisfies Record<
  string,
  QuantDType | null
>;

/** A pipeline's `dtype` (see {@link DTYPES}). */
export type PipelineDType = keyof typeof DTYPES;

/** What a model holds: 'q4' (any q4 weight), 'int8' (int8 weights only), or null (float). */
export function heldDType(model: Module): QuantDType | null {
  let held: QuantDType | null = null;
  for (const t of Object.values(model.stateDict())) {
    if (t.dtype === 'q4') return 'q4';
    if (t.dtype === 'int8') held = 'int8';
  }
  return held;
}

/**
 * `models` (a folder's model, or its ensemble) made to compute in `dtype`, in place: a float model is quantized
 * at load (module.quantize: 'q8' int8, 'q4' q4 with int8 tables); a quantized folder's model runs as it is stored
 * when `dtype` names its own kind or is left out. Refused, in one line naming `where` (the folder): 'fp32' for a
 * quantized folder, and 'q8' / 'q4' for a folder quantized the other way (quantizing twice compounds the errors:
 * export the float folder with the dtype wanted instead).
 */
export function applyDType(models: readonly Module[], dtype: PipelineDType | undefined, where: string): void {
  if (dtype === undefined) return;
  const want = DTYPES[dtype];
  if (want === undefined)
    throw new Error(`${where}: dtype: expected ${KINDS.dtype.expected}, got ${describeValue(dtype)}`);
  for (const m of models) {
    const held = heldDType(m);
    if (held === want) continue;
    if (held === null) {
      try {
        m.quantize({ dtype: want! });
      } catch (e) {
        throw new Error(`${where}: dtype '${dtype}': ${(e as Error).message}`);
      }
      continue;
    }
    const instead = want ? ` (or qkv export --dtype ${want} it)` : '';
    throw new Error(
      `${where}: dtype '${dtype}': the folder holds ${held} weights, which run as stored (never dequantized or ` +
        `quantized again): leave dtype out, or take the float folder${instead}`,
    );
  }
}
