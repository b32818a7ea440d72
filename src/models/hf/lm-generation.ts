/**
 * How Hugging Face's `model.generate()` continues a prompt with a causal language model (GPT-2 now, the Llama
 * family as it lands) when it is given no options: the folder's `generation_config.json` (else the generation keys
 * of its config.json, as `GenerationConfig.from_model_config` takes them), over transformers 5's defaults
 * (`GenerationConfig._get_default_generation_params`): greedy unless `do_sample`, and when sampling temperature 1,
 * top-k 50, top-p 1.
 *
 * Length (transformers' `_prepare_generated_length`): `max_new_tokens` where set; else `max_length` (the prompt
 * included; a prompt as long is an error); else 20 new tokens, the total capped at the model's context.
 *
 * Every key that changes what generate() returns is read, or refused by name when set to anything but its
 * default (`num_beams`, `no_repeat_ngram_size`, …): a folder is never decoded by rules other than its own.
 * Keys that change no token (`use_cache`, `output_scores`, `renormalize_logits`, which only re-normalises the
 * scores that sampling normalises anyway) are read and left.
 */

import { generationSource, refuseUnsupported } from './generation-config.ts';

/** A causal LM's generation defaults, as generate() would apply them with no options. */
export interface HfLmGeneration {
  /** do_sample: draw tokens (temperature, topK, topP apply) instead of taking the argmax. */
  doSample: boolean;
  /** temperature (sampling only; default 1). */
  temperature: number;
  /** top_k (sampling only; default 50; 0: none). */
  topK: number;
  /** top_p (sampling only; default 1: none). */
  topP: number;
  /** repetition_penalty: logits of ids already in the sequence divided by it (multiplied where < 0); 1: none. */
  repetitionPenalty: number;
  /** max_new_tokens, or null where unset. */
  maxNewTokens: number | null;
  /** max_length (the prompt included), or null where unset (then 20 new tokens, within the model's context). */
  maxLength: number | null;
  /** min_new_tokens: EOS is blocked until this many tokens are generated (0: none). */
  minNewTokens: number;
  /** min_length: EOS is blocked while the sequence (the prompt included) is shorter (0: none). */
  minLength: number;
  /** eos_token_id, as a list: generation stops after any of them. */
  eosTokenIds: number[];
  /** pad_token_id, or null. */
  padTokenId: number | null;
  /** bos_token_id, or null (generate() does not add it: the tokenizer decides, see tokenizer_config.json). */
  bosTokenId: number | null;
  /** The file the settings came from: 'generation_config.json', or config.json's name where the folder has none. */
  file: string;
  /** Every key the file sets (`transformers_version` and `_from_model_config` left out), as it sets it. */
  set: Record<string, unknown>;
}

/** Keys generate() reads from config.json when the folder has no generation_config.json. */
const FROM_MODEL_CONFIG = [
  'bos_token_id',
  'eos_token_id',
  'pad_token_id',
  'do_sample',
  'temperature',
  'top_k',
  'top_p',
  'repetition_penalty',
  'max_length',
  'max_new_tokens',
  'min_length',
  'min_new_tokens',
  'num_beams',
  'no_repeat_ngram_size',
  'bad_words_ids',
] as const;

/**
 * Keys that change what generate() returns and that qkv does not apply to a causal LM, with the value that
 * means "off" (transformers' default): a folder setting another value is refused, naming the key.
 */
const REFUSED: Record<string, unknown> = {
  num_beams: 1,
  num_beam_groups: 1,
  diversity_penalty: 0,
  penalty_alpha: null,
  no_repeat_ngram_size: 0,
  encoder_no_repeat_ngram_size: 0,
  encoder_repetition_penalty: 1,
  bad_words_ids: null,
  sequence_bias: null,
  typical_p: 1,
  epsilon_cutoff: 0,
  eta_cutoff: 0,
  min_p: null,
  top_h: null,
  suppress_tokens: null,
  begin_suppress_tokens: null,
  forced_bos_token_id: null,
  forced_eos_token_id: null,
  exponential_decay_length_penalty: null,
  guidance_scale: null,
  watermarking_config: null,
  stop_strings: null,
  num_return_sequences: 1,
  remove_invalid_values: false,
  constraints: null,
  force_words_ids: null,
};

/**
 * A causal LM's generation defaults from generation_config.json (undefined where the folder has none) and
 * config.json; errors name the file (`configName`: what the folder calls its config) and the key.
 */
export function hfLmGeneration(
  config: unknown,
  generationConfig: unknown,
  configName = 'the model config',
): HfLmGeneration {
  const src = generationSource(config, generationConfig, FROM_MODEL_CONFIG, configName);
  const { file, value, num, set } = src;
  const optionalInt = (k: string, min: number): number | null =>
    value(k) === undefined ? null : num(k, 0, 'int', min);
  const doSample = value('do_sample') ?? false;
  if (typeof doSample !== 'boolean')
    throw new Error(`${file}: do_sample must be true or false, got ${JSON.stringify(doSample)}`);
  const eos = value('eos_token_id');
  const eosTokenIds = eos === undefined ? [] : Array.isArray(eos) ? eos : [eos];
  if (!eosTokenIds.every((id) => Number.isInteger(id) && (id as number) >= 0))
    throw new Error(`${file}: eos_token_id must be an id or a list of ids, got ${JSON.stringify(eos)}`);
  refuseUnsupported(src, REFUSED, ' for a language model', 'generates');
  const topP = num('top_p', 1, 'number', 0, true);
  if (topP > 1) throw new Error(`${file}: top_p must be in (0, 1], got ${topP}`);
  return {
    doSample,
    temperature: num('temperature', 1, 'number', 0),
    topK: num('top_k', 50, 'int', 0),
    topP,
    repetitionPenalty: num('repetition_penalty', 1, 'number', 0, true),
    maxNewTokens: optionalInt('max_new_tokens', 0),
    maxLength: optionalInt('max_length', 1),
    minNewTokens: num('min_new_tokens', 0, 'int', 0),
    minLength: num('min_length', 0, 'int', 0),
    eosTokenIds: eosTokenIds as number[],
    padTokenId: optionalInt('pad_token_id', 0),
    bosTokenId: optionalInt('bos_token_id', 0),
    file,
    set,
  };
}

/**
 * How many tokens generate() makes after a prompt of `promptLength` tokens with no options (transformers'
 * `_prepare_generated_length`), for a model whose context holds `contextLength`; an error where `max_length`
 * leaves no room, as transformers raises one.
 */
export function hfNewTokens(g: HfLmGeneration, promptLength: number, contextLength: number): number {
  if (g.maxNewTokens !== null) return g.maxNewTokens;
  if (g.maxLength !== null) {
    if (promptLength >= g.maxLength)
      throw new Error(
        `the prompt is ${promptLength} tokens, and the folder's ${g.file} sets max_length ${g.maxLength} (the prompt ` +
          'included): pass maxNewTokens to generate past it',
      );
    return g.maxLength - promptLength;
  }
  return Math.max(0, Math.min(promptLength + 20, contextLength) - promptLength);
}
