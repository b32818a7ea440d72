/**
 * Writing files so that a process killed at any moment leaves either the old file or the new one,
 * never half of one: the training loop commits its state this way, and every command that writes a
 * model folder does too. Node only (node:fs).
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
import { dirname, join } from 'node:path';
import { faultPoint } from '../util/fault.ts';

export function atomicWrite(path: string, data: Uint8Array | string): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w');
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  faultPoint('after-tmp-write', { file: path }); // crash tests: die with the temporary file written, not renamed
  renameSync(tmp, path);
  // The rename itself lives in the folder: flush it too, or a power cut may forget it.
  try {
    const dfd = openSync(dirname(path), 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    // Some systems cannot fsync a folder (Windows); the rename is still atomic.
  }
}

/** Remove the temporary files of atomicWrite that a killed process left in `dir` and `dir`/checkpoints. */
export function removeStaleTemps(dir: string): void {
  for (const d of [dir, join(dir, 'checkpoints')]) {
    if (!existsSync(d)) continue;
    for (const f of readdirSync(d)) if (/\.tmp-\d+$/.test(f)) rmSync(join(d, f), { force: true });
  }
}
