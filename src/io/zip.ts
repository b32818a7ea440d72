/**
 * A zip archive's stored (uncompressed) entries, read from its bytes: no node:fs, no zlib, so the
 * same code runs in Node and in the browser. Written for PyTorch's `torch.save` archives, whose
 * entries are all stored (torch never compresses them) and whose end record is always zip64.
 *
 * Layout read (APPNOTE.TXT, sections 4.3.6 to 4.3.16): local header + data per entry, then the
 * central directory (one record per entry: name, method, CRC-32, sizes, local header offset), then
 * the zip64 end record and its locator where present, then the end-of-central-directory record.
 * The central directory is the truth; each entry's local header is checked against it, and each
 * entry's CRC-32 when it is read, so a flipped byte anywhere in an entry is an error, not wrong data.
 */

/** One entry of the central directory. */
export interface ZipEntry {
  /** The entry's path in the archive ('archive/data.pkl'). */
  name: string;
  /** 0 = stored; anything else (8 = deflate) is refused when read. */
  method: number;
  /** The CRC-32 of the uncompressed bytes. */
  crc32: number;
  /** Its size in the archive. */
  compressedSize: number;
  /** Its size once read. */
  size: number;
  /** Where its local header starts. */
  localOffset: number;
  /** The general-purpose flags (bit 0: encrypted). */
  flags: number;
}

/** A zip archive's entries by name, and a way to read one. */
export interface ZipArchive {
  /** Every entry, by name, in central-directory order. */
  entries: Map<string, ZipEntry>;
  /** The bytes of entry `name` (a view into the archive's bytes), CRC-checked. */
  read(name: string): Uint8Array;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

const METHODS: Record<number, string> = { 8: 'deflate', 9: 'deflate64', 12: 'bzip2', 14: 'lzma', 93: 'zstd' };

/**
 * The central directory of the zip archive `bytes`, errors starting with `label` (the file's name):
 * a truncated or corrupt archive says what is wrong and where, never reads out of bounds.
 */
export function readZip(bytes: Uint8Array, label: string): ZipArchive {
  const fail = (message: string): never => {
    throw new Error(`${label}: ${message}`);
  };
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = bytes.length;
  /** A u64 as a number, refused past 2^53 (no real archive comes near). */
  const u64 = (at: number, what: string): number => {
    const lo = dv.getUint32(at, true);
    const hi = dv.getUint32(at + 4, true);
    if (hi >= 2 ** 21) fail(`zip ${what} ${(BigInt(hi) << 32n) | BigInt(lo)} is past 2^53`);
    return hi * 2 ** 32 + lo;
  };

  // The end record is the last 22 bytes, unless the archive has a comment (up to 65535 bytes).
  let end = -1;
  for (let at = n - 22; at >= 0 && at >= n - 22 - 0xffff; at--) {
    if (dv.getUint32(at, true) === EOCD && dv.getUint16(at + 20, true) === n - at - 22) {
      end = at;
      break;
    }
  }
  if (end < 0) fail(`not a zip archive (${n} bytes, no end-of-central-directory record)`);
  if (dv.getUint16(end + 4, true) !== 0 || dv.getUint16(end + 6, true) !== 0) {
    fail('multi-disk zip archives are not read');
  }
  let count = dv.getUint16(end + 10, true);
  let cdSize = dv.getUint32(end + 12, true);
  let cdOffset = dv.getUint32(end + 16, true);
  // torch writes the zip64 end record always; where its locator is present, its values are the truth.
  if (end >= 20 && dv.getUint32(end - 20, true) === ZIP64_LOCATOR) {
    const at = u64(end - 12, 'zip64 end record offset');
    if (at + 56 > end - 20 || dv.getUint32(at, true) !== ZIP64_EOCD) {
      fail(`zip64 end record expected at byte ${at}, not found there`);
    }
    if (dv.getUint32(at + 16, true) !== 0 || dv.getUint32(at + 20, true) !== 0) {
      fail('multi-disk zip archives are not read');
    }
    count = u64(at + 32, 'entry count');
    cdSize = u64(at + 40, 'central directory size');
    cdOffset = u64(at + 48, 'central directory offset');
  } else if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    fail('zip64 end-of-central-directory locator missing');
  }
  if (cdOffset + cdSize > end) {
    fail(`central directory [${cdOffset}, ${cdOffset + cdSize}) runs past its end record at byte ${end}`);
  }

  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const entries = new Map<string, ZipEntry>();
  let at = cdOffset;
  const cdEnd = cdOffset + cdSize;
  for (let i = 0; i < count; i++) {
    if (at + 46 > cdEnd || dv.getUint32(at, true) !== CENTRAL) {
      fail(`central directory record ${i} of ${count} expected at byte ${at}, not found there`);
    }
    const nameLen = dv.getUint16(at + 28, true);
    const extraLen = dv.getUint16(at + 30, true);
    const commentLen = dv.getUint16(at + 32, true);
    const next = at + 46 + nameLen + extraLen + commentLen;
    if (next > cdEnd) fail(`central directory record ${i} runs past the directory's end (byte ${cdEnd})`);
    let name: string;
    try {
      name = utf8.decode(bytes.subarray(at + 46, at + 46 + nameLen));
    } catch {
      return fail(`central directory record ${i}: its name is not UTF-8`);
    }
    let size = dv.getUint32(at + 24, true);
    let compressedSize = dv.getUint32(at + 20, true);
    let localOffset = dv.getUint32(at + 42, true);
    // Saturated fields are in the zip64 extra field (id 1), in this order, only those saturated.
    if (size === 0xffffffff || compressedSize === 0xffffffff || localOffset === 0xffffffff) {
      let x = at + 46 + nameLen;
      const xEnd = x + extraLen;
      let found = false;
      while (x + 4 <= xEnd) {
        const id = dv.getUint16(x, true);
        const len = dv.getUint16(x + 2, true);
        if (x + 4 + len > xEnd) break;
        if (id === 1) {
          let p = x + 4;
          const take = (what: string): number => {
            if (p + 8 > x + 4 + len) fail(`entry '${name}': its zip64 extra field lacks the ${what}`);
            const v = u64(p, what);
            p += 8;
            return v;
          };
          if (size === 0xffffffff) size = take('size');
          if (compressedSize === 0xffffffff) compressedSize = take('compressed size');
          if (localOffset === 0xffffffff) localOffset = take('local header offset');
          found = true;
          break;
        }
        x += 4 + len;
      }
      if (!found) fail(`entry '${name}' has saturated sizes but no zip64 extra field`);
    }
    if (entries.has(name)) fail(`entry '${name}' appears twice in the central directory`);
    entries.set(name, {
      name,
      method: dv.getUint16(at + 10, true),
      crc32: dv.getUint32(at + 16, true),
      compressedSize,
      size,
      localOffset,
      flags: dv.getUint16(at + 8, true),
    });
    at = next;
  }

  const read = (name: string): Uint8Array => {
    const e = entries.get(name);
    if (e === undefined) return fail(`zip entry '${name}' not found`);
    if (e.flags & 1) fail(`entry '${name}' is encrypted`);
    if (e.method !== 0) {
      const kind = METHODS[e.method] ?? `method ${e.method}`;
      fail(
        `entry '${name}' is compressed (${kind}); only stored (uncompressed) entries are read, ` +
          'which is what torch.save writes',
      );
    }
    if (e.size !== e.compressedSize) {
      fail(`entry '${name}' is stored but its size ${e.size} differs from its stored size ${e.compressedSize}`);
    }
    const h = e.localOffset;
    if (h + 30 > cdOffset || dv.getUint32(h, true) !== LOCAL) {
      fail(`entry '${name}': local header expected at byte ${h}, not found there`);
    }
    const nameLen = dv.getUint16(h + 26, true);
    const start = h + 30 + nameLen + dv.getUint16(h + 28, true);
    const stop = start + e.size;
    if (stop > cdOffset) {
      fail(`entry '${name}': its ${e.size} bytes from byte ${start} run past the central directory (byte ${cdOffset})`);
    }
    const local = bytes.subarray(h + 30, h + 30 + nameLen);
    if (!sameBytes(local, new TextEncoder().encode(name))) {
      fail(`entry '${name}': its local header names another file`);
    }
    const data = bytes.subarray(start, stop);
    const crc = crc32(data);
    if (crc !== e.crc32) {
      fail(`entry '${name}' is corrupt: CRC-32 ${hex(crc)}, the directory says ${hex(e.crc32)}`);
    }
    return data;
  };
  return { entries, read };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function hex(v: number): string {
  return `0x${v.toString(16).padStart(8, '0')}`;
}

let crcTables: Uint32Array[] | null = null;

/** Eight 256-entry tables for slicing-by-8 (reflected polynomial 0xEDB88320, as zip uses). */
function tables(): Uint32Array[] {
  if (crcTables) return crcTables;
  const t = Array.from({ length: 8 }, () => new Uint32Array(256));
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[0][i] = c >>> 0;
  }
  for (let i = 0; i < 256; i++) {
    for (let k = 1; k < 8; k++) t[k][i] = (t[0][t[k - 1][i] & 0xff] ^ (t[k - 1][i] >>> 8)) >>> 0;
  }
  crcTables = t;
  return t;
}

/** The CRC-32 of `data`, as zip stores it. */
export function crc32(data: Uint8Array): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7] = tables();
  let c = 0xffffffff;
  let i = 0;
  const n8 = data.length - (data.length % 8);
  for (; i < n8; i += 8) {
    const a = c ^ (data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24));
    c =
      t7[a & 0xff] ^
      t6[(a >>> 8) & 0xff] ^
      t5[(a >>> 16) & 0xff] ^
      t4[a >>> 24] ^
      t3[data[i + 4]] ^
      t2[data[i + 5]] ^
      t1[data[i + 6]] ^
      t0[data[i + 7]];
  }
  for (; i < data.length; i++) c = t0[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
