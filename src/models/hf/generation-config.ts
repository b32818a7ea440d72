/**
 * The reading that lm-generation.ts (causal LMs) and seq2seq-generation.ts (encoder-decoders) share: which file
 * generate() takes its settings from (`generation_config.json`, else config.json's generation keys, as
 * `GenerationConfig.from_model_config` takes them), typed reads of its keys with errors naming the file and the key,
 * the refusal of keys set to anything but their "off" value, and the keys the file sets.
 */

/** A generation config's source file, read: its keys and typed readers of them. */
export interface GenerationSource {
  /** 'generation_config.json', or config.json's name where the folder has none. */
  file: string;
  /** The keys read: the whole generation_config.json, or config.json's generation keys. */
  from: Record<string, unknown>;
  /** A key's value, undefined where unset or null. */
  value(k: string): unknown;
  /** A number key (`fallback` where unset) that must be finite, an integer for 'int', and >= min (> with exclusive). */
  num(k: string, fallback: number, kind: 'int' | 'number', min: number, exclusive?: boolean): number;
  /** Every key the file sets (`transformers_version` and `_from_model_config` left out), as it sets it. */
  set: Record<string, unknown>;
}

/**
 * Keys set over the file's, as transformers' pipelines `generation_config.update()` them with a task's
 * `task_specific_params` (T5's summarization: num_beams 4, no_repeat_ngram_size 3, …); `name` says where they come
 * from in errors ("config.json's task_specific_params.summarization").
 */
export interface GenerationOverrides {
  values: Record<string, unknown>;
  name: string;
}

/**
 * The generation settings' file from generation_config.json (undefined where the folder has none) and config.json
 * (whose `fromModelConfig` keys alone count); errors name the file (`configName`: what the folder calls its config).
 */
export function generationSource(
  config: unknown,
  generationConfig: unknown,
  fromModelConfig: readonly string[],
  configName = 'the model config',
  overrides?: GenerationOverrides,
): GenerationSource {
  const base = generationConfig !== undefined ? 'generation_config.json' : configName;
  const file = overrides ? `${base} with ${overrides.name}` : base;
  const raw = generationConfig ?? config;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${file}: expected a JSON object`);
  const all = raw as Record<string, unknown>;
  const from: Record<string, unknown> =
    generationConfig !== undefined
      ? { ...all }
      : Object.fromEntries(fromModelConfig.filter((k) => all[k] !== undefined).map((k) => [k, all[k]]));
  if (overrides) Object.assign(from, overrides.values);
  const value = (k: string) => (from[k] === null ? undefined : from[k]);
  const num = (k: string, fallback: number, kind: 'int' | 'number', min: number, exclusive = false): number => {
    const v = value(k) ?? fallback;
    const ok =
      typeof v === 'number' &&
      Number.isFinite(v) &&
      (kind === 'number' || Number.isInteger(v)) &&
      (exclusive ? v > min : v >= min);
    if (!ok)
      throw new Error(
        `${file}: ${k} must be ${kind === 'int' ? 'an integer' : 'a number'} ${exclusive ? '>' : '>='} ${min}, ` +
          `got ${JSON.stringify(v)}`,
      );
    return v as number;
  };
  const set = Object.fromEntries(
    Object.entries(from).filter(([k]) => k !== 'transformers_version' && k !== '_from_model_config'),
  );
  return { file, from, value, num, set };
}

/**
 * Refuses, naming the key, every key of `refused` that the file sets to anything but its "off" value (transformers'
 * default, given with it): `what` says for what (' for a language model', or ''), `verb` how qkv runs.
 */
export function refuseUnsupported(
  s: GenerationSource,
  refused: Record<string, unknown>,
  what: string,
  verb: 'decodes' | 'generates',
): void {
  for (const [k, off] of Object.entries(refused)) {
    const v = s.from[k];
    if (v === undefined || v === null || v === off || (Array.isArray(v) && v.length === 0)) continue;
    throw new Error(
      `${s.file}: ${k} ${JSON.stringify(v)} is not supported${what} ` +
        `(qkv ${verb} with ${JSON.stringify(off)}, transformers' default: remove the key, or set it to that)`,
    );
  }
}
