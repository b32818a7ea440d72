/**
 * Only one benchmark may run at a time on a shared machine: a lock file in the temp directory
 * (holding the owner's pid) makes a second one refuse to start. Stale locks (dead pid) are taken over.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function acquireBenchLock(): void {
  const lock = join(tmpdir(), 'qkv-bench.lock');
  if (existsSync(lock)) {
    const pid = Number(readFileSync(lock, 'utf8'));
    let alive = false;
    try {
      process.kill(pid, 0);
      alive = pid !== process.pid;
    } catch {}
    if (alive) {
      console.error(`another benchmark is running (pid ${pid}, ${lock}); not starting`);
      process.exit(1);
    }
  }
  writeFileSync(lock, String(process.pid));
  process.on('exit', () => rmSync(lock, { force: true }));
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(130));
}
