/**
 * The fixtures made by real transformers regenerate bit for bit (issue 61, point 4): every script of
 * references.ts runs under the reference environment (.venv-ref/, built by scripts/ref-env.sh from the
 * machine's local wheel index; .ci/run builds it) into a scratch folder, and each file it writes must equal
 * the committed one byte for byte, else the test names the file and its first differing value. Exact bytes,
 * not a tolerance: two runs on one machine write the same bytes (measured), and scripts/fixtures/ref_pin.py
 * pins what the bits depend on across machines (MKL's and ATen's AVX2 code paths, one thread, float64
 * models stored as float32). No skip under CI: without .venv-ref this fails, naming scripts/ref-env.sh.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../e2e/tiny-model.ts';
import { firstDifference } from '../helpers/first-difference.ts';
import { REF_PYTHON, requireTool, toolSkip } from '../helpers/tools.ts';
import { REFERENCES } from './references.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

for (const ref of REFERENCES) {
  const what = ref.files.length > 4 ? `its ${ref.files.length} files` : `{${ref.files.join(',')}}`;
  test(`${ref.script} rewrites ${ref.folder}/${what} with the same bytes`, {
    skip: toolSkip('transformers'),
    timeout: 120_000,
  }, () => {
    requireTool('transformers');
    const dir = tempDir('qkv-references-');
    try {
      const r = spawnSync(REF_PYTHON, [ref.script, dir], { cwd: root, encoding: 'utf8' });
      assert.equal(r.status, 0, `${ref.script}: ${r.stdout}${r.stderr}`);
      const drifted = ref.files
        .map((f) => firstDifference(f, readFileSync(join(root, ref.folder, f)), readFileSync(join(dir, f))))
        .filter((d) => d !== null);
      assert.deepEqual(drifted, [], `${ref.folder}: the committed fixture is not what ${ref.script} writes now`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('the comparison has teeth: a float changed in its last bit, an id, a JSON number are named', () => {
  const marian = join(root, 'test/fixtures/marian-tiny');
  const tensors = readFileSync(join(marian, 'expected.safetensors'));
  const changed = Buffer.from(tensors);
  changed[changed.length - 4] ^= 1; // the lowest mantissa bit of the file's last float32
  assert.match(
    firstDifference('expected.safetensors', tensors, changed) ?? '',
    /^expected\.safetensors: tensor \S+ \[[\d,]+\] at flat index \d+: committed \S+, regenerated \S+$/,
  );
  const gpt2 = readFileSync(join(root, 'test/fixtures/hf-gpt2-tiny/expected.safetensors'));
  const n = Number(gpt2.readBigUInt64LE(0));
  const begin = (JSON.parse(gpt2.subarray(8, 8 + n).toString()) as Record<string, { data_offsets: number[] }>).input_ids
    .data_offsets[0];
  const ids = Buffer.from(gpt2);
  ids.writeBigInt64LE(ids.readBigInt64LE(8 + n + begin + 8) + 1n, 8 + n + begin + 8);
  assert.match(firstDifference('expected.safetensors', gpt2, ids) ?? '', /tensor input_ids \[1,10\] at flat index 1: /);
  const json = readFileSync(join(marian, 'expected.json'), 'utf8');
  const doc = JSON.parse(json) as { sentences: { beamScore: number }[] };
  const committed = doc.sentences[2].beamScore;
  doc.sentences[2].beamScore += 1e-12;
  const other = Buffer.from(`${JSON.stringify(doc, null, 1)}\n`);
  assert.equal(
    firstDifference('expected.json', Buffer.from(json), other),
    `expected.json: .sentences[2].beamScore: committed ${committed}, regenerated ${doc.sentences[2].beamScore}`,
  );
  assert.equal(firstDifference('expected.json', Buffer.from(json), Buffer.from(json)), null);
  assert.match(
    firstDifference('expected.json', Buffer.from(json), Buffer.from(JSON.stringify(JSON.parse(json)))) ?? '',
    /^expected\.json: the same values, other bytes from byte 1 /,
  );
});
