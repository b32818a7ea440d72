/**
 * PyTorch's `torch.save` files (a Hugging Face `pytorch_model.bin`) read without running them.
 *
 * Since PyTorch 1.6, torch.save writes a zip archive: `<name>/data.pkl`, a pickle of the state dict
 * whose tensors point at storages by key, each storage's raw little-endian bytes in
 * `<name>/data/<key>`, and `<name>/version` (`<name>/byteorder` since PyTorch 2.1). `torch.load`
 * unpickles data.pkl with Python's pickle, which imports and calls whatever the file names: loading
 * a file runs its code. Here data.pkl goes through a restricted unpickler (pickle.ts) that knows
 * only the globals a state dict needs, each mapped to a TypeScript function that builds a plain
 * description (storage, offset, shape, strides); any other global is refused, naming it.
 *
 * The result has readSafetensors' form, so a loader takes either file: float32 tensors from float
 * storages (float16, bfloat16 and float64 converted to float32), int32 from integer storages (int64
 * values outside int32's range are an error), bool from bool storages. Tensors that share a storage
 * (tied weights) each get their own copy; a view with a storage offset or strides (a transpose) is
 * read in row-major order. Errors start with the file's name and say what was expected and what came.
 */
import { decodeSafetensorsTensor, type SafetensorsDType, type SafetensorsFile } from './safetensors.ts';
import { describePy, type GlobalRule, PyDict, PyGlobal, PyTuple, unpickle } from './pickle.ts';
import { readZip, type ZipArchive } from './zip.ts';
import type { Tensor } from '../tensor/tensor.ts';

/** The storage types torch.save names, their safetensors dtype and element size. */
const STORAGES: Record<string, { dtype: SafetensorsDType; item: number }> = {
  'torch.FloatStorage': { dtype: 'F32', item: 4 },
  'torch.HalfStorage': { dtype: 'F16', item: 2 },
  'torch.BFloat16Storage': { dtype: 'BF16', item: 2 },
  'torch.DoubleStorage': { dtype: 'F64', item: 8 },
  'torch.LongStorage': { dtype: 'I64', item: 8 },
  'torch.IntStorage': { dtype: 'I32', item: 4 },
  'torch.ShortStorage': { dtype: 'I16', item: 2 },
  'torch.CharStorage': { dtype: 'I8', item: 1 },
  'torch.ByteStorage': { dtype: 'U8', item: 1 },
  'torch.BoolStorage': { dtype: 'BOOL', item: 1 },
};

/**
 * The decoded tensors may total at most this many times the file's size (plus 1 MiB): float16
 * becomes float32 (2×) and tied weights are copied once per name (Marian's embedding has four names),
 * while a hostile file naming one storage a million times cannot make a huge allocation.
 */
const MAX_GROWTH = 16;

/** One storage: `numel` elements of `dtype`, its bytes a view into the file. */
class Storage {
  constructor(
    readonly key: string,
    readonly dtype: SafetensorsDType,
    readonly item: number,
    readonly numel: number,
    readonly bytes: Uint8Array,
  ) {}
}

/** What `torch._utils._rebuild_tensor_v2` describes: a strided view of a storage. */
class TensorRef {
  constructor(
    readonly storage: Storage,
    readonly offset: number,
    readonly shape: number[],
    readonly stride: number[],
    readonly numel: number,
  ) {}
}

function describe(v: unknown): string {
  if (v instanceof TensorRef) return 'a tensor';
  if (v instanceof Storage) return 'a storage';
  return describePy(v);
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** Assign an own, enumerable property (safe for names like `__proto__`). */
function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

type Fail = (message: string) => never;

/**
 * Every tensor of a torch.save zip archive holding a state dict (names to tensors), by name, in
 * readSafetensors' form; `file` names the file in errors. Refuses the legacy (pre-1.6) format, any
 * global a state dict does not need, compressed entries, and anything malformed, with one line.
 */
export function readPytorch(bytes: Uint8Array, file = 'pytorch_model.bin'): SafetensorsFile {
  const fail: Fail = (message) => {
    throw new Error(`${file}: ${message}`);
  };
  if (!(bytes instanceof Uint8Array)) fail(`expected the file's bytes as a Uint8Array, got ${describe(bytes)}`);
  if (bytes[0] === 0x80) {
    fail(
      "torch.save's legacy format (a bare pickle: PyTorch before 1.6, or _use_new_zipfile_serialization=False) " +
        'is not read; save it again in the zip format (torch.save(state_dict, path) in PyTorch 1.6 or later) ' +
        'or as model.safetensors',
    );
  }
  const zip = readZip(bytes, file);
  const pkl = findPickle(zip, fail);
  const globals = stateDictGlobals(fail);
  const root = unpickle(zip.read(pkl), {
    label: file,
    entry: pkl,
    globals,
    persistentLoad: storageLoader(zip, pkl, fail),
    allowedText: `only state-dict globals are allowed: ${Object.keys(globals).join(', ')}`,
  });
  return decodeStateDict(root, pkl, MAX_GROWTH * bytes.length + 2 ** 20, fail);
}

/** The archive's one `<name>/data.pkl`, its byteorder and version checked. */
function findPickle(zip: ZipArchive, fail: Fail): string {
  const names = [...zip.entries.keys()];
  const pkls = names.filter((k) => /^[^/]+\/data\.pkl$/.test(k));
  if (pkls.length !== 1) {
    const shown = names.slice(0, 5).map((k) => `'${k}'`);
    if (names.length > 5) shown.push('...');
    fail(
      `expected one <name>/data.pkl entry (a torch.save archive), found ${pkls.length} among ` +
        `${names.length} entries${shown.length ? ` (${shown.join(', ')})` : ''}`,
    );
  }
  const prefix = pkls[0].slice(0, -'data.pkl'.length);
  const text = (name: string): string => new TextDecoder().decode(zip.read(name)).trim();
  if (zip.entries.has(`${prefix}byteorder`)) {
    const order = text(`${prefix}byteorder`);
    if (order !== 'little') fail(`${prefix}byteorder is ${JSON.stringify(order)}: only 'little' is read`);
  }
  if (zip.entries.has(`${prefix}version`)) {
    const version = text(`${prefix}version`);
    if (!/^\d{1,4}$/.test(version)) fail(`${prefix}version is ${JSON.stringify(version)}, expected an integer`);
  }
  return pkls[0];
}

/**
 * BINPERSID's lookup: torch's persistent id `('storage', torch.FloatStorage, key, location, numel)`
 * to the bytes of `<name>/data/<key>` (read and CRC-checked once, however many tensors share it).
 */
function storageLoader(zip: ZipArchive, pkl: string, fail: Fail): (pid: unknown) => Storage {
  const prefix = pkl.slice(0, -'data.pkl'.length);
  const storages = new Map<string, Storage>();
  return (pid) => {
    const want = "('storage', storage type, key, location, numel)";
    if (!(pid instanceof PyTuple) || pid.items.length !== 5 || pid.items[0] !== 'storage') {
      return fail(`${pkl}: persistent id ${describe(pid)}, expected ${want}`);
    }
    const [, type, key, location, numel] = pid.items;
    if (!(type instanceof PyGlobal) || !Object.hasOwn(STORAGES, type.qualified)) {
      return fail(`${pkl}: persistent id's storage type is ${describe(type)}, expected a torch.*Storage`);
    }
    if (typeof key !== 'string' || typeof location !== 'string' || !isCount(numel)) {
      return fail(
        `${pkl}: persistent id (${describe(key)}, ${describe(location)}, ${describe(numel)}), ` +
          `expected a str key, a str location and an element count`,
      );
    }
    const { dtype, item } = STORAGES[type.qualified];
    const seen = storages.get(key);
    if (seen !== undefined) {
      if (seen.dtype !== dtype || seen.numel !== numel) {
        fail(`${pkl}: storage '${key}' is named as ${numel} × ${dtype} and earlier as ${seen.numel} × ${seen.dtype}`);
      }
      return seen;
    }
    const entry = `${prefix}data/${key}`;
    if (!zip.entries.has(entry)) return fail(`${pkl}: storage '${key}' has no entry ${entry} in the archive`);
    const data = zip.read(entry);
    if (data.length !== numel * item) {
      fail(`${entry}: expected ${numel} × ${dtype} = ${numel * item} bytes, the entry holds ${data.length}`);
    }
    const s = new Storage(key, dtype, item, numel, data);
    storages.set(key, s);
    return s;
  };
}

/** The globals a state dict needs, each with the TypeScript that stands in for it; nothing else. */
function stateDictGlobals(fail: Fail): Record<string, GlobalRule> {
  const globals: Record<string, GlobalRule> = {
    'collections.OrderedDict': {
      call: (args) => (args.length === 0 ? new PyDict() : fail(`collections.OrderedDict: expected no arguments`)),
    },
    'torch._utils._rebuild_tensor_v2': { call: (args) => rebuildTensor(args, fail) },
    'torch._utils._rebuild_parameter': {
      call: (args) =>
        args[0] instanceof TensorRef
          ? args[0]
          : fail(`torch._utils._rebuild_parameter: expected a tensor first, got ${describe(args[0])}`),
    },
  };
  for (const s of Object.keys(STORAGES)) globals[s] = {}; // values in persistent ids, never called
  return globals;
}

/**
 * `_rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])`
 * as a description of the view, checked to lie inside its storage.
 */
function rebuildTensor(args: unknown[], fail: Fail): TensorRef {
  const what = 'torch._utils._rebuild_tensor_v2';
  if (args.length < 4 || args.length > 7) {
    return fail(`${what}: expected (storage, offset, size, stride, ...), got ${args.length} arguments`);
  }
  const [storage, offset, size, stride] = args;
  if (!(storage instanceof Storage)) return fail(`${what}: expected a storage first, got ${describe(storage)}`);
  if (!isCount(offset)) return fail(`${what}: storage offset is ${describe(offset)}, expected an integer >= 0`);
  const counts = (v: unknown, name: string): number[] => {
    if (!(v instanceof PyTuple)) return fail(`${what}: ${name} is ${describe(v)}, expected a tuple of integers`);
    for (const d of v.items) if (!isCount(d)) fail(`${what}: ${name} holds ${describe(d)}, expected integers >= 0`);
    return v.items as number[];
  };
  const dims = counts(size, 'size');
  const steps = counts(stride, 'stride');
  if (dims.length !== steps.length) fail(`${what}: size has ${dims.length} dimensions and stride ${steps.length}`);
  let numel = 1;
  for (const d of dims) {
    numel *= d;
    if (numel > Number.MAX_SAFE_INTEGER) fail(`${what}: size (${dims.join(', ')}) has more than 2^53 elements`);
  }
  if (dims.includes(0)) numel = 0;
  const span = `size (${dims.join(', ')}), stride (${steps.join(', ')}) from offset ${offset}`;
  if (numel === 0) {
    if (offset > storage.numel) fail(`${what}: offset ${offset} is past storage '${storage.key}' (${storage.numel})`);
  } else {
    let last = offset;
    for (let i = 0; i < dims.length; i++) last += (dims[i] - 1) * steps[i];
    if (!(last < storage.numel)) {
      fail(`${what}: ${span} reaches element ${last} of storage '${storage.key}', which has ${storage.numel}`);
    }
    if (numel > storage.numel) {
      fail(
        `${what}: ${span} has more elements than storage '${storage.key}' (${storage.numel}): ` +
          'overlapping views are not read',
      );
    }
  }
  return new TensorRef(storage, offset, dims, steps, numel);
}

/** The unpickled root, a dict of names to tensor views, decoded (at most `budget` bytes in all). */
function decodeStateDict(root: unknown, pkl: string, budget: number, fail: Fail): SafetensorsFile {
  if (!(root instanceof PyDict))
    return fail(`${pkl} holds ${describe(root)}, expected a state dict (names to tensors)`);
  const tensors: Record<string, Tensor> = {};
  const dtypes: Record<string, SafetensorsDType> = {};
  let decoded = 0;
  for (const [name, ref] of root.map) {
    if (typeof name !== 'string') return fail(`${pkl}: state dict key ${describe(name)}, expected str keys`);
    const q = `'${name.length > 200 ? `${name.slice(0, 200)}...` : name}'`;
    if (!(ref instanceof TensorRef)) {
      const hint =
        ref instanceof PyDict ? ` (a checkpoint? save the state dict alone: torch.save(ckpt[${q}], path))` : '';
      return fail(
        `${pkl}: ${q} holds ${describe(ref)}, not a tensor: only a state dict (names to tensors) is read${hint}`,
      );
    }
    decoded += ref.numel * (ref.storage.dtype === 'BOOL' ? 1 : 4);
    if (decoded > budget) {
      fail(`${pkl}: the tensors up to ${q} decode to over ${budget} bytes, ${MAX_GROWTH}× the file's size`);
    }
    const raw = contiguousBytes(ref);
    if (ref.storage.dtype === 'I64') checkInt32(raw, (i, v) => fail(`${q} (int64) element ${i} = ${v} ${NOT_INT32}`));
    const entry = { name, dtype: ref.storage.dtype, shape: ref.shape, numel: ref.numel, begin: 0, end: raw.length };
    setOwn(tensors, name, decodeSafetensorsTensor(raw, entry));
    setOwn(dtypes, name, ref.storage.dtype);
  }
  return { tensors, metadata: {}, dtypes };
}

const NOT_INT32 = 'is outside the int32 range [-2147483648, 2147483647]';

/** The view's elements' bytes in row-major order: a subarray when contiguous, else gathered by strides. */
function contiguousBytes(ref: TensorRef): Uint8Array {
  const { storage, offset, shape, stride, numel } = ref;
  const item = storage.item;
  let expect = 1;
  let contiguous = true;
  for (let d = shape.length - 1; d >= 0; d--) {
    if (shape[d] !== 1 && stride[d] !== expect) contiguous = false;
    expect *= shape[d];
  }
  if (contiguous || numel === 0) return storage.bytes.subarray(offset * item, (offset + numel) * item);
  const out = new Uint8Array(numel * item);
  const src = storage.bytes;
  const index = new Array<number>(shape.length).fill(0);
  let at = offset;
  for (let e = 0; e < numel; e++) {
    for (let b = 0; b < item; b++) out[e * item + b] = src[at * item + b];
    // Odometer: step the last dimension, carrying into the ones before it.
    for (let d = shape.length - 1; d >= 0; d--) {
      index[d]++;
      at += stride[d];
      if (index[d] < shape[d]) break;
      at -= stride[d] * shape[d];
      index[d] = 0;
    }
  }
  return out;
}

/** Calls `bad` with the first int64 (little-endian) in `raw` outside int32's range. */
function checkInt32(raw: Uint8Array, bad: (index: number, value: bigint) => void): void {
  const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  for (let i = 0; i < raw.length / 8; i++) {
    const lo = dv.getUint32(i * 8, true);
    const hi = dv.getUint32(i * 8 + 4, true);
    // In int32 range iff the high word is the sign extension of the low word.
    if (hi !== (lo & 0x80000000 ? 0xffffffff : 0)) bad(i, dv.getBigInt64(i * 8, true));
  }
}
