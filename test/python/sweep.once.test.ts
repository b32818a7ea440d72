/**
 * python/qkv_torch/sweep.py (the GPU recipe search) against qkv: its greedy search gives qkv's greedy
 * translations of the shipped EN→DE model, token for token; a job trains, logs its evaluations and
 * the best-5 average, and scripts/sweep-score.mjs rescores the log with qkv's decoder and BLEU.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeSplit } from '../../src/cli/commands/data.ts';
import { encodeLines, translateIds } from '../../src/decode/batch.ts';
import { loadModelDir } from '../../src/cli/files.ts';
import { corpusBleu } from '../../src/text/bleu.ts';
import { requireTool, toolSkip } from '../helpers/tools.ts';
import { multi30kLines } from '../helpers/cli.ts';
import { python, root } from './setup.ts';

const skip = toolSkip('torch');
const dir = mkdtempSync(join(tmpdir(), 'qkv-sweep-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const shipped = join(root, 'models/multi30k-en-de');
const N = 40;

/** A base folder for sweep jobs: the shipped model's config and tokenizer(s), val encoded as train.ids and val.ids. */
function base(): string {
  const b = join(dir, 'base');
  if (existsSync(join(b, 'val.ids'))) return b;
  mkdirSync(b, { recursive: true });
  for (const f of ['config.json', 'tokenizer.json', 'target_tokenizer.json']) {
    if (existsSync(join(shipped, f))) copyFileSync(join(shipped, f), join(b, f));
  }
  const args = { model: b, data: join(root, 'data/multi30k'), split: 'val', src: 'en', tgt: 'de', log: () => {} };
  encodeSplit({ ...args, out: join(b, 'val.ids') });
  copyFileSync(join(b, 'val.ids'), join(b, 'train.ids'));
  return b;
}

test(`sweep.py's greedy search gives qkv's greedy translations of the shipped model (first ${N} val sentences)`, {
  skip,
}, () => {
  requireTool('torch');
  const r = python([
    join(root, 'python/qkv_torch/sweep.py'),
    '--device',
    'cpu',
    '--greedy-check',
    shipped,
    '--data',
    join(base(), 'val.ids'),
    '--limit',
    String(N),
  ]);
  assert.equal(r.status, 0, r.stderr);
  const ids = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as number[]);
  assert.equal(ids.length, N);
  const { model, tokenizer, targetTokenizer } = loadModelDir(shipped);
  const src = multi30kLines('val.en.gz').slice(0, N);
  const want = translateIds(model, targetTokenizer, encodeLines(model, tokenizer, src).ids, { beam: 1, alpha: 0 });
  assert.deepEqual(
    ids.map((s) => targetTokenizer.decode(s)),
    want,
  );
  // And the ids themselves: qkv's own encoding of its translations (no special tokens in between).
  assert.ok(
    ids.every((s) =>
      s.every((t) => t !== targetTokenizer.bosId && t !== targetTokenizer.eosId && t !== targetTokenizer.padId),
    ),
  );
});

test('a sweep job logs its evaluations and best-5 average, and sweep-score.mjs rescores them with qkv', {
  skip,
}, () => {
  requireTool('torch');
  const job = {
    name: 'tiny',
    base: base(),
    seed: 3,
    maxSteps: 3,
    evalEvery: 1,
    idsEvery: 2,
    model: { dModel: 16, nhead: 2, numEncoderLayers: 1, numDecoderLayers: 1, dimFeedforward: 32 },
    recipe: { maxTokens: 2048, labelSmoothing: 0.2 },
  };
  const out = join(dir, 'out');
  const r = python([
    join(root, 'python/qkv_torch/sweep.py'),
    '--device',
    'cpu',
    '--out',
    out,
    '--job',
    JSON.stringify(job),
  ]);
  assert.equal(r.status, 0, r.stderr);
  const lines = readFileSync(join(out, 'tiny.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(lines.length, 5, 'header, 3 evaluations, average');
  assert.deepEqual(lines[0].job.recipe, job.recipe);
  assert.ok(lines[0].parameters > 0);
  assert.deepEqual(
    lines.slice(1, 4).map((e) => e.step),
    [1, 2, 3],
  );
  // idsEvery 2: ids at step 2 and at the last step; every evaluation has a finite val loss.
  assert.deepEqual(
    lines.slice(1, 4).map((e) => 'ids' in e),
    [false, true, true],
  );
  assert.ok(lines.slice(1, 4).every((e) => Number.isFinite(e.valLoss)));
  const avg = lines[4];
  assert.equal(avg.average, true);
  assert.equal(avg.ids.length, 1014);
  assert.deepEqual([...avg.steps].sort(), [1, 2, 3]);
  // Only the log stays: the job's weights and training state are removed.
  assert.equal(existsSync(join(out, 'tiny')), false);

  const s = spawnSync(
    process.execPath,
    [join(root, 'scripts/sweep-score.mjs'), '--bases', dir, '--json', join(out, 'tiny.jsonl')],
    { cwd: root, encoding: 'utf8' },
  );
  assert.equal(s.status, 0, s.stderr);
  const [row] = JSON.parse(s.stdout);
  const { targetTokenizer } = loadModelDir(shipped);
  const refs = multi30kLines('val.de.gz').slice(0, 1014);
  const bleu = (ids: number[][]) =>
    corpusBleu(
      ids.map((x) => targetTokenizer.decode(x)),
      refs,
    ).score;
  assert.equal(row.name, 'tiny');
  assert.equal(row.average.bleu, bleu(avg.ids));
  assert.equal(row.best.bleu, Math.max(...[2, 3].map((k) => bleu(lines[k].ids))));
});
