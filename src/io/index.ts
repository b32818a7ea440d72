/** Reading and writing tensors: `import { io } from 'qkv'`. */
export { readSafetensors, readSafetensorsHeader, decodeSafetensorsTensor, writeSafetensors, type SafetensorsEntry, type SafetensorsFile, type SafetensorsDType, type WriteOptions } from './safetensors.ts';
