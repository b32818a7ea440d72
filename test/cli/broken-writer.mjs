// Test-only: replaces the built CLI's atomicWrite (dist/io/atomic.js) by an unsafe writer, so that
// the crash tests can show they catch it (test/cli/crash-broken.once.test.ts). Loaded into a child
// process with NODE_OPTIONS=--import=<this file>; QKV_BROKEN_WRITE names the writer:
//   in-place: the temporary file written and fsynced, then the target overwritten in place with it
//             (the rename replaced by a copy);
//   no-temp:  the target written directly.
// Both keep atomicWrite's fault points (QKV_FAULT=write:at=<stage>), at the same stages of their
// own write of the target, so a seeded kill lands where it would have landed in atomicWrite.
import { register } from 'node:module';

const variant = process.env.QKV_BROKEN_WRITE;
if (variant !== 'in-place' && variant !== 'no-temp')
  throw new Error(`QKV_BROKEN_WRITE: expected in-place or no-temp, got ${JSON.stringify(variant)}`);

const hooks = `
export async function load(url, context, nextLoad) {
  if (!url.endsWith('/dist/io/atomic.js')) return nextLoad(url, context);
  const fault = new URL('../util/fault.js', url).href;
  const source = \`
export * from '\${url}?real';
import { closeSync, fsyncSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { faultPoint } from '\${fault}';

function writeFile(path, bytes, points) {
  const fd = openSync(path, 'w');
  const half = bytes.length >> 1;
  for (let off = 0; off < half; ) off += writeSync(fd, bytes, off, half - off);
  if (points) faultPoint('write', { file: points, at: 'part' });
  for (let off = half; off < bytes.length; ) off += writeSync(fd, bytes, off, bytes.length - off);
  if (points) faultPoint('write', { file: points, at: 'unflushed' });
  fsyncSync(fd);
  closeSync(fd);
}

export function atomicWrite(path, data) {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  mkdirSync(dirname(path), { recursive: true });
  if (${JSON.stringify(variant)} === 'in-place') writeFile(path + '.tmp-' + process.pid, bytes, null);
  writeFile(path, bytes, path);
  faultPoint('write', { file: path, at: 'flushed' });
  faultPoint('write', { file: path, at: 'renamed' });
}\`;
  return { format: 'module', shortCircuit: true, source };
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
