import { test } from 'node:test';
import assert from 'node:assert/strict';
import { manualSeed, models } from '../../src/index.ts';
import { CharTokenizer } from '../../src/text/chars.ts';
import { BpeTokenizer } from '../../src/text/bpe.ts';
import { LmTrainer, evaluateLm } from '../../src/train/lm.ts';
import { decodeLines, encodeLines } from '../../src/text/lines.ts';

const lines = [
  'a cat sits on the mat.',
  'a dog runs in the park.',
  'two cats play with a ball.',
  'a man rides a red bike.',
  'the dog sits on the grass.',
  'a woman walks in the park.',
  'two men play with a dog.',
  'a girl rides a bike.',
];
const tok = CharTokenizer.learn(lines);
const NL = tok.tokenToId('\n')!;
const data = encodeLines(tok, lines.concat(lines, lines, lines), NL);
const cfg = (dropout: number): models.GPTConfig => ({
  ...models.GPT_TINY,
  vocabSize: tok.vocabSize,
  blockSize: 32,
  nEmbd: 32,
  dropout,
});

function fresh(dropout: number, seed = 11) {
  manualSeed(seed);
  return new LmTrainer(new models.GPT(cfg(dropout)), data, {
    batchSize: 4,
    lr: 1e-2,
    minLr: 1e-3,
    warmup: 5,
    decaySteps: 60,
    seed: 3,
  });
}

test('CharTokenizer: one id per code point, <unk> for the rest, round trip and JSON round trip', () => {
  const t = CharTokenizer.learn(['héllo wörld 🙂']);
  assert.equal(t.vocabSize, 1 + 11, '<unk>, \\n and 10 distinct characters');
  assert.equal(t.decode(t.encode('wörld 🙂\nhéllo')), 'wörld 🙂\nhéllo');
  assert.equal(t.decode(t.encode('hello')), 'h<unk>llo', "'e' was never seen");
  assert.deepEqual(t.encode('xé'), [t.unkId, t.tokenToId('é')]);
  const back = CharTokenizer.fromJSON(JSON.stringify(t));
  assert.deepEqual(back.encode('héllo 🙂'), t.encode('héllo 🙂'));
  assert.throws(() => CharTokenizer.fromJSON({ type: 'BPE' }), /not a qkv-chars tokenizer/);
});

test('encodeLines / decodeLines: each line ends with the separator, which decodes as a newline (char and BPE)', () => {
  assert.equal(decodeLines(tok, [...encodeLines(tok, ['a cat', 'a dog'], NL)], NL), 'a cat\na dog\n');
  const bpe = BpeTokenizer.learn(lines, { vocabSize: 60 });
  const ids = encodeLines(bpe, ['a cat sits', 'two dogs'], bpe.eosId);
  assert.equal(ids.filter((i) => i === bpe.eosId).length, 2);
  assert.equal(decodeLines(bpe, [...ids], bpe.eosId), 'a cat sits\ntwo dogs\n');
});

test('training lowers the loss on a small corpus (training batches and the evaluation windows)', () => {
  const t = fresh(0);
  const before = evaluateLm(t.model, data, { maxTokens: 256 });
  const losses: number[] = [];
  for (let i = 0; i < 60; i++) losses.push(t.step().loss);
  const after = evaluateLm(t.model, data, { maxTokens: 256 });
  assert.ok(
    t.model.namedModules().every(([, m]) => m.training),
    'evaluateLm restores train mode',
  );
  assert.ok(before > 3, `starts near ln(${tok.vocabSize}) = ${Math.log(tok.vocabSize).toFixed(2)}: ${before}`);
  assert.ok(after < before * 0.6, `eval loss ${before.toFixed(3)} -> ${after.toFixed(3)}`);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  assert.ok(mean(losses.slice(-10)) < mean(losses.slice(0, 10)) * 0.6, 'training loss falls');
});

test('a saved run resumes with the same losses (dropout on, AdamW moments, schedule)', () => {
  const full = fresh(0.1);
  const losses = Array.from({ length: 8 }, () => full.step().loss);
  const first = fresh(0.1);
  for (let i = 0; i < 5; i++) first.step();
  const saved = first.saveState();
  // A new process: other random weights and another dropout stream until the state is loaded.
  const resumed = fresh(0.1, 999);
  resumed.loadState(saved);
  assert.equal(resumed.position.step, 5);
  const rest = Array.from({ length: 3 }, () => resumed.step().loss);
  assert.deepEqual(rest, losses.slice(5));
  const other = new LmTrainer(new models.GPT(cfg(0.1)), data, { batchSize: 2, seed: 3 });
  assert.throws(() => other.loadState(saved), /saved batchSize 4 differs from 2/);
  const shorter = new LmTrainer(new models.GPT(cfg(0.1)), data.subarray(0, 200), { batchSize: 4, seed: 3 });
  assert.throws(() => shorter.loadState(saved), /trained on a corpus of \d+ tokens, this one has 200/);
});

test('the schedule warms up linearly, then decays along a cosine to minLr; weight decay skips biases and LayerNorm', () => {
  const t = fresh(0);
  assert.equal(t.lrAt(1), 1e-2 / 5);
  assert.equal(t.lrAt(5), 1e-2);
  assert.ok(Math.abs(t.lrAt(5 + 55 / 2 + 1) - (1e-2 + 1e-3) / 2) < 1e-12, 'half way down the cosine');
  assert.equal(t.lrAt(61), 1e-3);
  assert.equal(t.lrAt(500), 1e-3);
  assert.ok(t.decayed.params.every((p) => p.ndim === 2) && t.undecayed.params.every((p) => p.ndim === 1));
  assert.equal(t.decayed.weightDecay, 0.1);
  assert.equal(t.undecayed.weightDecay, 0);
  assert.equal(t.decayed.params.length + t.undecayed.params.length, t.model.parameters().length);
});

test('windows are a function of (seed, step); a corpus shorter than one window is named', () => {
  const t = fresh(0);
  assert.deepEqual(t.batch(3).x.dataSync(), fresh(0).batch(3).x.dataSync());
  assert.notDeepEqual(t.batch(3).x.dataSync(), t.batch(4).x.dataSync());
  const { x, y } = t.batch(1);
  assert.deepEqual(
    [...y.dataSync()].slice(0, 31),
    [...x.dataSync()].slice(1, 32),
    'targets are the inputs shifted by one',
  );
  assert.throws(
    () => new LmTrainer(t.model, data.subarray(0, 20)),
    /the corpus has 20 tokens, fewer than one window of seqLen \+ 1 = 33/,
  );
});
