/**
 * `npm run bench:torchrun`: training throughput (target tokens per second) of the multi30k-small
 * preset in qkv and in python/qkv_torch/train.py under torchrun with 1 and 2 processes, on this
 * machine, in one run. All three train the same model from the same initial weights on qkv's
 * batches (qkv's planner and order, --max-tokens 4096, seed 1) of the shipped model's BPE ids of
 * Multi30K's training split; each is timed over --steps steps, first step included (setup and the
 * torch import are not). With 2 processes a step takes 2 batches, one per process (DDP's data
 * parallelism), so it is tokens per second that compare, not steps. qkv runs on the wasm backend with QKV_THREADS threads (default: every core);
 * torchrun with 1 process uses every core for its OpenMP threads, with 2 processes half each.
 * Writes its table to a new file bench/results/DATE-CPU-torchrun.md (one file per run, never overwritten).
 *   npm run bench:torchrun                        30 steps each
 *   npm run bench:torchrun -- --steps 3 --smoke   the tiny preset on 300 pairs: checks the script works
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeSplit } from '../src/cli/commands/data.ts';
import { readParallel } from '../src/cli/corpus.ts';
import { atomicWrite, readSeq2SeqShape, saveFolderWeights, saveModelDir } from '../src/folder/node.ts';
import { encodePairs, vocabularyConfig } from '../src/train/seq2seq-run.ts';
import { setBackend } from '../src/index.ts';
import { Seq2Seq } from '../src/models/seq2seq.ts';
import { manualSeed } from '../src/tensor/random.ts';
import { PRESETS } from '../src/train/presets.ts';
import { Seq2SeqTrainer } from '../src/train/trainer.ts';
import { acquireBenchLock } from './lock.ts';
import { codeVersion, cpuName, writeNewResults } from './results.ts';

acquireBenchLock();
const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const smoke = argv.includes('--smoke');
const stepsAt = argv.indexOf('--steps');
const steps = stepsAt >= 0 ? Number(argv[stepsAt + 1]) : 30;
if (!Number.isInteger(steps) || steps < 1)
  throw new Error(`--steps must be a positive integer, got ${argv[stepsAt + 1]}`);
const PYTHON = '/usr/bin/python3';
if (!existsSync(PYTHON) || spawnSync(PYTHON, ['-c', 'import torch']).status !== 0) {
  console.error(`${PYTHON} cannot import torch: install it with \`apt-get install -y python3-torch\``);
  process.exit(1);
}

const presetName = smoke ? 'tiny' : 'multi30k-small';
const preset = PRESETS.seq2seq[presetName];
const cores = availableParallelism();
const work = mkdtempSync(join(tmpdir(), 'qkv-bench-torchrun-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

// The shipped model's tokenizers (so no BPE has to be learned; one shared or separate source and
// target vocabularies, as it was trained), a fresh model of the preset's shape.
const { tokenizer, targetTokenizer } = readSeq2SeqShape(join(root, 'models/multi30k-en-de'));
const text = readParallel(join(root, 'data/multi30k'), 'train', 'en', 'de');
const n = smoke ? 300 : text.src.length;
const corpus = join(work, 'corpus');
for (const lang of ['en', 'de'] as const) {
  atomicWrite(join(corpus, `train.${lang}`), `${text[lang === 'en' ? 'src' : 'tgt'].slice(0, n).join('\n')}\n`);
}
setBackend('wasm');
manualSeed(1);
const model = new Seq2Seq({ ...preset.model, ...vocabularyConfig(tokenizer, targetTokenizer) });
const ids = { padId: tokenizer.padId, bosId: targetTokenizer.bosId, eosId: targetTokenizer.eosId };
const pairs = encodePairs(tokenizer, text.src.slice(0, n), text.tgt.slice(0, n), model.config.maxLen, targetTokenizer);
const trainer = new Seq2SeqTrainer(model, pairs, ids, preset.recipe);
const run = join(work, 'run');
saveModelDir(run, model, tokenizer, { preset: presetName, recipe: trainer.options, maxSteps: steps }, targetTokenizer);
saveFolderWeights(run, model);
atomicWrite(join(run, 'train-state.safetensors'), trainer.saveState());
const data = join(work, 'train.ids');
encodeSplit({ model: run, data: corpus, split: 'train', src: 'en', tgt: 'de', out: data, log: () => {} });

const rows: { name: string; tps: number; losses: string }[] = [];
{
  let tokens = 0;
  const losses: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) {
    const r = trainer.step();
    tokens += r.tokens;
    losses.push(r.loss);
  }
  const s = (performance.now() - t0) / 1000;
  rows.push({
    name: `qkv (wasm, ${process.env.QKV_THREADS ?? Math.min(cores, 8)} threads)`,
    tps: tokens / s,
    losses: `${losses[0].toFixed(4)} → ${losses.at(-1)!.toFixed(4)}`,
  });
  console.log(`${rows.at(-1)!.name}: ${rows.at(-1)!.tps.toFixed(0)} target tokens/s`);
}
for (const nproc of [1, 2]) {
  const threads = String(Math.max(1, Math.floor(cores / nproc)));
  const launcher = existsSync('/usr/bin/torchrun') ? ['/usr/bin/torchrun'] : [PYTHON, '-m', 'torch.distributed.run'];
  const r = spawnSync(
    launcher[0],
    [
      ...launcher.slice(1),
      '--standalone',
      '--nproc_per_node',
      String(nproc),
      '--redirects',
      '9:1',
      '--tee',
      '9:1',
      join(root, 'python/qkv_torch/train.py'),
      '--init-from',
      run,
      '--data',
      data,
      '--out',
      join(work, `torch-${nproc}`),
      '--max-steps',
      String(steps),
      '--save-every',
      String(steps),
      '--log-every',
      String(steps),
    ],
    { encoding: 'utf8', env: { ...process.env, OMP_NUM_THREADS: threads, MKL_NUM_THREADS: threads } },
  );
  const m = r.stderr.match(/trained \d+ steps in [\d.]+ s: (\d+) target tokens\/s/);
  if (r.status !== 0 || !m) throw new Error(`torchrun --nproc_per_node ${nproc} failed:\n${r.stderr.slice(-2000)}`);
  const log = readFileSync(join(work, `torch-${nproc}`, 'train-log.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { loss: number });
  rows.push({
    name: `train.py, torchrun ${nproc} process${nproc > 1 ? 'es' : ''} (gloo, ${threads} thread${threads === '1' ? '' : 's'} each)`,
    tps: Number(m[1]),
    losses: `${log[0].loss.toFixed(4)} → ${log.at(-1)!.loss.toFixed(4)}`,
  });
  console.log(`${rows.at(-1)!.name}: ${rows.at(-1)!.tps.toFixed(0)} target tokens/s`);
}

const table = [
  `## Training under torchrun (\`npm run bench:torchrun\`${smoke ? ' --smoke' : ''})`,
  '',
  `${presetName} preset, ${n} Multi30K pairs, --max-tokens ${trainer.options.maxTokens}, ${steps} steps from the same weights on qkv's batches (2 processes: 2 batches a step); ` +
    `${new Date().toISOString().slice(0, 10)}, ${codeVersion()}, ${cpuName()}, ${cores} cores, load ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')} at the end.`,
  '',
  '| trainer | target tokens/s | loss (first → last step; dropout streams differ between qkv and PyTorch) |',
  '| --- | --- | --- |',
  ...rows.map((r) => `| ${r.name} | ${r.tps.toFixed(0)} | ${r.losses} |`),
].join('\n');
if (smoke) console.log(`\n${table}\n(smoke run: no results file written)`);
else console.log(`wrote bench/${writeNewResults(`# Benchmark results\n\n${table}\n`, 'torchrun')}`); // one file per run (issue 40)
