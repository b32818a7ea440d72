/**
 * The BLEU claims rescored by real sacreBLEU in CI (issue 61, point 4), not once on a lent machine:
 * scripts/sacrebleu-check.py runs under the reference environment (.venv-ref/, sacreBLEU 2.6.0, built by
 * scripts/ref-env.sh; .ci/run builds it) into a scratch folder. Every BLEU claim of records/claims.json must
 * be the line sacreBLEU prints for its two files, and records/sacrebleu-check/sacrebleu.json (which
 * check-records reads) must be the fresh run byte for byte, else the test names the claim or the first
 * differing value. No skip under CI: without .venv-ref this fails, naming scripts/ref-env.sh.
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

const root = fileURLToPath(new URL('../../', import.meta.url));
const RECORD = 'records/sacrebleu-check/sacrebleu.json';

interface Claim {
  id: string;
  kind: string;
  expect: string;
}
interface SacreBleuRecord {
  sacrebleu: string;
  claims: { [id: string]: { line: string } };
}

/** The BLEU claims whose quoted line is not sacreBLEU's, one message each. */
function disagreements(claims: Claim[], fresh: SacreBleuRecord): string[] {
  return claims
    .filter((c) => c.kind === 'bleu')
    .flatMap((c) => {
      const line = fresh.claims[c.id]?.line;
      if (line === undefined) return [`${c.id}: sacreBLEU scored no such claim`];
      return line === c.expect
        ? []
        : [`${c.id}: quoted ${JSON.stringify(c.expect)}, sacreBLEU ${fresh.sacrebleu} gives ${JSON.stringify(line)}`];
    });
}

const claims = (JSON.parse(readFileSync(join(root, 'records/claims.json'), 'utf8')) as { claims: Claim[] }).claims;

test("every BLEU claim is real sacreBLEU's line, and records/sacrebleu-check is the fresh run", {
  skip: toolSkip('transformers'),
  timeout: 120_000,
}, () => {
  requireTool('transformers');
  const dir = tempDir('qkv-sacrebleu-');
  try {
    const r = spawnSync(REF_PYTHON, ['scripts/sacrebleu-check.py', dir], { cwd: root, encoding: 'utf8' });
    assert.equal(r.status, 0, `scripts/sacrebleu-check.py: ${r.stdout}${r.stderr}`);
    const bleu = claims.filter((c) => c.kind === 'bleu').length;
    assert.match(r.stdout, new RegExp(`^sacreBLEU 2\\.6\\.0: ${bleu} BLEU claims scored$`, 'm'));
    const fresh = readFileSync(join(dir, 'sacrebleu.json'));
    assert.deepEqual(disagreements(claims, JSON.parse(fresh.toString()) as SacreBleuRecord), []);
    const stale = firstDifference('sacrebleu.json', readFileSync(join(root, RECORD)), fresh);
    assert.equal(stale, null, `${RECORD} is stale: run .venv-ref/bin/python scripts/sacrebleu-check.py`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a claim whose quoted line is not sacreBLEU's is named, with both lines", () => {
  const record = JSON.parse(readFileSync(join(root, RECORD), 'utf8')) as SacreBleuRecord;
  assert.deepEqual(disagreements(claims, record), [], 'the committed record agrees with the claims');
  const claim = claims.find((c) => c.id === 'en-de-pair-val')!;
  const changed = { ...claim, expect: claim.expect.replace('41.02', '41.03') };
  assert.deepEqual(disagreements([changed], record), [
    `en-de-pair-val: quoted ${JSON.stringify(changed.expect)}, sacreBLEU 2.6.0 gives ${JSON.stringify(claim.expect)}`,
  ]);
  assert.deepEqual(disagreements([{ ...claim, id: 'no-such' }], record), ['no-such: sacreBLEU scored no such claim']);
});
