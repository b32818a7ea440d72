/** Whole models built from nn: `import { models } from 'qkv'`. */
export { Seq2Seq, PAPER_BASE, MULTI30K_SMALL, type Seq2SeqConfig } from './seq2seq.ts';
export {
  GPT,
  GPTCache,
  Block,
  MLP,
  GPT2_124M,
  GPT_TINY,
  GPT_SMALL,
  gptParameterCount,
  type GPTConfig,
  type GPTActivation,
  type HfTensorSource,
} from './gpt.ts';
export { gptConfigFromHf, hfGpt2Target, isHfConfig, type HfGpt2Config } from './hf/gpt2.ts';
export {
  loadWeights,
  quantizedAsStored,
  checkFinite,
  describeMismatch,
  SEQ2SEQ_FIELDS,
  GPT_FIELDS,
  type FieldRule,
} from './load-weights.ts';
