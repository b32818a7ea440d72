/**
 * A zip archive of stored (uncompressed) entries, written from bytes: how the Train view hands a
 * model folder to the user as one download. Stored entries are what every unzip tool reads, and
 * what qkv's own reader (src/io/zip.ts, whose CRC-32 this uses) reads back in the test. Names are
 * UTF-8 (flag bit 11); sizes stay under 4 GiB (no zip64), far above a model trained in a page.
 */
import { crc32 } from '../../src/io/zip.ts';

export interface ZipFile {
  /** Its path in the archive, e.g. 'gpt-sonnets/tokenizer.json' (a folder is made by the path). */
  name: string;
  data: Uint8Array;
}

const LOCAL = 0x04034b50;
const CENTRAL = 0x02014b50;
const END = 0x06054b50;
/** Version needed to extract: 2.0 (stored entries). */
const VERSION = 20;
/** General-purpose flags: bit 11, names are UTF-8. */
const UTF8 = 0x0800;

/** MS-DOS time and date of `d` (2-second resolution, local time), as zip headers hold them. */
function dosTime(d: Date): { time: number; date: number } {
  return {
    time: (d.getHours() << 11) | (d.getMinutes() << 5) | (d.getSeconds() >> 1),
    date: ((Math.max(1980, d.getFullYear()) - 1980) << 9) | ((d.getMonth() + 1) << 5) | d.getDate(),
  };
}

/** The archive of `files`, in order, dated `when` (default now). */
export function zipStored(files: readonly ZipFile[], when = new Date()): Uint8Array {
  const enc = new TextEncoder();
  const { time, date } = dosTime(when);
  const entries = files.map((f) => ({ name: enc.encode(f.name), data: f.data, crc: crc32(f.data), offset: 0 }));
  const localSize = entries.reduce((s, e) => s + 30 + e.name.length + e.data.length, 0);
  const centralSize = entries.reduce((s, e) => s + 46 + e.name.length, 0);
  const total = localSize + centralSize + 22;
  if (total > 0xffffffff || entries.length > 0xffff)
    throw new Error(
      `zipStored: ${entries.length} files of ${total} bytes need zip64, which this writer does not write`,
    );
  const out = new Uint8Array(total);
  const dv = new DataView(out.buffer);
  let p = 0;
  const u16 = (v: number) => {
    dv.setUint16(p, v, true);
    p += 2;
  };
  const u32 = (v: number) => {
    dv.setUint32(p, v >>> 0, true);
    p += 4;
  };
  const head = (e: (typeof entries)[number]) => {
    u16(VERSION);
    u16(UTF8);
    u16(0); // stored
    u16(time);
    u16(date);
    u32(e.crc);
    u32(e.data.length);
    u32(e.data.length);
    u16(e.name.length);
    u16(0); // no extra field
  };
  for (const e of entries) {
    e.offset = p;
    u32(LOCAL);
    head(e);
    out.set(e.name, p);
    p += e.name.length;
    out.set(e.data, p);
    p += e.data.length;
  }
  const central = p;
  for (const e of entries) {
    u32(CENTRAL);
    u16(VERSION); // made by
    head(e);
    u16(0); // comment
    u16(0); // disk
    u16(0); // internal attributes
    u32(0); // external attributes
    u32(e.offset);
    out.set(e.name, p);
    p += e.name.length;
  }
  const directoryBytes = p - central;
  u32(END);
  u16(0); // this disk
  u16(0); // the directory's disk
  u16(entries.length);
  u16(entries.length);
  u32(directoryBytes);
  u32(central);
  u16(0); // comment
  return out;
}
