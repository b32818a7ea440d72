import type { Backend } from '../backend.ts';
import { adam } from './adam.ts';
import { attention, attentionBackward } from './attention.ts';
import { crossEntropy, crossEntropyBackward } from './crossentropy.ts';
import { binary, binaryScalar, dropoutMask, gelu, geluBackward, pow, relu, reluBackward, unary } from './elementwise.ts';
import { embedding, embeddingBackward } from './embedding.ts';
import { gemm } from './gemm.ts';
import { layerNorm, layerNormBackward } from './layernorm.ts';
import { copyRows, permute, reduceSum } from './layout.ts';
import { logSoftmax, logSoftmaxBackward, softmax, softmaxBackward } from './softmax.ts';

/** The reference backend: plain TypeScript, one file per concern, the oracle for every fast kernel. */
export const jsBackend: Backend = {
  name: 'js',
  gemm,
  binary,
  binaryScalar,
  dropoutMask,
  unary,
  pow,
  reduceSum,
  permute,
  copyRows,
  softmax,
  softmaxBackward,
  logSoftmax,
  logSoftmaxBackward,
  layerNorm,
  layerNormBackward,
  relu,
  reluBackward,
  gelu,
  geluBackward,
  embedding,
  embeddingBackward,
  crossEntropy,
  crossEntropyBackward,
  attention,
  attentionBackward,
  adam,
};
