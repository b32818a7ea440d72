/**
 * Crashes at any moment (issue 13, for the torchrun trainer): train.py under torchrun with 2
 * processes is SIGKILLed (the whole process group, launcher and ranks, as a power cut would) at
 * random moments while it trains and writes a checkpoint every step, 8 times, and resumed each
 * time; every other kill is aimed at a file write (QKV_TORCH_SLOW_WRITES holds each write open
 * 50 ms: the test waits for a temporary file to appear and kills then). It must end with exactly the weights, Adam moments, losses and averaged model of an
 * uninterrupted run, every checkpoint on disk loadable, and no temporary file left behind.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { Generator } from '../../src/tensor/random.ts';
import { requireTool, toolSkip } from '../helpers/tools.ts';
import { makeCorpus, makeRun, pyEnv, readLog, torchrun, torchrunArgs } from './setup.ts';

const KILLS = 8;
const STEPS = 40;

const lineCount = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8').split('\n').length - 1 : 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every file under a folder, recursively. */
function files(d: string): string[] {
  return readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(d, e.name)) : [join(d, e.name)]));
}

test(`torchrun train.py killed ${KILLS} times at random moments resumes to exactly the uninterrupted run`, { skip: toolSkip('torch') }, async (t) => {
  requireTool('torch');
  const dir = mkdtempSync(join(tmpdir(), 'qkv-torch-crash-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const fx = makeRun(dir, makeCorpus(join(dir, 'corpus')), { dropout: 0.1 }); // dropout on: its masks must resume too
  const common = ['--data', fx.trainIds, '--max-steps', String(STEPS), '--save-every', '1', '--keep', '3', '--log-every', '1000'];
  const base = join(dir, 'base');
  const b = torchrun(2, ['--init-from', fx.run, '--out', base, ...common]);
  assert.equal(b.status, 0, b.stderr);

  const out = join(dir, 'crash');
  const log = join(out, 'train-log.jsonl');
  const rng = new Generator(20261123);
  let kills = 0;
  let midWrite = 0;
  for (let attempt = 0; kills < KILLS && attempt < KILLS * 3; attempt++) {
    const resume = existsSync(join(out, 'train-state.safetensors'));
    const [cmd, args] = torchrunArgs(2, [...(resume ? ['--resume'] : ['--init-from', fx.run]), '--out', out, ...common]);
    const child = spawn(cmd, args, { env: { ...pyEnv, QKV_TORCH_SLOW_WRITES: '0.05' }, detached: true, stdio: 'ignore' });
    let exited = false;
    child.on('exit', () => (exited = true));
    // Wait until this start has trained a step, then kill at a random moment of the next ~0.6 s.
    const start = lineCount(log);
    while (!exited && lineCount(log) <= start) await sleep(20);
    if (exited) break; // finished before a kill could land
    if (kills % 2 === 0) await sleep(rng.int(600));
    else while (!exited && !files(out).some((f) => f.includes('.tmp-'))) await sleep(5);
    if (exited) break;
    process.kill(-child.pid!, 'SIGKILL');
    while (!exited) await sleep(10);
    kills++;
    if (files(out).some((f) => f.includes('.tmp-'))) midWrite++;
  }
  t.diagnostic(`${kills} kills, ${midWrite} of them during a file write (a temporary file was left)`);
  assert.equal(kills, KILLS, 'the run finished before every kill landed: make it longer');
  assert.ok(midWrite >= KILLS / 2, `only ${midWrite} kills landed during a write`);

  const fin = torchrun(2, ['--resume', '--out', out, ...common]);
  assert.equal(fin.status, 0, fin.stderr);
  assert.match(fin.stderr, /from step \d+/);

  // Same losses, step by step, bit for bit.
  assert.deepEqual(readLog(out), readLog(base));
  assert.equal(readLog(out).length, STEPS);
  // Same weights, Adam moments, position; same checkpoints; same averaged model.
  const names = ['train-state.safetensors', 'model.safetensors', ...readdirSync(join(base, 'checkpoints')).map((f) => join('checkpoints', f))];
  assert.deepEqual(readdirSync(join(out, 'checkpoints')), readdirSync(join(base, 'checkpoints')));
  for (const f of names) {
    const x = readSafetensors(readFileSync(join(out, f)));
    const y = readSafetensors(readFileSync(join(base, f)));
    assert.deepEqual(Object.keys(x.tensors).sort(), Object.keys(y.tensors).sort(), f);
    for (const k of Object.keys(y.tensors)) assert.deepEqual(x.tensors[k].data, y.tensors[k].data, `${f}: ${k}`);
    if (f === 'train-state.safetensors') assert.deepEqual(JSON.parse(x.metadata.trainer), JSON.parse(y.metadata.trainer));
  }
  // Nothing half-written: no temporary files; every safetensors file on disk loads.
  const all = files(out);
  assert.deepEqual(all.filter((f) => f.includes('.tmp-')), []);
  for (const f of all.filter((p) => p.endsWith('.safetensors'))) readSafetensors(readFileSync(f));
});
