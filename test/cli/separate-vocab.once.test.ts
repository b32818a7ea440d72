/**
 * `qkv train --separate-vocab` (issue 12: joint vs separate vocabularies) end to end: one BPE
 * vocabulary per language, the source's in tokenizer.json and the target's in
 * target_tokenizer.json, each learned on its own side; translate, eval, attention and export read
 * both; --resume keeps them (the explorer with such a model: test/e2e/explorer.test.ts; the torchrun
 * bridge: test/python/).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { greedy } from '../../src/decode/search.ts';
import { loadModelDir } from '../../src/cli/files.ts';
import { encodeLines, translateIds } from '../../src/decode/batch.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { corpusBleu } from '../../src/text/bleu.ts';
import { translateWithAttention } from '../../src/viz/attention-data.ts';
import { multi30kLines, qkv, writeCorpus } from '../helpers/cli.ts';

const work = mkdtempSync(join(tmpdir(), 'qkv-sepvocab-'));
const data = join(work, 'data');
writeCorpus(data, [
  ['train', 0, 300],
  ['val', 300, 320],
  ['test_2016_flickr', 320, 340],
]);
const [en, de] = [multi30kLines('train.en.gz'), multi30kLines('train.de.gz')];
const out = join(work, 'run');
const sentences = ['A man is riding a bike.', 'Two dogs play in the snow.'];

test('qkv train --separate-vocab: one vocabulary per language, each learned on its own side, and a target table in the weights', () => {
  const r = qkv([
    'train',
    '--preset',
    'tiny',
    '--out',
    out,
    '--data',
    data,
    '--separate-vocab',
    '--bpe-size',
    '300',
    '--max-steps',
    '6',
    '--save-every',
    '3',
    '--eval-every',
    '6',
    '--bleu-sentences',
    '5',
  ]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /learning separate EN and DE BPE vocabularies of 300 each/);
  const src = JSON.parse(readFileSync(join(out, 'tokenizer.json'), 'utf8')).model.vocab as Record<string, number>;
  const tgt = JSON.parse(readFileSync(join(out, 'target_tokenizer.json'), 'utf8')).model.vocab as Record<
    string,
    number
  >;
  // "▁the" and "▁ein" are among the most frequent words of each side, and absent from the other.
  assert.ok('▁the' in src && !('▁the' in tgt), 'English words in the source vocabulary only');
  assert.ok('▁ein' in tgt && !('▁ein' in src), 'German words in the target vocabulary only');
  // Both are Hugging Face tokenizer.json files: @huggingface/tokenizers encodes as qkv does.
  const { tokenizer, targetTokenizer } = loadModelDir(out);
  for (const [file, tok, text] of [
    ['tokenizer.json', tokenizer, en.slice(28900, 28950)],
    ['target_tokenizer.json', targetTokenizer, de.slice(28900, 28950)],
  ] as const) {
    const hf = new HfTokenizer(JSON.parse(readFileSync(join(out, file), 'utf8')), {});
    for (const line of text) assert.deepEqual(hf.encode(line).ids, tok.encode(line), `${file}: ${line}`);
  }
  const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
  assert.equal(config.model.vocabSize, Object.keys(src).length);
  assert.equal(config.model.tgtVocabSize, Object.keys(tgt).length);
  assert.equal(config.training.bpe.separate, true);
  const w = readSafetensors(readFileSync(join(out, 'model.safetensors'))).tensors;
  assert.deepEqual(w['embedding.weight'].shape, [config.model.vocabSize, 32]);
  assert.deepEqual(w['tgtEmbedding.weight'].shape, [config.model.tgtVocabSize, 32]);
  assert.match(
    r.stderr,
    new RegExp(`vocabularies ${config.model.vocabSize} \\(en\\) and ${config.model.tgtVocabSize} \\(de\\)`),
  );
  // --resume: the vocabulary choice is fixed; the run continues with both tokenizers unchanged.
  const tgtBefore = readFileSync(join(out, 'target_tokenizer.json'), 'utf8');
  const fixed = qkv(['train', '--out', out, '--data', data, '--resume', '--separate-vocab']);
  assert.equal(fixed.status, 1);
  assert.match(fixed.stderr, /--resume: --separate-vocab is fixed when a run starts/);
  const resumed = qkv([
    'train',
    '--out',
    out,
    '--data',
    data,
    '--resume',
    '--max-steps',
    '9',
    '--save-every',
    '3',
    '--eval-every',
    '9',
    '--bleu-sentences',
    '5',
  ]);
  assert.equal(resumed.status, 0, resumed.stderr);
  assert.match(resumed.stderr, /resumed at step 6/);
  assert.equal(readFileSync(join(out, 'target_tokenizer.json'), 'utf8'), tgtBefore);
});

test('qkv translate, eval and attention decode with the target vocabulary: the output equals greedy search decoded by target_tokenizer.json', () => {
  const { model, tokenizer, targetTokenizer } = loadModelDir(out);
  assert.notEqual(targetTokenizer, tokenizer);
  const want = sentences.map((s) => {
    const ids = tokenizer.encode(s);
    const r = greedy(model, new Tensor(Int32Array.from(ids), [1, ids.length], 'int32'), {
      bosId: targetTokenizer.bosId,
      eosId: targetTokenizer.eosId,
    });
    return targetTokenizer.decode(r.tokens[0]);
  });
  // Decoding the same ids with the source tokenizer would give other text: the test can tell them apart.
  const wrong = sentences.map((s) => {
    const ids = tokenizer.encode(s);
    return tokenizer.decode(
      greedy(model, new Tensor(Int32Array.from(ids), [1, ids.length], 'int32'), {
        bosId: targetTokenizer.bosId,
        eosId: targetTokenizer.eosId,
      }).tokens[0],
    );
  });
  assert.notDeepEqual(wrong, want);
  const t = qkv(['translate', '--model', out, '--beam', '1'], `${sentences.join('\n')}\n`);
  assert.equal(t.status, 0, t.stderr);
  assert.equal(t.stdout, want.map((l) => `${l}\n`).join(''));
  // eval: BLEU of those translations against the German references.
  const hypsFile = join(work, 'hyps.txt');
  const e = qkv(['eval', '--model', out, '--data', data, '--beam', '2', '--output', hypsFile]);
  assert.equal(e.status, 0, e.stderr);
  const hyps = readFileSync(hypsFile, 'utf8').split('\n').slice(0, -1);
  const srcLines = readFileSync(join(data, 'test_2016_flickr.en'), 'utf8').split('\n').slice(0, -1);
  assert.deepEqual(
    hyps,
    translateIds(model, targetTokenizer, encodeLines(model, tokenizer, srcLines).ids, { beam: 2, alpha: 0.6 }),
  );
  const refs = readFileSync(join(data, 'test_2016_flickr.de'), 'utf8').split('\n').slice(0, -1);
  assert.ok(e.stdout.startsWith(`${corpusBleu(hyps, refs).toString()}\n`), e.stdout);
  // attention: source tokens from the source vocabulary, target tokens from the target's.
  const a = translateWithAttention(model, tokenizer, sentences[0], { targetTokenizer });
  assert.equal(a.translation, want[0]);
  assert.deepEqual(
    a.srcTokens,
    tokenizer.encode(sentences[0]).map((id) => tokenizer.idToToken(id)),
  );
  assert.deepEqual(
    a.outTokens,
    a.outIds.map((id) => targetTokenizer.idToToken(id)),
  );
  assert.throws(
    () => translateWithAttention(model, tokenizer, sentences[0]),
    /a model with separate vocabularies needs options\.targetTokenizer/,
  );
  const svg = join(work, 'a.svg');
  const c = qkv(['attention', sentences[0], '--model', out, '--out', svg]);
  assert.equal(c.status, 0, c.stderr);
  assert.ok(c.stderr.includes(`→ "${want[0]}"`), c.stderr);
  // info names both vocabularies.
  const i = qkv(['info', '--model', out]);
  assert.equal(i.status, 0, i.stderr);
  const info = JSON.parse(i.stdout);
  assert.deepEqual([info.vocabulary, info.targetVocabulary], [tokenizer.vocabSize, targetTokenizer.vocabSize]);
});

test('qkv export copies target_tokenizer.json; the fp32 copy translates the same', () => {
  const exported = join(work, 'exported');
  const r = qkv(['export', '--model', out, '--out', exported, '--dtype', 'f32']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(
    readFileSync(join(exported, 'target_tokenizer.json'), 'utf8'),
    readFileSync(join(out, 'target_tokenizer.json'), 'utf8'),
  );
  const a = qkv(['translate', '--model', out, '--beam', '1'], `${sentences.join('\n')}\n`);
  const b = qkv(['translate', '--model', exported, '--beam', '1'], `${sentences.join('\n')}\n`);
  assert.equal(b.status, 0, b.stderr);
  assert.equal(b.stdout, a.stdout);
});

test('qkv export --format onnx: the decoder embeds and projects with the target table; ONNX Runtime translates as qkv does', () => {
  const onnx = join(work, 'onnx');
  const r = qkv(['export', '--format', 'onnx', '--model', out, '--out', onnx]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(
    readFileSync(join(onnx, 'target_tokenizer.json'), 'utf8'),
    readFileSync(join(out, 'target_tokenizer.json'), 'utf8'),
  );
  const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
  assert.equal(JSON.parse(readFileSync(join(onnx, 'onnx.json'), 'utf8')).vocabSize, config.model.tgtVocabSize);
  for (const beam of ['1', '3']) {
    const a = qkv(['translate', '--model', out, '--beam', beam], `${sentences.join('\n')}\n`);
    const b = qkv(
      ['translate', '--engine', 'onnxruntime', '--model', onnx, '--beam', beam],
      `${sentences.join('\n')}\n`,
    );
    assert.equal(b.status, 0, b.stderr);
    assert.equal(b.stdout, a.stdout, `beam ${beam}`);
  }
});

test('a folder whose tokenizers disagree with config.json, and the tools that read shared vocabularies only, give one clear line', () => {
  // A shared-vocabulary run of another size, whose tokenizer serves as a wrong target tokenizer.
  const shared = join(work, 'shared');
  const s = qkv([
    'train',
    '--preset',
    'tiny',
    '--out',
    shared,
    '--data',
    data,
    '--bpe-size',
    '250',
    '--max-steps',
    '1',
    '--eval-every',
    '1',
    '--bleu-sentences',
    '2',
  ]);
  assert.equal(s.status, 0, s.stderr);
  assert.ok(!existsSync(join(shared, 'target_tokenizer.json')));
  const bad = join(work, 'bad');
  mkdirSync(bad);
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors']) copyFileSync(join(out, f), join(bad, f));
  const cases: [() => void, string[], RegExp][] = [
    [() => {}, ['translate', '--model', bad], /tokenizer not found: .*bad\/target_tokenizer\.json/],
    [() => {}, ['explore', '--model', bad, '--port', '0'], /tokenizer not found: .*bad\/target_tokenizer\.json/],
    // Another model's tokenizer where the target's belongs: its size is not model.tgtVocabSize.
    [
      () => copyFileSync(join(shared, 'tokenizer.json'), join(bad, 'target_tokenizer.json')),
      ['translate', '--model', bad],
      /target_tokenizer\.json: 250 tokens, but config\.json's model\.tgtVocabSize is 300/,
    ],
  ];
  for (const [prepare, args, re] of cases) {
    prepare();
    const r = qkv(args, 'A dog.\n');
    assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  }
  // A shared-vocabulary folder with a stray target tokenizer is refused too.
  copyFileSync(join(out, 'target_tokenizer.json'), join(shared, 'target_tokenizer.json'));
  const t = qkv(['translate', '--model', shared], 'A dog.\n');
  assert.equal(t.status, 1);
  assert.match(
    t.stderr,
    /target_tokenizer\.json: a target tokenizer, but .*config\.json describes a model with one shared vocabulary/,
  );
  rmSync(work, { recursive: true, force: true });
});
