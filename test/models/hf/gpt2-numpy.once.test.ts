/**
 * The Hugging Face GPT-2 fixture against an independent implementation (issue 40, point 4): its
 * expected logits and attention weights (written by real transformers' GPT2LMHeadModel,
 * scripts/fixtures/ref_hf_gpt2.py) recomputed by scripts/fixtures/check_hf_gpt2_numpy.py, OpenAI's
 * original GPT-2 equations (src/model.py) in NumPy over the fixture's stored weights, sharing no code with the
 * fixture script or with qkv. The measured difference is stated in test/fixtures/README.md. No
 * skip: without NumPy under /usr/bin/python3 this fails, naming what to install.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { PYTHON, requireTool } from '../../helpers/tools.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));

test("hf-gpt2-tiny: OpenAI's GPT-2 equations in NumPy give the stored logits (within 1e-6) and attention weights (1e-7)", () => {
  requireTool('numpy');
  const r = spawnSync(PYTHON, ['scripts/fixtures/check_hf_gpt2_numpy.py'], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  const got = JSON.parse(r.stdout) as {
    tokens: number;
    logits: number;
    maxAbsLogits: number;
    maxAbsAttention: number;
    sameArgmax: boolean;
  };
  assert.equal(got.tokens, 10);
  assert.equal(got.logits, 10 * 317);
  assert.ok(got.maxAbsLogits <= 1e-6 && got.maxAbsAttention <= 1e-7 && got.sameArgmax, r.stdout);
  process.stderr.write(
    `# NumPy GPT-2 vs the fixture: max |Δlogit| ${got.maxAbsLogits.toExponential(2)}, max |Δattention| ${got.maxAbsAttention.toExponential(2)}\n`,
  );
});

test('the check fails when the fixture is wrong: a changed weight moves the logits past its limit', () => {
  requireTool('numpy');
  // The same check over a copy of the fixture with one LayerNorm gain changed must exit 1.
  const script = [
    'import os, shutil, struct, json, sys, tempfile',
    'src = sys.argv[1]; d = tempfile.mkdtemp()',
    'for f in os.listdir(src): shutil.copy(os.path.join(src, f), d)',
    'p = os.path.join(d, "model.safetensors"); b = bytearray(open(p, "rb").read())',
    'n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); o = 8 + n + h["ln_f.weight"]["data_offsets"][0]',
    'b[o:o + 4] = struct.pack("<f", struct.unpack("<f", b[o:o + 4])[0] + 0.01); open(p, "wb").write(b)',
    'print(d)',
  ].join('\n');
  const mk = spawnSync(PYTHON, ['-c', script, 'test/fixtures/hf-gpt2-tiny'], { cwd: root, encoding: 'utf8' });
  assert.equal(mk.status, 0, mk.stderr);
  const r = spawnSync(PYTHON, ['scripts/fixtures/check_hf_gpt2_numpy.py', mk.stdout.trim()], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.equal(r.status, 1, `${r.stdout}${r.stderr}`);
  assert.match(r.stderr, /differs from the stored expected outputs: logits/);
});
