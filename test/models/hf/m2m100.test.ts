/**
 * Hugging Face M2M100 / NLLB folders on qkv's Seq2Seq (models/hf/m2m100.ts, folder/m2m100.ts,
 * text/nllb-tokenizer.ts) against the real transformers 5.18 (scripts/fixtures/make_hf_seq2seq.py, case nllb): an
 * NLLB-200-like folder (a SentencePiece BPE model trained on Multi30K with a few NFKC rules, NllbTokenizer's
 * fairseq offset and 202 language codes, seeded random weights) as save_pretrained writes it. The tokenizer's ids for
 * two source languages and its decoded text are equal; the encoder's last hidden states within 2e-5; greedy and
 * beam-4 outputs under generate()'s rules with the target language forced first (forced_bos_token_id) equal, beam
 * scores within 1e-5.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { noGrad } from '../../../src/autograd/grad-mode.ts';
import { translate } from '../../../src/cli/commands/translate.ts';
import { generateHf, hfRules, type HfSearchOptions } from '../../../src/decode/hf-search.ts';
import { dirSource } from '../../../src/folder/node.ts';
import { openFolder, type OpenedM2M100 } from '../../../src/folder/open.ts';
import { m2m100ConfigFromHf } from '../../../src/models/hf/m2m100.ts';
import { sinusoidalTable } from '../../../src/nn/layers.ts';
import { pipeline } from '../../../src/pipelines/index.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { tempDir } from '../../e2e/tiny-model.ts';

const DIR = fileURLToPath(new URL('../../fixtures/hf-seq2seq/nllb/', import.meta.url));

interface Run {
  ids: number[];
  score: number;
}
interface Case {
  text: string;
  ids: number[];
  ids_fra: number[];
  decoded: string;
  encoder_states: number[];
  greedy: Run;
  beam: Run;
  greedy_rules: Run;
  beam_rules: Run;
  translation: string;
  translation_rules: string;
  greedy_translation: string;
}
const EXPECTED: { target: number; cases: Case[] } = JSON.parse(readFileSync(join(DIR, 'expected.json'), 'utf8'));

async function open(): Promise<OpenedM2M100> {
  const opened = await openFolder(dirSource(DIR));
  assert.equal(opened.kind, 'm2m100');
  return opened as OpenedM2M100;
}

function ids(x: number[]): Tensor {
  return new Tensor(Int32Array.from(x), [1, x.length], 'int32');
}

function run(m: OpenedM2M100, src: number[], o: Partial<HfSearchOptions>): ReturnType<typeof generateHf> {
  const g = m.generation;
  return generateHf(m.model, ids(src), {
    ...hfRules(m.ids, g),
    numBeams: g.numBeams,
    lengthPenalty: g.lengthPenalty,
    forcedBosTokenId: EXPECTED.target,
    ...o,
  });
}

/** generate()'s sequence without its start id: the tokens, then EOS where finished. */
function generated(res: ReturnType<typeof generateHf>, eosId: number): number[] {
  return [...res.tokens[0], ...(res.finished[0] ? [eosId] : [])];
}

test('m2m100: the config maps onto Seq2Seq switches (pre-norm, final norms, fairseq positions from pad + 1)', () => {
  const config = JSON.parse(readFileSync(join(DIR, 'config.json'), 'utf8'));
  const { model, ids: special } = m2m100ConfigFromHf(config);
  assert.deepEqual(
    [model.normFirst, model.finalNorm, model.positionLayout, model.positionOffset, model.scaleEmbedding],
    [true, true, 'fairseq', 2, true],
  );
  assert.deepEqual(special, { padId: 1, eosId: 2, decoderStartId: 2 });
  assert.throws(() => m2m100ConfigFromHf({ ...config, tie_word_embeddings: false }), /tie_word_embeddings false/);
  assert.throws(() => m2m100ConfigFromHf({ ...config, activation_function: 'gelu_new' }), /"gelu_new"/);
  // fairseq's table: row p = [sin(p·f_j) | cos(p·f_j)], f_j = exp(−j·ln(10000)/(d/2 − 1)).
  const t = sinusoidalTable(5, 8, 'fairseq').dataSync<Float32Array>();
  const f = [0, 1, 2, 3].map((j) => Math.exp((-j * Math.log(10000)) / 3));
  for (let j = 0; j < 4; j++) {
    assert.ok(Math.abs(t[3 * 8 + j] - Math.sin(3 * f[j])) < 1e-6);
    assert.ok(Math.abs(t[3 * 8 + 4 + j] - Math.cos(3 * f[j])) < 1e-6);
  }
});

test("m2m100: NLLB's tokenizer gives transformers' ids (eng_Latn and fra_Latn) and decoded text", async () => {
  const m = await open();
  for (const c of EXPECTED.cases) {
    assert.deepEqual(m.tokenizer.encode(c.text), c.ids, c.text);
    assert.deepEqual(m.tokenizer.encode(c.text, 'fra_Latn'), c.ids_fra, c.text);
    assert.equal(m.tokenizer.decode(c.ids), c.decoded, c.text);
  }
  assert.equal(m.tokenizer.languageId('deu_Latn'), EXPECTED.target);
  assert.throws(() => m.tokenizer.encode('x', 'english'), /srcLang: 'english' is not a language code/);
});

test("m2m100: the encoder's last hidden states as transformers' (2e-5)", async () => {
  const m = await open();
  for (const c of EXPECTED.cases) {
    const h = noGrad(() => m.model.encode(ids(c.ids))).dataSync<Float32Array>();
    assert.equal(h.length, c.encoder_states.length);
    let worst = 0;
    for (let i = 0; i < h.length; i++) worst = Math.max(worst, Math.abs(h[i] - c.encoder_states[i]));
    assert.ok(worst < 2e-5, `${c.text}: max |diff| ${worst}`);
  }
});

test('m2m100: greedy and beam-4 with the target language forced first, as generate()', async () => {
  const m = await open();
  const eos = m.ids.eosId;
  for (const c of EXPECTED.cases) {
    const greedy = run(m, c.ids, { numBeams: 1 });
    assert.deepEqual(generated(greedy, eos), c.greedy.ids.slice(1), `greedy ${c.text}`);
    const beam = run(m, c.ids, { numBeams: 4 });
    assert.deepEqual(generated(beam, eos), c.beam.ids.slice(1), `beam ${c.text}`);
    assert.ok(Math.abs(beam.scores[0] - c.beam.score) < 1e-5, `beam ${beam.scores[0]} ${c.beam.score}`);
    const rules = { noRepeatNgramSize: 2, renormalizeLogits: true };
    const gr = run(m, c.ids, { ...rules, numBeams: 1 });
    assert.deepEqual(generated(gr, eos), c.greedy_rules.ids.slice(1), `greedy (no repeat) ${c.text}`);
    assert.ok(Math.abs(gr.logProbs[0] - c.greedy_rules.score) < 1e-5, `greedy (no repeat) ${c.text}`);
    const br = run(m, c.ids, { ...rules, numBeams: 4 });
    assert.deepEqual(generated(br, eos), c.beam_rules.ids.slice(1), `beam (no repeat) ${c.text}`);
    assert.ok(Math.abs(br.scores[0] - c.beam_rules.score) < 1e-5, `beam (no repeat) ${c.text}`);
  }
});

test("m2m100: pipeline('translation', folder, { srcLang, tgtLang }) and qkv translate --src-lang/--tgt-lang", async () => {
  const texts = EXPECTED.cases.map((c) => c.text);
  const translator = await pipeline('translation', DIR, { srcLang: 'eng_Latn', tgtLang: 'deu_Latn' });
  assert.equal(translator.kind, 'm2m100');
  // NLLB's generation config sets no num_beams: greedy, as generate(); beam 4 on request.
  assert.deepEqual(
    await translator(texts),
    EXPECTED.cases.map((c) => c.greedy_translation),
  );
  assert.deepEqual(await translator(['', ...texts], { beam: 4 }), ['', ...EXPECTED.cases.map((c) => c.translation)]);
  await assert.rejects(
    translator('x', { tgtLang: 'klingon' }),
    /^Error: translation: tgtLang: 'klingon' is not a language code/,
  );
  await assert.rejects(
    translator('x', { srcLang: 'eng_Latx' }),
    /srcLang: 'eng_Latx' is not a language code.*eng_Latn/,
  );
  // Without tgtLang anywhere (tokenizer_config.json sets none, as the Hub's NLLB): an error naming it.
  const files = Object.fromEntries(
    ['config.json', 'generation_config.json', 'tokenizer.json', 'model.safetensors'].map((f) => [
      f,
      new Uint8Array(readFileSync(join(DIR, f))),
    ]),
  );
  const tc = JSON.parse(readFileSync(join(DIR, 'tokenizer_config.json'), 'utf8'));
  const bare = await pipeline('translation', {
    ...files,
    'tokenizer_config.json': JSON.stringify({ ...tc, tgt_lang: null }),
  });
  await assert.rejects(bare('x'), /needs tgtLang, a language code such as 'deu_Latn'/);
  assert.deepEqual(
    await bare(texts.slice(0, 2), { tgtLang: 'deu_Latn' }),
    EXPECTED.cases.slice(0, 2).map((c) => c.greedy_translation),
  );

  const dir = tempDir('qkv-nllb-cli-');
  const input = join(dir, 'in.txt');
  writeFileSync(input, `${texts[0]}\n\n${texts[1]}\n`);
  const output = join(dir, 'out.txt');
  await translate({ model: DIR, input, output, srcLang: 'eng_Latn', tgtLang: 'deu_Latn', beam: 4, log: () => {} });
  const [a, b] = EXPECTED.cases;
  assert.equal(readFileSync(output, 'utf8'), `${a.translation}\n\n${b.translation}\n`);
  await assert.rejects(
    translate({ model: DIR, input, output, tgtLang: 'xx', log: () => {} }),
    /--tgt-lang: 'xx' is not a language code/,
  );
});

test('a one-pair folder refuses srcLang / tgtLang, naming them', async () => {
  const marian = fileURLToPath(new URL('../../fixtures/hf-seq2seq/marian/', import.meta.url));
  await assert.rejects(
    pipeline('translation', marian, { tgtLang: 'deu_Latn' }),
    /srcLang and tgtLang choose the languages of a multilingual folder/,
  );
  const t = await pipeline('translation', marian);
  await assert.rejects(t('x', { srcLang: 'eng_Latn' }), /multilingual folder/);
  const dir = tempDir('qkv-marian-lang-');
  const input = join(dir, 'in.txt');
  writeFileSync(input, 'x\n');
  await assert.rejects(
    translate({ model: marian, input, output: join(dir, 'o.txt'), tgtLang: 'deu_Latn', log: () => {} }),
    /--src-lang and --tgt-lang choose the languages of a multilingual folder/,
  );
});
