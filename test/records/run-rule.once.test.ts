/**
 * Issue 61, point 1: a speed figure quoted from a benchmark run names its rule (scripts/run-rule.ts), and
 * check-records holds it to the rule over the runs of the same machine type committed now: "newest" fails
 * when a newer run of that machine exists (the README once quoted the run `-5` after `-6` was committed),
 * "median3" is the median of the three newest runs, "every" lists every run (the H100 GEMM's two). Each
 * test plants a newer run in a copy of bench/results/ and sees the claim fail, naming the run and its figure.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { machineType, median3 } from '../../scripts/run-rule.ts';
import { tempDir } from '../e2e/tiny-model.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const results = join(root, 'bench', 'results');
const ZEN4 = '2026-11-27-amd-epyc-family-25-model-17-avx512';
const H100 = '2026-11-27-nvidia-h100-webgpu-gemm';

/** A tree with some committed runs (never rewritten) and a README quoting `prose`. */
function tree(prose: string): string {
  const dir = tempDir('qkv-rule-');
  mkdirSync(join(dir, 'bench', 'results'), { recursive: true });
  for (const f of [`${ZEN4}-4.md`, `${ZEN4}-5.md`, `${ZEN4}-6.md`, `${ZEN4}-2b629a9.md`, `${H100}.md`, `${H100}-2.md`])
    cpSync(join(results, f), join(dir, 'bench', 'results', f));
  writeFileSync(join(dir, 'README.md'), `# x\n\n${prose}\n`);
  return dir;
}

/** `file` of the tree's bench/results/ copied to `name`, with `edit` applied. */
function plant(dir: string, file: string, name: string, edit: (text: string) => string): void {
  const text = readFileSync(join(dir, 'bench', 'results', file), 'utf8');
  const edited = edit(text);
  assert.notEqual(edited, text, `the planted run ${name} differs from ${file}`);
  writeFileSync(join(dir, 'bench', 'results', name), edited);
}

function check(dir: string, claims: unknown[]) {
  const path = join(dir, 'claims.json');
  writeFileSync(path, JSON.stringify({ claims }));
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'scripts/check-records.ts', '--root', dir, '--claims', path],
    { cwd: root, encoding: 'utf8' },
  );
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

const int8 = (file: string, expect: string, rule?: string) => ({
  id: 'int8-tps',
  kind: 'value',
  file: `bench/results/${file}`,
  ...(rule ? { rule } : {}),
  row: 'qkv int8',
  column: 'tokens/s',
  quoted: 'README',
  at: { README: `int8 at ${expect} tokens/s` },
  expect,
});

/** The qkv int8 row's tokens/s cell of a results file set to `tps`. */
const int8Tps = (tps: string) => (text: string) => text.replace(/^(\| qkv int8 \| \d+ \| )[\d.]+ \|/m, `$1${tps} |`);

test("a run's machine type is its header's Machine line, or a GPU run's adapter on its host", () => {
  const zen4 = readFileSync(join(results, `${ZEN4}-6.md`), 'utf8');
  assert.equal(machineType(zen4, `${ZEN4}-6.md`), '2 × AMD EPYC (cpu family 25, model 17, AVX-512)');
  const h100 = readFileSync(join(results, `${H100}-2.md`), 'utf8');
  assert.equal(
    machineType(h100, `${H100}-2.md`),
    'nvidia nvidia-h100-80gb-hbm3 NVIDIA: 580.159.04 580.159.4.0 on 16 × Intel(R) Xeon(R) Processor (cpu family 6, model 207, AVX-512)',
  );
  assert.equal(machineType('# results\n', '2026-11-23-amd-epyc-onnx-2.md'), 'file amd-epyc-onnx');
  assert.equal(median3(['118.0', '127.4', '88.1']), '118.0');
});

test('rule "newest": the newest run passes; the run before it fails, and so does the newest once a newer run lands', () => {
  const dir = tree('GPT-2 int8 at 88.1 tokens/s; once int8 at 127.4 tokens/s.');
  const ok = check(dir, [int8(`${ZEN4}-6.md`, '88.1', 'newest')]);
  assert.equal(ok.status, 0, ok.out);
  // The defect of issue 61: a sentence quoting the run -5 after -6 was committed.
  const old = check(dir, [int8(`${ZEN4}-5.md`, '127.4', 'newest')]);
  assert.equal(old.status, 1, old.out);
  assert.match(
    old.out,
    new RegExp(
      `^FAIL int8-tps: rule "newest": bench/results/${ZEN4}-6\\.md is a newer run of 2 × AMD EPYC \\(cpu family 25, model 17, AVX-512\\) than bench/results/${ZEN4}-5\\.md \\(it gives 88\\.1\\)$`,
      'm',
    ),
  );
  assert.match(old.out, /^FAIL int8-tps: quoted "127\.4", the file gives "88\.1"$/m);
  // Runs that are no newer run of this figure: a pinned-commit baseline, another machine, a run without the row.
  plant(dir, `${ZEN4}-6.md`, `2099-01-01-amd-epyc-family-25-model-17-avx512-0123abc.md`, int8Tps('1.0'));
  plant(dir, `${ZEN4}-6.md`, '2099-01-02-other-machine.md', (t) =>
    int8Tps('2.0')(t).replace(/^Machine: 2 × AMD EPYC \(cpu family 25/m, 'Machine: 2 × AMD EPYC (cpu family 99'),
  );
  plant(dir, `${ZEN4}-6.md`, `2099-01-03-amd-epyc-family-25-model-17-avx512.md`, (t) =>
    t.replace(/^\| qkv int8 \|.*\n/m, ''),
  );
  const still = check(dir, [int8(`${ZEN4}-6.md`, '88.1', 'newest')]);
  assert.equal(still.status, 0, still.out);
  // A newer run of the same machine with the row: the claim on -6 fails, naming it and its figure.
  plant(dir, `${ZEN4}-6.md`, `${ZEN4}-7.md`, int8Tps('99.9'));
  const r = check(dir, [int8(`${ZEN4}-6.md`, '88.1', 'newest')]);
  assert.equal(r.status, 1, r.out);
  assert.match(
    r.out,
    new RegExp(
      `^FAIL int8-tps: rule "newest": bench/results/${ZEN4}-7\\.md is a newer run .* \\(it gives 99\\.9\\)$`,
      'm',
    ),
  );
  assert.match(r.out, /^FAIL int8-tps: quoted "88\.1", the file gives "99\.9"$/m);
});

test('rule "median3": the median of the three newest runs; a fourth run moves it and fails the claim', () => {
  // -4, -5, -6: 118.0, 127.4, 88.1 tokens/s: the median is -4's 118.0.
  const dir = tree('GPT-2 int8 at 118.0 tokens/s, or at 88.1 tokens/s.');
  const ok = check(dir, [int8(`${ZEN4}-6.md`, '118.0', 'median3')]);
  assert.equal(ok.status, 0, ok.out);
  const newestOnly = check(dir, [int8(`${ZEN4}-6.md`, '88.1', 'median3')]);
  assert.equal(newestOnly.status, 1, newestOnly.out);
  assert.match(newestOnly.out, /^FAIL int8-tps: quoted "88\.1", the rule "median3" gives "118\.0"$/m);
  // -4 has no peak column: two runs hold the figure, not three.
  const peak = {
    ...int8(`${ZEN4}-6.md`, '197', 'median3'),
    column: 'peak MiB',
    at: { README: 'int8 at 88.1 tokens/s' },
  };
  const two = check(dir, [peak]);
  assert.equal(two.status, 1, two.out);
  assert.match(
    two.out,
    /^FAIL int8-tps: rule "median3": 2 × AMD EPYC .* has 2 run\(s\) holding this figure, not three$/m,
  );
  // A run -7 at 200.0: the last three are 127.4, 88.1, 200.0, whose median is 127.4; and -6 is no longer the newest.
  plant(dir, `${ZEN4}-6.md`, `${ZEN4}-7.md`, int8Tps('200.0'));
  const r = check(dir, [int8(`${ZEN4}-6.md`, '118.0', 'median3')]);
  assert.equal(r.status, 1, r.out);
  assert.match(r.out, /^FAIL int8-tps: quoted "118\.0", the rule "median3" gives "127\.4"$/m);
  assert.match(r.out, new RegExp(`^FAIL int8-tps: rule "median3": bench/results/${ZEN4}-7\\.md is a newer run`, 'm'));
});

test('rule "every": both H100 GEMM runs quoted side by side; a third run fails the pair; a run with no rule fails', () => {
  const ort = {
    id: 'gemm-vs-ort',
    kind: 'ratio',
    file: `bench/results/${H100}-2.md`,
    rule: 'every',
    row: 'gemm 2048×2048×2048 NN',
    num: 'qkv webgpu',
    den: 'ORT-web webgpu',
    quoted: 'README',
    as: { README: '1.97' },
    at: { README: '1.97× / 1.47× ONNX' },
    expect: '1.97 / 1.47',
  };
  const dir = tree('GEMM at 1.97× / 1.47× ONNX Runtime Web.');
  const ok = check(dir, [ort]);
  assert.equal(ok.status, 0, ok.out);
  // The first run alone, under "newest", is what the README said before: it fails.
  const first = { ...ort, file: `bench/results/${H100}.md`, rule: 'newest', expect: '1.97', as: undefined };
  assert.match(
    check(dir, [first]).out,
    /^FAIL gemm-vs-ort: rule "newest": bench\/results\/.*-gemm-2\.md is a newer run .* \(it gives 1\.47\)$/m,
  );
  // Without a rule, a figure from a run fails whatever it says.
  const bare = { ...first, rule: undefined };
  assert.match(check(dir, [bare]).out, /^FAIL gemm-vs-ort: a figure from a run names no "rule"/m);
  plant(dir, `${H100}-2.md`, `${H100}-3.md`, (t) =>
    t.replace(/^(\| gemm 2048×2048×2048 NN \| GFLOP\/s \| )15310 \|/m, '$130000 |'),
  );
  const r = check(dir, [ort]);
  assert.equal(r.status, 1, r.out);
  assert.match(r.out, /^FAIL gemm-vs-ort: quoted "1\.97 \/ 1\.47", the rule "every" gives "1\.97 \/ 1\.47 \/ 2\.87"$/m);
});
