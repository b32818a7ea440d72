/**
 * `qkv train`'s recipe options end to end (issue 12): the flags reach config.json and tokenizer.json,
 * a resumed run keeps its recipe, early stopping on val BLEU, and averaging of the best checkpoints.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tempDir } from '../e2e/tiny-model.ts';
import { join } from 'node:path';
import { readSafetensors, writeSafetensors } from '../../src/io/index.ts';
import { qkv, writeCorpus } from '../helpers/cli.ts';
import { noamLr } from '../../src/optim/schedule.ts';

const work = tempDir('qkv-recipe-');
const data = join(work, 'data');
writeCorpus(
  data,
  [
    ['train', 0, 200],
    ['val', 200, 210],
  ],
  ['en', 'de', 'fr'],
);
const small = ['--preset', 'tiny', '--data', data, '--bleu-sentences', '4'];

test('recipe flags reach config.json and tokenizer.json; --direction en-fr; --resume keeps the recipe and refuses to change it', () => {
  const out = join(work, 'flags');
  const r = qkv([
    'train',
    ...small,
    '--out',
    out,
    '--max-steps',
    '2',
    '--eval-every',
    '2',
    '--direction',
    'en-fr',
    '--d-model',
    '24',
    '--heads',
    '3',
    '--encoder-layers',
    '2',
    '--decoder-layers',
    '1',
    '--ffn',
    '40',
    '--dropout',
    '0.3',
    '--attention-dropout',
    '0',
    '--activation-dropout',
    '0.1',
    '--label-smoothing',
    '0.2',
    '--weight-decay',
    '0.0001',
    '--accum',
    '2',
    '--bpe-size',
    '300',
    '--split-punctuation',
    '--pre-norm',
  ]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /joint EN\+FR BPE vocabulary of 300 \(punctuation split from words\)/);
  assert.match(r.stderr, /2 batches per step/);
  const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
  assert.deepEqual(
    { ...config.model, vocabSize: undefined },
    {
      vocabSize: undefined,
      dModel: 24,
      nhead: 3,
      numEncoderLayers: 2,
      numDecoderLayers: 1,
      dimFeedforward: 40,
      dropout: 0.3,
      attentionDropout: 0,
      activationDropout: 0.1,
      activation: 'relu',
      normFirst: true,
      maxLen: 256,
      padId: 0,
    },
  );
  assert.equal(config.model.vocabSize, 300);
  assert.equal(config.training.direction, 'en-fr');
  assert.deepEqual(config.training.bpe, { vocabSize: 300, splitPunctuation: true });
  for (const [k, v] of Object.entries({ labelSmoothing: 0.2, weightDecay: 0.0001, accum: 2 }))
    assert.equal(config.training.recipe[k], v, k);
  assert.equal(JSON.parse(readFileSync(join(out, 'tokenizer.json'), 'utf8')).pre_tokenizer.type, 'Sequence');

  const fixed = qkv(['train', ...small, '--out', out, '--resume', '--dropout', '0.1']);
  assert.equal(fixed.status, 1);
  assert.match(
    fixed.stderr,
    /^qkv: --resume: --dropout is fixed when a run starts \(it is in .*config\.json\); leave it out to continue the run\n$/,
  );
  const differs = qkv(['train', ...small, '--out', out, '--resume', '--accum', '3']);
  assert.equal(differs.status, 1);
  assert.match(
    differs.stderr,
    /^qkv: --resume: the run was started with accum 2, the flag says 3; leave it out to continue the run\n$/,
  );
  // No recipe flags: the saved plan (accum 2, en-fr) goes on.
  const resumed = qkv(['train', ...small, '--out', out, '--resume', '--max-steps', '3', '--eval-every', '3']);
  assert.equal(resumed.status, 0, resumed.stderr);
  assert.match(resumed.stderr, /resumed at step 2[\s\S]*2 batches per step[\s\S]*step 3: /);

  // qkv eval scores the model's own direction unless told otherwise: a folder with French and no
  // German references works by default and fails, naming val.de, with --tgt de.
  const fr = join(work, 'fr-only');
  mkdirSync(fr);
  for (const lang of ['en', 'fr']) writeFileSync(join(fr, `val.${lang}`), readFileSync(join(data, `val.${lang}`)));
  const scored = qkv(['eval', '--model', out, '--data', fr, '--split', 'val', '--beam', '1']);
  assert.equal(scored.status, 0, scored.stderr);
  assert.match(scored.stdout, /^BLEU = /);
  assert.equal(
    qkv(['eval', '--model', out, '--data', fr, '--split', 'val', '--beam', '1', '--direction', 'en-fr']).stdout,
    scored.stdout,
  );
  const german = qkv(['eval', '--model', out, '--data', fr, '--split', 'val', '--beam', '1', '--tgt', 'de']);
  assert.equal(german.status, 1);
  assert.match(german.stderr, /^qkv: corpus file not found: .*fr-only\/val\.de /);
  const both = qkv(['eval', '--model', out, '--data', fr, '--split', 'val', '--direction', 'en-fr', '--tgt', 'fr']);
  assert.equal(both.status, 1);
  assert.match(both.stderr, /^qkv: --direction and --src\/--tgt both given: pass one\n$/);
});

test('bad recipe flags: one line naming the flag, what it expects and what came', () => {
  for (const [args, msg] of [
    [['--dropout', '1'], /--dropout must be a number in \[0, 1\), got '1'/],
    [
      ['--direction', 'en'],
      /--direction must be SRC-TGT with two different language codes \(e\.g\. en-de, en-fr\), got 'en'/,
    ],
    [['--average', 'median'], /--average must be one of last, best, got 'median'/],
    [['--d-model', '30', '--heads', '4'], /--d-model 30 is not divisible by --heads 4/],
  ] as const) {
    const r = qkv(['train', ...small, '--out', join(work, `bad-${args[0]}`), '--max-steps', '1', ...args]);
    assert.equal(r.status, 1, args.join(' '));
    assert.match(r.stderr, msg);
    assert.equal(r.stderr.trim().split('\n').length, r.stderr.includes('(run with --help') ? 2 : 1, r.stderr);
  }
});

test('--patience stops when val BLEU stops improving; --average best keeps and averages the best N evaluations', () => {
  const out = join(work, 'patience');
  // A learning rate of ~0: val BLEU cannot improve after the first evaluation.
  const r = qkv([
    'train',
    ...small,
    '--out',
    out,
    '--max-steps',
    '40',
    '--eval-every',
    '2',
    '--save-every',
    '2',
    '--lr-factor',
    '1e-9',
    '--patience',
    '2',
    '--average',
    'best',
    '--keep',
    '2',
  ]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /early stop at step 6: val BLEU has not improved for 2 evaluations/);
  const history = JSON.parse(readFileSync(join(out, 'history.json'), 'utf8')) as {
    step: number;
    bleu: number;
    averaged?: number;
  }[];
  const evals = history.filter((h) => h.averaged === undefined);
  assert.deepEqual(
    evals.map((h) => h.step),
    [2, 4, 6],
  );
  const best = readdirSync(join(out, 'checkpoints'))
    .filter((f) => f.startsWith('best-'))
    .sort();
  // Equal BLEU: the later evaluations rank first.
  assert.deepEqual(best, ['best-0000004.safetensors', 'best-0000006.safetensors']);
  assert.match(r.stderr, /average of the best 2 checkpoints: val BLEU/);
  assert.equal(history[history.length - 1].averaged, 2);
  assert.ok(!existsSync(join(out, 'checkpoints', 'best-0000002.safetensors')));
  // Resuming a stopped run stops at once.
  const again = qkv(['train', ...small, '--out', out, '--resume']);
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stderr, /early stop: val BLEU has not improved for 2 evaluations/);
});

test('training minutes go on across --resume from the state, not from the last evaluation', () => {
  const out = join(work, 'minutes');
  const first = qkv(['train', ...small, '--out', out, '--max-steps', '2', '--eval-every', '2', '--save-every', '2']);
  assert.equal(first.status, 0, first.stderr);
  const statePath = join(out, 'train-state.safetensors');
  const state = readSafetensors(readFileSync(statePath));
  const history = JSON.parse(readFileSync(join(out, 'history.json'), 'utf8')) as { step: number; minutes: number }[];
  const saved = Number(JSON.parse(state.metadata.trainingMinutes));
  assert.ok(
    saved >= history[0].minutes && saved < history[0].minutes + 0.01,
    `the state written just after the evaluation counts its minutes: ${saved} vs ${history[0].minutes}`,
  );
  // A state that has trained 1,000 minutes since its last evaluation (a run killed between an
  // evaluation and the next one, as in a long run): the next evaluation counts from the state.
  writeFileSync(
    statePath,
    writeSafetensors(state.tensors, { metadata: { ...state.metadata, trainingMinutes: '1000' } }),
  );
  const resumed = qkv(['train', ...small, '--out', out, '--resume', '--max-steps', '3', '--eval-every', '3']);
  assert.equal(resumed.status, 0, resumed.stderr);
  const after = JSON.parse(readFileSync(join(out, 'history.json'), 'utf8')) as {
    step: number;
    minutes: number;
    seconds: number;
  }[];
  assert.equal(after[1].step, 3);
  assert.ok(
    after[1].minutes >= 1000 && after[1].minutes < 1000 + after[1].seconds / 60 + 1e-9,
    `step 3 at ${after[1].minutes} minutes`,
  );
});

test('--init-from: a new run from a model folder (weights, shape, tokenizer, recipe, history to --init-step), the schedule from --init-step, a fresh Adam; bad combinations refused', () => {
  const from = join(work, 'init-from');
  const r = qkv([
    'train',
    ...small,
    '--out',
    from,
    '--max-steps',
    '6',
    '--eval-every',
    '3',
    '--save-every',
    '3',
    '--d-model',
    '24',
    '--heads',
    '3',
    '--bpe-size',
    '300',
    '--split-punctuation',
    '--label-smoothing',
    '0.2',
  ]);
  assert.equal(r.status, 0, r.stderr);
  const out = join(work, 'init-to');
  // No --preset and no recipe flags: the folder's recipe (tiny, label smoothing 0.2, 4 BLEU sentences).
  const s = qkv([
    'train',
    '--init-from',
    from,
    '--init-step',
    '6',
    '--data',
    data,
    '--out',
    out,
    '--max-steps',
    '7',
    '--eval-every',
    '7',
    '--save-every',
    '1',
  ]);
  assert.equal(s.status, 0, s.stderr);
  assert.match(
    s.stderr,
    /starting from .*init-from at step 6 \(its weights, shape and tokenizers; a fresh optimiser\), with its 2 evaluations to there/,
  );
  const before = JSON.parse(readFileSync(join(from, 'config.json'), 'utf8'));
  const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
  assert.deepEqual(config.model, before.model);
  assert.deepEqual(
    { ...config.training, maxSteps: 0, evalEvery: 0, saveEvery: 0, init: undefined },
    { ...before.training, data, maxSteps: 0, evalEvery: 0, saveEvery: 0, init: undefined },
  );
  assert.deepEqual(config.training.init, { from, step: 6 });
  assert.equal(readFileSync(join(out, 'tokenizer.json'), 'utf8'), readFileSync(join(from, 'tokenizer.json'), 'utf8'));
  const history = JSON.parse(readFileSync(join(out, 'history.json'), 'utf8')) as { step: number; minutes: number }[];
  const old = (
    JSON.parse(readFileSync(join(from, 'history.json'), 'utf8')) as { step: number; averaged?: number }[]
  ).filter((h) => h.averaged === undefined);
  assert.deepEqual(history.slice(0, 2), old);
  assert.equal(history[2].step, 7);
  assert.ok(history[2].minutes > history[1].minutes, "training minutes go on from the folder's");

  // Step 7 from the folder's weights: Adam's first update from empty moments is lr·g/|g|, so every
  // parameter with a gradient moves by exactly the schedule's rate at step 7 (not at step 1).
  const lr = noamLr(7, 24, 20, 1);
  const w0 = readSafetensors(readFileSync(join(from, 'model.safetensors'))).tensors;
  const w1 = readSafetensors(readFileSync(join(out, 'checkpoints', 'step-0000007.safetensors'))).tensors;
  let moved = 0;
  let exact = 0;
  for (const [name, t] of Object.entries(w0)) {
    const a = t.dataSync<Float32Array>();
    const b = w1[name].dataSync<Float32Array>();
    for (let i = 0; i < a.length; i++) {
      const d = Math.abs(b[i] - a[i]);
      if (d === 0) continue;
      moved++;
      assert.ok(d <= lr * 1.001, `${name}[${i}] moved ${d}, more than lr ${lr}`);
      if (d >= lr * 0.999) exact++;
    }
  }
  assert.ok(moved > 10000 && exact >= 0.99 * moved, `${exact} of ${moved} moved parameters moved by lr ${lr}`);

  // The run resumes as any other, and keeps where it started.
  const resumed = qkv(['train', '--out', out, '--resume', '--max-steps', '8', '--eval-every', '8']);
  assert.equal(resumed.status, 0, resumed.stderr);
  assert.match(resumed.stderr, /resumed at step 7/);
  assert.deepEqual(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).training.init, { from, step: 6 });

  const badHistory = join(work, 'init-bad-history');
  mkdirSync(badHistory);
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors'])
    writeFileSync(join(badHistory, f), readFileSync(join(from, f)));
  writeFileSync(join(badHistory, 'history.json'), '{"step": 3}');
  for (const [args, msg] of [
    [
      ['--init-from', from, '--resume'],
      /^qkv: --init-from starts a new run from a model folder and --resume continues the run in --out: pass one\n$/,
    ],
    [
      ['--init-step', '3'],
      /^qkv: --init-step needs --init-from \(the model folder whose weights are from that step\)\n$/,
    ],
    [
      ['--init-from', from, '--d-model', '32'],
      /^qkv: --init-from: --d-model comes from .*init-from\/config\.json \(the model's shape and vocabulary\); leave it out\n$/,
    ],
    [['--init-from', from, '--split-punctuation'], /^qkv: --init-from: --split-punctuation comes from /],
    [
      ['--init-from', from, '--init-step', '6', '--max-steps', '6'],
      /^qkv: --max-steps 6 must be above --init-step 6 \(the step the run starts at\)\n$/,
    ],
    [
      ['--init-from', from, '--direction', 'en-fr'],
      /^qkv: --init-from: .*init-from translates en-de \(its config\.json\), --direction says en-fr\n$/,
    ],
    [['--init-from', join(work, 'nowhere')], /^qkv: model folder not found: .*nowhere\n$/],
    [
      ['--init-from', badHistory, '--init-step', '3'],
      /^qkv: .*init-bad-history\/history\.json: expected a list of evaluations/,
    ],
  ] as const) {
    const bad = qkv(['train', '--data', data, '--out', join(work, 'init-bad'), '--max-steps', '9', ...args]);
    assert.equal(bad.status, 1, `${args.join(' ')}: ${bad.stderr}`);
    assert.match(bad.stderr, msg, args.join(' '));
  }
  const same = qkv(['train', '--init-from', from, '--data', data, '--out', from, '--max-steps', '9']);
  assert.equal(same.status, 1);
  assert.match(
    same.stderr,
    /^qkv: --init-from and --out are the same folder \(.*init-from\): the run writes to --out, choose another\n$/,
  );
});
