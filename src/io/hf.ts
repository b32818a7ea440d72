/**
 * Hugging Face GPT-2 folders' files into a qkv GPT (models/hf/gpt2.ts does the mapping): from the
 * whole model.safetensors in memory, or one tensor at a time through a range reader (a browser
 * File's slice, Node's fs.readSync), so a 124M-parameter model (500 MB in fp32) is never held twice: each
 * tensor's bytes are read, copied (transposed where HF's Conv1D layout asks) into the parameter,
 * and dropped.
 */
import { GPT } from '../models/gpt.ts';
import { copyHfTensor, gptConfigFromHf, planHfGpt2Load } from '../models/hf/gpt2.ts';
import { Tensor } from '../tensor/tensor.ts';
import { decodeSafetensorsTensor, readSafetensorsHeader, type SafetensorsEntry } from './safetensors.ts';

/** An HF GPT-2 checkpoint from its config.json (object) and the bytes of its model.safetensors. */
export function readHfGpt2(configJson: unknown, safetensors: Uint8Array): GPT {
  return readHfGpt2Sync(configJson, safetensors.length, (b, e) => safetensors.subarray(b, e));
}

/** Reads bytes [begin, end) of a file (fewer when the file ends first). */
export type RangeReader = (begin: number, end: number) => Promise<Uint8Array>;
/** {@link RangeReader} without the promise: bytes [begin, end) of a file, read synchronously. */
export type RangeReaderSync = (begin: number, end: number) => Uint8Array;

/**
 * The same, reading model.safetensors (`size` bytes) through `read`, one tensor at a time. The
 * model is built (config and tensor list checked) before any weight is read; `progress` gets the
 * bytes read so far. Untransposed F32 tensors are read `chunkBytes` at a time (default 16 MiB).
 */
export async function readHfGpt2Streaming(
  configJson: unknown,
  size: number,
  read: RangeReader,
  progress?: (bytes: number, total: number) => void,
  chunkBytes = CHUNK_BYTES,
): Promise<GPT> {
  const steps = hfGpt2Steps(configJson, size, progress, chunkBytes);
  let r = steps.next();
  while (!r.done) r = steps.next(await read(...r.value));
  return r.value;
}

/** readHfGpt2Streaming with a synchronous reader (Node's fs.readSync): the CLI's way. */
export function readHfGpt2Sync(
  configJson: unknown,
  size: number,
  read: RangeReaderSync,
  progress?: (bytes: number, total: number) => void,
  chunkBytes = CHUNK_BYTES,
): GPT {
  const steps = hfGpt2Steps(configJson, size, progress, chunkBytes);
  let r = steps.next();
  while (!r.done) r = steps.next(read(...r.value));
  return r.value;
}

/**
 * The loading itself, written once for every reader (these two, and the folder module's one door): it
 * yields the byte ranges of model.safetensors (`size` bytes) it needs, in file order, and is given
 * their bytes back.
 */
export function* hfGpt2Steps(
  configJson: unknown,
  size: number,
  progress?: (bytes: number, total: number) => void,
  chunkBytes: number = CHUNK_BYTES,
): Generator<[number, number], GPT, Uint8Array> {
  if (!Number.isInteger(chunkBytes) || chunkBytes < 4 || chunkBytes % 4 !== 0)
    throw new Error(`readHfGpt2: chunkBytes must be a positive multiple of 4, got ${chunkBytes}`);
  if (size < 8) throw new Error(`safetensors: file is ${size} bytes, shorter than the 8-byte header length prefix`);
  const prefix = yield [0, 8];
  if (prefix.length < 8) throw new Error(`model.safetensors: the file is cut short (${prefix.length} of 8 bytes)`);
  const dv = new DataView(prefix.buffer, prefix.byteOffset, 8);
  const headerLen = dv.getUint32(0, true);
  // else the header check fails clearly
  const head = dv.getUint32(4, true) === 0 && headerLen <= size - 8 ? yield [0, 8 + headerLen] : prefix;
  const { dataStart, entries } = readSafetensorsHeader(head, size);
  // Config, names and shapes are checked before any weight is read.
  const model = new GPT(gptConfigFromHf(configJson), { init: false });
  const own = model.stateDict();
  let done = dataStart;
  for (const step of planHfGpt2Load(entries, own).sort((a, b) => a.entry.begin - b.entry.begin)) {
    const e = step.entry;
    const dst = own[step.target.name];
    const chunked = e.dtype === 'F32' && !step.target.transpose;
    // Large untransposed tables (wte: 154 MB in gpt2) are read in pieces straight into the parameter.
    const piece = chunked ? chunkBytes : e.end - e.begin;
    for (let at = e.begin; at < e.end; at += piece) {
      const to = Math.min(e.end, at + piece);
      const bytes = yield [dataStart + at, dataStart + to];
      if (bytes.length !== to - at)
        throw new Error(
          `model.safetensors: tensor '${e.name}' is cut short ` +
            `(${at - e.begin + bytes.length} of ${e.end - e.begin} bytes): the ` +
            `file is truncated`,
        );
      if (chunked) dst.write(float32View(bytes), (at - e.begin) / 4);
      else copyHfTensor(dst, float32Tensor(bytes, e), step.target.transpose);
      done += bytes.length;
      progress?.(done, size);
    }
  }
  return model.eval();
}

/** Bytes read per piece of a large untransposed F32 tensor (a multiple of 4). */
const CHUNK_BYTES = 16 * 2 ** 20;

/** F32 little-endian bytes as a Float32Array (a view when aligned). */
function float32View(bytes: Uint8Array): Float32Array {
  if (bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  return new Float32Array(bytes.slice().buffer);
}

/** A tensor's bytes as float32, without a copy when the file is F32 and aligned. */
function float32Tensor(bytes: Uint8Array, e: SafetensorsEntry): Tensor {
  if (e.dtype === 'F32' && bytes.byteOffset % 4 === 0)
    return new Tensor(new Float32Array(bytes.buffer, bytes.byteOffset, e.numel), e.shape, 'float32');
  const t = decodeSafetensorsTensor(bytes, e);
  if (t.dtype !== 'float32')
    throw new Error(`model.safetensors: tensor '${e.name}' has dtype ${e.dtype}, expected a float type`);
  return t;
}
