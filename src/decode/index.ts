/** Decoding for the translation model: greedy and beam search over the decoder's KV cache. */
export {
  greedy,
  beamSearch,
  ensembleMembers,
  greedySearch,
  beamSearchSteps,
  lengthPenalty,
  type SearchOptions,
  type Models,
  type DecodeOptions,
  type BeamSearchOptions,
  type DecodeResult,
  type BeamSearchResult,
  type Hypothesis,
} from './search.ts';
export { CachedStepper, EnsembleStepper, FullStepper, type Stepper, type AsyncStepper } from './stepper.ts';
export { greedySearchAsync, beamSearchAsync } from './search.ts';
export {
  OrtSeq2Seq,
  OrtGpt,
  type OrtLike,
  type OrtSessionLike,
  type OrtTensorLike,
  type OrtModelInfo,
} from './onnxruntime.ts';
export { TransformerDecoderCache, type DecoderLayerCache } from '../nn/kv-cache.ts';
export type { DecoderStepResult } from '../nn/transformer.ts';
export {
  generate,
  generateStream,
  generateStreamAsync,
  KeptCache,
  type AsyncLm,
  type GenerateOptions,
  type GeneratedToken,
} from './gpt.ts';
export {
  StaticGPTDecoder,
  generateStatic,
  generateStaticStream,
  generateStreamCompiled,
  staticCacheServes,
  type StaticGenerateOptions,
} from './static-gpt.ts';
export { StaticSeq2SeqStepper, type StaticStepperOptions } from './static-seq2seq.ts';
export { sampleToken, samplingDistribution, checkSamplingOptions, argmax, type SamplingOptions } from './sample.ts';
export { generateHf, generateHfPausing, translateIdsHf, type HfSearchOptions } from './hf-search.ts';
