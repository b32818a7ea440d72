#!/usr/bin/env node
// The recipe search's table (issue 12) from training run folders: each run's configuration as it
// differs from the multi30k-small preset, its parameter count, training minutes and greedy val BLEU
// (best single evaluation, and the checkpoint average when the trainer made one).
// Usage: node scripts/recipe-table.mjs runs/NAME [runs/NAME ...]   (prints a Markdown table)
//        node scripts/recipe-table.mjs --curve runs/NAME ...     (time to BLEU: val BLEU at each
//        evaluation against the training minutes so far, one row per run)
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { folder, models } from '../dist/index.js';

const BASE_MODEL = {
  dModel: 256,
  nhead: 4,
  numEncoderLayers: 3,
  numDecoderLayers: 3,
  dimFeedforward: 1024,
  dropout: 0.1,
  normFirst: false,
};
const BASE_RECIPE = {
  maxTokens: 4096,
  warmup: 800,
  lrFactor: 0.5,
  labelSmoothing: 0.1,
  accum: 1,
  weightDecay: 0,
  clipNorm: 0,
};

function changes(config) {
  const out = [];
  const m = config.model;
  for (const [k, v] of Object.entries(BASE_MODEL)) if (m[k] !== v) out.push(`${k} ${m[k]}`);
  for (const k of ['attentionDropout', 'activationDropout'])
    if (m[k] !== undefined && m[k] !== m.dropout) out.push(`${k} ${m[k]}`);
  const t = config.training ?? {};
  const r = t.recipe ?? {};
  for (const [k, v] of Object.entries(BASE_RECIPE)) if (r[k] !== undefined && r[k] !== v) out.push(`${k} ${r[k]}`);
  if (t.bpe && t.bpe.vocabSize !== 8000) out.push(`BPE ${t.bpe.vocabSize}`);
  if (t.bpe?.separate) out.push('separate vocabularies');
  if (t.bpe?.splitPunctuation) out.push('punctuation split');
  if (t.average === 'best') out.push(`average best ${t.keep}`);
  if (t.direction && t.direction !== 'en-de') out.push(t.direction);
  return out.length ? out.join(', ') : 'multi30k-small as shipped';
}

const args = process.argv.slice(2);
const curve = args[0] === '--curve';
const rows = [];
for (const dir of curve ? args.slice(1) : args) {
  const cfgPath = join(dir, folder.FILES.config);
  const histPath = join(dir, 'history.json');
  if (!existsSync(cfgPath) || !existsSync(histPath)) {
    console.error(`${dir}: no config.json/history.json, skipped`);
    continue;
  }
  const config = JSON.parse(readFileSync(cfgPath, 'utf8'));
  const history = JSON.parse(readFileSync(histPath, 'utf8'));
  const evals = history.filter((h) => h.averaged === undefined);
  if (evals.length === 0) continue;
  const name = dir.replace(/\/$/, '').split('/').pop();
  // Training minutes at each evaluation (older histories have only each interval's seconds).
  let m = 0;
  const minutesAt = evals.map((h) => (m = h.minutes ?? m + h.seconds / 60));
  if (curve) {
    rows.push(`| ${name} | ${evals.map((h, i) => `${h.bleu.toFixed(1)} @ ${minutesAt[i].toFixed(0)}`).join(', ')} |`);
    continue;
  }
  const best = evals.reduce((a, b) => (b.bleu > a.bleu ? b : a));
  const last = evals[evals.length - 1];
  const minutes = minutesAt[minutesAt.length - 1];
  const avg = history.filter((h) => h.averaged !== undefined).pop();
  // From config.json, which fixes every shape (records/ keep no weights).
  const count = new models.Seq2Seq(config.model).numParameters();
  rows.push(
    `| ${name} | ${changes(config)} | ${(count / 1e6).toFixed(2)}M | ${last.step} (${last.epoch} ep.) | ${minutes.toFixed(0)} | ${best.bleu.toFixed(2)} @ ${best.step} | ${avg ? avg.bleu.toFixed(2) : '–'} |`,
  );
}
if (curve) {
  console.log('| run | greedy val BLEU @ training minutes, every evaluation |');
  console.log('| --- | --- |');
} else {
  console.log(
    '| run | configuration (vs multi30k-small) | parameters | steps | minutes | best greedy val BLEU | average |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
}
for (const r of rows) console.log(r);
