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
import { noiseOnly } from '../helpers/adam-noise.ts';
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
    const data = JSON.parse(readFileSync(join(FIXTURE, name.split('/')[0], 'data.json'), 'utf8'));
    const lr = (data as { optimizer: { lr: number } }).optimizer.lr;
    for (const k of Object.keys(tb)) {
      // A parameter after Adam's steps, or a gradient, of elements that are rounding noise (helpers/adam-noise.ts):
      // the noise differs from CPU to CPU (measured: a Zen 4 against the Xeon that made the fixture), so those
      // are held to Adam's step (parameters) or to being noise (gradients), the rest at 1e-5.
      const exempt = noiseOnly(k, tb[k].shape[0] / 3);
      if (!exempt) {
        assertClose(ta[k], tb[k], `${name}: ${k}`, 1e-5, 1e-5);
        continue;
      }
      const [a, b] = [ta[k].dataSync<Float32Array>(), tb[k].dataSync<Float32Array>()];
      const kept = [...b.keys()].filter((i) => !exempt(i));
      assertClose(
        Float32Array.from(kept, (i) => a[i]),
        Float32Array.from(kept, (i) => b[i]),
        `${name}: ${k}`,
        1e-5,
        1e-5,
      );
      const bound = k.includes('.grad.') ? 1e-6 : 4 * lr;
      for (let i = 0; i < b.length; i++)
        if (exempt(i)) assert.ok(Math.abs(a[i] - b[i]) <= bound, `${name}: ${k}[${i}]: ${a[i]} vs ${b[i]}`);
    }
  }
});
