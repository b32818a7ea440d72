/**
 * Where a regenerated fixture file first differs from the committed one, in words a person can act on:
 * for JSON the path of the first differing value, for safetensors the tensor, the flat index and both
 * values, otherwise the byte offset. null when the bytes are the same. The safetensors header is read
 * here, not with qkv's reader (which widens and narrows dtypes): the check must not lean on the code it
 * checks.
 */

/** The first difference between two files named `name`, or null when their bytes are equal. */
export function firstDifference(name: string, committed: Uint8Array, fresh: Uint8Array): string | null {
  if (Buffer.from(committed).equals(Buffer.from(fresh))) return null;
  if (name.endsWith('.json')) {
    const d = jsonDifference(JSON.parse(text(committed)), JSON.parse(text(fresh)), '');
    if (d !== null) return `${name}: ${d}`;
  } else if (name.endsWith('.safetensors')) {
    const d = safetensorsDifference(committed, fresh);
    if (d !== null) return `${name}: ${d}`;
  }
  let i = 0;
  while (i < committed.length && i < fresh.length && committed[i] === fresh[i]) i++;
  return `${name}: the same values, other bytes from byte ${i} (committed ${committed.length} bytes, regenerated ${fresh.length})`;
}

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const show = (v: unknown) => (typeof v === 'number' ? String(v) : JSON.stringify(v));

function jsonDifference(a: unknown, b: unknown, path: string): string | null {
  const at = path === '' ? '(the whole file)' : path;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const d = jsonDifference(a[i], b[i], `${path}[${i}]`);
      if (d !== null) return d;
    }
    return a.length === b.length ? null : `${at}: committed ${a.length} entries, regenerated ${b.length}`;
  }
  const isObject = (x: unknown) => x !== null && typeof x === 'object' && !Array.isArray(x);
  if (isObject(a) && isObject(b)) {
    const ra = a as Record<string, unknown>;
    const rb = b as Record<string, unknown>;
    for (const k of Object.keys(ra)) {
      if (!(k in rb)) return `${path}.${k}: in the committed file only`;
      const d = jsonDifference(ra[k], rb[k], `${path}.${k}`);
      if (d !== null) return d;
    }
    const extra = Object.keys(rb).find((k) => !(k in ra));
    if (extra !== undefined) return `${path}.${extra}: in the regenerated file only`;
    return Object.keys(ra).join() === Object.keys(rb).join() ? null : `${at}: the keys in another order`;
  }
  return Object.is(a, b) ? null : `${at}: committed ${show(a)}, regenerated ${show(b)}`;
}

interface Entry {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

function header(b: Uint8Array): { entries: Record<string, Entry>; start: number } {
  const n = Number(Buffer.from(b).readBigUInt64LE(0));
  const { __metadata__: _, ...entries } = JSON.parse(text(b.subarray(8, 8 + n))) as Record<string, Entry>;
  return { entries, start: 8 + n };
}

/** The values of one tensor as numbers (bigints for 64-bit integers). */
function values(b: Uint8Array, start: number, e: Entry): ArrayLike<number | bigint> {
  // A copy: a Buffer's subarray shares (and may misalign within) Node's pool.
  const raw = new Uint8Array(b.subarray(start + e.data_offsets[0], start + e.data_offsets[1]));
  switch (e.dtype) {
    case 'F64':
      return new Float64Array(raw.buffer);
    case 'F32':
      return new Float32Array(raw.buffer);
    case 'I64':
      return new BigInt64Array(raw.buffer);
    case 'I32':
      return new Int32Array(raw.buffer);
    default:
      return raw;
  }
}

function safetensorsDifference(a: Uint8Array, b: Uint8Array): string | null {
  const ha = header(a);
  const hb = header(b);
  for (const [name, ea] of Object.entries(ha.entries)) {
    const eb = hb.entries[name];
    if (eb === undefined) return `tensor ${name}: in the committed file only`;
    if (ea.dtype !== eb.dtype || ea.shape.join() !== eb.shape.join())
      return `tensor ${name}: committed ${ea.dtype} [${ea.shape}], regenerated ${eb.dtype} [${eb.shape}]`;
    const va = values(a, ha.start, ea);
    const vb = values(b, hb.start, eb);
    for (let i = 0; i < va.length; i++)
      if (!Object.is(va[i], vb[i]))
        return `tensor ${name} [${ea.shape}] at flat index ${i}: committed ${va[i]}, regenerated ${vb[i]}`;
  }
  const extra = Object.keys(hb.entries).find((k) => !(k in ha.entries));
  return extra === undefined ? null : `tensor ${extra}: in the regenerated file only`;
}
