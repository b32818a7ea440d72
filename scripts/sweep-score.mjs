#!/usr/bin/env node
// Rescore python/qkv_torch/sweep.py logs with qkv itself: each evaluation's greedy ids decoded by the
// run's tokenizer (qkv's BpeTokenizer) and scored with qkv's sacreBLEU-compatible corpus BLEU against
// val. Prints one table row per job: best greedy BLEU and its step, BLEU at given steps, best-5 average.
//
//   node scripts/sweep-score.mjs --bases sw --steps 4000,8000,10750 --window 4000-5000 /tmp/gs1/*.jsonl
//
// A job's tokenizer is BASES/<job.base's last folder name>/(target_)tokenizer.json.
import { readFileSync, existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { folder, text } from '../dist/index.js';

const { values: o, positionals: logs } = parseArgs({
  allowPositionals: true,
  options: {
    bases: { type: 'string', default: 'sw' },
    steps: { type: 'string', default: '' },
    window: { type: 'string', default: '' },
    json: { type: 'boolean', default: false },
  },
});
const bases = o.bases;
const steps = o.steps.split(',').filter(Boolean).map(Number);
// --window A-B: the mean greedy BLEU of the evaluations at steps A..B (a steadier rank than one evaluation).
const win = o.window.split('-').filter(Boolean).map(Number);
if (win.length !== 0 && (win.length !== 2 || !(win[0] <= win[1])))
  throw new Error(`--window must be A-B with A <= B, got ${o.window}`);
const refs = gunzipSync(readFileSync('data/multi30k/val.de.gz')).toString('utf8').split('\n');
if (refs.at(-1) === '') refs.pop();
const cache = new Map();
function tokenizer(base) {
  const dir = join(bases, basename(base));
  const { tokenizer: own, targetTokenizer: target } = folder.FILES;
  const file = existsSync(join(dir, target)) ? join(dir, target) : join(dir, own);
  if (!cache.has(file)) cache.set(file, text.BpeTokenizer.fromJSON(JSON.parse(readFileSync(file, 'utf8'))));
  return cache.get(file);
}
const rows = [];
const mean = (xs) => (xs.length ? { bleu: xs.reduce((a, b) => a + b, 0) / xs.length, n: xs.length } : null);
for (const file of logs) {
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const head = lines[0];
  if (!head.job) throw new Error(`${file}: not a sweep.py log (its first line has no "job")`);
  const tok = tokenizer(head.job.base);
  const score = (ids) => {
    if (ids.length !== refs.length) throw new Error(`${file}: ${ids.length} translations, val has ${refs.length}`);
    return text.corpusBleu(
      ids.map((s) => tok.decode(s)),
      refs,
    ).score;
  };
  // Evaluations without ids (sweep.py's idsEvery) keep the device's BLEU, checked where both exist.
  const evals = lines
    .slice(1)
    .filter((e) => !e.average)
    .map((e) => ({
      step: e.step,
      minutes: e.seconds / 60,
      valLoss: e.valLoss,
      bleu: e.ids ? score(e.ids) : e.bleu,
      device: e.ids ? e.bleu : null,
    }));
  const avg = lines.find((e) => e.average);
  const scored = evals.filter((e) => e.bleu != null);
  const best = scored.reduce((a, b) => (b.bleu > a.bleu ? b : a), scored[0]);
  rows.push({
    name: head.job.name,
    job: head.job,
    parameters: head.parameters,
    evals: evals.length,
    lastStep: evals.at(-1)?.step,
    best: best && { step: best.step, bleu: best.bleu, valLoss: best.valLoss },
    at: Object.fromEntries(steps.map((s) => [s, evals.find((e) => e.step === s)?.bleu ?? null])),
    average: avg ? { steps: avg.steps, bleu: score(avg.ids) } : null,
    window: win.length
      ? mean(scored.filter((e) => e.step >= win[0] && e.step <= win[1]).map((e) => e.bleu))
      : undefined,
    deviceAgrees: evals.every((e) => e.device == null || Math.abs(e.device - e.bleu) < 0.011),
  });
}
if (o.json) {
  console.log(JSON.stringify(rows, null, 2));
} else {
  const f = (x) => (x == null ? '–' : x.toFixed(2));
  const w = win.length ? ` mean ${win[0]}–${win[1]} |` : '';
  console.log(
    `| job | parameters | steps | best greedy val BLEU | ${steps.map((s) => `@${s}`).join(' | ')} |${w} best-5 avg |`,
  );
  console.log(`| --- | --- | --- | --- | ${steps.map(() => '---').join(' | ')} |${w ? ' --- |' : ''} --- |`);
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${(r.parameters / 1e6).toFixed(2)}M | ${r.lastStep} | ${f(r.best?.bleu)} @ ${r.best?.step} | ${steps.map((s) => f(r.at[s])).join(' | ')} |${w ? ` ${r.window ? `${f(r.window.bleu)} (${r.window.n})` : '–'} |` : ''} ${f(r.average?.bleu)} |${r.deviceAgrees ? '' : ' (device BLEU differs)'}`,
    );
  }
}
