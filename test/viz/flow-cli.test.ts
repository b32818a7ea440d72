/**
 * `qkv flow`: the JSON it prints is viz/flow.ts's textFlow for the same folder and sentence (the
 * numbers the explorer's Flow view draws), with --stages, --full, --dims, --top and --target; bad
 * flags are one line naming them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { flow } from '../../src/cli/commands/flow.ts';
import { readEncoderDir, readLm, readSeq2Seq } from '../../src/folder/node.ts';
import { textFlow } from '../../src/viz/flow.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DE = `${ROOT}models/multi30k-en-de`;
const GPT = `${ROOT}models/gpt-multi30k-char`;
const SENTENCE = 'A little girl climbs a tree.';
const quiet = () => {};

function qkv(...args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', `${ROOT}src/cli/main.ts`, 'flow', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
}

test('flow() is textFlow on the folder: every stage, the text, the full vectors asked for', () => {
  const { model, tokenizer, targetTokenizer } = readSeq2Seq(DE);
  const want = textFlow({ kind: 'seq2seq', model, tokenizer, targetTokenizer }, SENTENCE, { dims: 8, top: 3 });
  const logs: string[] = [];
  const got = flow({ model: DE, sentence: SENTENCE, dims: 8, top: 3, full: ['enc.0.attn'], log: (l) => logs.push(l) });
  assert.deepEqual(got, { ...want.flow, text: want.text, full: { 'enc.0.attn': want.vectors('enc.0.attn') } });
  assert.deepEqual(logs, [`"${SENTENCE}" → decoder fed "${want.text.target}" (the greedy translation): 78 stages`]);
  const lm = readLm(GPT);
  const g = textFlow({ kind: 'gpt', lm }, 'A dog', {});
  const only = flow({ model: GPT, sentence: 'A dog', stages: ['h.1.attn', 'logits'], log: quiet });
  assert.deepEqual(
    only.stages,
    g.flow.stages.filter((s) => s.id === 'h.1.attn' || s.id === 'logits'),
  );
  assert.equal(only.full, undefined);
  const all = flow({ model: GPT, sentence: 'A dog', stages: ['pos'], full: ['all'], log: quiet });
  assert.deepEqual(all.full, { pos: g.vectors('pos') });
});

test('the command line prints the same JSON; bad flags and stages are one line', () => {
  const r = qkv(
    '--model',
    DE,
    SENTENCE,
    '--target',
    'Ein kleines Mädchen',
    '--stages',
    'dec.3.cross,softmax',
    '--top',
    '2',
  );
  assert.equal(r.status, 0, r.stderr);
  const printed = JSON.parse(r.stdout);
  const want = flow({
    model: DE,
    sentence: SENTENCE,
    target: 'Ein kleines Mädchen',
    stages: ['dec.3.cross', 'softmax'],
    top: 2,
    log: quiet,
  });
  assert.deepEqual(printed, JSON.parse(JSON.stringify(want)));
  assert.equal(printed.text.translated, false);
  assert.match(r.stderr, /→ decoder fed "Ein kleines Mädchen": 2 stages/);
  const bad = qkv('--model', DE, SENTENCE, '--stages', 'enc.9.attn');
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /^qkv: --stages: no stage 'enc\.9\.attn' in this model's flow \(stages: src\.embed, /);
  const dims = qkv('--model', DE, SENTENCE, '--dims', '0');
  assert.equal(dims.status, 1);
  assert.match(dims.stderr, /--dims must be a positive integer, got '0'/);
  const gpt = qkv('--model', GPT, 'A dog', '--target', 'x');
  assert.equal(gpt.status, 1);
  assert.equal(gpt.stderr, 'qkv: flow: a GPT has no target: give the prompt alone\n');
});

test('flow() on a BERT-family folder is textFlow on it: the encoder stack, the masked-LM logits', () => {
  const dir = `${ROOT}test/fixtures/hf-encoders/roberta-mlm`;
  const want = textFlow({ kind: 'encoder', encoder: readEncoderDir(dir) }, 'Two <mask> play.', { dims: 4 });
  const got = flow({ model: dir, sentence: 'Two <mask> play.', dims: 4, log: quiet });
  assert.deepEqual(got, { ...want.flow, text: want.text });
  assert.equal(got.model, 'encoder');
  assert.deepEqual([got.axes.tokens!.tokens[0], got.axes.tokens!.tokens.at(-1)], ['<s>', '</s>']);
  assert.deepEqual(got.stages.at(-1)!.id, 'softmax');
});
