/**
 * The differentiable functions, gathered from the op files: what `F` (./index.ts) exports, and
 * what the tensor methods (./methods.ts) call. Imports no module that imports it (no circle).
 */
export {
  add,
  sub,
  mul,
  div,
  neg,
  exp,
  log,
  sqrt,
  tanh,
  sigmoid,
  pow,
  relu,
  gelu,
  swiglu,
  maskedFill,
  expand,
} from './elementwise.ts';
export { sum, mean, argmax, eq, sumToShape } from './reduce.ts';
export { permute, transpose, unsqueeze, squeeze, narrow, split, chunk, cat, stack } from './shape.ts';
export {
  matmul,
  linear,
  linearQuantized,
  linearDequantized,
  quantizeWeight,
  quantizedRows,
  embeddingQuantized,
  dequantizeWeight,
  type QuantDType,
  type QuantizedWeight,
} from './matmul.ts';
export { softmax, logSoftmax } from './softmax.ts';
export { layerNorm, rmsNorm } from './norm.ts';
export { rotaryEmbedding } from './rotary.ts';
export { dropout } from './dropout.ts';
export { embedding } from './embedding.ts';
export { crossEntropy, mseLoss, type CrossEntropyOptions } from './loss.ts';
export {
  scaledDotProductAttention,
  attention,
  causalBias,
  maskToBias,
  type AttentionOptions,
  type AttentionResult,
} from './attention.ts';
