/**
 * `qkv export --format onnx` and `--engine onnxruntime` end to end: a self-contained folder; the
 * same translations and continuations from both engines; and bad input answered with one line,
 * exit 1, nothing written or overwritten.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tempDir } from '../e2e/tiny-model.ts';
import { join } from 'node:path';
import { qkv, root, writeCorpus } from '../helpers/cli.ts';

// Two qkv threads in every `qkv` child (spawned with this environment), whatever the machine:
// the configuration of issue 41's stall. ONNX Runtime's sessions there take its default, one
// intra-op thread per physical core (2 on the 2-core CI machine).
process.env.QKV_THREADS = '2';
const work = tempDir('qkv-onnx-cli-');
const MT = join(root, 'models/multi30k-en-de');
const LM = join(root, 'models/gpt-multi30k-char');
const mtOnnx = join(work, 'mt-onnx');
const lmOnnx = join(work, 'lm-onnx');

/** One line on stderr, exit 1, no stack trace. */
function assertOneLine(r: ReturnType<typeof qkv>, re: RegExp): void {
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, re);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
}

test('qkv export --format onnx writes a self-contained folder (graphs, onnx.json, config, tokenizer)', () => {
  const r = qkv(['export', '--format', 'onnx', '--model', MT, '--out', mtOnnx]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(
    r.stderr,
    /wrote .*encoder_model\.onnx, decoder_model\.onnx, decoder_with_past_model\.onnx \(opset 17, 2,875,904 parameters, fp32 weights\)/,
  );
  // A model with separate source and target vocabularies carries its target tokenizer too.
  const tokenizers = [
    'tokenizer.json',
    ...(existsSync(join(MT, 'target_tokenizer.json')) ? ['target_tokenizer.json'] : []),
  ];
  assert.deepEqual(
    readdirSync(mtOnnx).sort(),
    [
      'config.json',
      'decoder_model.onnx',
      'decoder_with_past_model.onnx',
      'encoder_model.onnx',
      'onnx.json',
      ...tokenizers,
    ].sort(),
  );
  for (const f of tokenizers) assert.equal(readFileSync(join(mtOnnx, f), 'utf8'), readFileSync(join(MT, f), 'utf8'), f);
  const manifest = JSON.parse(readFileSync(join(mtOnnx, 'onnx.json'), 'utf8'));
  assert.deepEqual(
    [manifest.kind, manifest.opset, manifest.numLayers, manifest.numHeads, manifest.headDim, manifest.padId],
    ['seq2seq', 17, 4, 4, 32, 0],
  ); // the shipped model: 4+4 layers, 4 heads of 32
  const g = qkv(['export', '--format', 'onnx', '--model', LM, '--out', lmOnnx, '--dtype', 'f16', '--with-attention']);
  assert.equal(g.status, 0, g.stderr);
  assert.match(g.stderr, /decoder_model\.onnx \(opset 17, .* fp16 weights, attention outputs\)/);
});

test('--engine onnxruntime translates and generates the same text as qkv', () => {
  const input = 'A man is riding a bike.\nTwo dogs play in the snow.\nA little girl climbs the stairs.\n';
  for (const decoding of [
    ['--beam', '1'],
    ['--beam', '4'],
    ['--beam', '4', '--mbr'],
  ]) {
    // The graphs hold the folder's own model: its ensemble members (config.json decoding.ensemble) stay out.
    const a = qkv(['translate', '--model', MT, '--no-ensemble', ...decoding], input);
    const b = qkv(['translate', '--engine', 'onnxruntime', '--model', mtOnnx, ...decoding], input);
    assert.equal(b.status, 0, b.stderr);
    assert.equal(b.stdout.split('\n').length, 4);
    assert.equal(b.stdout, a.stdout, decoding.join(' '));
  }
  // fp16 weights of an fp16-stored model are the same numbers: greedy text is the same too.
  const args = ['--prompt', 'A dog', '--temperature', '0', '--max-tokens', '80'];
  const a = qkv(['generate', '--model', LM, ...args]);
  const b = qkv(['generate', '--engine', 'onnxruntime', '--model', lmOnnx, ...args]);
  assert.equal(b.status, 0, b.stderr);
  assert.match(b.stderr, /80 tokens in .* ONNX Runtime\)/);
  assert.equal(b.stdout, a.stdout);
});

test("qkv eval --engine onnxruntime scores the same translations as qkv eval (the folder's own model)", () => {
  const data = join(work, 'data');
  writeCorpus(data, [['test_2016_flickr', 0, 12]]);
  for (const decoding of [
    ['--beam', '1'],
    ['--beam', '4'],
  ]) {
    const files = ['qkv', 'ort'].map((e) => join(work, `eval-${e}${decoding[1]}.de`));
    const a = qkv(['eval', '--model', MT, '--no-ensemble', '--data', data, ...decoding, '--output', files[0]]);
    const b = qkv([
      'eval',
      '--engine',
      'onnxruntime',
      '--model',
      mtOnnx,
      '--data',
      data,
      ...decoding,
      '--output',
      files[1],
    ]);
    assert.equal(a.status, 0, a.stderr);
    assert.equal(b.status, 0, b.stderr);
    assert.match(b.stderr, new RegExp(`12 sentences in [\\d.]+ s \\(beam ${decoding[1]}, α 0\\.6, ONNX Runtime\\)`));
    assert.match(b.stdout, /^BLEU = [\d.]+ /);
    assert.equal(b.stdout, a.stdout, decoding.join(' '));
    assert.equal(readFileSync(files[1], 'utf8'), readFileSync(files[0], 'utf8'));
    assert.equal(readFileSync(files[1], 'utf8').split('\n').length, 13);
  }
  assertOneLine(
    qkv(['eval', '--engine', 'onnxruntime', '--model', mtOnnx, '--data', data, '--ensemble', MT]),
    /--ensemble runs on the qkv engine only/,
  );
  assertOneLine(
    qkv(['eval', '--engine', 'onnxruntime', '--model', mtOnnx, '--data', data, '--split', 'val', '--tune-alpha', '1']),
    /--tune-alpha writes α to a qkv model folder's config\.json: tune on the qkv engine/,
  );
  assertOneLine(
    qkv(['eval', '--engine', 'onnxruntime', '--model', MT, '--data', data]),
    /is not an ONNX export \(no onnx\.json\)/,
  );
});

test('bad input: one line, exit 1, nothing written or overwritten', () => {
  const out = join(work, 'never');
  assertOneLine(
    qkv(['export', '--format', 'onnx', '--model', join(root, 'src'), '--out', out]),
    /^qkv: model config not found: .*src\/config\.json$/m,
  );
  const notModel = join(work, 'not-a-model');
  mkdirSync(notModel);
  writeFileSync(join(notModel, 'config.json'), '{"format": "something-else"}');
  assertOneLine(
    qkv(['export', '--format', 'onnx', '--model', notModel, '--out', out]),
    /expected format 'qkv-seq2seq' .* or 'qkv-gpt' .*, got format 'something-else'/,
  );
  assertOneLine(
    qkv(['export', '--format', 'onnx', '--model', MT, '--out', out, '--dtype', 'int4']),
    /--dtype must be f16, f32, int8 or q4 for --format onnx, got 'int4'/,
  );
  assertOneLine(
    qkv(['export', '--format', 'tflite', '--model', MT, '--out', out]),
    /--format must be safetensors or onnx, got 'tflite'/,
  );
  assert.ok(!existsSync(out), 'nothing written');
  // An existing folder is refused without --force, its files untouched; --force replaces it.
  const before = readFileSync(join(lmOnnx, 'decoder_model.onnx'));
  assertOneLine(
    qkv(['export', '--format', 'onnx', '--model', LM, '--out', lmOnnx]),
    /--out .* already exists and is not empty: pass --force to replace it/,
  );
  assert.deepEqual(readFileSync(join(lmOnnx, 'decoder_model.onnx')), before);
  const forced = qkv(['export', '--format', 'onnx', '--model', LM, '--out', lmOnnx, '--force']);
  assert.equal(forced.status, 0, forced.stderr);
  assert.ok(readFileSync(join(lmOnnx, 'decoder_model.onnx')).length > 1.8 * before.length, 'fp32 replaced fp16');
  assert.deepEqual(
    readdirSync(work).filter((f) => f.includes('.tmp-')),
    [],
    'no temporary folder left',
  );
  // The engine needs an ONNX export of the right kind.
  assertOneLine(
    qkv(['translate', '--engine', 'onnxruntime', '--model', MT], 'A dog.\n'),
    /is not an ONNX export \(no onnx\.json\): make one with qkv export --format onnx/,
  );
  assertOneLine(
    qkv(['translate', '--engine', 'onnxruntime', '--model', lmOnnx], 'A dog.\n'),
    /expected a qkv-onnx export of a seq2seq model, got format 'qkv-onnx' kind 'gpt'/,
  );
  assertOneLine(
    qkv(['generate', '--engine', 'tensorrt', '--model', lmOnnx, '--prompt', 'A']),
    /--engine must be qkv or onnxruntime, got 'tensorrt'/,
  );
});
