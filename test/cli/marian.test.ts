/**
 * A Hugging Face Marian folder everywhere a translation folder goes: pipeline('translation', dir),
 * `qkv translate`, `qkv eval`, `qkv attention`, `qkv export --format onnx` with ONNX Runtime, with the ids of scripts/fixtures/make_marian.py's
 * float64 port of generate() (the folder's generation_config.json: 4 beams, max_length 16).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { attention } from '../../src/cli/commands/attention.ts';
import { evaluate } from '../../src/cli/commands/eval.ts';
import { exportModel } from '../../src/cli/commands/export.ts';
import { translate } from '../../src/cli/commands/translate.ts';
import { UserError } from '../../src/cli/files.ts';
import { readMarianDir } from '../../src/folder/node.ts';
import { pipeline } from '../../src/pipelines/index.ts';
import { tempDir } from '../e2e/tiny-model.ts';

const FIX = fileURLToPath(new URL('../fixtures/marian-tiny/', import.meta.url));
const EXPECTED: { sentences: { source: string; greedy: number[]; beam: number[] }[] } = JSON.parse(
  readFileSync(join(FIX, 'expected.json'), 'utf8'),
);
const { tokenizer } = readMarianDir(FIX);
/** The text of expected ids (the start id first, EOS last when generated). */
const text = (ids: number[]) => tokenizer.decode(ids.slice(1).filter((i) => i !== tokenizer.eosId));
const sources = EXPECTED.sentences.map((s) => s.source);
const beamTexts = EXPECTED.sentences.map((s) => text(s.beam));
const greedyTexts = EXPECTED.sentences.map((s) => text(s.greedy));

test("pipeline('translation', a Marian folder): HF's beam 4 by default, greedy with beam 1", async () => {
  const translator = await pipeline('translation', FIX);
  assert.equal(translator.kind, 'marian');
  assert.deepEqual(translator.decoding(), { beam: 4, alpha: 1 });
  assert.deepEqual(await translator(sources), beamTexts);
  assert.deepEqual(await translator(sources, { beam: 1 }), greedyTexts);
  assert.equal(await translator(sources[0], { beam: 1, signal: new AbortController().signal }), greedyTexts[0]);
  await assert.rejects(translator(sources, { mbr: true }), /translation: mbr is not available for a Marian folder/);
});

test('qkv translate and qkv eval on a Marian folder', async () => {
  const dir = tempDir('qkv-marian-cli-');
  const input = join(dir, 'in.txt');
  writeFileSync(input, `${sources.join('\n')}\n`);
  const output = join(dir, 'out.txt');
  await translate({ model: FIX, input, output, log: () => {} });
  assert.equal(readFileSync(output, 'utf8'), beamTexts.map((t) => `${t}\n`).join(''));
  await translate({ model: FIX, input, output, beam: 1, log: () => {} });
  assert.equal(readFileSync(output, 'utf8'), greedyTexts.map((t) => `${t}\n`).join(''));

  // eval reads the language pair from tokenizer_config.json (en-de) and scores the references.
  writeFileSync(join(dir, 'test_2016_flickr.en'), `${sources.join('\n')}\n`);
  writeFileSync(join(dir, 'test_2016_flickr.de'), `${beamTexts.join('\n')}\n`);
  const lines: string[] = [];
  const out = join(dir, 'hyps.txt');
  await evaluate({ model: FIX, data: dir, split: 'test_2016_flickr', output: out, log: (l) => lines.push(l) });
  assert.equal(readFileSync(out, 'utf8'), beamTexts.map((t) => `${t}\n`).join(''));
  assert.ok(
    lines.some((l) => /beam 4, α 1, Hugging Face generation rules\): BLEU 100\.00$/.test(l)),
    lines.join('\n'),
  );
  await assert.rejects(
    evaluate({ model: FIX, data: dir, split: 'val', tuneAlpha: [1], log: () => {} }),
    (e: Error) => e instanceof UserError && /--tune-alpha .* not to a Hugging Face Marian folder/.test(e.message),
  );
});

test('qkv attention on a Marian folder: every map of every layer and head, with its SentencePiece pieces', () => {
  const dir = tempDir('qkv-marian-attn-');
  for (const kind of ['enc', 'dec', 'cross']) {
    const out = join(dir, `${kind}.svg`);
    const logs: string[] = [];
    attention({ model: FIX, sentence: sources[0], out, kind, beam: 1, log: (l) => logs.push(l) });
    const svg = readFileSync(out, 'utf8');
    assert.match(logs.join('\n'), /2 layers × 4 heads/);
    for (const piece of tokenizer.tokenize(sources[0]).slice(0, 3)) if (kind !== 'dec') assert.ok(svg.includes(piece));
    if (kind !== 'enc') assert.ok(svg.includes('&lt;pad&gt;'), 'the decoder start id is drawn as <pad>');
  }
});

test('qkv export --format onnx on a Marian folder: ONNX Runtime decodes it as qkv does, greedy and beam', async () => {
  const dir = tempDir('qkv-marian-onnx-');
  const out = join(dir, 'onnx');
  const logs: string[] = [];
  exportModel({ model: FIX, out, format: 'onnx', log: (l) => logs.push(l) });
  assert.match(logs.join('\n'), /encoder_model\.onnx, decoder_model\.onnx, decoder_with_past_model\.onnx/);
  for (const f of ['config.json', 'generation_config.json', 'source.spm', 'target.spm', 'vocab.json'])
    assert.ok(existsSync(join(out, f)), f);
  const input = join(dir, 'in.txt');
  writeFileSync(input, `${sources.join('\n')}\n`);
  const output = join(dir, 'out.txt');
  await translate({ model: out, input, output, engine: 'onnxruntime', log: () => {} });
  assert.equal(readFileSync(output, 'utf8'), beamTexts.map((t) => `${t}\n`).join(''));
  await translate({ model: out, input, output, engine: 'onnxruntime', beam: 1, log: () => {} });
  assert.equal(readFileSync(output, 'utf8'), greedyTexts.map((t) => `${t}\n`).join(''));
  assert.throws(
    () => exportModel({ model: FIX, out: join(dir, 'st'), log: () => {} }),
    (e: Error) => e instanceof UserError && /is a Hugging Face folder: qkv reads it as it is/.test(e.message),
  );
});
