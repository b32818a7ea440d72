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

import { generationSource, refuseUnsupported, type GenerationOverrides } from './generation-config.ts';

/** An encoder-decoder's generation defaults, as generate() applies them with no options. */
export interface HfGeneration {
  /** num_beams (opus-mt: 4; 1 = greedy). */
  numBeams: number;
  /** max_length: the output's most ids, the decoder's start id included (max_new_tokens + 1 where that is set). */
  maxLength: number;
  /** length_penalty: a hypothesis scores sum log p / length^lengthPenalty (default 1). */
  lengthPenalty: number;
  /**
   * early_stopping (default false: HF's heuristic stop; true: stop once numBeams hypotheses are done; 'never': the
   * heuristic with the longest length still possible where length_penalty > 0).
   */
  earlyStopping: boolean | 'never';
  /** repetition_penalty (default 1: none): the score of an id already in the output divided by it (× where < 0). */
  repetitionPenalty: number;
  /** encoder_no_repeat_ngram_size (default 0: none): no n-gram of the source is generated. */
  encoderNoRepeatNgramSize: number;
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
 * and config.json, with `overrides` (a pipeline task's `task_specific_params`) set over them; errors name the file
 * (`configName`: what the folder calls its config) and the key.
 */
export function hfSeq2SeqGeneration(
  config: unknown,
  generationConfig: unknown,
  configName = 'the model config',
  overrides?: GenerationOverrides,
): HfGeneration {
  const src = generationSource(config, generationConfig, FROM_MODEL_CONFIG, configName, overrides);
  const { file, value, num, set } = src;
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
    if (typeof v !== 'boolean') throw new Error(`${file}: ${k} must be true or false, got ${JSON.stringify(v)}`);
    return v;
  };
  const early = value('early_stopping') ?? false;
  if (typeof early !== 'boolean' && early !== 'never')
    throw new Error(`${file}: early_stopping must be true, false or "never", got ${JSON.stringify(early)}`);
  refuseUnsupported(src, REFUSED, '', 'decodes');
  const bad = value('bad_words_ids') ?? [];
  if (!Array.isArray(bad) || !bad.every((w) => Array.isArray(w) && w.length === 1 && Number.isInteger(w[0])))
    throw new Error(
      `${file}: bad_words_ids must be a list of one-id lists (e.g. [[58100]]), got ${JSON.stringify(bad)}`,
    );
  const maxNew = value('max_new_tokens');
  return {
    numBeams: num('num_beams', 1, 'int', 1),
    // max_new_tokens, where given, wins over max_length (an encoder-decoder output starts with one id).
    maxLength: maxNew !== undefined ? num('max_new_tokens', 1, 'int', 1) + 1 : num('max_length', 20, 'int', 2),
    lengthPenalty: num('length_penalty', 1, 'number', -Infinity),
    earlyStopping: early,
    repetitionPenalty: num('repetition_penalty', 1, 'number', 0, true),
    encoderNoRepeatNgramSize: num('encoder_no_repeat_ngram_size', 0, 'int', 0),
    badWordsIds: (bad as number[][]).map((w) => w[0]),
    forcedEosTokenId: id('forced_eos_token_id'),
    forcedBosTokenId: id('forced_bos_token_id'),
    minLength: num('min_length', 0, 'int', 0),
    minNewTokens: num('min_new_tokens', 0, 'int', 0),
    noRepeatNgramSize: num('no_repeat_ngram_size', 0, 'int', 0),
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
