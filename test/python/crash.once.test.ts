/**
 * Crashes at any moment (issue 13, for the torchrun trainer; issue 40): train.py under torchrun with 2
 * processes is SIGKILLed (the whole process group, launcher and ranks, as a power cut would) at
 * seeded points of its own run while it trains and writes a checkpoint every step, 8 times, and
 * resumed each time. The kills come from the run itself (QKV_FAULT, python/qkv_torch/fault.py): rank 0
 * kills the group right after a step, or inside an atomic write at one of its four stages (every
 * other kill; python/qkv_torch/safetensors.py atomic_write), so a machine ten times slower or
 * faster makes the same kills. A kill keeps the page cache: it shows what the resumed run reads,
 * not what a power cut keeps. It must
 * end with exactly the weights, Adam moments, losses and averaged model of an uninterrupted run,
 * every checkpoint on disk loadable, and no temporary file left behind.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { crashLoop } from '../cli/crash.ts';
import { requireTool, toolSkip } from '../helpers/tools.ts';
import { makeCorpus, makeRun, pyEnv, readLog, torchrun, torchrunArgs } from './setup.ts';

const KILLS = 8;
const STEPS = 40;

/** Every file under a folder, recursively. */
function files(d: string): string[] {
  return readdirSync(d, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(d, e.name)) : [join(d, e.name)],
  );
}

test(`torchrun train.py killed ${KILLS} times at seeded points of its run resumes to exactly the uninterrupted run`, {
  skip: toolSkip('torch'),
  timeout: 900_000,
}, async (t) => {
  requireTool('torch');
  const dir = mkdtempSync(join(tmpdir(), 'qkv-torch-crash-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const fx = makeRun(dir, makeCorpus(join(dir, 'corpus')), { dropout: 0.1 }); // dropout on: its masks must resume too
  const common = [
    '--data',
    fx.trainIds,
    '--max-steps',
    String(STEPS),
    '--save-every',
    '1',
    '--keep',
    '3',
    '--log-every',
    '1000',
  ];
  const base = join(dir, 'base');
  const b = torchrun(2, ['--init-from', fx.run, '--out', base, ...common]);
  assert.equal(b.status, 0, b.stderr);

  const out = join(dir, 'crash');
  const [launcher, launcherArgs] = torchrunArgs(2, []);
  const report = await crashLoop({
    command: [launcher, ...launcherArgs],
    env: pyEnv,
    group: true,
    out,
    stateFile: 'train-state.safetensors',
    args: (resume) => [...(resume ? ['--resume'] : ['--init-from', fx.run]), '--out', out, ...common],
    kills: KILLS,
    seed: 20261123,
    maxSteps: STEPS,
    midWriteEvery: 2,
    // Every step (--save-every 1): its checkpoint, the training state, then model.safetensors.
    writesAt: (s) => [
      `checkpoints/step-${String(s).padStart(7, '0')}.safetensors`,
      'train-state.safetensors',
      'model.safetensors',
    ],
    startFiles: ['config.json', 'tokenizer.json', 'train-log.jsonl'],
  });
  t.diagnostic(
    `${report.kills} kills, by write stage ${JSON.stringify(report.stages)}, ${report.midWrite} leaving a temporary file: ${report.faults.join(' ')}`,
  );
  assert.equal(report.kills, KILLS);
  assert.equal(report.midWrite, report.plannedMidWrite, 'every mid-write kill left its temporary file');
  const inWrites = Object.values(report.stages).reduce((x, y) => x + y, 0);
  assert.ok(inWrites >= KILLS / 2, `only ${inWrites} kills landed inside a write`);
  assert.match(report.finalStderr, /from step \d+/);

  // Same losses, step by step, bit for bit.
  assert.deepEqual(readLog(out), readLog(base));
  assert.equal(readLog(out).length, STEPS);
  // Same weights, Adam moments, position; same checkpoints; same averaged model.
  const names = [
    'train-state.safetensors',
    'model.safetensors',
    ...readdirSync(join(base, 'checkpoints')).map((f) => join('checkpoints', f)),
  ];
  assert.deepEqual(readdirSync(join(out, 'checkpoints')), readdirSync(join(base, 'checkpoints')));
  for (const f of names) {
    const x = readSafetensors(readFileSync(join(out, f)));
    const y = readSafetensors(readFileSync(join(base, f)));
    assert.deepEqual(Object.keys(x.tensors).sort(), Object.keys(y.tensors).sort(), f);
    for (const k of Object.keys(y.tensors))
      assert.deepEqual(x.tensors[k].dataSync(), y.tensors[k].dataSync(), `${f}: ${k}`);
    if (f === 'train-state.safetensors')
      assert.deepEqual(JSON.parse(x.metadata.trainer), JSON.parse(y.metadata.trainer));
  }
  // Nothing half-written: no temporary files; every safetensors file on disk loads.
  const all = files(out);
  assert.deepEqual(
    all.filter((f) => f.includes('.tmp-')),
    [],
  );
  for (const f of all.filter((p) => p.endsWith('.safetensors'))) readSafetensors(readFileSync(f));
});
