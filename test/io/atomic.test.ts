/**
 * atomicWrite (src/io/atomic.ts) over a simulated disk that keeps apart what a kill keeps and what
 * a power cut keeps (issue 48, point 1). After every file-system call the writer makes, the test
 * looks at the target as a process killed there would leave it (everything written so far: the
 * page cache survives a kill) and as a power cut there could leave it (only what was fsynced is
 * promised; a folder's renames only once the folder is fsynced; either may or may not have reached
 * the disk). Each must be the old file or the new one, whole; once the writer returns, a power cut
 * must leave the new one. The writers a careless change would produce (an in-place overwrite, no
 * temporary file, no fsync, no folder fsync) each fail here, and the test shows which of them a
 * kill alone can catch: not the missing fsync, which only a power cut shows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { atomicWrite, type WriteFs } from '../../src/io/atomic.ts';
import { tempDir } from '../e2e/tiny-model.ts';

interface Inode {
  /** What a process reads (the page cache). */
  cache: Uint8Array;
  /** What fsync last put on the disk. */
  disk: Uint8Array;
}

const text = (b: Uint8Array | undefined) => (b === undefined ? 'no file' : JSON.stringify(Buffer.from(b).toString()));
const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

/** One folder on a simulated disk; `onCall` runs after every call, named. */
class SimDisk implements WriteFs {
  /** The folder's names as processes see them. */
  names = new Map<string, Inode>();
  /** The folder's names as the disk has them (after the folder's last fsync). */
  diskNames = new Map<string, Inode>();
  private fds = new Map<number, Inode>();
  calls: string[] = [];

  constructor(
    files: Record<string, string>,
    private onCall: (call: string) => void,
  ) {
    for (const [name, body] of Object.entries(files)) {
      const b = Buffer.from(body);
      const ino = { cache: b, disk: b };
      this.names.set(name, ino);
      this.diskNames.set(name, ino);
    }
  }
  private did(call: string) {
    this.calls.push(call);
    this.onCall(call);
  }
  mkdirp() {}
  open(path: string) {
    let ino = this.names.get(path);
    if (ino) ino.cache = new Uint8Array(0);
    else {
      ino = { cache: new Uint8Array(0), disk: new Uint8Array(0) };
      this.names.set(path, ino);
    }
    const fd = this.fds.size + 3;
    this.fds.set(fd, ino);
    this.did(`open ${path}`);
    return fd;
  }
  write(fd: number, bytes: Uint8Array, offset: number, length: number) {
    const ino = this.fds.get(fd)!;
    ino.cache = Buffer.concat([ino.cache, bytes.subarray(offset, offset + length)]);
    this.did(`write ${length} bytes`);
    return length;
  }
  fsync(fd: number) {
    const ino = this.fds.get(fd)!;
    ino.disk = ino.cache;
    this.did('fsync');
  }
  close(fd: number) {
    this.fds.delete(fd);
    this.did('close');
  }
  rename(from: string, to: string) {
    const ino = this.names.get(from);
    if (!ino) throw new Error(`rename: no file ${from}`);
    this.names.delete(from);
    this.names.set(to, ino);
    this.did(`rename ${from} ${to}`);
  }
  syncDir() {
    this.diskNames = new Map(this.names);
    this.did('fsync the folder');
  }

  /** What a process killed now leaves under `path`. */
  afterKill(path: string): Uint8Array | undefined {
    return this.names.get(path)?.cache;
  }

  /**
   * What a power cut now may leave under `path`: the name as the disk or as the page cache has it;
   * its contents as last fsynced, as cached, or (with unsynced changes) cut to nothing, the size
   * having reached the disk before the data.
   */
  afterPowerCut(path: string): (Uint8Array | undefined)[] {
    const out: (Uint8Array | undefined)[] = [];
    for (const names of [this.diskNames, this.names]) {
      const ino = names.get(path);
      if (!ino) out.push(undefined);
      else out.push(ino.disk, ino.cache, ...(same(ino.disk, ino.cache) ? [] : [new Uint8Array(0)]));
    }
    return out;
  }
}

type Writer = (path: string, data: string, fs: WriteFs) => void;

/**
 * Throws, naming the call and what was found, unless every kill (and, with `powerCuts`, every power
 * cut) between the writer's calls leaves `path` old or new, and a power cut after it returns leaves
 * it new. Tried with the old file there and with none.
 */
function checkWriter(write: Writer, powerCuts = true): void {
  const path = 'config.json';
  const next = 'the new contents';
  for (const old of ['old', undefined]) {
    const ok = (b: Uint8Array | undefined) =>
      b === undefined ? old === undefined : b.length > 0 && [old, next].includes(Buffer.from(b).toString());
    let last = 'the start';
    const look = (where: string) => {
      const killed = disk.afterKill(path);
      if (!ok(killed))
        throw new Error(
          `a kill after ${where} leaves ${path} ${text(killed)}: neither ${text(old === undefined ? undefined : Buffer.from(old))} nor the new file`,
        );
      if (powerCuts)
        for (const b of disk.afterPowerCut(path))
          if (!ok(b))
            throw new Error(
              `a power cut after ${where} may leave ${path} ${text(b)}: neither the old file nor the new one`,
            );
    };
    const disk: SimDisk = new SimDisk(old === undefined ? {} : { [path]: old }, (call) => {
      last = call;
      look(call);
    });
    look(last);
    write(path, next, disk);
    assert.equal(text(disk.afterKill(path)), text(Buffer.from(next)), 'the writer wrote the new file');
    if (powerCuts)
      for (const b of disk.afterPowerCut(path))
        if (!b || !same(b, Buffer.from(next)))
          throw new Error(
            `a power cut after the write returned may leave ${path} ${text(b)}: the write was not durable`,
          );
  }
}

// The writers a careless change would make of atomicWrite.
const inPlace: Writer = (path, data, fs) => {
  // The temporary file written and flushed, then copied over the target instead of renamed.
  const tmp = `${path}.tmp-1`;
  for (const f of [tmp, path]) {
    const fd = fs.open(f);
    fs.write(fd, Buffer.from(data), 0, data.length);
    fs.fsync(fd);
    fs.close(fd);
  }
};
const noTemp: Writer = (path, data, fs) => {
  const fd = fs.open(path);
  fs.write(fd, Buffer.from(data), 0, 4);
  fs.write(fd, Buffer.from(data), 4, data.length - 4);
  fs.fsync(fd);
  fs.close(fd);
  fs.syncDir('.');
};
const noFlush: Writer = (path, data, fs) => {
  const tmp = `${path}.tmp-1`;
  const fd = fs.open(tmp);
  fs.write(fd, Buffer.from(data), 0, data.length);
  fs.close(fd);
  fs.rename(tmp, path);
  fs.syncDir('.');
};
const noFolderSync: Writer = (path, data, fs) => {
  const tmp = `${path}.tmp-1`;
  const fd = fs.open(tmp);
  fs.write(fd, Buffer.from(data), 0, data.length);
  fs.fsync(fd);
  fs.close(fd);
  fs.rename(tmp, path);
};

test('atomicWrite: a kill or a power cut after any of its calls leaves the old file or the new one; after it returns, the new one', () => {
  checkWriter((path, data, fs) => atomicWrite(path, data, fs));
  // The calls it makes, in order (two writes: the fault point `part` lies between them).
  const disk = new SimDisk({}, () => {});
  atomicWrite('a.json', 'abcd', disk);
  assert.deepEqual(disk.calls, [
    `open a.json.tmp-${process.pid}`,
    'write 2 bytes',
    'write 2 bytes',
    'fsync',
    'close',
    `rename a.json.tmp-${process.pid} a.json`,
    'fsync the folder',
  ]);
});

test('the check catches each unsafe writer: an in-place overwrite, no temporary file (a kill shows both), no fsync, no folder fsync (only a power cut shows these)', () => {
  assert.throws(
    () => checkWriter(inPlace),
    /^Error: a kill after open config\.json leaves config\.json "": neither "old" nor the new file$/,
  );
  assert.throws(() => checkWriter(noTemp), /^Error: a kill after open config\.json leaves config\.json ""/);
  assert.throws(
    () => checkWriter(noFlush),
    /^Error: a power cut after rename config\.json\.tmp-1 config\.json may leave config\.json "": neither/,
  );
  assert.throws(
    () => checkWriter(noFolderSync),
    /^Error: a power cut after the write returned may leave config\.json "old": the write was not durable$/,
  );
  // What a kill cannot show: the page cache survives it, so without power cuts the writers that
  // skip an fsync pass. The crash tests (test/cli/crash-*.once.test.ts) kill processes; they hold
  // the temporary file and the rename, and this test holds the fsyncs.
  checkWriter(noFlush, false);
  checkWriter(noFolderSync, false);
  assert.throws(() => checkWriter(inPlace, false), /a kill after open config\.json/);
});

test('atomicWrite on the real disk replaces a file whole and leaves no temporary file', () => {
  const dir = join(tempDir('qkv-atomic-'), 'a', 'b');
  const f = join(dir, 'config.json');
  atomicWrite(f, 'one');
  atomicWrite(f, new TextEncoder().encode('two'));
  atomicWrite(join(dir, 'empty'), '');
  assert.equal(readFileSync(f, 'utf8'), 'two');
  assert.equal(readFileSync(join(dir, 'empty'), 'utf8'), '');
  assert.deepEqual(readdirSync(dir).sort(), ['config.json', 'empty']);
});
