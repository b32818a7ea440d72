/**
 * The fault-injection hook (src/util/fault.ts): its spec parses or is refused naming QKV_FAULT, and
 * a child process with QKV_FAULT set dies by SIGKILL exactly at the named point (and only there).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { parseFault } from '../../src/util/fault.ts';

test('parseFault: a point and key=value pairs; group=1; malformed specs refused naming QKV_FAULT', () => {
  assert.deepEqual(parseFault('write:at=flushed:step=40:file=train-state.safetensors'), {
    point: 'write',
    want: [
      ['at', 'flushed'],
      ['step', '40'],
      ['file', 'train-state.safetensors'],
    ],
    group: false,
  });
  assert.deepEqual(parseFault('step:step=3:group=1'), { point: 'step', want: [['step', '3']], group: true });
  assert.throws(
    () => parseFault('step:step'),
    /^Error: QKV_FAULT: expected <key>=<value> after "step:", got "step" in "step:step"$/,
  );
  assert.throws(() => parseFault(':x=1'), /^Error: QKV_FAULT: expected <point>/);
});

const script = `
import { faultPoint } from './src/util/fault.ts';
for (let step = 1; step <= 5; step++) {
  faultPoint('step', { step });
  process.stdout.write('s' + step + ' ');
  faultPoint('write', { file: '/x/checkpoints/history.json', at: 'flushed' });
  process.stdout.write('w' + step + ' ');
}`;

function run(fault: string | undefined) {
  const env = { ...process.env, QKV_FAULT: fault };
  if (fault === undefined) delete env.QKV_FAULT;
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env,
    encoding: 'utf8',
    cwd: new URL('../../', import.meta.url).pathname,
  });
}

test('faultPoint: a child dies by SIGKILL at the named point, its details remembered; without QKV_FAULT it runs through', () => {
  const none = run(undefined);
  assert.equal(none.status, 0, none.stderr);
  assert.equal(none.stdout, 's1 w1 s2 w2 s3 w3 s4 w4 s5 w5 ');
  const atStep = run('step:step=3');
  assert.equal(atStep.signal, 'SIGKILL');
  assert.equal(atStep.stdout, 's1 w1 s2 w2 ');
  // `step` set by the step point still holds at the write; the file matches the end of the path.
  const midWrite = run('write:at=flushed:step=2:file=history.json');
  assert.equal(midWrite.signal, 'SIGKILL');
  assert.equal(midWrite.stdout, 's1 w1 s2 ');
  const never = run('write:at=flushed:step=9');
  assert.equal(never.status, 0);
  assert.equal(never.stdout, 's1 w1 s2 w2 s3 w3 s4 w4 s5 w5 ');
});
