/**
 * A crash harness for the training commands, the way databases test durability: run a training job
 * as a child process that SIGKILLs itself at a seeded random point of its own run (QKV_FAULT,
 * src/util/fault.ts: right after a step, or inside an atomic write at one of its four stages:
 * temporary file half written, written but not fsynced, fsynced but not renamed, renamed before the
 * folder's fsync), resume, and repeat; then compare with an uninterrupted run of the same command.
 * No timer or polling decides where a kill lands, so a loaded machine makes the same kills.
 *
 * What a kill shows: the files a reader (the resumed run) finds after the program dies at that
 * point, page cache included. What it cannot show: what a power cut keeps, since a killed process's
 * writes still reach the disk; whether atomicWrite fsyncs is held by test/io/atomic.test.ts instead.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { WRITE_STAGES } from '../../src/io/atomic.ts';
import { readSafetensors, writeSafetensors } from '../../src/io/safetensors.ts';
import { rng as seeded } from '../helpers/random.ts';

const root = new URL('../../', import.meta.url).pathname;
const MAIN = join(root, 'dist/cli/main.js');
// The built CLI (npm test builds it first): it starts in half a second, tsx in two.
const CLI = [MAIN];

/** Build dist/ when it is missing or older than a source file. */
export function ensureBuilt(): void {
  const newest = (d: string): number =>
    Math.max(
      0,
      ...readdirSync(d).map((n) => {
        const p = join(d, n);
        const st = statSync(p);
        return st.isDirectory() ? newest(p) : st.mtimeMs;
      }),
    );
  if (existsSync(MAIN) && statSync(MAIN).mtimeMs >= newest(join(root, 'src'))) return;
  const r = spawnSync('npm', ['run', 'build'], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`npm run build failed: ${r.stdout}${r.stderr}`);
}

/**
 * Run the command to its end (no kill, no fault armed).
 */
export async function runToEnd(
  args: string[],
  command: string[] = [process.execPath, ...CLI],
): Promise<{ status: number | null; stderr: string; totalMs: number }> {
  const t0 = performance.now();
  const child = spawn(command[0], [...command.slice(1), ...args], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: withoutFault(),
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const status = await new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { status, stderr, totalMs: performance.now() - t0 };
}

/**
 * Run the command with QKV_FAULT=`spec`; throws unless it dies by its own SIGKILL there. `env` is
 * added to the environment (test/cli/broken-writer.mjs's NODE_OPTIONS and QKV_BROKEN_WRITE).
 */
export function killAt(args: string[], spec: string, env: NodeJS.ProcessEnv = {}): void {
  const r = spawnSync(process.execPath, [...CLI, ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...withoutFault(), ...env, QKV_FAULT: spec },
  });
  if (r.signal !== 'SIGKILL')
    throw new Error(
      `qkv ${args.join(' ')} with QKV_FAULT=${spec} ended (${r.status}) instead of killing itself: ${r.stderr}`,
    );
}

/** The environment that swaps the CLI's atomicWrite for an unsafe writer (test/cli/broken-writer.mjs). */
export function brokenWriter(variant: 'in-place' | 'no-temp'): NodeJS.ProcessEnv {
  return {
    NODE_OPTIONS: `--import=${join(root, 'test/cli/broken-writer.mjs')}`,
    QKV_BROKEN_WRITE: variant,
  };
}

function withoutFault(): NodeJS.ProcessEnv {
  const { QKV_FAULT: _, ...env } = process.env;
  return env;
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
      try {
        JSON.parse(bytes.toString('utf8'));
      } catch (e) {
        throw new Error(`${f} does not load after a kill: ${(e as Error).message}`);
      }
    }
  }
}

export type WriteStage = (typeof WRITE_STAGES)[number];

export interface CrashReport {
  kills: number;
  /** Kills aimed inside an atomic write, before its rename (src/io/atomic.ts: part, unflushed, flushed). */
  plannedMidWrite: number;
  /** Kills that left a temporary file on disk: the process died in the middle of a write. */
  midWrite: number;
  /** Kills inside a write, by its stage. */
  stages: Record<WriteStage, number>;
  /** Kills before the first checkpoint existed (the next run started afresh). */
  beforeFirstState: number;
  /** Runs started (the kills, then the one that finished). */
  runs: number;
  /** The step of the training state the run after the planned kills resumed from: how far they reached. */
  reached: number;
  /** Each kill's QKV_FAULT, in order. */
  faults: string[];
  /** The stderr of the run that finished. */
  finalStderr: string;
}

export interface CrashOptions {
  /** The command (default: the built qkv CLI); it must load src/util/fault.ts (QKV_FAULT). */
  command?: string[];
  /** The step a training state file holds (default: a qkv train-state.safetensors). */
  stateStep?: (path: string) => number;
  out: string;
  /** The training-state file whose presence means "pass --resume". */
  stateFile: string;
  args: (resume: boolean) => string[];
  kills: number;
  seed: number;
  /** The run's --max-steps. */
  maxSteps: number;
  /** The files (paths under `out`) certainly written atomically after optimiser step `step`. */
  writesAt: (step: number) => string[];
  /** The files a fresh run writes before its first step. */
  startFiles: string[];
  /** Extra environment for the command. */
  env?: NodeJS.ProcessEnv;
  /** Add `:group=1` to each fault: the process kills its whole process group (a launcher and its ranks). */
  group?: boolean;
  /** Every how many kills one is mid-write (default 3). */
  midWriteEvery?: number;
  /** The stages of a write a kill inside one may land at (default: all four, src/io/atomic.ts). */
  stages?: readonly WriteStage[];
  /**
   * QKV_FAULT specs killed after the `kills` planned ones, in order, each resumed: kills the plan
   * cannot aim at, such as inside the final writes after the last step.
   */
  finalFaults?: string[];
}

/** The step a training state holds (0 when there is none). */
function savedStep(path: string): number {
  if (!existsSync(path)) return 0;
  const { metadata } = readSafetensors(readFileSync(path));
  const meta = JSON.parse(metadata.trainer ?? metadata.lmTrainer) as { position: { step: number } };
  return meta.position.step;
}

/**
 * Where the n-th kill lands, chosen by a seeded generator from where the run stands (the step of
 * its saved state) and named to the run itself through QKV_FAULT: the process kills itself there,
 * so a machine ten times faster or slower makes exactly the same kills. One kill in five, the
 * first among them, during start-up (a fresh run dies inside the write of one of its first files;
 * a resumed one right after its first step); every third kill inside the write of a file the run
 * writes at a step it has not saved yet, at the stages of a write in turn; the others right after a
 * step, before anything of it is saved. Each lands within a few steps of the saved state (at most 8, and at most twice an even
 * share of the steps left), so the run moves forward between kills and every kill lands before
 * its end (the report's `reached` says how far they got).
 */
export function planFault(
  o: Pick<CrashOptions, 'maxSteps' | 'writesAt' | 'startFiles' | 'kills' | 'midWriteEvery' | 'stages'>,
  n: number,
  saved: number,
  fresh: boolean,
  random: () => number,
  writeKills = 0,
): { spec: string; stage?: WriteStage } {
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)];
  const left = o.maxSteps - saved;
  if (left <= 0)
    throw new Error(`planFault: the saved state is already at step ${saved} of ${o.maxSteps}: give the run more steps`);
  const span = Math.max(1, Math.min(8, Math.floor((2 * left) / (o.kills - n + 1))));
  // The stages in turn, so that a few kills inside writes reach each of them.
  const stages = o.stages ?? WRITE_STAGES;
  const stage = stages[writeKills % stages.length];
  if (n % 5 === 0) {
    return fresh ? { spec: `write:at=${stage}:file=${pick(o.startFiles)}`, stage } : { spec: `step:step=${saved + 1}` };
  }
  const every = o.midWriteEvery ?? 3;
  if (n % every === every - 1) {
    // The first steps after the saved state at which the run writes something, a random one of them.
    const candidates: number[] = [];
    for (let s = saved + 1; s <= o.maxSteps && candidates.length < 3; s++)
      if (o.writesAt(s).length > 0) candidates.push(s);
    if (candidates.length === 0) throw new Error(`planFault: no write after step ${saved}`);
    const step = pick(candidates.slice(0, Math.max(1, Math.min(candidates.length, span))));
    return { spec: `write:at=${stage}:step=${step}:file=${pick(o.writesAt(step))}`, stage };
  }
  return { spec: `step:step=${saved + 1 + Math.floor(random() * Math.min(span, left))}` };
}

/**
 * Kill the command `kills` times at the points planFault chooses, resuming after each (with
 * --resume once a training state exists, as a user's restart script would), then let it finish.
 * Every run must die by its own SIGKILL (a run that ends otherwise fails the test), every
 * mid-write kill must leave its temporary file, and after each kill every file in `out` must load.
 */
export async function crashLoop(o: CrashOptions): Promise<CrashReport> {
  const random = seeded(o.seed);
  const { command = [process.execPath, ...CLI], stateStep = savedStep } = o;
  const report: CrashReport = {
    kills: 0,
    plannedMidWrite: 0,
    midWrite: 0,
    stages: { part: 0, unflushed: 0, flushed: 0, renamed: 0 },
    beforeFirstState: 0,
    runs: 0,
    reached: 0,
    faults: [],
    finalStderr: '',
  };
  for (;;) {
    const statePath = join(o.out, o.stateFile);
    const resume = existsSync(statePath);
    const saved = resume ? stateStep(statePath) : 0;
    if (report.kills === o.kills) report.reached = saved; // before the final faults, if any
    const finals = o.finalFaults ?? [];
    const last = report.kills === o.kills + finals.length;
    const writeKills = Object.values(report.stages).reduce((a, b) => a + b, 0);
    const final = finals[report.kills - o.kills];
    const fault = last
      ? null
      : final !== undefined
        ? { spec: final, stage: /(?:^|:)at=(\w+)/.exec(final)?.[1] as WriteStage | undefined }
        : planFault(o, report.kills, saved, !resume, random, writeKills);
    const env = {
      ...withoutFault(),
      ...o.env,
      ...(fault ? { QKV_FAULT: fault.spec + (o.group ? ':group=1' : '') } : {}),
    };
    const child = spawn(command[0], [...command.slice(1), ...o.args(resume)], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
      env,
      detached: o.group,
    });
    report.runs++;
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const r = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
      child.once('exit', (code, signal) => res({ code, signal })),
    );
    if (fault === null) {
      report.finalStderr = stderr;
      if (r.code !== 0) throw new Error(`the final run failed (${r.code}): ${stderr}`);
      return report;
    }
    // Under a launcher (group) the launcher itself is SIGKILLed with its ranks.
    if (r.signal !== 'SIGKILL') {
      throw new Error(
        `run ${report.runs} (QKV_FAULT=${fault.spec}, resumed from step ${saved}) ended (${r.code}) instead of killing itself: ${stderr}`,
      );
    }
    report.kills++;
    report.faults.push(fault.spec);
    // Before the rename the temporary file must be there; after it, the target is renamed and loads.
    const beforeRename = fault.stage !== undefined && fault.stage !== 'renamed';
    if (fault.stage) report.stages[fault.stage]++;
    if (beforeRename) report.plannedMidWrite++;
    if (!existsSync(statePath)) report.beforeFirstState++;
    if (existsSync(o.out)) {
      checkLoadable(o.out);
      if (listTree(o.out).some(isTemp)) report.midWrite++;
      else if (beforeRename) throw new Error(`QKV_FAULT=${fault.spec} left no temporary file`);
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
      const {
        tensors,
        metadata: { trainingMinutes, ...metadata },
      } = readSafetensors(bytes);
      out[f] = createHash('sha256')
        .update(trainingMinutes === undefined ? bytes : writeSafetensors(tensors, { metadata }))
        .digest('hex');
    } else {
      out[f] = createHash('sha256').update(bytes).digest('hex');
    }
  }
  return out;
}
