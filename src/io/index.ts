/** Reading and writing tensors: `import { io } from 'qkv'`. */
export { readSafetensors, writeSafetensors, type SafetensorsFile, type SafetensorsDType, type WriteOptions } from './safetensors.ts';
