/**
 * Hugging Face Marian (opus-mt) folders on qkv's Seq2Seq (models/hf/marian.ts, folder/marian.ts,
 * decode/hf-search.ts) against scripts/fixtures/make_marian.py: a tiny folder laid out as an opus-mt
 * repository (random weights, HF key names, both weight files, two trained .spm models, a shuffled
 * vocab.json) and an independent float64 port of modeling_marian.py and of generate()'s rules.
 * Tokens and ids must match exactly; states, logits and attention maps at fp32 tolerances.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateHf } from '../../../src/decode/hf-search.ts';
import { hfGeneration, marianConfigFromHf } from '../../../src/models/hf/marian.ts';
import { openFolder, type OpenedMarian } from '../../../src/folder/open.ts';
import { folderKindOf, readLm, readMarianDir } from '../../../src/folder/node.ts';
import { readSafetensors, writeSafetensors } from '../../../src/io/safetensors.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { encoderAttention } from '../../../src/viz/attention-data.ts';
import { noGrad } from '../../../src/autograd/grad-mode.ts';

const DIR = fileURLToPath(new URL('../../fixtures/marian-tiny/', import.meta.url));
const FOLDER_FILES = [
  'config.json',
  'generation_config.json',
  'tokenizer_config.json',
  'source.spm',
  'target.spm',
  'vocab.json',
];

interface Sentence {
  source: string;
  sourcePieces: string[];
  sourceIds: number[];
  labels: number[];
  decoderInput: number[];
  greedy: number[];
  beam: number[];
  beamScore: number;
  beamLp2NoForcedEos: number[];
  beamLp2NoForcedEosScore: number;
}
const EXPECTED: { sentences: Sentence[] } = JSON.parse(readFileSync(join(DIR, 'expected.json'), 'utf8'));
const ARRAYS = readSafetensors(new Uint8Array(readFileSync(join(DIR, 'expected.safetensors')))).tensors;

/** The folder's files as contents, with the given weights file(s). */
function contents(
  weights: string[],
  replace: Record<string, Uint8Array | string> = {},
): Map<string, Uint8Array | string> {
  const m = new Map<string, Uint8Array | string>();
  for (const f of [...FOLDER_FILES, ...weights]) m.set(f, new Uint8Array(readFileSync(join(DIR, f))));
  for (const [k, v] of Object.entries(replace)) m.set(k, v);
  return m;
}

async function open(weights: string): Promise<OpenedMarian> {
  const opened = await openFolder(contents([weights]));
  assert.equal(opened.kind, 'marian');
  return opened as OpenedMarian;
}

function close(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  assert.ok(worst <= tol, `${what}: max |diff| ${worst} > ${tol}`);
}

function ids(xs: number[]): Tensor {
  return new Tensor(Int32Array.from(xs), [1, xs.length], 'int32');
}

/** The maps of every layer, (L, h, Tq, Tk) flattened, from per-layer tensors (1, h, Tq, Tk). */
function flat(ts: Tensor[]): Float32Array {
  return Float32Array.from(ts.flatMap((t) => Array.from(t.dataSync<Float32Array>())));
}

for (const weights of ['model.safetensors', 'pytorch_model.bin']) {
  test(`marian ${weights}: tokens, encoder states and maps, logits, decoder and cross maps as HF's equations`, async () => {
    const m = await open(weights);
    assert.equal(m.weightsFile, weights);
    noGrad(() => {
      EXPECTED.sentences.forEach((s, n) => {
        // sentencepiece's own pieces (the last sentence holds `>>de<<` and `</s>`, which HF cuts out first).
        if (!s.source.includes('<')) assert.deepEqual(m.tokenizer.tokenize(s.source), s.sourcePieces);
        assert.deepEqual(m.tokenizer.encode(s.source), s.sourceIds, `sentence ${n}: source ids`);
        const src = ids(s.sourceIds);
        const { memory, weights: enc } = encoderAttention(m.model, src);
        close(memory.dataSync(), ARRAYS[`${n}.encoder`].dataSync(), 2e-4, `sentence ${n}: encoder states`);
        close(
          Float32Array.from(enc.flat(3)),
          ARRAYS[`${n}.encoder_attentions`].dataSync(),
          2e-5,
          `sentence ${n}: encoder maps`,
        );
        const logits = m.model.forward(src, ids(s.decoderInput));
        close(logits.dataSync(), ARRAYS[`${n}.logits`].dataSync(), 5e-4, `sentence ${n}: logits`);
        const cache = m.model.initCache(memory, m.model.paddingMask(src));
        const r = m.model.decodeIncremental(ids(s.decoderInput), cache, { needWeights: true });
        close(r.logits.dataSync(), ARRAYS[`${n}.logits`].dataSync(), 5e-4, `sentence ${n}: incremental logits`);
        close(flat(r.selfWeights!), ARRAYS[`${n}.decoder_attentions`].dataSync(), 2e-5, `sentence ${n}: decoder maps`);
        close(flat(r.crossWeights!), ARRAYS[`${n}.cross_attentions`].dataSync(), 2e-5, `sentence ${n}: cross maps`);
      });
    });
  });
}

/** The generation settings these tests name (the reader gives more: models/hf/seq2seq-generation.ts). */
function pick(g: ReturnType<typeof hfGeneration>) {
  const { numBeams, maxLength, lengthPenalty, earlyStopping, badWordsIds, forcedEosTokenId, minLength } = g;
  return { numBeams, maxLength, lengthPenalty, earlyStopping, badWordsIds, forcedEosTokenId, minLength };
}

test('marian: greedy and beam-4 ids under HF generate() rules, one sentence at a time and batched', async () => {
  const m = await open('model.safetensors');
  assert.deepEqual(pick(m.generation), {
    numBeams: 4,
    maxLength: 16,
    lengthPenalty: 1,
    earlyStopping: false,
    badWordsIds: [m.ids.padId],
    forcedEosTokenId: 0,
    minLength: 0,
  });
  const rules = { ...pick(m.generation), decoderStartId: m.ids.decoderStartId, eosId: m.ids.eosId };
  for (const s of EXPECTED.sentences) {
    const g = generateHf(m.model, ids(s.sourceIds), { ...rules, numBeams: 1 });
    assert.deepEqual([m.ids.decoderStartId, ...Array.from(g.ids.dataSync())], s.greedy, `greedy: ${s.source}`);
    const b = generateHf(m.model, ids(s.sourceIds), rules);
    assert.deepEqual([m.ids.decoderStartId, ...Array.from(b.ids.dataSync())], s.beam, `beam: ${s.source}`);
    assert.ok(Math.abs(b.scores[0] - s.beamScore) < 1e-4, `beam score ${b.scores[0]} vs ${s.beamScore}`);
    // Length penalty 2 and no forced EOS: hypotheses cut at max_length are scored over the ids generated.
    const cut = generateHf(m.model, ids(s.sourceIds), { ...rules, lengthPenalty: 2, forcedEosTokenId: null });
    assert.deepEqual([m.ids.decoderStartId, ...Array.from(cut.ids.dataSync())], s.beamLp2NoForcedEos, s.source);
    const want = s.beamLp2NoForcedEosScore;
    assert.ok(Math.abs(cut.scores[0] - want) < 1e-4, `lp 2 score ${cut.scores[0]} vs ${want}`);
  }
  // All sentences in one padded batch: each decodes as alone.
  const S = Math.max(...EXPECTED.sentences.map((s) => s.sourceIds.length));
  const batch = new Int32Array(EXPECTED.sentences.length * S).fill(m.ids.padId);
  EXPECTED.sentences.forEach((s, i) => batch.set(s.sourceIds, i * S));
  const src = new Tensor(batch, [EXPECTED.sentences.length, S], 'int32');
  for (const [beams, key] of [
    [1, 'greedy'],
    [4, 'beam'],
  ] as const) {
    const r = generateHf(m.model, src, { ...rules, numBeams: beams });
    EXPECTED.sentences.forEach((s, i) => {
      const want = s[key].slice(1);
      assert.deepEqual([...r.tokens[i], ...(r.finished[i] ? [m.ids.eosId] : [])], want, `batched ${key}: ${s.source}`);
    });
  }
});

test('marian: the Node reader gives the same model; fp16 weights load; tied and positional tensors are checked', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'qkv-marian-'));
  try {
    for (const f of readdirSync(DIR)) writeFileSync(join(tmp, f), readFileSync(join(DIR, f)));
    assert.equal(folderKindOf(tmp), 'marian');
    const m = readMarianDir(tmp);
    assert.equal(m.weightsFile, 'model.safetensors');
    const s = EXPECTED.sentences[0];
    const logits = noGrad(() => m.model.forward(ids(s.sourceIds), ids(s.decoderInput)));
    close(logits.dataSync(), ARRAYS['0.logits'].dataSync(), 5e-4, 'Node reader logits');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const file = readSafetensors(new Uint8Array(readFileSync(join(DIR, 'model.safetensors'))));
  const fp16 = writeSafetensors(file.tensors, { dtype: 'F16' });
  const half = (await openFolder(contents([], { 'model.safetensors': fp16 }))) as OpenedMarian;
  const s = EXPECTED.sentences[1];
  close(
    noGrad(() => half.model.forward(ids(s.sourceIds), ids(s.decoderInput))).dataSync(),
    ARRAYS['1.logits'].dataSync(),
    0.05,
    'fp16 logits',
  );

  const tampered = (name: string, edit: (x: Float32Array) => void): Uint8Array => {
    const t = { ...file.tensors };
    const values = Float32Array.from(t[name].dataSync<Float32Array>());
    edit(values);
    t[name] = new Tensor(values, t[name].shape, 'float32');
    if (name === 'lm_head.weight') t[name] = new Tensor(values, file.tensors['model.shared.weight'].shape, 'float32');
    return writeSafetensors(t);
  };
  const withTied = { ...file.tensors, 'lm_head.weight': file.tensors['model.shared.weight'] };
  const ok = await openFolder(contents([], { 'model.safetensors': writeSafetensors(withTied) }));
  assert.equal(ok.kind, 'marian');
  const lmHead = Float32Array.from(file.tensors['model.shared.weight'].dataSync<Float32Array>());
  lmHead[5] += 0.5;
  const untied = {
    ...file.tensors,
    'lm_head.weight': new Tensor(lmHead, file.tensors['model.shared.weight'].shape, 'float32'),
  };
  await assert.rejects(
    openFolder(contents([], { 'model.safetensors': writeSafetensors(untied) })),
    /model\.safetensors: lm_head\.weight differs from model\.shared\.weight/,
  );
  await assert.rejects(
    openFolder(
      contents([], {
        'model.safetensors': tampered('model.decoder.embed_positions.weight', (x) => {
          x[17] += 0.1;
        }),
      }),
    ),
    /model\.safetensors: decoder\.embed_positions\.weight is not Marian's sinusoid table/,
  );
  const extra = writeSafetensors({
    ...file.tensors,
    'model.encoder.layernorm_embedding.weight': file.tensors.final_logits_bias,
  });
  await assert.rejects(
    openFolder(contents([], { 'model.safetensors': extra })),
    /unexpected tensor model\.encoder\.layernorm_embedding\.weight/,
  );
});

test('marian: a hostile pytorch_model.bin is refused, naming its global, before anything runs', async () => {
  const hostile = new Uint8Array(
    readFileSync(fileURLToPath(new URL('../../fixtures/pytorch/hostile_system.bin', import.meta.url))),
  );
  await assert.rejects(openFolder(contents([], { 'pytorch_model.bin': hostile })), (e: Error) => {
    assert.match(e.message, /^pytorch_model\.bin: /);
    assert.match(e.message, /system/);
    return true;
  });
});

test('a folder: the kind comes from config.json first (an ALBERT folder is refused in one line naming the kinds qkv runs)', async () => {
  const bert = JSON.stringify({ model_type: 'albert', architectures: ['AlbertForMaskedLM'], vocab_size: 30000 });
  const line =
    /^Error: config\.json: Hugging Face model_type 'albert' is not supported \(qkv reads model_type 'gpt2'.*'marian'.*'qkv-seq2seq' and 'qkv-gpt'\)$/;
  // No tokenizer, no weights: the config alone decides.
  await assert.rejects(openFolder({ 'config.json': bert }), line);
  await assert.rejects(openFolder({ 'config.json': bert, 'tokenizer.json': '{"model": {}}' }), line);
  const tmp = mkdtempSync(join(tmpdir(), 'qkv-bert-'));
  try {
    writeFileSync(join(tmp, 'config.json'), bert);
    writeFileSync(join(tmp, 'tokenizer.json'), '{"model": {"type": "WordPiece"}}');
    const path = join(tmp, 'config.json').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const onDisk = new RegExp(`^Error: ${path}: Hugging Face model_type 'albert' is not supported`);
    assert.throws(() => folderKindOf(tmp), onDisk);
    assert.throws(() => readLm(tmp), onDisk);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test("marian: HF's generation settings, generation_config.json first, else config.json; others refused by name", () => {
  const config = JSON.parse(readFileSync(join(DIR, 'config.json'), 'utf8')) as Record<string, unknown>;
  // Without generation_config.json, config.json's keys (opus-mt's older uploads: max_length 512).
  assert.deepEqual(pick(hfGeneration(config, undefined)), {
    numBeams: 4,
    maxLength: 512,
    lengthPenalty: 1,
    earlyStopping: false,
    badWordsIds: [config.pad_token_id],
    forcedEosTokenId: 0,
    minLength: 0,
  });
  // generation_config.json wins wholly (a key it lacks takes HF's default, not config.json's).
  const g = hfGeneration(config, { max_new_tokens: 7, length_penalty: 0.6 });
  assert.equal(g.maxLength, 8);
  assert.equal(g.numBeams, 1);
  assert.equal(g.lengthPenalty, 0.6);
  assert.equal(g.forcedEosTokenId, null);
  // Applied now (test/models/hf/seq2seq-rules.test.ts holds them to generate()); what is not done is refused by name.
  assert.equal(hfGeneration(config, { num_beams: 4, repetition_penalty: 1.2 }).repetitionPenalty, 1.2);
  assert.equal(hfGeneration({ ...config, early_stopping: 'never' }, undefined).earlyStopping, 'never');
  assert.throws(
    () => hfGeneration(config, { num_beams: 4, encoder_repetition_penalty: 1.2 }),
    /^Error: generation_config\.json: encoder_repetition_penalty 1\.2 is not supported/,
  );
  assert.throws(
    () => hfGeneration({ ...config, early_stopping: 'always' }, undefined),
    /early_stopping must be true, false or "never", got "always"/,
  );
  assert.throws(
    () => hfGeneration(config, { repetition_penalty: 0 }),
    /generation_config\.json: repetition_penalty must be a number > 0, got 0/,
  );
  assert.throws(
    () => marianConfigFromHf({ ...config, activation_function: 'gelu_new' }),
    /activation_function "gelu_new"/,
  );
  assert.throws(
    () => marianConfigFromHf({ ...config, share_encoder_decoder_embeddings: false }),
    /separate encoder and decoder vocabularies/,
  );
});

test('marian: a file that keeps the tied table under lm_head.weight alone loads the same model', async () => {
  const file = readSafetensors(new Uint8Array(readFileSync(join(DIR, 'model.safetensors'))));
  const { 'model.shared.weight': shared, ...rest } = file.tensors;
  const bytes = writeSafetensors({ ...rest, 'lm_head.weight': shared });
  const m = (await openFolder(contents([], { 'model.safetensors': bytes }))) as OpenedMarian;
  const s = EXPECTED.sentences[2];
  close(
    noGrad(() => m.model.forward(ids(s.sourceIds), ids(s.decoderInput))).dataSync(),
    ARRAYS['2.logits'].dataSync(),
    5e-4,
    'logits',
  );
});
