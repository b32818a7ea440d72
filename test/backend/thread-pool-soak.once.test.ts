/**
 * The thread pool's soak in CI (scripts/soak-threads.ts, issue 41), sized to under two minutes on
 * 2 cores: 2 and 3 threads, pauses of up to 0, 20 and 200 µs injected between every step of a
 * launch on both sides, beside ONNX Runtime decoding with two intra-op threads and a second qkv
 * pool in a worker thread. It runs as a child process: a lost wake-up shows as the join watchdog's
 * error (a join over 1 s, with every counter) or the stall watchdog killing the child; the spawn's
 * own timeout is the last guard, so CI never hangs on it. The watchdog's own check: a hang injected
 * into the soak is caught and reported with the counters.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const root = new URL('../../', import.meta.url).pathname;
const LAUNCHES = 3000;

function soak(args: string[], timeout: number) {
  return spawnSync(process.execPath, ['--import', 'tsx', join(root, 'scripts/soak-threads.ts'), ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout,
  });
}

test('soak: every launch of the pool completes and computes its output, with pauses injected, beside ONNX Runtime and a second pool', {
  timeout: 150_000,
}, () => {
  const r = soak(
    [
      '--launches',
      String(LAUNCHES),
      '--threads',
      '2,3',
      '--jitter-us',
      '0,20,200',
      '--ort-every',
      '1000',
      '--stall-ms',
      '20000',
    ],
    140_000,
  );
  assert.equal(r.error, undefined, `the soak did not finish: ${r.error}\n${r.stdout}\n${r.stderr}`);
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  const m = r.stdout.match(/^soak: (\{.*\})$/m);
  assert.ok(m, r.stdout);
  const s = JSON.parse(m[1]!) as { launches: number; secondPoolLaunches: number; sentencesDecoded: number };
  assert.equal(s.launches, 2 * 3 * LAUNCHES);
  assert.equal(s.sentencesDecoded, 2 * 3 * (LAUNCHES / 1000) * 8);
  assert.ok(s.secondPoolLaunches > 0, 'the second pool ran');
});

test('soak: the stall watchdog reports a hang with the phase and every counter, and ends the process', {
  timeout: 60_000,
}, () => {
  const r = soak(
    [
      '--launches',
      '500',
      '--threads',
      '2',
      '--jitter-us',
      '0',
      '--no-ort',
      '--hang-after',
      '300',
      '--stall-ms',
      '2000',
    ],
    50_000,
  );
  assert.equal(r.error, undefined, `the watchdog did not end the soak: ${r.error}`);
  assert.equal(r.signal, 'SIGKILL', r.stderr);
  assert.match(
    r.stderr,
    /^soak: STALL: no progress for \d+ ms in phase a hang injected by --hang-after after 500 steps \(second pool: \d+ launches\) \[.*\]$/m,
  );
  assert.match(r.stderr, /main pool: generation 500, running 0, ready 1, gone 0; workers: 0 started 500 done 500/);
  assert.match(r.stderr, /second pool: generation \d+, running [01], ready 1, gone 0; workers: 0 started \d+ done \d+/);
});
