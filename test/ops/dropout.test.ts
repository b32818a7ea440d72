import { test } from 'node:test';
import assert from 'node:assert/strict';
import { F, Generator, ones } from '../../src/index.ts';

test('dropout drops a fraction p (within 5σ), scales survivors by 1/(1 − p), is identity in eval', () => {
  const n = 200_001; // odd: the last element takes the low half of a draw alone
  for (const p of [0.1, 0.5, 0.9]) {
    const y = F.dropout(ones(n), p, true, new Generator(3));
    let dropped = 0;
    for (const v of y.dataSync()) {
      if (v === 0) dropped++;
      else assert.ok(Math.abs(v - 1 / (1 - p)) < 1e-6, `survivor ${v}`);
    }
    const sigma = Math.sqrt(n * p * (1 - p));
    assert.ok(Math.abs(dropped - n * p) < 5 * sigma, `p=${p}: dropped ${dropped} of ${n}`);
  }
  assert.ok(
    F.dropout(ones(7), 1, true)
      .toArray()
      .every((v) => v === 0),
  );
  const x = ones(5);
  assert.equal(F.dropout(x, 0.5, false), x);
  assert.deepEqual(
    F.dropout(ones(64), 0.3, true, new Generator(9)).toArray(),
    F.dropout(ones(64), 0.3, true, new Generator(9)).toArray(),
  );
});
