/**
 * Fault injection for crash tests: a process that kills itself at a named point of its own run, so
 * a test's kill lands at the same place on a machine ten times faster or slower (timers and polling
 * cannot promise that). Off unless the environment variable QKV_FAULT is set; then it names one point:
 *
 *   QKV_FAULT=<point>[:<key>=<value>]...
 *
 * e.g. `step:step=40` (the trainer has just finished optimiser step 40, before anything of it is
 * saved) or `write:at=part:step=40:file=train-state.safetensors` (atomicWrite has written half of
 * the temporary file of the step-40 training state: the process dies mid-write; src/io/atomic.ts
 * names the four stages of a write). A point's details are remembered: `step` set by the trainer's
 * `step` point still holds when atomicWrite reaches `write`. A value matches a detail equal to it
 * or ending in `/<value>` (a file name matches its path). The process SIGKILLs itself the first
 * time every key matches (`group=1`: its whole process group, a launcher and its ranks at once).
 * A SIGKILL ends the processes, not the machine: what they wrote stays in the page cache and
 * reaches the disk, so a kill shows what a reader finds after a crash of the program, not what a
 * power cut keeps (test/io/atomic.test.ts simulates that).
 *
 * Production code calls `faultPoint(name, details)` at a handful of places; with QKV_FAULT unset
 * that is one comparison with null.
 */

interface Fault {
  point: string;
  want: [string, string][];
  group: boolean;
}

/** Parse QKV_FAULT (exported for its test); throws on a malformed spec, naming the variable. */
export function parseFault(spec: string): Fault {
  const [point, ...pairs] = spec.split(':');
  if (!/^[\w-]+$/.test(point))
    throw new Error(`QKV_FAULT: expected <point>[:<key>=<value>]..., got ${JSON.stringify(spec)}`);
  const want: [string, string][] = [];
  let group = false;
  for (const p of pairs) {
    const m = /^([\w-]+)=(.+)$/.exec(p);
    if (!m)
      throw new Error(
        `QKV_FAULT: expected <key>=<value> after "${point}:", got ${JSON.stringify(p)} in ${JSON.stringify(spec)}`,
      );
    if (m[1] === 'group') group = m[2] === '1';
    else want.push([m[1], m[2]]);
  }
  return { point, want, group };
}

const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.QKV_FAULT;
const fault: Fault | null = env ? parseFault(env) : null;
const seen = new Map<string, string>();

function matches(have: string | undefined, want: string): boolean {
  return have !== undefined && (have === want || have.endsWith(`/${want}`));
}

/** A named point of the run: dies here when QKV_FAULT names it (see the file comment). */
export function faultPoint(name: string, details: Record<string, string | number> = {}): void {
  if (fault === null) return;
  for (const [k, v] of Object.entries(details)) seen.set(k, String(v));
  if (name !== fault.point || !fault.want.every(([k, v]) => matches(seen.get(k), v))) return;
  const proc = (globalThis as unknown as { process: { pid: number; kill(pid: number, signal: string): void } }).process;
  proc.kill(fault.group ? 0 : proc.pid, 'SIGKILL');
}
