/**
 * The missing-tool gate (issue 40, point 3): under any truthy CI a missing tool fails the test
 * instead of skipping it (CI=1 and CI=yes as well as CI=true), and only empty, 0, false, no, off
 * leave the developer's skip.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { featureSkip, requireFeature, toolsRequired, truthy } from './tools.ts';

test('truthy: any value but empty, 0, false, no, off (any case)', () => {
  for (const v of ['true', '1', 'yes', 'TRUE', 'github', 'on']) assert.equal(truthy(v), true, v);
  for (const v of [undefined, '', '0', 'false', 'FALSE', 'no', 'off', ' ']) assert.equal(truthy(v), false, String(v));
});

test('toolsRequired: CI=1 requires the tools, as CI=true does', () => {
  const saved = { CI: process.env.CI, Q: process.env.QKV_REQUIRE_TOOLS };
  try {
    delete process.env.QKV_REQUIRE_TOOLS;
    for (const [ci, want] of [
      ['1', true],
      ['true', true],
      ['yes', true],
      ['0', false],
      ['false', false],
      [undefined, false],
    ] as const) {
      if (ci === undefined) delete process.env.CI;
      else process.env.CI = ci;
      assert.equal(toolsRequired(), want, `CI=${ci}`);
    }
    delete process.env.CI;
    process.env.QKV_REQUIRE_TOOLS = '1';
    assert.equal(toolsRequired(), true);
  } finally {
    if (saved.CI === undefined) delete process.env.CI;
    else process.env.CI = saved.CI;
    if (saved.Q === undefined) delete process.env.QKV_REQUIRE_TOOLS;
    else process.env.QKV_REQUIRE_TOOLS = saved.Q;
  }
});

test('featureSkip: a missing feature skips with its reason on a developer machine, runs (to fail) under CI', () => {
  const saved = { CI: process.env.CI, Q: process.env.QKV_REQUIRE_TOOLS };
  try {
    delete process.env.QKV_REQUIRE_TOOLS;
    delete process.env.CI;
    assert.equal(featureSkip('the wasm module', null), false);
    assert.equal(featureSkip('the wasm module', 'did not load: x'), 'the wasm module: did not load: x');
    process.env.CI = 'true';
    assert.equal(featureSkip('the wasm module', 'did not load: x'), false);
    assert.throws(
      () => requireFeature('the wasm module', 'did not load: x'),
      /^Error: the wasm module: did not load: x$/,
    );
    requireFeature('the wasm module', null);
  } finally {
    if (saved.CI === undefined) delete process.env.CI;
    else process.env.CI = saved.CI;
    if (saved.Q === undefined) delete process.env.QKV_REQUIRE_TOOLS;
    else process.env.QKV_REQUIRE_TOOLS = saved.Q;
  }
});
