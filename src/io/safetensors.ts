/**
 * Reading and writing the Hugging Face safetensors format.
 *
 * Layout: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON (possibly padded with trailing
 * spaces), then the data buffer. The JSON maps each tensor name to
 * `{"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}` (offsets relative to the first byte
 * after the header) and may hold a `"__metadata__"` object of string values. Data is little-endian
 * and row-major.
 *
 * Reading validates the whole header before decoding any tensor, and never allocates more than a
 * small multiple of the input size, so malicious files give a clear `safetensors:` error rather than
 * a crash, a hang or a huge allocation.
 *
 * Over 500 lines: one format's reader and writer with every dtype conversion it needs (F16, BF16, I8
 * and the integer types), kept together so each branch of the reader has its writer beside it.
 */
import { Tensor } from '../tensor/tensor.ts';
import { shapeToString } from '../tensor/shape.ts';
import { f16Table32, numberToF16Bits } from '../tensor/half.ts';

/** The element types of the safetensors format, by its names. */
export type SafetensorsDType =
  | 'F64'
  | 'F32'
  | 'F16'
  | 'BF16'
  | 'I64'
  | 'I32'
  | 'I16'
  | 'I8'
  | 'U8'
  | 'U16'
  | 'U32'
  | 'BOOL';

/** A safetensors file read by {@link readSafetensors}. */
export interface SafetensorsFile {
  /** The tensors by name, as float32 (F64, F16, BF16), int32 (every integer type) or bool. */
  tensors: Record<string, Tensor>;
  /** The header's `__metadata__` (string to string), empty when the file has none. */
  metadata: Record<string, string>;
  /** The dtype each tensor had in the file (before conversion to float32/int32/bool). */
  dtypes: Record<string, SafetensorsDType>;
}

type WriteDType = 'F32' | 'F16' | 'BF16' | 'I32' | 'I64' | 'I8' | 'U8' | 'BOOL';

/** Options of {@link writeSafetensors}. */
export interface WriteOptions {
  /** Written as `__metadata__` (only when given). Every value must be a string. */
  metadata?: Record<string, string>;
  /**
   * On-disk dtype. A string ('F16' or 'BF16') applies to every float32 tensor; a record picks per
   * tensor name. Defaults: float32 -> F32, int32 -> I32, bool -> BOOL.
   */
  dtype?: Partial<Record<string, WriteDType>> | 'F16' | 'BF16';
}

/** Headers above this size are rejected, as the reference implementation does. */
const MAX_HEADER_BYTES = 100_000_000;

const ITEM_SIZE: Record<SafetensorsDType, number> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  U16: 2,
  U32: 4,
  BOOL: 1,
};

/**
 * Position of each dtype in the reference implementation's `Dtype` enum (increasing alignment).
 * The writer orders tensors by this, descending, then by name, exactly as the Rust/Python library
 * does, so every tensor's data starts at a multiple of its element size.
 */
const DTYPE_RANK: Record<SafetensorsDType, number> = {
  BOOL: 0,
  U8: 1,
  I8: 2,
  I16: 5,
  U16: 6,
  F16: 7,
  BF16: 8,
  I32: 9,
  U32: 10,
  F32: 11,
  F64: 12,
  I64: 13,
};

const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function fail(message: string): never {
  throw new Error(`safetensors: ${message}`);
}

/** Assign an own, enumerable property (safe for names like `__proto__`). */
function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `array ${truncate(JSON.stringify(v))}`;
  if (typeof v === 'object') return 'object';
  if (typeof v === 'string') return `string ${truncate(JSON.stringify(v))}`;
  return `${typeof v} ${String(v)}`;
}

function truncate(s: string, n = 60): string {
  return s.length > n ? `${s.slice(0, n)}...` : s;
}

function quoteName(name: string): string {
  return `'${truncate(name, 200)}'`;
}

function isNonNegativeInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

// ---------------------------------------------------------------------------------------------
// Half-precision conversions
// ---------------------------------------------------------------------------------------------

const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/** float32 -> bfloat16 bits, round to nearest even; NaN stays (quiet) NaN. */
function numberToBF16Bits(value: number): number {
  scratchF32[0] = value;
  const x = scratchU32[0];
  if ((x & 0x7f800000) === 0x7f800000 && x & 0x7fffff) return (x >>> 16) | 0x40;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

type Entry = SafetensorsEntry;

/**
 * Every tensor of a safetensors file (8-byte header length, JSON header, raw little-endian data),
 * validated: a corrupt or truncated file gives an error naming what is wrong, never a crash or a
 * huge allocation. Float types become float32, integer types int32 (I8 and U8 with `bytes`: int8, uint8),
 * BOOL bool.
 */
export function readSafetensors(
  bytes: Uint8Array,
  options: {
    /** Keep I8 and U8 tensors as int8 and uint8 (a quantized weight's values: a quarter of int32's memory). */
    bytes?: boolean;
  } = {},
): SafetensorsFile {
  const { dataStart, entries, metadata } = readSafetensorsHeader(bytes, bytes.length);
  const tensors: Record<string, Tensor> = {};
  const dtypes: Record<string, SafetensorsDType> = {};
  for (const e of entries) {
    const keep = options.bytes && (e.dtype === 'I8' || e.dtype === 'U8');
    setOwn(tensors, e.name, keep ? byteTensor(bytes, dataStart, e) : decodeTensor(bytes, dataStart, e));
    setOwn(dtypes, e.name, e.dtype);
  }
  return { tensors, metadata, dtypes };
}

/** One tensor's place in a safetensors file: its bytes are [dataStart + begin, dataStart + end). */
export interface SafetensorsEntry {
  /** The tensor's name (a state-dict key). */
  name: string;
  /** Its element type in the file. */
  dtype: SafetensorsDType;
  /** Its shape. */
  shape: number[];
  /** Its number of elements (the product of `shape`). */
  numel: number;
  /** Offset of its first byte, from the start of the data (after the header). */
  begin: number;
  /** Offset one past its last byte, from the start of the data. */
  end: number;
}

/**
 * The header of a safetensors file of `fileLength` bytes, validated as readSafetensors does, from
 * its first bytes only (`bytes` must hold at least 8 + the header length): a caller can then read
 * one tensor at a time (a browser File's slice, a file descriptor) and never hold the whole file.
 */
export function readSafetensorsHeader(
  bytes: Uint8Array,
  fileLength: number,
): {
  /** Where the data starts in the file: 8 + the header's length. */
  dataStart: number;
  /** Every tensor's place, in the order of the data. */
  entries: SafetensorsEntry[];
  /** The header's `__metadata__`. */
  metadata: Record<string, string>;
} {
  if (!(bytes instanceof Uint8Array)) fail(`expected a Uint8Array, got ${describe(bytes)}`);
  if (fileLength < 8) {
    fail(`file is ${fileLength} bytes, shorter than the 8-byte header length prefix`);
  }
  if (bytes.length < 8) fail(`expected the file's first 8 bytes at least, got ${bytes.length}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lo = view.getUint32(0, true);
  const hi = view.getUint32(4, true);
  const remaining = fileLength - 8;
  if (hi !== 0 || lo > MAX_HEADER_BYTES) {
    const n = (BigInt(hi) << 32n) | BigInt(lo);
    fail(`header length ${n} bytes is larger than the ${MAX_HEADER_BYTES}-byte limit`);
  }
  const headerLen = lo;
  if (headerLen > remaining) {
    fail(`header length ${headerLen} bytes is larger than the ${remaining} bytes after the length prefix`);
  }
  if (bytes.length < 8 + headerLen) fail(`expected the header's ${8 + headerLen} bytes, got ${bytes.length}`);

  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes.subarray(8, 8 + headerLen));
  } catch {
    fail(`header (${headerLen} bytes) is not valid UTF-8`);
  }
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch (e) {
    fail(`header is not valid JSON (${(e as Error).message}): ${truncate(JSON.stringify(text), 80)}`);
  }
  if (!isPlainObject(header)) fail(`header must be a JSON object, got ${describe(header)}`);

  const dataStart = 8 + headerLen;
  const dataLen = fileLength - dataStart;

  // Validate everything before decoding anything.
  const metadata: Record<string, string> = {};
  const entries: Entry[] = [];
  for (const name of Object.keys(header)) {
    const raw = header[name];
    if (name === '__metadata__') {
      if (!isPlainObject(raw)) fail(`__metadata__ must be an object of strings, got ${describe(raw)}`);
      for (const key of Object.keys(raw)) {
        const v = raw[key];
        if (typeof v !== 'string') {
          fail(`__metadata__ value for key ${quoteName(key)} must be a string, got ${describe(v)}`);
        }
        setOwn(metadata, key, v);
      }
      continue;
    }
    entries.push(parseEntry(name, raw, dataLen));
  }

  // Overlap check: sort non-empty spans by start; each must begin at or after the previous end.
  const spans = entries.filter((e) => e.end > e.begin).sort((a, b) => a.begin - b.begin || a.end - b.end);
  for (let i = 1; i < spans.length; i++) {
    const a = spans[i - 1];
    const b = spans[i];
    if (b.begin < a.end) {
      fail(
        `tensors ${quoteName(a.name)} (data_offsets [${a.begin}, ${a.end}]) and ${quoteName(b.name)} ` +
          `(data_offsets [${b.begin}, ${b.end}]) overlap`,
      );
    }
  }

  return { dataStart, entries, metadata };
}

/** One tensor from its own bytes (`bytes` = the file's [dataStart + begin, dataStart + end)). */
export function decodeSafetensorsTensor(bytes: Uint8Array, entry: SafetensorsEntry): Tensor {
  if (bytes.length !== entry.end - entry.begin)
    fail(`tensor ${quoteName(entry.name)}: expected ${entry.end - entry.begin} bytes, got ${bytes.length}`);
  return decodeTensor(bytes, -entry.begin, entry);
}

function parseEntry(name: string, raw: unknown, dataLen: number): Entry {
  const q = quoteName(name);
  if (!isPlainObject(raw)) fail(`tensor ${q} must be an object with dtype, shape, data_offsets, got ${describe(raw)}`);
  for (const field of ['dtype', 'shape', 'data_offsets']) {
    if (!(field in raw)) fail(`tensor ${q} is missing '${field}'`);
  }
  const dt = raw.dtype;
  if (typeof dt !== 'string') fail(`tensor ${q} has dtype ${describe(dt)}, expected a string`);
  if (!Object.hasOwn(ITEM_SIZE, dt)) {
    fail(
      `tensor ${q} has unknown or unsupported dtype ${JSON.stringify(truncate(dt))} ` +
        `(supported: ${Object.keys(ITEM_SIZE).join(', ')})`,
    );
  }
  const dtype = dt as SafetensorsDType;

  const shape = raw.shape;
  if (!Array.isArray(shape)) fail(`tensor ${q} has shape ${describe(shape)}, expected an array of integers`);
  for (let i = 0; i < shape.length; i++) {
    if (!isNonNegativeInt(shape[i])) {
      fail(`tensor ${q} has shape dimension ${i} = ${describe(shape[i])}, expected a non-negative integer`);
    }
  }
  const dims = shape as number[];

  const offs = raw.data_offsets;
  if (!Array.isArray(offs) || offs.length !== 2 || !isNonNegativeInt(offs[0]) || !isNonNegativeInt(offs[1])) {
    fail(`tensor ${q} has data_offsets ${describe(offs)}, expected [begin, end] non-negative integers`);
  }
  const begin = offs[0] as number;
  const end = offs[1] as number;
  if (begin > end) fail(`tensor ${q} has data_offsets [${begin}, ${end}] with begin > end`);
  if (end > dataLen) {
    fail(
      `tensor ${q} has data_offsets [${begin}, ${end}] but the data buffer after the header is only ${dataLen} bytes`,
    );
  }

  // Element count without overflow: any zero dim makes it 0; otherwise stop once it is absurd.
  let numel = 1;
  let overflow = false;
  if (dims.includes(0)) numel = 0;
  else {
    for (const d of dims) {
      numel *= d;
      if (numel > Number.MAX_SAFE_INTEGER) {
        overflow = true;
        break;
      }
    }
  }
  const item = ITEM_SIZE[dtype];
  const span = end - begin;
  if (overflow || numel * item !== span) {
    const count = overflow ? 'more than 2^53 elements' : `${numel} elements of ${dtype} = ${numel * item} bytes`;
    fail(`tensor ${q} has shape ${shapeToString(dims)} (${count}) but data_offsets span ${span} bytes`);
  }
  return { name, dtype, shape: dims.slice(), numel, begin, end };
}

/** An I8 or U8 tensor as int8 or uint8, its bytes copied. */
function byteTensor(bytes: Uint8Array, dataStart: number, e: Entry): Tensor {
  const src = bytes.subarray(dataStart + e.begin, dataStart + e.end);
  if (e.dtype === 'I8') return new Tensor(new Int8Array(src), e.shape, 'int8');
  return new Tensor(new Uint8Array(src), e.shape, 'uint8');
}

function decodeTensor(bytes: Uint8Array, dataStart: number, e: Entry): Tensor {
  const n = e.numel;
  const start = dataStart + e.begin;
  const src = bytes.subarray(start, dataStart + e.end);
  const dv = new DataView(bytes.buffer, bytes.byteOffset + start, e.end - e.begin);
  switch (e.dtype) {
    case 'F32': {
      const out = new Float32Array(n);
      if (HOST_LITTLE_ENDIAN) new Uint8Array(out.buffer, out.byteOffset, n * 4).set(src);
      else for (let i = 0; i < n; i++) out[i] = dv.getFloat32(i * 4, true);
      return new Tensor(out, e.shape, 'float32');
    }
    case 'F64': {
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = dv.getFloat64(i * 8, true);
      return new Tensor(out, e.shape, 'float32');
    }
    case 'F16': {
      const out = new Float32Array(n);
      const table = f16Table32();
      for (let i = 0; i < n; i++) out[i] = table[dv.getUint16(i * 2, true)];
      return new Tensor(out, e.shape, 'float32');
    }
    case 'BF16': {
      const out = new Float32Array(n);
      const bits = new Uint32Array(out.buffer, out.byteOffset, n);
      for (let i = 0; i < n; i++) bits[i] = dv.getUint16(i * 2, true) << 16;
      return new Tensor(out, e.shape, 'float32');
    }
    case 'I32': {
      const out = new Int32Array(n);
      if (HOST_LITTLE_ENDIAN) new Uint8Array(out.buffer, 0, n * 4).set(src);
      else for (let i = 0; i < n; i++) out[i] = dv.getInt32(i * 4, true);
      return new Tensor(out, e.shape, 'int32');
    }
    case 'I16': {
      const out = new Int32Array(n);
      for (let i = 0; i < n; i++) out[i] = dv.getInt16(i * 2, true);
      return new Tensor(out, e.shape, 'int32');
    }
    case 'U16': {
      const out = new Int32Array(n);
      for (let i = 0; i < n; i++) out[i] = dv.getUint16(i * 2, true);
      return new Tensor(out, e.shape, 'int32');
    }
    case 'I8': {
      const out = new Int32Array(n);
      for (let i = 0; i < n; i++) out[i] = dv.getInt8(i);
      return new Tensor(out, e.shape, 'int32');
    }
    case 'U8': {
      const out = new Int32Array(n);
      out.set(src);
      return new Tensor(out, e.shape, 'int32');
    }
    case 'U32': {
      const out = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        const v = dv.getUint32(i * 4, true);
        if (v > 0x7fffffff) {
          fail(
            `tensor ${quoteName(e.name)} (U32) element ${i} = ${v} is outside the ` +
              `int32 range [-2147483648, 2147483647]`,
          );
        }
        out[i] = v;
      }
      return new Tensor(out, e.shape, 'int32');
    }
    case 'I64': {
      const out = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        const lo = dv.getUint32(i * 8, true);
        const hi = dv.getUint32(i * 8 + 4, true);
        // In int32 range iff the high word is the sign extension of the low word.
        if (hi !== (lo & 0x80000000 ? 0xffffffff : 0)) {
          fail(
            `tensor ${quoteName(e.name)} (I64) element ${i} = ${dv.getBigInt64(i * 8, true)} is outside the int32 ` +
              `range [-2147483648, 2147483647]`,
          );
        }
        out[i] = lo | 0;
      }
      return new Tensor(out, e.shape, 'int32');
    }
    case 'BOOL': {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) out[i] = src[i] !== 0 ? 1 : 0;
      return new Tensor(out, e.shape, 'bool');
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

const ALLOWED_WRITE: Record<Tensor['dtype'], readonly WriteDType[]> = {
  float32: ['F32', 'F16', 'BF16'],
  int32: ['I32', 'I64', 'I8', 'U8'],
  bool: ['BOOL', 'U8'],
  uint8: ['U8'],
  int8: ['I8'],
  float16: ['F16'],
  // A q4 tensor is packed bytes: written as its int8 values or by a quantized writer, never raw.
  q4: [],
};

const DEFAULT_WRITE: Record<Tensor['dtype'], WriteDType> = {
  float32: 'F32',
  int32: 'I32',
  bool: 'BOOL',
  uint8: 'U8',
  int8: 'I8',
  float16: 'F16',
  q4: 'U8',
};

interface Planned {
  name: string;
  tensor: Tensor;
  dtype: WriteDType;
}

/**
 * The bytes of a safetensors file holding `tensors` by name, each in its dtype or the one
 * `options.dtype` picks, with `options.metadata`; the data in the reference implementation's order
 * (larger dtypes first, then by name), so the bytes equal the Python library's.
 */
export function writeSafetensors(tensors: Record<string, Tensor>, options: WriteOptions = {}): Uint8Array {
  if (!isPlainObject(tensors)) fail(`writeSafetensors expects a record of tensors, got ${describe(tensors)}`);
  const names = Object.keys(tensors);
  const opt = options.dtype;
  if (opt !== undefined && typeof opt !== 'string' && !isPlainObject(opt)) {
    fail(`options.dtype must be 'F16', 'BF16' or a record of per-tensor dtypes, got ${describe(opt)}`);
  }
  if (typeof opt === 'string' && opt !== 'F16' && opt !== 'BF16') {
    fail(`options.dtype as a string must be 'F16' or 'BF16', got ${JSON.stringify(opt)}`);
  }
  if (isPlainObject(opt)) {
    for (const k of Object.keys(opt)) {
      if (!Object.hasOwn(tensors, k)) {
        fail(`options.dtype names tensor ${quoteName(k)}, which is not among the tensors being written`);
      }
    }
  }

  const plan: Planned[] = [];
  for (const name of names) {
    const t = tensors[name];
    if (name === '__metadata__') fail(`'__metadata__' is reserved and cannot be a tensor name`);
    if (!(t instanceof Tensor)) fail(`value for ${quoteName(name)} is not a Tensor (got ${describe(t)})`);
    let dtype: WriteDType = DEFAULT_WRITE[t.dtype];
    if (typeof opt === 'string') {
      if (t.dtype === 'float32') dtype = opt;
    } else if (opt && Object.hasOwn(opt, name) && opt[name] !== undefined) {
      dtype = opt[name] as WriteDType;
    }
    if (!ALLOWED_WRITE[t.dtype].includes(dtype)) {
      fail(
        `tensor ${quoteName(name)} is ${t.dtype} and cannot be written as ${JSON.stringify(dtype)} ` +
          `(allowed: ${ALLOWED_WRITE[t.dtype].join(', ')})`,
      );
    }
    plan.push({ name, tensor: t, dtype });
  }

  // Same order as the reference implementation: descending dtype alignment, then name (by code
  // unit, like Rust's byte-wise order for BMP strings).
  plan.sort((a, b) => DTYPE_RANK[b.dtype] - DTYPE_RANK[a.dtype] || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  // Header: __metadata__ first (if given), then tensors in data order.
  let json = '{';
  let first = true;
  if (options.metadata !== undefined) {
    const md = options.metadata;
    if (!isPlainObject(md)) fail(`options.metadata must be an object of strings, got ${describe(md)}`);
    for (const k of Object.keys(md)) {
      const v: unknown = md[k];
      if (typeof v !== 'string') fail(`metadata value for key ${quoteName(k)} must be a string, got ${describe(v)}`);
    }
    json += `"__metadata__":${JSON.stringify(md)}`;
    first = false;
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const p of plan) {
    const nbytes = p.tensor.size * ITEM_SIZE[p.dtype];
    offsets.push(offset);
    if (!first) json += ',';
    first = false;
    json +=
      `${JSON.stringify(p.name)}:{"dtype":"${p.dtype}","shape":[${p.tensor.shape.join(',')}],` +
      `"data_offsets":[${offset},${offset + nbytes}]}`;
    offset += nbytes;
  }
  json += '}';

  const headerRaw = new TextEncoder().encode(json);
  const headerLen = headerRaw.length + ((8 - (headerRaw.length % 8)) % 8);
  const out = new Uint8Array(8 + headerLen + offset);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, headerLen, true);
  dv.setUint32(4, Math.floor(headerLen / 2 ** 32), true);
  out.set(headerRaw, 8);
  out.fill(0x20, 8 + headerRaw.length, 8 + headerLen);

  const dataStart = 8 + headerLen;
  for (let k = 0; k < plan.length; k++) {
    encodeTensor(out, dv, dataStart + offsets[k], plan[k]);
  }
  return out;
}

function encodeTensor(out: Uint8Array, dv: DataView, at: number, p: Planned): void {
  const data = p.tensor.dataSync();
  const n = p.tensor.size;
  switch (p.dtype) {
    case 'F32':
    case 'I32':
      if (HOST_LITTLE_ENDIAN) out.set(new Uint8Array(data.buffer, data.byteOffset, n * 4), at);
      else if (p.dtype === 'F32') for (let i = 0; i < n; i++) dv.setFloat32(at + i * 4, data[i], true);
      else for (let i = 0; i < n; i++) dv.setInt32(at + i * 4, data[i], true);
      return;
    case 'F16':
      // A float16 tensor holds the bits already (q4 scales); float32 values are rounded to nearest even.
      if (p.tensor.dtype === 'float16') for (let i = 0; i < n; i++) dv.setUint16(at + i * 2, data[i], true);
      else for (let i = 0; i < n; i++) dv.setUint16(at + i * 2, numberToF16Bits(data[i]), true);
      return;
    case 'BF16':
      for (let i = 0; i < n; i++) dv.setUint16(at + i * 2, numberToBF16Bits(data[i]), true);
      return;
    case 'I64':
      for (let i = 0; i < n; i++) {
        const v = data[i];
        dv.setInt32(at + i * 8, v, true);
        dv.setInt32(at + i * 8 + 4, v < 0 ? -1 : 0, true);
      }
      return;
    case 'I8':
      for (let i = 0; i < n; i++) {
        const v = data[i];
        if (v < -128 || v > 127) {
          fail(`tensor ${quoteName(p.name)} element ${i} = ${v} does not fit in I8 [-128, 127]`);
        }
        dv.setInt8(at + i, v);
      }
      return;
    case 'U8':
      for (let i = 0; i < n; i++) {
        const v = data[i];
        if (v < 0 || v > 255) {
          fail(`tensor ${quoteName(p.name)} element ${i} = ${v} does not fit in U8 [0, 255]`);
        }
        out[at + i] = v;
      }
      return;
    case 'BOOL':
      for (let i = 0; i < n; i++) out[at + i] = data[i] !== 0 ? 1 : 0;
      return;
  }
}
