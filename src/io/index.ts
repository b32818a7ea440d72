/** Reading and writing tensors: `import { io } from 'qkv'`. */
export {
  readSafetensors,
  readSafetensorsHeader,
  decodeSafetensorsTensor,
  writeSafetensors,
  type SafetensorsEntry,
  type SafetensorsFile,
  type SafetensorsDType,
  type WriteOptions,
} from './safetensors.ts';
export { readPytorch } from './pytorch.ts';
export { readHfGpt2, readHfGpt2Streaming, readHfGpt2Sync, type RangeReader, type RangeReaderSync } from './hf.ts';
export { quantizeInt8, dequantizeInt8, SCALE_SUFFIX } from '../tensor/quantize.ts';
