/** Decoding for the translation model: greedy and beam search over the decoder's KV cache. */
export {
  greedy, beamSearch, greedySearch, beamSearchSteps, lengthPenalty, type SearchOptions,
  type DecodeOptions, type BeamSearchOptions, type DecodeResult, type BeamSearchResult, type Hypothesis,
} from './search.ts';
export { CachedStepper, FullStepper, type Stepper } from './stepper.ts';
export { TransformerDecoderCache, type DecoderLayerCache, type DecoderStepResult } from '../nn/transformer.ts';
export { generate, generateStream, type GenerateOptions, type GeneratedToken } from './gpt.ts';
export { sampleToken, samplingDistribution, checkSamplingOptions, argmax, type SamplingOptions } from './sample.ts';
