// The progress bar's times: rounded before they are split into hours and minutes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDuration } from '../../src/cli/progress.ts';

test('formatDuration rounds the whole time, then splits it (no 1h60m)', () => {
  assert.equal(formatDuration(7199, 5), '2h00m'); // cli-progress's own formatter: 1h60m
  assert.equal(formatDuration(7170, 5), '2h00m');
  assert.equal(formatDuration(7140, 5), '1h59m');
  assert.equal(formatDuration(3599.9, 5), '1h00m');
  assert.equal(formatDuration(3900, 5), '1h05m');
  assert.equal(formatDuration(275, 5), '4m35s');
  assert.equal(formatDuration(119, 5), '2m00s'); // and not 1m60s
  assert.equal(formatDuration(59, 5), '1m00s');
  assert.equal(formatDuration(42, 5), '40s');
  assert.equal(formatDuration(42, 1), '42s');
  assert.equal(formatDuration(7, 5), '7s');
  assert.equal(formatDuration(0), '0s');
});

test('formatDuration shows an unknown rate as ?', () => {
  assert.equal(formatDuration('NULL', 5), '?');
  assert.equal(formatDuration('INF', 5), '?');
  assert.equal(formatDuration(Number.NaN), '?');
});
