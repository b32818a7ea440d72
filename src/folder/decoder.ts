/**
 * A Hugging Face Llama-family folder (model_type llama, qwen2, mistral) from a folder source: its weights from
 * model.safetensors or from the shards model.safetensors.index.json lists, read one tensor at a time where the
 * source reads ranges (F32, F16 and BF16 all decoded to float32), into qkv's GPT with the decoder switches
 * (models/hf/llama.ts maps names and config). The tokenizer and generation defaults are read as a GPT-2 folder's.
 */
import { GPT } from '../models/gpt.ts';
import { copyDecoderTensor, decoderConfigFromHf, planHfDecoderLoad } from '../models/hf/llama.ts';
import { decodeSafetensorsTensor, readSafetensorsHeader, type SafetensorsEntry } from '../io/safetensors.ts';
import { noGrad } from '../autograd/grad-mode.ts';
import { FolderError, FILES } from './spec.ts';
import { readJson, readRanged, type FolderSource, type Steps, wait } from './source.ts';

/** The index of a sharded checkpoint, as transformers writes it. */
export const SHARD_INDEX = 'model.safetensors.index.json';

/** The weight files of the folder: the shards its index names (in order), else model.safetensors. */
function* weightFiles(src: FolderSource): Steps<string[]> {
  const index = yield* readJson(src, SHARD_INDEX);
  if (index === undefined) return [FILES.weights];
  const map = (index as { weight_map?: unknown } | null)?.weight_map;
  if (!map || typeof map !== 'object' || Array.isArray(map))
    throw new FolderError(SHARD_INDEX, `${src.name(SHARD_INDEX)}: expected { "weight_map": { tensor: file } }`);
  const files = [...new Set(Object.values(map as Record<string, unknown>))];
  for (const f of files)
    if (typeof f !== 'string' || f.includes('/') || f.includes('\\') || !f.endsWith('.safetensors'))
      throw new FolderError(
        SHARD_INDEX,
        `${src.name(SHARD_INDEX)}: weight_map names ${JSON.stringify(f)}, not a .safetensors file of the folder`,
      );
  return (files as string[]).sort();
}

/** A Llama-family model from the folder's config and weights, in eval mode; errors name the file at fault. */
export function* hfDecoderModelSteps(
  src: FolderSource,
  config: unknown,
  progress?: (bytes: number, total: number) => void,
): Steps<GPT> {
  let cfg: ReturnType<typeof decoderConfigFromHf>;
  try {
    cfg = decoderConfigFromHf(config);
  } catch (e) {
    throw new FolderError(FILES.config, (e as Error).message.replace(/^config\.json/, src.name(FILES.config)));
  }
  const model = new GPT(cfg, { init: false });
  const own = model.stateDict();
  type Entry = SafetensorsEntry & { file: string; dataStart: number };
  const entries: Entry[] = [];
  const files = yield* weightFiles(src);
  const ranged = new Map<string, { size: number; read: (b: number, e: number) => unknown }>();
  let total = 0;
  for (const file of files) {
    const r = yield* readRanged(src, file);
    if (r === undefined) throw new FolderError(file, `model weights not found: ${src.name(file)}`);
    ranged.set(file, r);
    total += r.size;
    try {
      const prefix = (yield* wait(r.read(0, 8))) as Uint8Array;
      const len = prefix.length >= 8 ? new DataView(prefix.buffer, prefix.byteOffset, 8).getUint32(0, true) : 0;
      const head = (yield* wait(r.read(0, Math.min(r.size, 8 + len)))) as Uint8Array;
      const { dataStart, entries: es } = readSafetensorsHeader(head, r.size);
      for (const e of es) entries.push({ ...e, file, dataStart });
    } catch (e) {
      throw new FolderError(file, `${src.name(file)}: ${(e as Error).message}`);
    }
  }
  let plan: ReturnType<typeof planHfDecoderLoad<Entry>>;
  try {
    plan = planHfDecoderLoad(entries, own, cfg);
  } catch (e) {
    throw new FolderError(
      files[0],
      (e as Error).message.replace(/^model\.safetensors/, src.name(files.length > 1 ? SHARD_INDEX : FILES.weights)),
    );
  }
  let done = 0;
  // Shard by shard, each in file order; one tensor decoded (to float32) at a time.
  plan.sort((a, b) =>
    a.entry.file === b.entry.file ? a.entry.begin - b.entry.begin : a.entry.file < b.entry.file ? -1 : 1,
  );
  for (const step of plan) {
    const e = step.entry;
    const r = ranged.get(e.file)!;
    const bytes = (yield* wait(r.read(e.dataStart + e.begin, e.dataStart + e.end))) as Uint8Array;
    if (bytes.length !== e.end - e.begin)
      throw new FolderError(e.file, `${src.name(e.file)}: tensor '${e.name}' is cut short: the file is truncated`);
    const t = decodeSafetensorsTensor(bytes, e);
    if (t.dtype !== 'float32')
      throw new FolderError(
        e.file,
        `${src.name(e.file)}: tensor '${e.name}' has dtype ${e.dtype}, expected a float type`,
      );
    noGrad(() => copyDecoderTensor(own[step.target.name], t, step.target));
    done += bytes.length;
    progress?.(done, total);
  }
  return model.eval();
}
