/**
 * The committed PyTorch fixtures regenerate bit for bit (issue 48, point 3): `npm run fixtures`'s
 * PyTorch scripts (make_marian.py's SentencePiece models and pytorch_model.bin included), run in a scratch copy of scripts/fixtures/ and test/fixtures/, rewrite every file
 * with the same bytes, and scripts/fixtures/check_fixtures.py (its own reader, the naming rules,
 * each output and gradient re-derived from the stored config, each case regenerated in memory)
 * passes. What the bits depend on is pinned in scripts/fixtures/pin.py (OpenBLAS's kernel and
 * threads, torch's threads and deterministic algorithms); without that pin, 16 files changed by up
 * to 4.3e-6 between an AVX-512 machine and an AVX2 one. No skip: without torch under
 * /usr/bin/python3 under CI this fails, naming what to install (test/helpers/tools.ts). The files that
 * real transformers writes (references.ts: the Marian and GPT-2 folders' expected outputs) are left as
 * committed here; references.once.test.ts regenerates and compares them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { listTree } from '../cli/crash.ts';
import { tempDir } from '../e2e/tiny-model.ts';
import { PYTHON, requireTool, toolSkip } from '../helpers/tools.ts';
import { OTHER_REFERENCE_FOLDERS, REFERENCES } from './references.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPTS = ['make_fixtures.py', 'make_optim_fixtures.py', 'make_hf_gpt2.py', 'make_marian.py'];
/** The files under test/fixtures/ that the PyTorch 1.13 scripts do not write. */
const BY_TRANSFORMERS = new Set(
  REFERENCES.flatMap((r) => r.files.map((f) => join(r.folder, f).slice('test/fixtures/'.length))),
);
/** The folders (under test/fixtures/) of the reference environment's other scripts: not the 1.13 scripts' either. */
const OTHER = OTHER_REFERENCE_FOLDERS.map((d) => `${d.slice('test/fixtures/'.length)}/`);
const byReferenceEnv = (f: string) => BY_TRANSFORMERS.has(f) || OTHER.some((d) => f.startsWith(d));

/** A scratch copy of the fixture scripts and the committed fixtures. */
function scratch(): string {
  const dir = tempDir('qkv-fixtures-');
  cpSync(join(root, 'scripts/fixtures'), join(dir, 'scripts/fixtures'), { recursive: true });
  cpSync(join(root, 'test/fixtures'), join(dir, 'test/fixtures'), { recursive: true });
  // make_marian.py trains its two SentencePiece models on Multi30K's training lines.
  cpSync(join(root, 'data/multi30k'), join(dir, 'data/multi30k'), { recursive: true });
  return dir;
}

function python(cwd: string, script: string) {
  const r = spawnSync(PYTHON, [join('scripts/fixtures', script)], { cwd, encoding: 'utf8' });
  assert.equal(r.status, 0, `${script}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** The files of test/fixtures/ under `dir` whose bytes differ from the committed ones. */
function changed(dir: string): string[] {
  const committed = join(root, 'test/fixtures');
  return listTree(committed).filter(
    (f) => !readFileSync(join(committed, f)).equals(readFileSync(join(dir, 'test/fixtures', f))),
  );
}

test('npm run fixtures rewrites every committed fixture with the same bytes; check_fixtures.py passes', {
  skip: toolSkip('torch', 'numpy'),
  timeout: 120_000,
}, () => {
  requireTool('torch', 'numpy');
  const dir = scratch();
  try {
    // The committed files are overwritten: a file changed in its last bit is named below.
    for (const f of listTree(join(dir, 'test/fixtures')))
      if (f.endsWith('.safetensors') && !byReferenceEnv(f)) rmSync(join(dir, 'test/fixtures', f));
    for (const s of SCRIPTS) python(dir, s);
    assert.deepEqual(listTree(join(dir, 'test/fixtures')), listTree(join(root, 'test/fixtures')), 'the same files');
    assert.deepEqual(changed(dir), [], 'files that regenerate with other bytes');
    assert.match(python(root, 'check_fixtures.py'), /^\d+ files OK/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the check has teeth: one float changed in its last bit in a fixture is found', {
  skip: toolSkip('torch', 'numpy'),
  timeout: 120_000,
}, () => {
  requireTool('torch', 'numpy');
  const dir = scratch();
  try {
    const f = join(dir, 'test/fixtures/mha_basic.safetensors');
    const bytes = readFileSync(f);
    bytes[bytes.length - 4] ^= 1; // the lowest mantissa bit of the last float32
    writeFileSync(f, bytes);
    assert.deepEqual(changed(dir), ['mha_basic.safetensors']);
    const r = spawnSync(PYTHON, ['scripts/fixtures/check_fixtures.py'], { cwd: dir, encoding: 'utf8' });
    assert.notEqual(r.status, 0, 'check_fixtures.py passed a changed fixture');
    assert.match(r.stderr, /AssertionError.*mha_basic/s);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
