/**
 * Hugging Face GPT-2 folders' files into a qkv GPT (`models.GPT.fromHuggingFace` does the mapping):
 * from the whole model.safetensors in memory (Node), or one tensor at a time through a range reader
 * (a browser File's slice), so a 124M-parameter model (500 MB in fp32) is never held twice: each
 * tensor's bytes are read, copied (transposed where HF's Conv1D layout asks) into the parameter,
 * and dropped.
 */
import { GPT } from '../models/gpt.ts';
import { copyHfTensor, gptConfigFromHf, planHfGpt2Load } from '../models/hf/gpt2.ts';
import { Tensor } from '../tensor/tensor.ts';
import { decodeSafetensorsTensor, readSafetensorsHeader, type SafetensorsEntry } from './safetensors.ts';

/** An HF GPT-2 checkpoint from its config.json (object) and the bytes of its model.safetensors. */
export function readHfGpt2(configJson: unknown, safetensors: Uint8Array): GPT {
  const { dataStart, entries } = readSafetensorsHeader(safetensors, safetensors.length);
  const byName = new Map(entries.map((e) => [e.name, e]));
  return GPT.fromHuggingFace(configJson, {
    entries,
    read: (name) => {
      const e = byName.get(name)!;
      return float32Tensor(safetensors.subarray(dataStart + e.begin, dataStart + e.end), e);
    },
  });
}

/** Reads bytes [begin, end) of a file. */
export type RangeReader = (begin: number, end: number) => Promise<Uint8Array>;

/**
 * The same, reading model.safetensors (`size` bytes) through `read`, one tensor at a time. The
 * model is built (config and tensor list checked) before any weight is read; `progress` gets the
 * bytes read so far.
 */
export async function readHfGpt2Streaming(configJson: unknown, size: number, read: RangeReader, progress?: (bytes: number, total: number) => void): Promise<GPT> {
  if (size < 8) throw new Error(`safetensors: file is ${size} bytes, shorter than the 8-byte header length prefix`);
  const prefix = await read(0, 8);
  const headerLen = new DataView(prefix.buffer, prefix.byteOffset, 8).getUint32(0, true);
  const hi = new DataView(prefix.buffer, prefix.byteOffset, 8).getUint32(4, true);
  const head = hi === 0 && headerLen <= size - 8 ? await read(0, 8 + headerLen) : prefix; // else the header check below fails clearly
  const { dataStart, entries } = readSafetensorsHeader(head, size);
  // Config, names and shapes are checked before any weight is read.
  const model = new GPT(gptConfigFromHf(configJson), { init: false });
  const own = model.stateDict();
  let done = dataStart;
  for (const step of planHfGpt2Load(entries, own).sort((a, b) => a.entry.begin - b.entry.begin)) {
    const e = step.entry;
    const bytes = await read(dataStart + e.begin, dataStart + e.end);
    if (bytes.length !== e.end - e.begin) throw new Error(`model.safetensors: tensor '${e.name}' is cut short (${bytes.length} of ${e.end - e.begin} bytes): the file is truncated`);
    copyHfTensor(own[step.target.name], float32Tensor(bytes, e), step.target.transpose);
    done += bytes.length;
    progress?.(done, size);
  }
  return model.eval();
}

/** A tensor's bytes as float32, without a copy when the file is F32 and aligned. */
function float32Tensor(bytes: Uint8Array, e: SafetensorsEntry): Tensor {
  if (e.dtype === 'F32' && bytes.byteOffset % 4 === 0) return new Tensor(new Float32Array(bytes.buffer, bytes.byteOffset, e.numel), e.shape, 'float32');
  const t = decodeSafetensorsTensor(bytes, e);
  if (t.dtype !== 'float32') throw new Error(`model.safetensors: tensor '${e.name}' has dtype ${e.dtype}, expected a float type`);
  return t;
}
