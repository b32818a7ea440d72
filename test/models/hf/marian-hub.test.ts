/**
 * A Marian folder as the Hub ships it (generation_config.json with the keys of the Hub's opus-mt files, written by
 * transformers 4.32: renormalize_logits true, bad_words_ids, forced_eos_token_id, num_beams 4), decoded by qkv as
 * transformers' generate() decodes it. The folder and every expected id and score come from the real transformers
 * (scripts/fixtures/make_hf_seq2seq.py, case marian): greedy and beam-4 outputs equal, scores within 1e-5 (a greedy
 * sum 2e-5), with renormalize_logits as the folder sets it, without it, and with no_repeat_ngram_size, min_new_tokens and another
 * length_penalty. max_length is cut to 10 so that beams reach it (the forced EOS scores 0, as
 * ForcedEOSTokenLogitsProcessor leaves it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exportModel } from '../../../src/cli/commands/export.ts';
import { translate } from '../../../src/cli/commands/translate.ts';
import { generateHf, hfRules, type HfSearchOptions } from '../../../src/decode/hf-search.ts';
import { openFolder, type OpenedMarian } from '../../../src/folder/open.ts';
import { dirSource } from '../../../src/folder/node.ts';
import { hfSeq2SeqGeneration } from '../../../src/models/hf/seq2seq-generation.ts';
import { pipeline } from '../../../src/pipelines/index.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { tempDir } from '../../e2e/tiny-model.ts';

const DIR = fileURLToPath(new URL('../../fixtures/hf-seq2seq/marian/', import.meta.url));

interface Run {
  ids: number[];
  score: number;
}
interface Case {
  text: string;
  ids: number[];
  greedy: Run;
  beam: Run;
  greedy_plain: Run;
  beam_plain: Run;
  greedy_rules: Run;
  beam_rules: Run;
  translation: string;
}
const EXPECTED: { cases: Case[] } = JSON.parse(readFileSync(join(DIR, 'expected.json'), 'utf8'));

async function open(): Promise<OpenedMarian> {
  const opened = await openFolder(dirSource(DIR));
  assert.equal(opened.kind, 'marian');
  return opened as OpenedMarian;
}

/** generate()'s sequence without its start id, as qkv's search gives it: the tokens, then EOS where finished. */
function generated(res: ReturnType<typeof generateHf>, eosId: number): number[] {
  return [...res.tokens[0], ...(res.finished[0] ? [eosId] : [])];
}

function run(m: OpenedMarian, ids: number[], o: Partial<HfSearchOptions>): ReturnType<typeof generateHf> {
  const src = new Tensor(Int32Array.from(ids), [1, ids.length], 'int32');
  const g = m.generation;
  return generateHf(m.model, src, {
    ...hfRules(m.ids, g),
    numBeams: g.numBeams,
    lengthPenalty: g.lengthPenalty,
    ...o,
  });
}

test("marian (Hub): every key of opus-mt's generation_config.json is read", async () => {
  const m = await open();
  const g = m.generation;
  assert.equal(g.file, 'generation_config.json');
  assert.equal(g.renormalizeLogits, true);
  assert.equal(g.numBeams, 4);
  assert.equal(g.maxLength, 10);
  assert.equal(g.forcedEosTokenId, 0);
  assert.deepEqual(g.badWordsIds, [m.ids.padId]);
  assert.equal(g.decoderStartTokenId, m.ids.decoderStartId);
  assert.equal(g.eosTokenId, m.ids.eosId);
  assert.equal(g.padTokenId, m.ids.padId);
  // A generation config whose ids disagree with config.json's is refused, naming both.
  const gen = JSON.parse(readFileSync(join(DIR, 'generation_config.json'), 'utf8'));
  const files = ['config.json', 'source.spm', 'target.spm', 'vocab.json', 'tokenizer_config.json'];
  await assert.rejects(
    openFolder({
      ...Object.fromEntries(files.map((f) => [f, new Uint8Array(readFileSync(join(DIR, f)))])),
      'generation_config.json': JSON.stringify({ ...gen, eos_token_id: 3 }),
    }),
    /generation_config\.json: eos_token_id 3 differs from config\.json's 0/,
  );
});

test('marian (Hub): the tokenizer gives transformers’ ids', async () => {
  const m = await open();
  for (const c of EXPECTED.cases) assert.deepEqual(m.tokenizer.encode(c.text), c.ids, c.text);
});

test('marian (Hub): greedy and beam-4 as generate(), renormalize_logits true (the folder’s), scores within 1e-5 (greedy’s sum 2e-5)', async () => {
  const m = await open();
  const eos = m.ids.eosId;
  let reached = 0;
  for (const c of EXPECTED.cases) {
    const greedy = run(m, c.ids, { numBeams: 1 });
    assert.deepEqual(generated(greedy, eos), c.greedy.ids.slice(1), `greedy ${c.text}`);
    // Beam search's sequences_scores are length-normalised; greedy's is a plain sum of up to 9 float32
    // log-probabilities (about −19 here) against float64's (the reference runs in float64), as t5.test.ts bounds it.
    assert.ok(Math.abs(greedy.logProbs[0] - c.greedy.score) < 2e-5, `greedy ${greedy.logProbs[0]} ${c.greedy.score}`);
    const beam = run(m, c.ids, {});
    assert.deepEqual(generated(beam, eos), c.beam.ids.slice(1), `beam ${c.text}`);
    assert.ok(Math.abs(beam.scores[0] - c.beam.score) < 1e-5, `beam ${beam.scores[0]} ${c.beam.score}`);
    if (c.beam.ids.length === m.generation.maxLength) reached++;
  }
  // Beams that reach max_length (their forced EOS scores 0) and beams that end earlier are both checked.
  assert.ok(reached > 0 && reached < EXPECTED.cases.length, `${reached} beams reached max_length`);
});

test('marian (Hub): without renormalize_logits, beam-4 ids and scores and greedy ids as generate()', async () => {
  const m = await open();
  const eos = m.ids.eosId;
  for (const c of EXPECTED.cases) {
    const beam = run(m, c.ids, { renormalizeLogits: false });
    assert.deepEqual(generated(beam, eos), c.beam_plain.ids.slice(1), `beam ${c.text}`);
    assert.ok(Math.abs(beam.scores[0] - c.beam_plain.score) < 1e-5, `beam ${beam.scores[0]} ${c.beam_plain.score}`);
    // generate() scores greedy steps by raw logits here: the ids are what must agree.
    const greedy = run(m, c.ids, { numBeams: 1, renormalizeLogits: false });
    assert.deepEqual(generated(greedy, eos), c.greedy_plain.ids.slice(1), `greedy ${c.text}`);
  }
});

test('marian (Hub): no_repeat_ngram_size 2, min_new_tokens 3, length_penalty 1.5 as generate()', async () => {
  const m = await open();
  const eos = m.ids.eosId;
  const rules = { noRepeatNgramSize: 2, minNewTokens: 3, lengthPenalty: 1.5 };
  for (const c of EXPECTED.cases) {
    const greedy = run(m, c.ids, { ...rules, numBeams: 1 });
    assert.deepEqual(generated(greedy, eos), c.greedy_rules.ids.slice(1), `greedy ${c.text}`);
    assert.ok(Math.abs(greedy.logProbs[0] - c.greedy_rules.score) < 1e-5, `greedy ${c.text}`);
    const beam = run(m, c.ids, rules);
    assert.deepEqual(generated(beam, eos), c.beam_rules.ids.slice(1), `beam ${c.text}`);
    assert.ok(Math.abs(beam.scores[0] - c.beam_rules.score) < 1e-5, `beam ${beam.scores[0]} ${c.beam_rules.score}`);
  }
  // The same keys read from a generation config.
  const g = hfSeq2SeqGeneration({}, { no_repeat_ngram_size: 2, min_new_tokens: 3, length_penalty: 1.5 });
  assert.deepEqual([g.noRepeatNgramSize, g.minNewTokens, g.lengthPenalty], [2, 3, 1.5]);
});

test('marian (Hub): the pipeline and qkv translate give transformers’ translations; an empty line stays empty', async () => {
  const translator = await pipeline('translation', DIR);
  const texts = EXPECTED.cases.map((c) => c.text);
  const warnings: string[] = [];
  const out = await translator(['', ...texts], { warnEmpty: true, onWarning: (w) => warnings.push(w.message) });
  assert.deepEqual(out, ['', ...EXPECTED.cases.map((c) => c.translation)]);
  assert.deepEqual(warnings, ['line 1: empty, left empty']);
  assert.equal(await translator(''), '');
  const dir = tempDir('qkv-marian-hub-');
  const input = join(dir, 'in.txt');
  writeFileSync(input, `${texts[0]}\n\n${texts[1]}\n`);
  const output = join(dir, 'out.txt');
  await translate({ model: DIR, input, output, log: () => {} });
  const [a, b] = EXPECTED.cases;
  assert.equal(readFileSync(output, 'utf8'), `${a.translation}\n\n${b.translation}\n`);
});

test('marian (Hub): exported to ONNX, ONNX Runtime decodes it by the same rules (renormalize_logits, forced EOS)', async () => {
  const dir = tempDir('qkv-marian-hub-onnx-');
  const out = join(dir, 'onnx');
  exportModel({ model: DIR, out, format: 'onnx', log: () => {} });
  const input = join(dir, 'in.txt');
  writeFileSync(input, `${EXPECTED.cases.map((c) => c.text).join('\n')}\n`);
  const output = join(dir, 'out.txt');
  await translate({ model: out, input, output, engine: 'onnxruntime', log: () => {} });
  assert.equal(readFileSync(output, 'utf8'), EXPECTED.cases.map((c) => `${c.translation}\n`).join(''));
});
