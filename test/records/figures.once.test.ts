/**
 * Issue 48, point 2: the speed figures of README.md and docs/speed.md are generated from the newest
 * run of each machine (scripts/speed-section.ts) and check-records fails when they are stale; and
 * check-records' reverse check fails on a figure in README.md, docs/*.md or a model card that no
 * claim names (scripts/figures-in-prose.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { figuresIn } from '../../scripts/figures-in-prose.ts';
import { fullRuns, newestPerMachine, pieces, stalePieces, withPiece } from '../../scripts/speed-section.ts';
import { tempDir } from '../e2e/tiny-model.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const results = join(root, 'bench', 'results');

/** A results folder with some of the committed runs (never rewritten, issue 40), so the expectations below stay true as runs are added. */
function someRuns(): string {
  const dir = tempDir('qkv-runs-');
  for (const f of [
    '2026-11-22-amd-zen-4.md',
    '2026-11-22-intel-xeon.md',
    '2026-11-22-intel-xeon-2.md',
    '2026-11-23-amd-epyc.md',
    '2026-11-23-amd-epyc-onnx.md',
    '2026-11-23-amd-epyc-torchrun.md',
    '2026-11-24-amd-epyc-family-26-model-2-avx512.md',
    '2026-11-27-amd-epyc-family-25-model-17-avx512-3ef12d4.md',
    '2026-11-27-amd-epyc-family-25-model-17-avx512.md',
  ])
    cpSync(join(results, f), join(dir, f));
  return dir;
}

test('the newest full run of each machine: by date, then -N; runs of a pinned commit and partial runs left out', () => {
  const dir = someRuns();
  const newest = newestPerMachine(fullRuns(dir)).map((r) => r.file);
  assert.deepEqual(newest, [
    '2026-11-22-intel-xeon-2.md',
    '2026-11-23-amd-epyc.md',
    '2026-11-24-amd-epyc-family-26-model-2-avx512.md',
    '2026-11-27-amd-epyc-family-25-model-17-avx512.md',
  ]);
  // The -3ef12d4 run (issue 39's baseline of an older commit) is no candidate; the ONNX-only and
  // torchrun files and the first single-thread run have no full table.
  const all = fullRuns(dir).map((r) => r.file);
  assert.deepEqual(all, [
    '2026-11-22-intel-xeon-2.md',
    '2026-11-22-intel-xeon.md',
    '2026-11-23-amd-epyc.md',
    '2026-11-24-amd-epyc-family-26-model-2-avx512.md',
    '2026-11-27-amd-epyc-family-25-model-17-avx512.md',
  ]);
  // Every machine of the committed runs gets its newest: no later full run of the same machine.
  for (const r of newestPerMachine(fullRuns()))
    for (const o of fullRuns().filter((x) => x.machine === r.machine))
      assert.ok(o.date < r.date || (o.date === r.date && o.serial <= r.serial), `${o.file} is newer than ${r.file}`);
});

test('two runs of one machine with the same date and no -N are an error, not a choice', () => {
  const dir = tempDir('qkv-speed-');
  const xeon = readFileSync(join(results, '2026-11-22-intel-xeon-2.md'), 'utf8');
  writeFileSync(join(dir, '2026-11-30-intel-xeon.md'), xeon);
  writeFileSync(join(dir, '2026-11-30-intel-xeon-copy.md'), xeon);
  assert.throws(() => newestPerMachine(fullRuns(dir)), /are both the newest run of 2 × Intel\(R\) Xeon\(R\) Processor/);
});

test('the README and docs/speed.md hold what speed-section writes now; the range covers every row', () => {
  assert.deepEqual(stalePieces(root), []);
  // Over these runs the range is the worst GEMM ratio (6.18, the 2026-11-27 run's 128³ NN) and the
  // slowest TensorFlow.js comparison (0.93×, where qkv was slower), not a hand-picked window.
  const range = pieces(newestPerMachine(fullRuns(someRuns())))
    .get('README.md')!
    .get('speed-range')!;
  assert.match(range, /over the 161 workloads of the newest run on each of 4 machines/);
  assert.match(range, /qkv took 0\.22× to 6\.18× PyTorch's time \(median 2\.37×\) and ran 0\.93× to 223\.19× as fast/);
});

/** A repository tree with bench/results/ copied and README.md and docs/speed.md holding fresh generated blocks. */
function tree(readmeProse: string): string {
  const dir = tempDir('qkv-figures-');
  cpSync(results, join(dir, 'bench', 'results'), { recursive: true });
  mkdirSync(join(dir, 'docs'));
  mkdirSync(join(dir, 'models', 'm'), { recursive: true });
  mkdirSync(join(dir, 'records'));
  const blocks = (names: string[]) =>
    names.map((n) => `<!-- generated:${n} -->\n<!-- /generated:${n} -->`).join('\n\n');
  writeFileSync(
    join(dir, 'README.md'),
    `# x\n\nSpeed: <!-- generated:speed-range --><!-- /generated:speed-range -->.\n\n${readmeProse}\n\n${blocks(['speed-table'])}\n`,
  );
  writeFileSync(join(dir, 'docs', 'speed.md'), `# Speed\n\n${blocks(['speed-runs', 'speed-targets'])}\n`);
  writeFileSync(join(dir, 'models', 'm', 'README.md'), '# m\n\nA model of dModel 512, 6 layers, beam 4, α 0.6.\n');
  writeFileSync(join(dir, 'weights.bin'), Buffer.alloc(1_500_000));
  const runs = newestPerMachine(fullRuns(join(dir, 'bench', 'results')));
  for (const [file, byName] of pieces(runs)) {
    let text = readFileSync(join(dir, file), 'utf8');
    for (const [name, content] of byName) text = withPiece(text, name, content, file);
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

function checkRecords(dir: string, claims: unknown[]) {
  writeFileSync(join(dir, 'records', 'claims.json'), JSON.stringify({ claims }));
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/check-records.ts', '--root', dir], {
    cwd: root,
    encoding: 'utf8',
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

const weights = {
  id: 'weights-mb',
  kind: 'size',
  files: ['weights.bin'],
  unit: 'MB',
  quoted: 'README',
  at: { README: 'weights take 1.5 MB' },
  expect: '1.5',
};

test('the reverse check: a figure no claim names fails; a claimed one, settings, versions and counts pass', () => {
  const prose = 'The weights take 1.5 MB. Built with Node 20.19.0 and PyTorch 1.13, 2 cores, 8,000 steps.';
  const dir = tree(`${prose} A step takes 3.5 s, and decoding is 2.4× faster.`);
  const r = checkRecords(dir, [weights]);
  assert.equal(r.status, 1, r.out);
  assert.match(r.out, /^ok {3}weights-mb: 1\.5$/m);
  assert.match(r.out, /^FAIL README\.md: 3\.5 is named by no claim: .*A step takes \[3\.5\] s/m);
  assert.match(r.out, /^FAIL README\.md: 2\.4 is named by no claim: .*decoding is \[2\.4\]× faster/m);
  assert.doesNotMatch(r.out, /FAIL README\.md: (1\.5|20\.19|1\.13|8,000) /);
  assert.doesNotMatch(r.out, /FAIL models\/m\/README\.md/);
  assert.match(r.out, /2 figures in README, docs and model cards named by no claim\n/);
  // Without the claim, 1.5 MB is unnamed too; with both figures gone, the tree passes.
  assert.match(checkRecords(dir, []).out, /^FAIL README\.md: 1\.5 is named by no claim/m);
  const clean = tree(prose);
  const ok = checkRecords(clean, [weights]);
  assert.equal(ok.status, 0, ok.out);
});

test('check-records fails when a generated speed block is stale: a newer run of a machine, or a hand edit', () => {
  const dir = tree('');
  assert.equal(checkRecords(dir, []).status, 0);
  // A newer Xeon run in which qkv's GEMM at 128³ took 99.99× PyTorch's time (above any real run's ratio).
  const xeon = readFileSync(join(dir, 'bench', 'results', '2026-11-22-intel-xeon-2.md'), 'utf8');
  writeFileSync(
    join(dir, 'bench', 'results', '2099-01-01-intel-xeon.md'),
    xeon.replace(/^(\| gemm 128×128×128 NN \|.*\| )5\.78× time/m, '$199.99× time'),
  );
  const r = checkRecords(dir, []);
  assert.equal(r.status, 1, r.out);
  assert.match(r.out, /^FAIL README\.md: generated:speed-range is stale/m);
  assert.match(r.out, /^FAIL README\.md: generated:speed-table is stale/m);
  assert.match(r.out, /^FAIL docs\/speed\.md: generated:speed-runs is stale/m);
  assert.match(r.out, /generated blocks stale\n/);
  // The fresh text names the new run and its ratio.
  const fresh = pieces(newestPerMachine(fullRuns(join(dir, 'bench', 'results'))));
  assert.match(fresh.get('README.md')!.get('speed-range')!, /to 99\.99× PyTorch's time/);
  assert.match(fresh.get('docs/speed.md')!.get('speed-runs')!, /2099-01-01-intel-xeon\.md/);
  // A hand edit inside a block is stale too.
  const edited = tree('');
  const readme = join(edited, 'README.md');
  // Change the first ratio inside the generated speed-range block, whatever the newest runs say it is.
  const text = readFileSync(readme, 'utf8');
  const block = /<!-- generated:speed-range -->[\s\S]*?<!-- \/generated:speed-range -->/.exec(text)![0];
  const ratio = /\d+\.\d+×/.exec(block)![0];
  writeFileSync(readme, text.replace(block, block.replace(ratio, ratio === '1.9×' ? '2.9×' : '1.9×')));
  assert.match(checkRecords(edited, []).out, /^FAIL README\.md: generated:speed-range is stale/m);
});

test('figuresIn: code, links, comments and generated blocks are not prose, a shell comment is; settings and versions are not figures', () => {
  const text = [
    'BLEU 41 and 39.83 on test, `41.99` in code, [a link](x/1.5.md), <!-- 7.7 -->',
    '```sh\nnpm run x # 2 MB installed\n```',
    '<!-- generated:x -->4.4×<!-- /generated:x -->',
    'α 0.6, dropout 0.3, PyTorch 1.13, lr 5e-4, dModel 512, 4096×512×2048, 2 × 5.5 MiB, 12%, 3×.',
  ].join('\n');
  assert.deepEqual(
    figuresIn(text).figures.map((f) => f.text),
    ['41', '39.83', '2', '5.5', '12', '3'],
  );
  assert.ok(readdirSync(results).length > 0);
});

test("a BLEU claim must also equal real sacreBLEU's recorded line for the same two files", () => {
  const doc = JSON.parse(readFileSync(join(root, 'records', 'claims.json'), 'utf8')) as {
    claims: Record<string, unknown>[];
  };
  const claim: Record<string, unknown> = {
    ...doc.claims.find((c) => c.id === 'en-de-pair-val')!,
    quoted: undefined,
    at: undefined,
    as: undefined,
  };
  const record = JSON.parse(readFileSync(join(root, 'records', 'sacrebleu-check', 'sacrebleu.json'), 'utf8'));
  const dir = tree('');
  for (const f of [String(claim.output), String(claim.ref)]) {
    mkdirSync(join(dir, f, '..'), { recursive: true });
    cpSync(join(root, f), join(dir, f));
  }
  const write = (entry: Record<string, unknown>) => {
    mkdirSync(join(dir, 'records', 'sacrebleu-check'), { recursive: true });
    writeFileSync(
      join(dir, 'records', 'sacrebleu-check', 'sacrebleu.json'),
      JSON.stringify({ ...record, claims: { 'en-de-pair-val': entry } }),
    );
  };
  const real = record.claims['en-de-pair-val'];
  write(real);
  const ok = checkRecords(dir, [claim]);
  assert.equal(ok.status, 0, ok.out);
  assert.match(ok.out, /1 of 1 BLEU lines also equal to sacreBLEU 2\.6\.0's/);
  // Had sacreBLEU printed another line for these files, the claim fails though qkv's scorer agrees with it.
  write({ ...real, line: real.line.replace('41.02', '41.01') });
  const r = checkRecords(dir, [claim]);
  assert.equal(r.status, 1, r.out);
  assert.match(r.out, /^FAIL en-de-pair-val: quoted "BLEU = 41\.02 .*", sacreBLEU 2\.6\.0 gives "BLEU = 41\.01 /m);
  // A record of other files (another sha256) checks nothing: the claim rests on qkv's scorer alone.
  write({ ...real, line: 'BLEU = 1.00', output_sha256: '0'.repeat(64) });
  const other = checkRecords(dir, [claim]);
  assert.equal(other.status, 0, other.out);
  assert.match(other.out, /0 of 1 BLEU lines also equal/);
});
