/** torch.nn-compatible modules: `import { nn } from 'qkv'`. */
export {
  Module,
  ModuleList,
  withEvalMode,
  enterEvalMode,
  type LoadStateDictOptions,
  type LoadResult,
} from './module.ts';
export {
  Linear,
  Embedding,
  LayerNorm,
  RMSNorm,
  SwiGLU,
  Dropout,
  ReLU,
  GELU,
  PositionalEncoding,
  sinusoidalTable,
  type LayerNormOptions,
  type RMSNormOptions,
} from './layers.ts';
export { RotaryEmbedding, type RopeScaling } from './rotary.ts';
export { RelativePositionBias, relativePositionBucket } from './relative-position-bias.ts';
export {
  MultiheadAttention,
  type MultiheadAttentionOptions,
  type MultiheadAttentionForwardOptions,
} from './attention.ts';
export {
  TransformerEncoderLayer,
  TransformerDecoderLayer,
  TransformerEncoder,
  TransformerDecoder,
  Transformer,
  type TransformerLayerOptions,
  type TransformerOptions,
  type TransformerForwardOptions,
  type Activation,
  type EncoderLayerForwardOptions,
  type DecoderLayerForwardOptions,
} from './transformer.ts';
export { TransformerDecoderCache, gatherRows, type DecoderLayerCache } from './kv-cache.ts';
export { SimpleSelfAttention } from './simple.ts';
export * as init from './init.ts';
export { LoraLinear, freeze, loraModules, trainableParameters, type LoraOptions } from './lora.ts';
export { quantizeForLora } from './qlora.ts';
