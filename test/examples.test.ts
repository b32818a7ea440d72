/** The README's example must run and print the seed-003 numbers. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

test('examples/quickstart.ts runs and reproduces seed 003', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'examples/quickstart.ts'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /0\.66976/);
  assert.match(r.stdout, /2\.66047/);
  assert.match(r.stdout, /4\.33952/);
  assert.match(r.stdout, /per-head weights \[ 2, 4, 5, 7 \]/);
});
