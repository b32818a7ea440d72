/**
 * How Hugging Face's `model.generate()` decodes an encoder-decoder folder (Marian, M2M100/NLLB) when given no
 * options: its `generation_config.json`, else the generation keys of its config.json (transformers falls back
 * the same way), over transformers' defaults. decode/hf-search.ts applies them.
 *
 * Every key that changes what generate() returns is read, or refused by name when set to anything but its
 * default: a folder is never decoded by rules other than its own. The keys of the Hub's opus-mt files
 * (transformers 4.32: `bad_words_ids`, `bos_token_id`, `decoder_start_token_id`, `eos_token_id`,
 * `forced_eos_token_id`, `max_length`, `num_beams`, `pad_token_id`, `renormalize_logits`,
 * `transformers_version`) and of NLLB's (`max_length` 200, the special ids) are all read. Keys that change no
 * output id nor score (`use_cache`, `output_scores`, sampling's `temperature`/`top_k`/`top_p` without
 * `do_sample`) are left.
 */

/** An encoder-decoder's generation defaults, as generate() applies them with no options. */
export interface HfGeneration {
  /** num_beams (opus-mt: 4; 1 = greedy). */
  numBeams: number;
  /** max_length: the output's most ids, the decoder's start id included (max_new_tokens + 1 where that is set). */
  maxLength: number;
  /** length_penalty: a hypothesis scores sum log p / length^lengthPenalty (default 1). */
  lengthPenalty: number;
  /** early_stopping (default false: HF's heuristic stop; true: stop once numBeams hypotheses are done). */
  earlyStopping: boolean;
  /** bad_words_ids of one id each: ids never generated (opus-mt: the padding id). */
  badWordsIds: number[];
  /** forced_eos_token_id: the id forced at the last position, scoring 0 (opus-mt: EOS); null: none. */
  forcedEosTokenId: number | null;
  /** forced_bos_token_id: the id forced first (NLLB: set per call to the target language); null: none. */
  forcedBosTokenId: number | null;
  /** min_length (default 0): EOS is blocked while the output, start id included, is shorter. */
  minLength: number;
  /** min_new_tokens (default 0): EOS is blocked until this many ids are generated. */
  minNewTokens: number;
  /** no_repeat_ngram_size (default 0: none). */
  noRepeatNgramSize: number;
  /** renormalize_logits: a log-softmax again after the processors (opus-mt: true; default false). */
  renormalizeLogits: boolean;
  /** decoder_start_token_id, eos_token_id and pad_token_id where the file sets them (null where not). */
  decoderStartTokenId: number | null;
  eosTokenId: number | null;
  padTokenId: number | null;
  /** The file the settings came from: 'generation_config.json', or config.json's name where the folder has none. */
  file: string;
  /** Every key the file sets (`transformers_version` and `_from_model_config` left out), as it sets it. */
  set: Record<string, unknown>;
}

/** Keys generate() takes from config.json when the folder has no generation_config.json. */
const FROM_MODEL_CONFIG = [
  'bos_token_id',
  'eos_token_id',
  'pad_token_id',
  'decoder_start_token_id',
  'do_sample',
  'num_beams',
  'num_beam_groups',
  'max_length',
  'max_new_tokens',
  'min_length',
  'min_new_tokens',
  'length_penalty',
  'early_stopping',
  'no_repeat_ngram_size',
  'encoder_no_repeat_ngram_size',
  'repetition_penalty',
  'encoder_repetition_penalty',
  'bad_words_ids',
  'forced_bos_token_id',
  'forced_eos_token_id',
  'renormalize_logits',
  'diversity_penalty',
  'suppress_tokens',
  'begin_suppress_tokens',
  'num_return_sequences',
] as const;

/**
 * Keys that change what generate() returns and that qkv does not apply, with the value that means "off"
 * (transformers' default): a folder setting another value is refused, naming the key.
 */
const REFUSED: Record<string, unknown> = {
  do_sample: false,
  num_beam_groups: 1,
  diversity_penalty: 0,
  penalty_alpha: null,
  repetition_penalty: 1,
  encoder_no_repeat_ngram_size: 0,
  encoder_repetition_penalty: 1,
  sequence_bias: null,
  suppress_tokens: null,
  begin_suppress_tokens: null,
  exponential_decay_length_penalty: null,
  guidance_scale: null,
  watermarking_config: null,
  stop_strings: null,
  num_return_sequences: 1,
  remove_invalid_values: false,
  constraints: null,
  force_words_ids: null,
  max_time: null,
};

/**
 * An encoder-decoder's generation defaults from generation_config.json (undefined where the folder has none)
 * and config.json; errors name the file (`configName`: what the folder calls its config) and the key.
 */
export function hfSeq2SeqGeneration(
  config: unknown,
  generationConfig: unknown,
  configName = 'the model config',
): HfGeneration {
  const file = generationConfig !== undefined ? 'generation_config.json' : configName;
  const raw = generationConfig ?? config;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${file}: expected a JSON object`);
  const all = raw as Record<string, unknown>;
  const from: Record<string, unknown> =
    generationConfig !== undefined
      ? all
      : Object.fromEntries(FROM_MODEL_CONFIG.filter((k) => all[k] !== undefined).map((k) => [k, all[k]]));
  const value = (k: string) => (from[k] === null ? undefined : from[k]);
  const num = (k: string, fallback: number, integer: boolean, min: number): number => {
    const v = value(k) ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min)
      throw new Error(
        `${file}: ${k} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got ${JSON.stringify(v)}`,
      );
    return v;
  };
  const id = (k: string): number | null => {
    let v = value(k);
    // transformers accepts a list of EOS ids; one is what an encoder-decoder folder holds.
    if (k === 'eos_token_id' && Array.isArray(v) && v.length === 1) v = v[0];
    if (v === undefined) return null;
    if (!Number.isInteger(v) || (v as number) < 0)
      throw new Error(`${file}: ${k} must be an id (an integer >= 0), got ${JSON.stringify(v)}`);
    return v as number;
  };
  const flag = (k: string): boolean => {
    const v = value(k) ?? false;
    const never = v === 'never' ? ' ("never" is not supported)' : '';
    if (typeof v !== 'boolean')
      throw new Error(`${file}: ${k} must be true or false, got ${JSON.stringify(v)}${never}`);
    return v;
  };
  for (const [k, off] of Object.entries(REFUSED)) {
    const v = from[k];
    if (v === undefined || v === null || v === off || (Array.isArray(v) && v.length === 0)) continue;
    throw new Error(
      `${file}: ${k} ${JSON.stringify(v)} is not supported (qkv decodes with ${JSON.stringify(off)}, ` +
        `transformers' default: remove the key, or set it to that)`,
    );
  }
  const bad = value('bad_words_ids') ?? [];
  if (!Array.isArray(bad) || !bad.every((w) => Array.isArray(w) && w.length === 1 && Number.isInteger(w[0])))
    throw new Error(
      `${file}: bad_words_ids must be a list of one-id lists (e.g. [[58100]]), got ${JSON.stringify(bad)}`,
    );
  const maxNew = value('max_new_tokens');
  const set = Object.fromEntries(
    Object.entries(from).filter(([k]) => k !== 'transformers_version' && k !== '_from_model_config'),
  );
  return {
    numBeams: num('num_beams', 1, true, 1),
    // max_new_tokens, where given, wins over max_length (an encoder-decoder output starts with one id).
    maxLength: maxNew !== undefined ? num('max_new_tokens', 1, true, 1) + 1 : num('max_length', 20, true, 2),
    lengthPenalty: num('length_penalty', 1, false, -Infinity),
    earlyStopping: flag('early_stopping'),
    badWordsIds: (bad as number[][]).map((w) => w[0]),
    forcedEosTokenId: id('forced_eos_token_id'),
    forcedBosTokenId: id('forced_bos_token_id'),
    minLength: num('min_length', 0, true, 0),
    minNewTokens: num('min_new_tokens', 0, true, 0),
    noRepeatNgramSize: num('no_repeat_ngram_size', 0, true, 0),
    renormalizeLogits: flag('renormalize_logits'),
    decoderStartTokenId: id('decoder_start_token_id'),
    eosTokenId: id('eos_token_id'),
    padTokenId: id('pad_token_id'),
    file,
    set,
  };
}

/**
 * The generation config's special ids checked against the model's (config.json's): generate() would decode
 * with the generation config's, so a folder whose two files disagree is refused, naming both.
 */
export function checkGenerationIds(
  g: HfGeneration,
  ids: { decoderStartId: number; eosId: number; padId: number },
  configName = 'the model config',
): void {
  const pairs: [string, number | null, number][] = [
    ['decoder_start_token_id', g.decoderStartTokenId, ids.decoderStartId],
    ['eos_token_id', g.eosTokenId, ids.eosId],
    ['pad_token_id', g.padTokenId, ids.padId],
  ];
  for (const [k, gen, model] of pairs) {
    if (gen !== null && gen !== model)
      throw new Error(`${g.file}: ${k} ${gen} differs from ${configName}'s ${model} (qkv reads one of each)`);
  }
}
