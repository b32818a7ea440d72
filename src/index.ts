/**
 * qkv: the Transformer of "Attention Is All You Need" in TypeScript.
 *
 *   import { tensor, nn, F, io } from 'qkv';
 */
import './ops/methods.ts';

export {
  Tensor,
  tensor,
  zeros,
  ones,
  full,
  zerosLike,
  onesLike,
  randn,
  rand,
  randint,
  arange,
  type DType,
  type TensorOptions,
} from './tensor/tensor.ts';
export { Generator, manualSeed, defaultGenerator } from './tensor/random.ts';
export { memoryScope } from './tensor/storage.ts';
export { noGrad, enableGrad, isGradEnabled, gradcheck, checkpoint, type GradcheckOptions } from './autograd/index.ts';
export {
  setBackend,
  backendReady,
  getBackend,
  backendNames,
  registerBackend,
  registerLoader,
  type Backend,
} from './backend/backend.ts';
export type { Device, Storage } from './tensor/storage.ts';
export * as F from './ops/index.ts';
export * as nn from './nn/index.ts';
export * as io from './io/index.ts';
export * as models from './models/index.ts';
export * as decode from './decode/index.ts';
export {
  capture,
  captureCounts,
  compile,
  CaptureError,
  Captured,
  type CaptureStats,
  type CompiledStep,
  type ScalarPatch,
  withScalars,
} from './compile/capture.ts';
export * as data from './data/index.ts';
export * as train from './train/index.ts';
export * as optim from './optim/index.ts';
export * as text from './text/index.ts';
export * as viz from './viz/index.ts';
export * as folder from './folder/index.ts';
export {
  pipeline,
  type Task,
  type PipelineOptions,
  type TranslationPipeline,
  type TranslationOptions,
  type TextGenerationPipeline,
  type GenerationOptions,
  type ChatGenerated,
  type ChatMessage,
  type PipelineWarning,
} from './pipelines/index.ts';
export { setNumThreads, numThreads } from './backend/wasm/threads.ts';
export { loadWasmKernels } from './backend/wasm/index.ts';
export { backendInfo, type BackendInfo } from './backend/info.ts';
