/**
 * scripts/fixtures/make_peft_lora.py, rerun into a temporary folder with the reference environment (.venv-ref:
 * transformers 5.18, torch 2.x, peft 0.21), writes what test/fixtures/peft holds: the same files, the same names,
 * the same numbers at float32 tolerances (torch 2's CPU kernels are not pinned bit for bit as pin.py pins Debian's
 * torch 1.13, so values, not bytes, are compared; JSON configs exactly).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { tempDir } from '../e2e/tiny-model.ts';
import { assertClose } from '../helpers/assert.ts';
import { root } from '../helpers/cli.ts';
import { REF_PYTHON, requireTool, toolSkip } from '../helpers/tools.ts';

const skip = toolSkip('transformers');
const FIXTURE = join(root, 'test/fixtures/peft');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

test('make_peft_lora.py regenerates test/fixtures/peft', { skip }, () => {
  requireTool('transformers');
  const out = tempDir('qkv-peft-fixture-');
  const r = spawnSync(REF_PYTHON, [join(root, 'scripts/fixtures/make_peft_lora.py'), out], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const names = (d: string) =>
    files(d)
      .map((f) => relative(d, f))
      .sort();
  assert.deepEqual(names(out), names(FIXTURE));
  for (const name of names(FIXTURE)) {
    const a = readFileSync(join(out, name));
    const b = readFileSync(join(FIXTURE, name));
    if (name.endsWith('.json')) {
      const [x, y] = [JSON.parse(a.toString()), JSON.parse(b.toString())];
      // Losses and norms are floats: compared within tolerance, the rest exactly.
      const strip = (j: unknown): unknown =>
        JSON.parse(JSON.stringify(j, (_, v) => (typeof v === 'number' ? Math.fround(v).toPrecision(5) : v)));
      assert.deepEqual(strip(x), strip(y), name);
      continue;
    }
    const ta = readSafetensors(new Uint8Array(a)).tensors;
    const tb = readSafetensors(new Uint8Array(b)).tensors;
    assert.deepEqual(Object.keys(ta).sort(), Object.keys(tb).sort(), name);
    for (const k of Object.keys(tb)) assertClose(ta[k], tb[k], `${name}: ${k}`, 1e-5, 1e-5);
  }
});
