/**
 * Crashes at any moment (issue 13, item 4; issue 40; issue 48): `qkv train` and `qkv train-lm`
 * SIGKILLed 30 times each at seeded points of their own run (QKV_FAULT: after a step, or inside the
 * write of a file at one of the four stages of src/io/atomic.ts, or while a fresh run writes its
 * first files), resumed each time, end with exactly the files of an uninterrupted run: the same
 * weights, checkpoints, training state and loss history (timings aside), no temporary file left,
 * and every file on disk loadable after every kill; then a few kills inside the final writes (the
 * last history and state; for qkv train the averaged model's history entry, which a run resumed
 * at its end redoes). No timer
 * decides a kill: a loaded machine kills alike. An unsafe writer fails these checks: crash-writes.once.test.ts shows the torn file an
 * in-place overwrite or a write without temporary file leaves. A kill keeps the page cache, so
 * whether writes are fsynced is not shown here but in test/io/atomic.test.ts.
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
writeCorpus(data, [
  ['train', 0, 200],
  ['val', 200, 210],
]);
writeFileSync(join(work, 'lm.txt'), `${multi30kLines('train.en.gz').slice(0, 300).join('\n')}\n`);

const pad = (step: number) => String(step).padStart(7, '0');

async function crashTest(
  name: string,
  args: (out: string, resume: boolean) => string[],
  seed: number,
  maxSteps: number,
  writesAt: (step: number) => string[],
  finalFaults: string[],
) {
  ensureBuilt();
  const ref = join(work, `${name}-ref`);
  const r = await runToEnd(args(ref, false));
  assert.equal(r.status, 0, r.stderr);
  const out = join(work, `${name}-crashed`);
  const t0 = performance.now();
  const report = await crashLoop({
    out,
    stateFile: 'train-state.safetensors',
    args: (resume) => args(out, resume),
    kills: KILLS,
    seed,
    maxSteps,
    writesAt,
    startFiles: ['config.json', 'tokenizer.json'],
    finalFaults,
  });
  const seconds = (performance.now() - t0) / 1000;
  assert.equal(report.kills, KILLS + finalFaults.length);
  assert.deepEqual(
    listTree(out).filter((f) => /\.tmp-\d+$/.test(f)),
    [],
    'no temporary file left',
  );
  const a = snapshot(ref);
  const b = snapshot(out);
  assert.deepEqual(Object.keys(b), Object.keys(a), 'the same files');
  for (const f of Object.keys(a)) assert.equal(b[f], a[f], `${f} differs from the uninterrupted run's`);
  // The plan is a function of the seed and the run's own steps: these counts hold on any machine.
  assert.equal(report.midWrite, report.plannedMidWrite, 'every mid-write kill left its temporary file');
  const inWrites = Object.values(report.stages).reduce((a, b) => a + b, 0);
  assert.ok(inWrites >= KILLS / 4, `${inWrites} kills inside a write`);
  for (const [stage, n] of Object.entries(report.stages)) assert.ok(n >= 1, `no kill at the write stage ${stage}`);
  assert.ok(
    report.kills - report.beforeFirstState >= KILLS / 2,
    `only ${report.kills - report.beforeFirstState} kills after the first training state`,
  );
  assert.ok(report.reached >= maxSteps / 2, `the kills reached only step ${report.reached} of ${maxSteps}`);
  process.stderr.write(
    `# ${name}: ${report.kills} kills (${report.midWrite} leaving a temporary file; by write stage ${JSON.stringify(report.stages)}, ${report.beforeFirstState} before the first state, the last at step ${report.reached} of ${maxSteps}), ${report.runs} runs in ${seconds.toFixed(0)} s; uninterrupted ${(r.totalMs / 1000).toFixed(1)} s\n# ${report.faults.join(' ')}\n`,
  );
}

test(`qkv train: ${KILLS} SIGKILLs at seeded points of the run and 2 inside its final writes, resumed each time, end with the uninterrupted run's files`, {
  timeout: 600_000,
}, async () => {
  const [steps, saveEvery, evalEvery] = [60, 2, 4];
  await crashTest(
    'train',
    (out, resume) => [
      'train',
      '--preset',
      'tiny',
      '--out',
      out,
      '--data',
      data,
      '--max-steps',
      String(steps),
      '--save-every',
      String(saveEvery),
      '--eval-every',
      String(evalEvery),
      '--bleu-sentences',
      '4',
      ...(resume ? ['--resume'] : []),
    ],
    1,
    steps,
    (s) => [
      ...(s % saveEvery === 0 || s === steps
        ? [`checkpoints/step-${pad(s)}.safetensors`, 'train-state.safetensors']
        : []),
      ...(s % evalEvery === 0 || s === steps ? ['history.json'] : []),
    ],
    // The last state committed, then inside the write of the averaged model's history entry, which a
    // run resumed at its end redoes (the plan's kills land before the end).
    [`write:at=renamed:step=${steps}:file=train-state.safetensors`, 'write:at=part:file=history.json'],
  );
});

test(`qkv train-lm: ${KILLS} SIGKILLs at seeded points of the run and 2 inside its final writes, resumed each time, end with the uninterrupted run's files`, {
  timeout: 600_000,
}, async () => {
  const [steps, saveEvery, evalEvery] = [80, 2, 4];
  await crashTest(
    'train-lm',
    (out, resume) => [
      'train-lm',
      '--preset',
      'tiny',
      '--out',
      out,
      '--data',
      join(work, 'lm.txt'),
      '--max-steps',
      String(steps),
      '--save-every',
      String(saveEvery),
      '--eval-every',
      String(evalEvery),
      '--eval-tokens',
      '512',
      ...(resume ? ['--resume'] : []),
    ],
    2,
    steps,
    (s) => [
      ...(s % saveEvery === 0 || s === steps ? ['train-state.safetensors'] : []),
      ...(s % evalEvery === 0 || s === steps ? ['history.json'] : []),
    ],
    // Inside the last evaluation's history write, then with the last state renamed into place.
    [`write:at=part:step=${steps}:file=history.json`, `write:at=renamed:step=${steps}:file=train-state.safetensors`],
  );
});
