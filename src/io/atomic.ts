/**
 * Writing files so that a reader never finds half of one: the training loop commits its state this
 * way, and every command that writes a model folder does too. Node only (node:fs).
 *
 * The protocol: write a temporary file beside the target, fsync it, rename it over the target,
 * fsync the folder. What each step is for:
 * - the temporary file: a process killed while writing leaves the target untouched (a kill keeps
 *   everything already written, in the page cache, so writing the target in place would leave it
 *   half new, half cut off);
 * - the fsync before the rename: a power cut or kernel crash loses what is only in the page cache,
 *   and a rename that reached the disk before the file's data would leave an empty or partial file
 *   under the target's name (a kill cannot show this: the page cache survives it);
 * - the folder's fsync: the rename itself is a change of the folder; until it is on disk, a power
 *   cut may bring the old file back (old or new, never half: safe, but not yet durable).
 * test/io/atomic.test.ts holds each of these: it runs atomicWrite over a simulated disk that keeps
 * apart what a kill keeps (the page cache) and what a power cut keeps (what was fsynced), and
 * shows that a writer without the temporary file, without the fsync or without the folder's fsync
 * fails there. The crash tests kill real processes at each fault point below.
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { faultPoint } from '../util/fault.ts';

/** The file-system calls an atomic write makes: node:fs here; the unit test passes a simulated disk. */
export interface WriteFs {
  /** Create the folder and its parents. */
  mkdirp(dir: string): void;
  /** Open for writing, created or truncated. */
  open(path: string): number;
  /** Write up to `length` bytes from `offset`; returns how many were written. */
  write(fd: number, bytes: Uint8Array, offset: number, length: number): number;
  fsync(fd: number): void;
  close(fd: number): void;
  rename(from: string, to: string): void;
  /** fsync a folder (throws where the system cannot, e.g. Windows). */
  syncDir(dir: string): void;
}

export const nodeWriteFs: WriteFs = {
  mkdirp: (dir) => mkdirSync(dir, { recursive: true }),
  open: (path) => openSync(path, 'w'),
  write: (fd, bytes, offset, length) => writeSync(fd, bytes, offset, length),
  fsync: fsyncSync,
  close: closeSync,
  rename: renameSync,
  syncDir(dir) {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  },
};

/** The fault points of a write, in order (QKV_FAULT=write:at=<stage>:file=<name>; src/util/fault.ts). */
export const WRITE_STAGES = ['part', 'unflushed', 'flushed', 'renamed'] as const;

/**
 * Replace `path` with `data` whole (the protocol above). The fault points let a crash test kill the
 * process with the temporary file half written (`part`), written but not fsynced (`unflushed`),
 * fsynced but not renamed (`flushed`), and renamed before the folder's fsync (`renamed`).
 */
export function atomicWrite(path: string, data: Uint8Array | string, fs: WriteFs = nodeWriteFs): void {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  fs.mkdirp(dirname(path));
  const tmp = `${path}.tmp-${process.pid}`;
  const fd = fs.open(tmp);
  try {
    // In two halves, so that a kill can land with part of the bytes written.
    const half = bytes.length >> 1;
    for (let off = 0; off < half; ) off += fs.write(fd, bytes, off, half - off);
    faultPoint('write', { file: path, at: 'part' });
    for (let off = half; off < bytes.length; ) off += fs.write(fd, bytes, off, bytes.length - off);
    faultPoint('write', { file: path, at: 'unflushed' });
    fs.fsync(fd);
  } finally {
    fs.close(fd);
  }
  faultPoint('write', { file: path, at: 'flushed' });
  fs.rename(tmp, path);
  faultPoint('write', { file: path, at: 'renamed' });
  try {
    fs.syncDir(dirname(path));
  } catch {
    // Some systems cannot fsync a folder (Windows); the rename is still atomic, if not yet durable.
  }
}

/** Remove the temporary files of atomicWrite that killed processes left beside `path` (`path`.tmp-PID). */
export function removeStaleTempsOf(path: string): void {
  const dir = dirname(path);
  if (!existsSync(dir)) return;
  const name = basename(path);
  for (const f of readdirSync(dir))
    if (f.startsWith(`${name}.tmp-`) && /^\d+$/.test(f.slice(name.length + 5))) rmSync(join(dir, f), { force: true });
}

/** Remove the temporary files of atomicWrite that a killed process left in `dir` and `dir`/checkpoints. */
export function removeStaleTemps(dir: string): void {
  for (const d of [dir, join(dir, 'checkpoints')]) {
    if (!existsSync(d)) continue;
    for (const f of readdirSync(d)) if (/\.tmp-\d+$/.test(f)) rmSync(join(d, f), { force: true });
  }
}
