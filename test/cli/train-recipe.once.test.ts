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

const work = tempDir('qkv-recipe-');
const data = join(work, 'data');
writeCorpus(data, [['train', 0, 200], ['val', 200, 210]], ['en', 'de', 'fr']);
const small = ['--preset', 'tiny', '--data', data, '--bleu-sentences', '4'];

test('recipe flags reach config.json and tokenizer.json; --direction en-fr; --resume keeps the recipe and refuses to change it', () => {
  const out = join(work, 'flags');
  const r = qkv(['train', ...small, '--out', out, '--max-steps', '2', '--eval-every', '2', '--direction', 'en-fr',
    '--d-model', '24', '--heads', '3', '--encoder-layers', '2', '--decoder-layers', '1', '--ffn', '40', '--dropout', '0.3',
    '--attention-dropout', '0', '--activation-dropout', '0.1', '--label-smoothing', '0.2', '--weight-decay', '0.0001',
    '--accum', '2', '--bpe-size', '300', '--split-punctuation', '--pre-norm']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /joint EN\+FR BPE vocabulary of 300 \(punctuation split from words\)/);
  assert.match(r.stderr, /2 batches per step/);
  const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
  assert.deepEqual(
    { ...config.model, vocabSize: undefined },
    { vocabSize: undefined, dModel: 24, nhead: 3, numEncoderLayers: 2, numDecoderLayers: 1, dimFeedforward: 40, dropout: 0.3, attentionDropout: 0, activationDropout: 0.1, activation: 'relu', normFirst: true, maxLen: 256, padId: 0 },
  );
  assert.equal(config.model.vocabSize, 300);
  assert.equal(config.training.direction, 'en-fr');
  assert.deepEqual(config.training.bpe, { vocabSize: 300, splitPunctuation: true });
  for (const [k, v] of Object.entries({ labelSmoothing: 0.2, weightDecay: 0.0001, accum: 2 })) assert.equal(config.training.recipe[k], v, k);
  assert.equal(JSON.parse(readFileSync(join(out, 'tokenizer.json'), 'utf8')).pre_tokenizer.type, 'Sequence');

  const fixed = qkv(['train', ...small, '--out', out, '--resume', '--dropout', '0.1']);
  assert.equal(fixed.status, 1);
  assert.match(fixed.stderr, /^qkv: --resume: --dropout is fixed when a run starts \(it is in .*config\.json\); leave it out to continue the run\n$/);
  const differs = qkv(['train', ...small, '--out', out, '--resume', '--accum', '3']);
  assert.equal(differs.status, 1);
  assert.match(differs.stderr, /^qkv: --resume: the run was started with accum 2, the flag says 3; leave it out to continue the run\n$/);
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
  assert.equal(qkv(['eval', '--model', out, '--data', fr, '--split', 'val', '--beam', '1', '--direction', 'en-fr']).stdout, scored.stdout);
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
    [['--direction', 'en'], /--direction must be SRC-TGT with two different language codes \(e\.g\. en-de, en-fr\), got 'en'/],
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
  const r = qkv(['train', ...small, '--out', out, '--max-steps', '40', '--eval-every', '2', '--save-every', '2', '--lr-factor', '1e-9', '--patience', '2', '--average', 'best', '--keep', '2']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /early stop at step 6: val BLEU has not improved for 2 evaluations/);
  const history = JSON.parse(readFileSync(join(out, 'history.json'), 'utf8')) as { step: number; bleu: number; averaged?: number }[];
  const evals = history.filter((h) => h.averaged === undefined);
  assert.deepEqual(evals.map((h) => h.step), [2, 4, 6]);
  const best = readdirSync(join(out, 'checkpoints')).filter((f) => f.startsWith('best-')).sort();
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
  assert.ok(saved >= history[0].minutes && saved < history[0].minutes + 0.01, `the state written just after the evaluation counts its minutes: ${saved} vs ${history[0].minutes}`);
  // A state that has trained 1,000 minutes since its last evaluation (a run killed between an
  // evaluation and the next one, as in a long run): the next evaluation counts from the state.
  writeFileSync(statePath, writeSafetensors(state.tensors, { metadata: { ...state.metadata, trainingMinutes: '1000' } }));
  const resumed = qkv(['train', ...small, '--out', out, '--resume', '--max-steps', '3', '--eval-every', '3']);
  assert.equal(resumed.status, 0, resumed.stderr);
  const after = JSON.parse(readFileSync(join(out, 'history.json'), 'utf8')) as { step: number; minutes: number; seconds: number }[];
  assert.equal(after[1].step, 3);
  assert.ok(after[1].minutes >= 1000 && after[1].minutes < 1000 + after[1].seconds / 60 + 1e-9, `step 3 at ${after[1].minutes} minutes`);
});
