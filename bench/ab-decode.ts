/**
 * A/B timing of decoding through the pipeline (the devices issue's "no slowdown"), beside bench/ab-step.ts:
 * the shipped EN→FR model translating one sentence (its own beam and α) and a batch of 32 val sentences.
 * Copy it into the other checkout's bench/ and run the two alternately, a fresh process each time:
 *   npx tsx bench/ab-decode.ts     one JSON line: median ms of each workload, and the outputs' hash
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { pipeline } from '../src/index.ts';

// AB_CLOCK=cpu: the process's CPU time (all threads) instead of wall time, for a machine shared with other
// jobs, whose preemptions inflate wall time but not the work done.
const cpuClock = process.env.AB_CLOCK === 'cpu';
const now = () => {
  if (!cpuClock) return performance.now();
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const translate = await pipeline('translation', 'models/multi30k-en-fr');
const lines = gunzipSync(readFileSync('../shared/data/multi30k/val.en.gz')).toString('utf8').split('\n').slice(0, 32);
const one = 'A man in a blue shirt is riding a bike down the street.';
async function time(fn: () => Promise<unknown>, n: number): Promise<number> {
  await fn();
  const ts: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await fn();
    ts.push(now() - t0);
  }
  return median(ts);
}
const sentence = await time(() => translate(one), 15);
const batch = await time(() => translate(lines), 5);
const out = (await translate(lines)) as string[];
const hash = createHash('sha256').update(out.join('\n')).digest('hex').slice(0, 16);
console.log(JSON.stringify({ sentence, batch, hash }));
process.exit(0);
