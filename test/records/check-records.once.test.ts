/**
 * `npm run check-records` inside `npm test` (issue 40, point 1): every figure in records/claims.json
 * recomputes from its committed file (translation outputs, histories, benchmark results), every file
 * a claim names as quoting it holds that figure, and the check fails when a figure differs, its file
 * is gone, or a file said to quote it does not.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../e2e/tiny-model.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const claimsFile = join(root, 'records', 'claims.json');

function check(claims?: string) {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'scripts/check-records.ts', ...(claims ? ['--claims', claims] : [])],
    { cwd: root, encoding: 'utf8' },
  );
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test('check-records: every quoted figure recomputes from its committed file', () => {
  const { claims } = JSON.parse(readFileSync(claimsFile, 'utf8')) as { claims: unknown[] };
  const r = check();
  assert.equal(r.status, 0, r.out);
  assert.match(
    r.out,
    new RegExp(`check-records: ${claims.length} of ${claims.length} figures recomputed from their files\\n`),
  );
});

test('docs/evidence.md lists every claim: its table is check-records --table', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/check-records.ts', '--table'], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  const doc = readFileSync(join(root, 'docs', 'evidence.md'), 'utf8');
  assert.ok(
    doc.includes(r.stdout),
    'docs/evidence.md: regenerate its table with `npx tsx scripts/check-records.ts --table`',
  );
});

test('check-records fails on a changed figure, a deleted output, a misquoted speed ratio and a part of a cell', () => {
  const doc = JSON.parse(readFileSync(claimsFile, 'utf8')) as { claims: Record<string, unknown>[] };
  const byId = (id: string) => ({ ...doc.claims.find((c) => c.id === id)! });
  const dir = tempDir('qkv-claims-');
  const changed = {
    ...byId('en-de-pair-val'),
    expect: String(byId('en-de-pair-val').expect).replace('41.02', '41.03'),
  };
  const gone = { ...byId('candidate-E-val'), output: 'records/r8-w256-s31/decision/no-such.val.de' };
  const ratio = { ...byId('zen5-train-step'), expect: '0.75' };
  const history = { ...byId('r8-w256-s31-best'), expect: '40.09' };
  const cell = { ...byId('zen5-mha-8192-peak-qkv'), expect: '22', quoted: undefined };
  const path = join(dir, 'claims.json');
  writeFileSync(path, JSON.stringify({ claims: [byId('r8-greedy-val'), changed, gone, ratio, history, cell] }));
  const r = check(path);
  assert.equal(r.status, 1, r.out);
  assert.match(r.out, /^ok {3}r8-greedy-val: /m);
  assert.match(r.out, /^FAIL en-de-pair-val: quoted "BLEU = 41\.03 .*", the file gives "BLEU = 41\.02 72\.0\/49\.4/m);
  assert.match(
    r.out,
    /^FAIL candidate-E-val: .*output records\/r8-w256-s31\/decision\/no-such\.val\.de is missing: the figure has no file behind it/m,
  );
  assert.match(r.out, /^FAIL zen5-train-step: quoted "0\.75", the file gives "0\.76 \(3623 \/ 4784; /m);
  assert.match(r.out, /^FAIL r8-w256-s31-best: quoted "40\.09", the file gives "40\.08"/m);
  assert.match(r.out, /^FAIL zen5-mha-8192-peak-qkv: quoted "22", the file gives "222 \/ — \/ 4173"$/m);
  assert.match(r.out, /check-records: 1 of 6 figures recomputed from their files, 5 differ/);
});

test('check-records fails where a file said to quote a figure does not hold it, or its "as" form is not the figure', () => {
  const doc = JSON.parse(readFileSync(claimsFile, 'utf8')) as { claims: Record<string, unknown>[] };
  const byId = (id: string) => ({ ...doc.claims.find((c) => c.id === id)! });
  const dir = tempDir('qkv-claims-');
  // The README quotes the Zen 5 run, not the Xeon's training step (2.00).
  const notThere = { ...byId('xeon-train-step'), quoted: 'README, docs/speed.md' };
  // The README writes 41.02: a rounded 41.0 is not there, and the check must not find it inside 41.02.
  const pairVal = byId('en-de-pair-val');
  const inside = { ...pairVal, as: { ...(pairVal.as as Record<string, string>), README: '41.0' } };
  // 341.3 minutes is not "342 training minutes", and records/recipe-search.md does not say that either.
  const badForm = { ...byId('r8-w256-s31-minutes'), as: { 'records/recipe-search.md': '342 training minutes' } };
  const gone = { ...byId('zen5-gpt2'), quoted: 'README, docs/no-such.md' };
  const path = join(dir, 'claims.json');
  writeFileSync(path, JSON.stringify({ claims: [byId('r3-lr-minutes'), notThere, inside, badForm, gone] }));
  const r = check(path);
  assert.equal(r.status, 1, r.out);
  assert.match(r.out, /^ok {3}r3-lr-minutes: 110\.1$/m);
  assert.match(r.out, /^FAIL xeon-train-step: quoted in README, which does not hold "2\.00"$/m);
  assert.doesNotMatch(r.out, /^FAIL xeon-train-step: quoted in docs\/speed\.md/m);
  assert.match(r.out, /^FAIL en-de-pair-val: quoted in README, which does not hold "41\.0"$/m);
  assert.doesNotMatch(r.out, /^FAIL en-de-pair-val: quoted in docs\/explorer\.md/m);
  assert.match(
    r.out,
    /^FAIL r8-w256-s31-minutes: records\/recipe-search\.md's form "342 training minutes" is neither 341\.3 rounded nor a part of the claim$/m,
  );
  assert.match(
    r.out,
    /^FAIL r8-w256-s31-minutes: quoted in records\/recipe-search\.md, which does not hold "342 training minutes"$/m,
  );
  assert.match(r.out, /^FAIL zen5-gpt2: quoted in docs\/no-such\.md, which is missing$/m);
  assert.match(
    r.out,
    /check-records: 5 of 5 figures recomputed from their files, 4 not found in a file said to quote them\n/,
  );
});
