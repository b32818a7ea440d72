/**
 * `qkv export --format onnx` of Hugging Face NLLB / M2M100 and T5 / Flan-T5 folders (the tiny ones of
 * scripts/fixtures/make_hf_seq2seq.py, cases nllb and t5) and `--engine onnxruntime` on the exports: ONNX Runtime
 * (onnxruntime-node) decoding the exported graphs under generate()'s rules gives the ids transformers 5.18 gave
 * (greedy and beam 4, which qkv's own engine gives too: test/models/hf/m2m100.test.ts, t5.test.ts), NLLB's with the
 * target language forced first, the scores within the bounds of those tests; `qkv translate --engine onnxruntime`
 * (`--src-lang/--tgt-lang`, a T5's `--task`) and `qkv summarize --engine onnxruntime` on the exported folders write
 * transformers' texts, and qkv's at beam 4. On a padded batch of two T5 sources, the exported encoder's states and
 * each step's log-probabilities, through a reorder that duplicates a row, are qkv's (cached) within 1e-4 + 1e-4·|x|.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { exportModel } from '../../src/cli/commands/export.ts';
import { summarize } from '../../src/cli/commands/summarize.ts';
import { translate } from '../../src/cli/commands/translate.ts';
import { SESSION_OPTIONS, t5OnnxEngine } from '../../src/cli/onnxruntime.ts';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { generateHfAsync, hfRules } from '../../src/decode/hf-search.ts';
import { t5Stepper } from '../../src/decode/t5-stepper.ts';
import { OrtSeq2Seq, OrtSeq2SeqStepper } from '../../src/decode/onnxruntime.ts';
import { readM2M100Dir, readT5Dir } from '../../src/folder/node.ts';
import { exportSeq2SeqOnnx, exportT5Onnx } from '../../src/io/onnx/export.ts';
import * as F from '../../src/ops/index.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { tempDir } from '../e2e/tiny-model.ts';
import { assertClose } from '../helpers/assert.ts';

const NLLB = fileURLToPath(new URL('../fixtures/hf-seq2seq/nllb/', import.meta.url));

interface Run {
  ids: number[];
  score: number;
}
const EXPECTED: {
  target: number;
  cases: { text: string; ids: number[]; greedy: Run; beam: Run; translation: string; greedy_translation: string }[];
} = JSON.parse(readFileSync(join(NLLB, 'expected.json'), 'utf8'));

test("NLLB exported to ONNX: ONNX Runtime's greedy and beam-4 ids are transformers' (and qkv's)", async () => {
  const m = readM2M100Dir(NLLB);
  const exp = exportSeq2SeqOnnx(m.model.config, m.model.stateDict(), { dtype: 'fp32', withAttention: false });
  const s = (f: string) => ort.InferenceSession.create(exp.files[f], SESSION_OPTIONS);
  const engine = new OrtSeq2Seq(
    ort,
    {
      encoder: await s(exp.manifest.graphs.encoder),
      decoder: await s(exp.manifest.graphs.decoder),
      decoderWithPast: await s(exp.manifest.graphs.decoderWithPast),
    },
    exp.manifest,
  );
  const eos = m.ids.eosId;
  for (const c of EXPECTED.cases) {
    for (const [numBeams, want] of [
      [1, c.greedy],
      [4, c.beam],
    ] as const) {
      const src = new Tensor(Int32Array.from(c.ids), [1, c.ids.length], 'int32');
      const { memory, mask } = await engine.encode(src);
      const res = await generateHfAsync(new OrtSeq2SeqStepper(engine, memory, mask, c.ids.length, false), 1, {
        ...hfRules(m.ids, m.generation),
        numBeams,
        lengthPenalty: m.generation.lengthPenalty,
        forcedBosTokenId: EXPECTED.target,
        padId: m.ids.padId,
      });
      const got = [...res.tokens[0], ...(res.finished[0] ? [eos] : [])];
      assert.deepEqual(got, want.ids.slice(1), `beams ${numBeams}: ${c.text}`);
      if (numBeams > 1)
        assert.ok(Math.abs(res.scores[0] - want.score) < 1e-5, `beams ${numBeams}: ${res.scores[0]} vs ${want.score}`);
    }
  }
});

test('qkv export --format onnx of an NLLB folder, then qkv translate --engine onnxruntime --src-lang --tgt-lang', async () => {
  const dir = tempDir('qkv-nllb-onnx-');
  const out = join(dir, 'onnx');
  const logs: string[] = [];
  exportModel({ model: NLLB, out, format: 'onnx', log: (l) => logs.push(l) });
  assert.match(logs.join('\n'), /encoder_model\.onnx, decoder_model\.onnx, decoder_with_past_model\.onnx/);
  for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx.json'])
    assert.ok(existsSync(join(out, f)), f);
  assert.ok(!existsSync(join(out, 'model.safetensors')), 'the export holds the graphs, not the weights');
  const texts = EXPECTED.cases.map((c) => c.text);
  const input = join(dir, 'in.txt');
  writeFileSync(input, `${texts.join('\n')}\n`);
  const output = join(dir, 'out.txt');
  const langs = { srcLang: 'eng_Latn', tgtLang: 'deu_Latn' };
  const lines = (xs: string[]) => xs.map((t) => `${t}\n`).join('');
  await translate({ model: out, input, output, ...langs, engine: 'onnxruntime', beam: 4, log: () => {} });
  assert.equal(readFileSync(output, 'utf8'), lines(EXPECTED.cases.map((c) => c.translation)));
  // NLLB's generation config sets no num_beams: greedy by default, as generate().
  await translate({ model: out, input, output, ...langs, engine: 'onnxruntime', log: () => {} });
  assert.equal(readFileSync(output, 'utf8'), lines(EXPECTED.cases.map((c) => c.greedy_translation)));
  await assert.rejects(
    translate({ model: out, input, output, ...langs, engine: 'onnxruntime', dtype: 'q8', log: () => {} }),
    /--dtype is for the qkv engine/,
  );
  await assert.rejects(
    translate({ model: out, input, output, tgtLang: 'xx', engine: 'onnxruntime', log: () => {} }),
    /--tgt-lang: 'xx' is not a language code/,
  );
});

const T5_ROOT = fileURLToPath(new URL('../fixtures/hf-seq2seq/t5/', import.meta.url));
interface T5Case {
  text: string;
  ids: number[];
  generated_text: string;
  greedy: Run;
  beam: Run;
}
const t5Cases = (name: string): T5Case[] =>
  JSON.parse(readFileSync(join(T5_ROOT, name, 'expected.json'), 'utf8')).cases;

/** A T5 fixture folder as qkv reads it, and its fp32 export in ONNX Runtime. */
async function t5OnOrt(name: string): Promise<{ m: ReturnType<typeof readT5Dir>; engine: OrtSeq2Seq }> {
  const m = readT5Dir(join(T5_ROOT, name));
  const exp = exportT5Onnx(m.model.config, m.model.stateDict(), { dtype: 'fp32', withAttention: false });
  const s = (f: string) => ort.InferenceSession.create(exp.files[f], SESSION_OPTIONS);
  const engine = new OrtSeq2Seq(
    ort,
    {
      encoder: await s(exp.manifest.graphs.encoder),
      decoder: await s(exp.manifest.graphs.decoder),
      decoderWithPast: await s(exp.manifest.graphs.decoderWithPast),
    },
    exp.manifest,
  );
  return { m, engine };
}

for (const name of ['t5', 'flan-t5']) {
  test(`${name} exported to ONNX, a padded batch: the encoder states and each step's log-probabilities are qkv's`, async () => {
    const { m, engine } = await t5OnOrt(name);
    const cases = t5Cases(name);
    const sources = [cases[2].ids, cases[1].ids];
    const S = Math.max(...sources.map((x) => x.length));
    assert.notEqual(sources[0].length, sources[1].length, 'the sources must differ in length (padding)');
    const padded = sources.flatMap((x) => [...x, ...new Array<number>(S - x.length).fill(m.ids.padId)]);
    const src = new Tensor(Int32Array.from(padded), [2, S], 'int32');
    const { memory, mask } = await engine.encode(src);
    const qkvMemory = noGrad(() => m.model.encode(src));
    assertClose(memory.data as Float32Array, qkvMemory, `${name}: encoder states`, 1e-4, 1e-4);
    // Both engines' steps, with their caches, through a reorder that duplicates a row (as beam search does).
    const onnx = new OrtSeq2SeqStepper(engine, memory, mask, S, false);
    const qkv = t5Stepper(m.model, qkvMemory, F.eq(src, m.ids.padId));
    for (let t = 0; t < 16; t++) {
      if (t === 5) for (const stepper of [onnx, qkv]) stepper.reorder(Int32Array.from([1, 0, 1]));
      const last = Int32Array.from({ length: onnx.rows }, (_, r) => (t === 0 ? 0 : 2 + ((5 * t + 17 * r) % 120)));
      assertClose(
        await onnx.step(last),
        noGrad(() => qkv.step(last)),
        `${name}: step ${t}`,
        1e-4,
        1e-4,
      );
    }
  });

  test(`${name} exported to ONNX: ONNX Runtime's greedy and beam-4 ids are transformers' (and qkv's)`, async () => {
    const { engine } = await t5OnOrt(name);
    const generate = t5OnnxEngine(engine);
    for (const c of t5Cases(name)) {
      for (const [numBeams, want] of [
        [1, c.greedy],
        [4, c.beam],
      ] as const) {
        // As test/models/hf/t5.test.ts decodes the fixtures: max_length 12, greedy's scores renormalised.
        const res = await generate.generate(c.ids, {
          decoderStartId: 0,
          eosId: 1,
          padId: 0,
          numBeams,
          maxLength: 12,
          renormalizeLogits: numBeams === 1,
        });
        const got = [...res.tokens[0], ...(res.finished[0] ? [1] : [])];
        assert.deepEqual(got, want.ids.slice(1), `${name} beams ${numBeams}: ${c.text}`);
        const score = numBeams === 1 ? res.logProbs[0] : res.scores[0];
        const bound = numBeams === 1 ? 2e-5 : 1e-5;
        assert.ok(Math.abs(score - want.score) < bound, `${name} beams ${numBeams}: ${score} vs ${want.score}`);
      }
    }
  });
}

test('qkv export --format onnx of a T5 folder, then qkv translate / summarize --engine onnxruntime', async () => {
  const dir = tempDir('qkv-t5-onnx-');
  const model = join(T5_ROOT, 't5');
  const out = join(dir, 'onnx');
  const logs: string[] = [];
  exportModel({ model, out, format: 'onnx', log: (l) => logs.push(l) });
  assert.match(logs.join('\n'), /encoder_model\.onnx, decoder_model\.onnx, decoder_with_past_model\.onnx/);
  for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'onnx.json'])
    assert.ok(existsSync(join(out, f)), f);
  assert.throws(
    () => exportModel({ model, out: join(dir, 'q'), format: 'onnx', dtype: 'int8', log: () => {} }),
    /--dtype int8: a T5 folder is exported with f32 or f16 weights/,
  );
  const cases = t5Cases('t5');
  const input = join(dir, 'in.txt');
  writeFileSync(input, `${cases.map((c) => c.text).join('\n')}\n`);
  const output = join(dir, 'out.txt');
  const lines = (xs: string[]) => xs.map((t) => `${t}\n`).join('');
  // No task_specific_params in the folder: the task runs with no prefix, by the generation config (greedy).
  const task = 'translation_en_to_de';
  await translate({ model: out, input, output, task, engine: 'onnxruntime', log: () => {} });
  assert.equal(readFileSync(output, 'utf8'), lines(cases.map((c) => c.generated_text)));
  await summarize({ model: out, input, output, engine: 'onnxruntime', log: () => {} });
  assert.equal(readFileSync(output, 'utf8'), lines(cases.map((c) => c.generated_text)));
  // Beam 4: ONNX Runtime's texts are qkv's.
  await translate({ model, input, output, task, beam: 4, log: () => {} });
  const qkv = readFileSync(output, 'utf8');
  await translate({ model: out, input, output, task, beam: 4, engine: 'onnxruntime', log: () => {} });
  assert.equal(readFileSync(output, 'utf8'), qkv);
});
