/**
 * What the KV cache buys per generated token: a GPT generates from a short prompt until its
 * context is full, once through the cache (each step runs the one new token) and once
 * recomputing the whole context at every step, greedy so both produce the same tokens (checked).
 * Prints the median milliseconds per token of each, over all steps and over the last quarter
 * (the longest contexts), and the speed-up. Random weights: the speed does not depend on them.
 *
 *   npx tsx bench/kvcache.ts              GPT_SMALL (4 layers, 128 wide) with contexts of 128 and 512
 *   npx tsx bench/kvcache.ts --block 256  one context length
 */
import { acquireBenchLock } from './lock.ts';
import { generateStream } from '../src/decode/gpt.ts';
import { getBackend, manualSeed, models } from '../src/index.ts';

acquireBenchLock();
const arg = process.argv.indexOf('--block');
const blocks = arg > 0 ? process.argv[arg + 1].split(',').map(Number) : [128, 512];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

/** Milliseconds of each generation step (prefill excluded) and the tokens. */
function run(
  model: models.GPT,
  prompt: number[],
  maxTokens: number,
  useCache: boolean,
): { ms: number[]; ids: number[] } {
  const ms: number[] = [];
  const ids: number[] = [];
  let t0 = performance.now();
  let first = true;
  for (const t of generateStream(model, prompt, { maxTokens, temperature: 0, useCache })) {
    const now = performance.now();
    if (!first) ms.push(now - t0); // the first token's time is the prompt's forward pass
    first = false;
    ids.push(t.id);
    t0 = now;
  }
  return { ms, ids };
}

console.log(`KV cache benchmark: backend ${getBackend().name}, node ${process.version}`);
console.log(
  '| model | context | tokens | no cache ms/token (median, last quarter) | KV cache ms/token (median, last quarter) | speed-up (median, last quarter) |',
);
console.log('| --- | --- | --- | --- | --- | --- |');
for (const blockSize of blocks) {
  manualSeed(1);
  const cfg = { ...models.GPT_SMALL, vocabSize: 96, blockSize };
  const model = new models.GPT(cfg);
  const prompt = Array.from({ length: 16 }, (_, i) => (i * 7) % 96);
  const n = blockSize - prompt.length;
  run(model, prompt, 8, true); // warm-up
  const cached = run(model, prompt, n, true);
  const full = run(model, prompt, n, false);
  if (cached.ids.join() !== full.ids.join()) throw new Error('the cached and recomputed generations differ');
  const tail = (xs: number[]) => xs.slice(Math.floor((xs.length * 3) / 4));
  const [a, b] = [median(full.ms), median(cached.ms)];
  const [ta, tb] = [median(tail(full.ms)), median(tail(cached.ms))];
  console.log(
    `| ${cfg.nLayer}×${cfg.nEmbd}, ${model.numParameters().toLocaleString('en-US')} params | ${blockSize} | ${n} | ${a.toFixed(2)}, ${ta.toFixed(2)} | ${b.toFixed(2)}, ${tb.toFixed(2)} | ${(a / b).toFixed(1)}×, ${(ta / tb).toFixed(1)}× |`,
  );
}
