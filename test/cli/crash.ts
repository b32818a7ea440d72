/**
 * A crash harness for the training commands, the way databases test durability: run a training job
 * as a child process, SIGKILL it at seeded random moments (and, every third time, the moment a
 * temporary file of an atomic write appears: mid-write), resume, and repeat; then compare with an
 * uninterrupted run of the same command.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { readSafetensors, writeSafetensors } from '../../src/io/safetensors.ts';
import { rng as seeded } from '../helpers/random.ts';

const root = new URL('../../', import.meta.url).pathname;
const MAIN = join(root, 'dist/cli/main.js');
// The built CLI (npm test builds it first): it starts in half a second, tsx in two.
const CLI = [MAIN];

/** Build dist/ when it is missing or older than a source file. */
export function ensureBuilt(): void {
  const newest = (d: string): number => Math.max(0, ...readdirSync(d).map((n) => {
    const p = join(d, n);
    const st = statSync(p);
    return st.isDirectory() ? newest(p) : st.mtimeMs;
  }));
  if (existsSync(MAIN) && statSync(MAIN).mtimeMs >= newest(join(root, 'src'))) return;
  const r = spawnSync('npm', ['run', 'build'], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`npm run build failed: ${r.stdout}${r.stderr}`);
}

/** The line both trainers print just before their first step. */
const READY = /\d[\d,]* parameters/;

/**
 * Another trainer (e.g. the PyTorch one) can use this harness: its command line, the stderr line it
 * prints when ready to train, and the one it prints at an evaluation.
 */
export interface Patterns {
  command?: string[];
  ready?: RegExp;
  evaluation?: RegExp;
  /** The step a training state file holds (default: a qkv train-state.safetensors). */
  stateStep?: (path: string) => number;
}

/** The line both trainers print at an evaluation. */
const EVAL = /^step \d+: train loss/m;

/**
 * Run the command to its end (no kill). Times, from its start: when it was ready to train, when it
 * printed its first evaluation, and its end.
 */
export async function runToEnd(args: string[], p: Patterns = {}): Promise<{ status: number | null; stderr: string; startupMs: number; firstEvalMs: number; totalMs: number }> {
  const { command = [process.execPath, ...CLI], ready = READY, evaluation = EVAL } = p;
  const t0 = performance.now();
  const child = spawn(command[0], [...command.slice(1), ...args], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  let startupMs = Number.NaN;
  let firstEvalMs = Number.NaN;
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
    if (Number.isNaN(startupMs) && ready.test(stderr)) startupMs = performance.now() - t0;
    if (Number.isNaN(firstEvalMs) && evaluation.test(stderr)) firstEvalMs = performance.now() - t0;
  });
  const status = await new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { status, stderr, startupMs, firstEvalMs, totalMs: performance.now() - t0 };
}

/** Every file under dir (relative paths), sorted. */
export function listTree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

const isTemp = (f: string) => /\.tmp-\d+$/.test(f);

/** Throws unless every safetensors and JSON file in the folder (temporary files aside) reads back. */
export function checkLoadable(dir: string): void {
  for (const f of listTree(dir)) {
    if (isTemp(f)) continue;
    const bytes = readFileSync(join(dir, f));
    if (f.endsWith('.safetensors')) {
      try {
        readSafetensors(bytes);
      } catch (e) {
        throw new Error(`${f} does not load after a kill: ${(e as Error).message}`);
      }
    } else if (f.endsWith('.json')) {
      JSON.parse(bytes.toString('utf8'));
    }
  }
}

export interface CrashReport {
  kills: number;
  /** Kills that left a temporary file on disk: the process died in the middle of a write. */
  midWrite: number;
  /** Kills before the first checkpoint existed (the next run started afresh). */
  beforeFirstState: number;
  /** Runs started (the kills, then the one that finished). */
  runs: number;
  /** The step of the training state the last run resumed from: how far the kills reached. */
  reached: number;
}

export interface CrashOptions extends Patterns {
  out: string;
  /** The training-state file whose presence means "pass --resume". */
  stateFile: string;
  args: (resume: boolean) => string[];
  kills: number;
  seed: number;
  /** How long the uninterrupted run took to be ready to train, to print its first evaluation, and in all. */
  startupMs: number;
  firstEvalMs: number;
  totalMs: number;
  /** The run's --max-steps, --save-every and --eval-every. */
  maxSteps: number;
  saveEvery: number;
  evalEvery: number;
}

/** The step a training state holds (0 when there is none). */
function savedStep(path: string): number {
  if (!existsSync(path)) return 0;
  const { metadata } = readSafetensors(readFileSync(path));
  const meta = JSON.parse(metadata.trainer ?? metadata.lmTrainer) as { position: { step: number } };
  return meta.position.step;
}

/**
 * Kill the command `kills` times at seeded random moments, resuming after each (with --resume once
 * a training state exists, as a user's restart script would), then let it finish. Every third
 * kill waits for a temporary file of an atomic write to appear and kills then, mid-write. After
 * each kill every file in `out` must load.
 */
export async function crashLoop(o: CrashOptions): Promise<CrashReport> {
  const random = seeded(o.seed);
  const { command = [process.execPath, ...CLI], ready: readyLine = READY, stateStep = savedStep } = o;
  const report: CrashReport = { kills: 0, midWrite: 0, beforeFirstState: 0, runs: 0, reached: 0 };
  for (;;) {
    const resume = existsSync(join(o.out, o.stateFile));
    const child = spawn(command[0], [...command.slice(1), ...o.args(resume)], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
    report.runs++;
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
    if (report.kills === o.kills) {
      report.reached = existsSync(join(o.out, o.stateFile)) ? stateStep(join(o.out, o.stateFile)) : 0;
      const r = await exited;
      if (r.code !== 0) throw new Error(`the final run failed (${r.code}): ${stderr}`);
      return report;
    }
    const kill = () => child.kill('SIGKILL');
    // One kill in five during start-up; the others once training runs, after a random time of up to
    // four checkpoints' worth of steps (fewer as the end nears, so that every kill is made before
    // the run can finish); every third of those mid-write: at the k-th temporary file of an atomic
    // write that appears (k from 1 to 4: a checkpoint, the history, the weights, the state). The
    // times are only a guide: each kind of kill also has a bound counted in the run's own output.
    const n = report.kills;
    const duringStartup = n % 5 === 4;
    const onWrite = !duringStartup && n % 3 === 2;
    // Time per step after the first evaluation, and the warm-up before the first step (threads,
    // first-call costs) that a resumed run pays again.
    const stepMs = (o.totalMs - o.firstEvalMs) / (o.maxSteps - o.evalEvery);
    const warmMs = Math.max(0, o.firstEvalMs - o.startupMs - o.evalEvery * stepMs);
    const saved = existsSync(join(o.out, o.stateFile)) ? stateStep(join(o.out, o.stateFile)) : 0;
    const left = o.maxSteps - saved;
    // Before the first state, room to reach it; then up to three times an even share of what is
    // left (a killed run loses the steps since its last state), never more than half of it.
    const spanSteps = saved === 0 ? 3 * o.saveEvery : Math.min(4 * o.saveEvery, (3 * left) / (o.kills - n + 1), left / 2);
    const nthWrite = 1 + Math.floor(random() * 4);
    // The timings come from the uninterrupted run, which may have shared the CPU with other tests:
    // a run that goes faster must still die before the end. So also kill at the first evaluation
    // printed at or past capStep, an evaluation some way beyond the random moment and at most the
    // one before the last (speed-independent: it counts steps, not milliseconds). A run resumed
    // past that one is killed when it is ready to train.
    const lastEval = o.maxSteps - o.evalEvery;
    const capStep = Math.min(lastEval, Math.ceil((saved + spanSteps) / o.evalEvery) * o.evalEvery + o.evalEvery);
    const evalSteps = /^step (\d+): train loss/gm;
    let timer: NodeJS.Timeout | undefined;
    let poll: NodeJS.Timeout | undefined;
    if (duringStartup) {
      // At a random moment of the start-up, or when it is over, whichever comes first.
      timer = setTimeout(kill, random() * o.startupMs);
      child.stderr.on('data', () => {
        if (readyLine.test(stderr)) kill();
      });
    } else {
      let ready = false;
      const delay = random() * (warmMs + spanSteps * stepMs);
      child.stderr.on('data', () => {
        if (ready) {
          for (const m of stderr.matchAll(evalSteps)) if (Number(m[1]) >= capStep) kill();
          return;
        }
        if (!readyLine.test(stderr)) return;
        ready = true;
        // No evaluation is left before the end: die before the first step.
        if (saved >= lastEval) return kill();
        // A mid-write kill waits for its write however slow the machine (the evaluation cap bounds it).
        if (!onWrite) timer = setTimeout(kill, delay);
        else {
          const seen = new Set<string>();
          poll = setInterval(() => {
            try {
              for (const f of listTree(o.out).filter(isTemp)) seen.add(f);
              if (seen.size >= nthWrite) kill();
            } catch {
              // a file went away while listing
            }
          }, 1);
        }
      });
    }
    const r = await exited;
    clearTimeout(timer);
    if (poll) clearInterval(poll);
    if (r.signal !== 'SIGKILL') {
      throw new Error(`run ${report.runs} ended (${r.code}) after ${report.kills} of ${o.kills} kills: ${r.code === 0 ? 'give it more steps' : stderr}`);
    }
    report.kills++;
    if (!existsSync(join(o.out, o.stateFile))) report.beforeFirstState++;
    if (existsSync(o.out)) {
      if (listTree(o.out).some(isTemp)) report.midWrite++;
      checkLoadable(o.out);
    }
  }
}

/**
 * The folder's files as {path: bytes}, without the timings, which differ run to run: history.json's
 * seconds and minutes, and a translation training state's trainingMinutes.
 */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of listTree(dir)) {
    const bytes = readFileSync(join(dir, f));
    if (f === 'history.json') {
      const h = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>[];
      out[f] = JSON.stringify(h.map(({ seconds: _s, minutes: _m, ...rest }) => rest));
    } else if (f === 'train-state.safetensors') {
      const { tensors, metadata: { trainingMinutes, ...metadata } } = readSafetensors(bytes);
      out[f] = createHash('sha256').update(trainingMinutes === undefined ? bytes : writeSafetensors(tensors, { metadata })).digest('hex');
    } else {
      out[f] = createHash('sha256').update(bytes).digest('hex');
    }
  }
  return out;
}
