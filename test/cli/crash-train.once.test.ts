/**
 * Crashes at any moment (issue 13, item 4): `qkv train` and `qkv train-lm` SIGKILLed 30 times each
 * at random moments (every third one mid-write), resumed each time, end with exactly the files of
 * an uninterrupted run: the same weights, checkpoints, training state and loss history (timings
 * aside), no temporary file left, and every file on disk loadable after every kill.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crashLoop, ensureBuilt, listTree, runToEnd, snapshot } from './crash.ts';
import { tempDir } from '../e2e/tiny-model.ts';
import { multi30kLines, writeCorpus } from '../helpers/cli.ts';

const KILLS = 30;
const work = tempDir('qkv-crash-');
const data = join(work, 'data');
writeCorpus(data, [['train', 0, 200], ['val', 200, 210]]);
writeFileSync(join(work, 'lm.txt'), `${multi30kLines('train.en.gz').slice(0, 300).join('\n')}\n`);

async function crashTest(name: string, stateFile: string, args: (out: string, resume: boolean) => string[], seed: number, maxSteps: number, saveEvery: number, evalEvery: number) {
  ensureBuilt();
  const ref = join(work, `${name}-ref`);
  const r = await runToEnd(args(ref, false));
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.startupMs > 0 && r.firstEvalMs > r.startupMs, r.stderr);
  const out = join(work, `${name}-crashed`);
  const t0 = performance.now();
  const report = await crashLoop({ out, stateFile, args: (resume) => args(out, resume), kills: KILLS, seed, startupMs: r.startupMs, firstEvalMs: r.firstEvalMs, totalMs: r.totalMs, maxSteps, saveEvery, evalEvery });
  const seconds = (performance.now() - t0) / 1000;
  assert.equal(report.kills, KILLS);
  assert.deepEqual(listTree(out).filter((f) => /\.tmp-\d+$/.test(f)), [], 'no temporary file left');
  const a = snapshot(ref);
  const b = snapshot(out);
  assert.deepEqual(Object.keys(b), Object.keys(a), 'the same files');
  for (const f of Object.keys(a)) assert.equal(b[f], a[f], `${f} differs from the uninterrupted run's`);
  assert.ok(report.midWrite >= 3, `${report.midWrite} kills mid-write`);
  assert.ok(report.kills - report.beforeFirstState >= KILLS / 2, `only ${report.kills - report.beforeFirstState} kills after the first training state`);
  process.stderr.write(`# ${name}: ${report.kills} kills (${report.midWrite} mid-write, ${report.beforeFirstState} before the first state, the last at step ${report.reached} of ${maxSteps}), ${report.runs} runs in ${seconds.toFixed(0)} s; uninterrupted ${(r.totalMs / 1000).toFixed(1)} s\n`);
}

test(`qkv train: ${KILLS} SIGKILLs at random moments, resumed each time, end with the uninterrupted run's files`, { timeout: 600_000 }, async () => {
  await crashTest('train', 'train-state.safetensors', (out, resume) => [
    'train', '--preset', 'tiny', '--out', out, '--data', data, '--max-steps', '60', '--save-every', '2', '--eval-every', '4', '--bleu-sentences', '4',
    ...(resume ? ['--resume'] : []),
  ], 1, 60, 2, 4);
});

test(`qkv train-lm: ${KILLS} SIGKILLs at random moments, resumed each time, end with the uninterrupted run's files`, { timeout: 600_000 }, async () => {
  await crashTest('train-lm', 'train-state.safetensors', (out, resume) => [
    'train-lm', '--preset', 'tiny', '--out', out, '--data', join(work, 'lm.txt'), '--max-steps', '80', '--save-every', '2', '--eval-every', '4', '--eval-tokens', '512',
    ...(resume ? ['--resume'] : []),
  ], 2, 80, 2, 4);
});
