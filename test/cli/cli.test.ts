/** The `qkv` command end to end on a small corpus: train, resume, translate, eval, info, and bad input. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tempDir } from '../e2e/tiny-model.ts';
import { join } from 'node:path';
import { corpusBleu } from '../../src/text/bleu.ts';
import { corpusChrf } from '../../src/text/chrf.ts';
import { dequantizeInt8, quantizeInt8 } from '../../src/tensor/quantize.ts';
import { readSafetensors, readSafetensorsHeader } from '../../src/io/safetensors.ts';
import { qkv, writeCorpus } from '../helpers/cli.ts';

// 300 real Multi30K pairs for training, 20 for validation and test.
const work = tempDir('qkv-cli-');
const data = join(work, 'data');
writeCorpus(data, [
  ['train', 0, 300],
  ['val', 300, 320],
  ['test_2016_flickr', 320, 340],
]);
const out = join(work, 'run');

test('qkv train (tiny preset) writes a model folder and checkpoints; --resume continues', () => {
  const r = qkv([
    'train',
    '--preset',
    'tiny',
    '--out',
    out,
    '--data',
    data,
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
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors', 'train-state.safetensors', 'history.json'])
    assert.ok(existsSync(join(out, f)), f);
  assert.match(r.stderr, /step 6: train loss [\d.]+, val loss [\d.]+, val BLEU/);
  const again = qkv(['train', '--preset', 'tiny', '--out', out, '--data', data]);
  assert.equal(again.status, 1);
  assert.match(again.stderr, /already holds a training run; pass --resume/);
  const resumed = qkv([
    'train',
    '--preset',
    'tiny',
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
  const history = JSON.parse(readFileSync(join(out, 'history.json'), 'utf8')) as { step: number }[];
  assert.deepEqual([...new Set(history.map((h) => h.step))], [6, 9]);
});

test('qkv translate: one line in, one line out; --input/--output files; beam and greedy', () => {
  const r = qkv(['translate', '--model', out, '--beam', '1'], 'A man is riding a bike.\nTwo dogs play.\n');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.split('\n').length, 3);
  const inFile = join(work, 'in.txt');
  writeFileSync(inFile, 'A dog runs.\n');
  const outFile = join(work, 'out.txt');
  const f = qkv(['translate', '--model', out, '--input', inFile, '--output', outFile]);
  assert.equal(f.status, 0, f.stderr);
  assert.equal(readFileSync(outFile, 'utf8').split('\n').length, 2);
});

test('qkv eval prints BLEU with the sacreBLEU signature; qkv info prints the parameter count', () => {
  const r = qkv(['eval', '--model', out, '--data', data, '--beam', '1']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^BLEU = [\d.]+ /);
  assert.match(r.stdout, /nrefs:1\|case:mixed\|eff:no\|tok:13a\|smooth:exp\|version:2\.4\.0-qkv/);
  const i = qkv(['info', '--preset', 'paper-base']);
  assert.equal(i.status, 0, i.stderr);
  assert.equal(JSON.parse(i.stdout).parameters, 63084544);
});

test('qkv eval --lowercase scores case-insensitively (sacreBLEU -lc) and says so in the signature; --chrf adds chrF2; not with --tune-alpha', () => {
  const hypsFile = join(work, 'lc.txt');
  const r = qkv(['eval', '--model', out, '--data', data, '--beam', '1', '--lowercase', '--output', hypsFile]);
  assert.equal(r.status, 0, r.stderr);
  const hyps = readFileSync(hypsFile, 'utf8').split('\n').slice(0, -1);
  const refs = readFileSync(join(data, 'test_2016_flickr.de'), 'utf8').split('\n').slice(0, -1);
  const want = corpusBleu(hyps, refs, { lowercase: true });
  assert.equal(r.stdout, `${want.toString()}\n${want.signature}\n`);
  assert.match(want.signature, /\|case:lc\|/);
  // --chrf: chrF2 of the same translations after BLEU, case-insensitive too.
  const c = qkv(['eval', '--model', out, '--data', data, '--beam', '1', '--lowercase', '--chrf']);
  assert.equal(c.status, 0, c.stderr);
  const chrf = corpusChrf(hyps, refs, { lowercase: true });
  assert.equal(c.stdout, `${want.toString()}\n${want.signature}\n${chrf.toString()}\n${chrf.signature}\n`);
  const t = qkv(['eval', '--model', out, '--data', data, '--split', 'val', '--lowercase', '--tune-alpha', '1']);
  assert.equal(t.status, 1);
  assert.match(t.stderr, /--tune-alpha and --lowercase both given: α is chosen on the cased score/);
});

test("qkv eval --tune-alpha on val keeps the paper's α unless another beats it significantly; translate and eval then default to the choice", () => {
  const tuned = join(work, 'tuned');
  mkdirSync(tuned);
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors'])
    writeFileSync(join(tuned, f), readFileSync(join(out, f)));
  const r = qkv(['eval', '--model', tuned, '--data', data, '--split', 'val', '--beam', '2', '--tune-alpha', '0,2']);
  assert.equal(r.status, 0, r.stderr);
  const scores = [...r.stderr.matchAll(/\(beam 2, α ([\d.]+)\): BLEU ([\d.]+)/g)].map((m) => ({
    alpha: Number(m[1]),
    bleu: Number(m[2]),
  }));
  assert.deepEqual(
    scores.map((x) => x.alpha),
    [0.6, 0, 2],
    "the paper's α first, then the list",
  );
  const top = scores.slice(1).reduce((a, b) => (b.bleu > a.bleu ? b : a));
  const test = r.stderr.match(
    /α ([\d.]+) against α 0\.6: won (\d+) of 1000 paired bootstrap resamples, p ([\d.]+) \(needs < 0\.025\)/,
  );
  assert.ok(test, r.stderr);
  assert.equal(Number(test[1]), top.alpha, 'the best other α is the one tested');
  const best = top.bleu > scores[0].bleu && Number(test[3]) < 0.025 ? top : scores[0];
  const config = JSON.parse(readFileSync(join(tuned, 'config.json'), 'utf8'));
  assert.equal(config.decoding.beam, 2);
  assert.equal(config.decoding.alpha, best.alpha);
  assert.match(
    config.decoding.chosen,
    /^val BLEU [\d.]+ with α [\d.]+ \(tried 0\.6, 0, 2; .*paired bootstrap.*needed < 0\.025\)$/,
  );
  assert.ok(r.stdout.startsWith(`BLEU = ${best.bleu.toFixed(2)} `), `the printed score is the chosen α's: ${r.stdout}`);
  // Without flags, eval uses the model's decoding; a flag still wins.
  const d = qkv(['eval', '--model', tuned, '--data', data, '--split', 'val']);
  assert.match(d.stderr, new RegExp(`\\(beam 2, α ${best.alpha}\\)`));
  assert.match(
    qkv(['eval', '--model', tuned, '--data', data, '--split', 'val', '--beam', '1', '--alpha', '0.6']).stderr,
    /\(beam 1, α 0\.6\)/,
  );
  // Never on a test set; a broken decoding section is named.
  const t = qkv(['eval', '--model', tuned, '--data', data, '--tune-alpha', '1']);
  assert.equal(t.status, 1);
  assert.match(
    t.stderr,
    /--tune-alpha chooses α on the validation set: use --split val \(got --split test_2016_flickr/,
  );
  writeFileSync(join(tuned, 'config.json'), JSON.stringify({ ...config, decoding: { beam: 0, alpha: 1 } }));
  const b = qkv(['translate', '--model', tuned], 'A dog.\n');
  assert.equal(b.status, 1);
  assert.match(
    b.stderr,
    /config\.json: 'decoding' must be \{"beam": a positive integer, "alpha": a number >= 0\}, got \{"beam":0,"alpha":1\}/,
  );
});

test("qkv eval/translate --mbr: MBR among the beam pool, from the flag or the folder's decoding; --no-mbr and greedy turn it off", () => {
  const folder = join(work, 'mbr');
  mkdirSync(folder);
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors'])
    writeFileSync(join(folder, f), readFileSync(join(out, f)));
  const flag = qkv(['eval', '--model', folder, '--data', data, '--split', 'val', '--beam', '3', '--mbr']);
  assert.equal(flag.status, 0, flag.stderr);
  assert.match(flag.stderr, /\(beam 3, α 0\.6, MBR\): BLEU/);
  const bad = qkv(['translate', '--model', folder, '--beam', '1', '--mbr'], 'A dog.\n');
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /--mbr chooses among beam search's hypotheses: it needs --beam 2 or more, got --beam 1/);
  const config = JSON.parse(readFileSync(join(folder, 'config.json'), 'utf8'));
  writeFileSync(
    join(folder, 'config.json'),
    JSON.stringify({ ...config, decoding: { beam: 3, alpha: 0.6, mbr: true } }),
  );
  const byFolder = qkv(['eval', '--model', folder, '--data', data, '--split', 'val']);
  assert.equal(byFolder.stdout, flag.stdout, "the folder's MBR scores as the flag's");
  assert.match(byFolder.stderr, /\(beam 3, α 0\.6, MBR\)/);
  assert.match(
    qkv(['eval', '--model', folder, '--data', data, '--split', 'val', '--no-mbr']).stderr,
    /\(beam 3, α 0\.6\): BLEU/,
  );
  assert.match(
    qkv(['eval', '--model', folder, '--data', data, '--split', 'val', '--beam', '1']).stderr,
    /\(beam 1, α 0\.6\): BLEU/,
  );
  writeFileSync(
    join(folder, 'config.json'),
    JSON.stringify({ ...config, decoding: { beam: 3, alpha: 0.6, mbr: 'yes' } }),
  );
  const broken = qkv(['translate', '--model', folder], 'A dog.\n');
  assert.equal(broken.status, 1);
  assert.match(broken.stderr, /config\.json: 'decoding\.mbr' must be true or false, got "yes"/);
});

test('qkv eval/translate --ensemble: a model with itself translates as the model alone; members must share tokenizers', () => {
  const single = qkv(['eval', '--model', out, '--data', data, '--beam', '2']);
  const twice = qkv(['eval', '--model', out, '--ensemble', out, '--data', data, '--beam', '2']);
  assert.equal(twice.status, 0, twice.stderr);
  assert.equal(twice.stdout, single.stdout);
  const t = qkv(['translate', '--model', out, '--ensemble', `${out},${out}`, '--beam', '1'], 'Two dogs play.\n');
  assert.equal(t.stdout, qkv(['translate', '--model', out, '--beam', '1'], 'Two dogs play.\n').stdout);
  // Another tokenizer of the same size: two tokens' ids swapped.
  const other = join(work, 'other-tokenizer');
  mkdirSync(other, { recursive: true });
  for (const f of ['config.json', 'model.safetensors']) writeFileSync(join(other, f), readFileSync(join(out, f)));
  const tok = JSON.parse(readFileSync(join(out, 'tokenizer.json'), 'utf8')) as {
    model: { vocab: Record<string, number> };
  };
  const [a, b] = Object.keys(tok.model.vocab).slice(-2);
  [tok.model.vocab[a], tok.model.vocab[b]] = [tok.model.vocab[b], tok.model.vocab[a]];
  writeFileSync(join(other, 'tokenizer.json'), JSON.stringify(tok));
  const cases: [string[], RegExp][] = [
    [
      ['eval', '--model', out, '--ensemble', other, '--data', data],
      /--ensemble .*other-tokenizer: its tokenizer\.json differs from --model .*: ensemble members must share their tokenizers/,
    ],
    [['eval', '--model', out, '--ensemble', join(work, 'nope'), '--data', data], /model folder not found: .*nope/],
    [
      ['eval', '--model', out, '--ensemble', `${out},`, '--data', data],
      /--ensemble must be comma-separated folders \(e\.g\. runs\/a,runs\/b\), got '.*,'/,
    ],
    [
      ['eval', '--model', out, '--ensemble', out, '--data', data, '--split', 'val', '--tune-alpha', '1'],
      /--tune-alpha and --ensemble both given/,
    ],
    [
      ['translate', '--model', out, '--ensemble', out, '--engine', 'onnxruntime'],
      /--ensemble runs on the qkv engine only/,
    ],
  ];
  for (const [args, re] of cases) {
    const r = qkv(args, 'A dog.\n');
    assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
  }
});

test('bad input: unknown flag, bad number, missing model folder — one clear line, exit 1 (empty and over-long lines: test/cli/lines.once.test.ts)', () => {
  const cases: [string[], string | undefined, RegExp][] = [
    [['translate', '--model', out, '--bogus'], '', /unknown option '--bogus'/],
    [['translate', '--model', out, '--beam', 'zero'], '', /--beam must be a positive integer, got 'zero'/],
    [['translate', '--model', out, '--alpha', '-1'], '', /--alpha must be a number >= 0, got '-1'/],
    [
      ['eval', '--model', out, '--split', 'val', '--tune-alpha', '0.6,x'],
      '',
      /--tune-alpha must be comma-separated numbers >= 0 \(e\.g\. 0\.6,1,1\.4\), got '0\.6,x'/,
    ],
    [['translate', '--model', join(work, 'nope')], 'hi\n', /model folder not found/],
    [
      ['train', '--preset', 'huge', '--out', join(work, 'x'), '--data', data],
      undefined,
      /unknown preset 'huge', expected one of: multi30k-small, multi30k-wu, paper-base, tiny/,
    ],
  ];
  for (const [args, input, re] of cases) {
    const r = qkv(args, input);
    assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  }
});

test('qkv export writes an fp16 copy, half the size, that loads and translates', () => {
  const shipped = join(work, 'shipped');
  const r = qkv(['export', '--model', out, '--out', shipped]);
  assert.equal(r.status, 0, r.stderr);
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors']) assert.ok(existsSync(join(shipped, f)), f);
  const a = qkv(['translate', '--model', out, '--beam', '1'], 'Two dogs play.\n');
  const b = qkv(['translate', '--model', shipped, '--beam', '1'], 'Two dogs play.\n');
  assert.equal(b.status, 0, b.stderr);
  assert.ok(b.stdout.length > 1);
  // fp16 rounding may change a near-tie, so compare sizes, not strings: the weights are half as big.
  const size = (d: string) => readFileSync(join(d, 'model.safetensors')).length;
  assert.ok(size(shipped) < 0.55 * size(out), `${size(shipped)} vs ${size(out)}`);
  assert.equal(a.status, 0);
  const bad = qkv(['export', '--model', out, '--out', shipped, '--dtype', 'int4']);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /--dtype must be f16, f32, int8 or q4, got 'int4'/);
});

test('qkv export --dtype int8 writes int8 weights with their scales, smaller than fp16, that load and translate', () => {
  const f16 = join(work, 'shipped');
  const i8 = join(work, 'shipped-int8');
  const r = qkv(['export', '--model', out, '--out', i8, '--dtype', 'int8']);
  assert.equal(r.status, 0, r.stderr);
  const bytes = readFileSync(join(i8, 'model.safetensors'));
  const header = readSafetensorsHeader(bytes, bytes.length);
  const dtypes = new Map(header.entries.map((e) => [e.name, e.dtype]));
  assert.equal(dtypes.get('embedding.weight'), 'I8');
  assert.equal(dtypes.get('embedding.weight_scale'), 'F32');
  assert.equal(dtypes.get('transformer.encoder.layers.0.linear1.weight'), 'I8');
  assert.equal(dtypes.get('transformer.encoder.layers.0.linear1.bias'), 'F16');
  // The values are the run's fp32 weights quantized, to the bit.
  const expected = dequantizeInt8(
    quantizeInt8(readSafetensors(readFileSync(join(out, 'model.safetensors'))).tensors).tensors,
  );
  const got = dequantizeInt8(readSafetensors(bytes).tensors);
  for (const [k, v] of Object.entries(expected)) {
    if (v.shape.length === 2) assert.deepEqual(got[k].dataSync(), v.dataSync(), k);
  }
  const size = (d: string) => readFileSync(join(d, 'model.safetensors')).length;
  assert.ok(size(i8) < 0.75 * size(f16), `int8 ${size(i8)} bytes vs fp16 ${size(f16)}`);
  const t = qkv(['translate', '--model', i8, '--beam', '1'], 'Two dogs play.\n');
  assert.equal(t.status, 0, t.stderr);
  assert.ok(t.stdout.trim().length > 0);
});
