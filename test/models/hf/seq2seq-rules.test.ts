/**
 * generate()'s rules (decode/hf-search.ts, read by models/hf/seq2seq-generation.ts) and the T5 task pipelines
 * (pipelines/text2text.ts) against the real transformers 5.18 (scripts/fixtures/make_hf_seq2seq_rules.py, on the
 * tiny T5 and Marian folders of make_hf_seq2seq.py): for each variant (no_repeat_ngram_size, repetition_penalty in
 * greedy and beam search, encoder_no_repeat_ngram_size, length_penalty with early_stopping true / false / "never",
 * pairs where "never" and false part, min_length + max_new_tokens, forced BOS / EOS) and each sentence, the
 * generated ids equal and the scores within float32's reach (beam: sequences_scores within 1e-5, or 1e-6 relative
 * where length_penalty ≤ 0 leaves them unnormalised; greedy with renormalize_logits: the summed log-probabilities,
 * up to 11 of them, within 3e-5; greedy without it: ids only, generate() then sums raw logits).
 * Each variant is read as a generation_config.json key would be: the folder's file with the variant's keys set over
 * it. The pipelines: `summarization`, `translation_en_to_de`, `translation_en_to_fr` (task_specific_params: prefix
 * and generation keys) and `text2text-generation` give transformers' texts, with transformers.js's result keys.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { noGrad } from '../../../src/autograd/grad-mode.ts';
import {
  generateHf,
  generateHfPausing,
  generateHfSteps,
  hfRules,
  type HfSearchOptions,
} from '../../../src/decode/hf-search.ts';
import { T5FullStepper, t5Stepper } from '../../../src/decode/t5-stepper.ts';
import { dirSource } from '../../../src/folder/node.ts';
import { openFolder, type OpenedMarian, type OpenedT5 } from '../../../src/folder/open.ts';
import { hfSeq2SeqGeneration } from '../../../src/models/hf/seq2seq-generation.ts';
import * as F from '../../../src/ops/index.ts';
import { pipeline } from '../../../src/pipelines/index.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';

const ROOT = fileURLToPath(new URL('../../fixtures/hf-seq2seq/', import.meta.url));

interface Run {
  ids: number[];
  score: number;
}
interface Rules {
  sources: string[];
  variants: string[];
  t5: { ids: number[][]; runs: Record<string, Run[]> };
  marian: { ids: number[][]; runs: Record<string, Run[]> };
  task_specific_params: Record<string, Record<string, unknown>>;
  pipelines: Record<string, { prefix: string; outputs: { ids: number[]; text: string }[] }>;
}
const R: Rules = JSON.parse(readFileSync(join(ROOT, 'rules.json'), 'utf8'));

/** The keyword arguments of each variant, as the fixture script gave them to generate() (its VARIANTS). */
const VARIANTS: Record<string, Record<string, unknown>> = {
  'greedy-no-repeat-2': { num_beams: 1, no_repeat_ngram_size: 2, renormalize_logits: true },
  'greedy-repetition-1.5': { num_beams: 1, repetition_penalty: 1.5, renormalize_logits: true },
  'greedy-repetition-0.7': { num_beams: 1, repetition_penalty: 0.7, renormalize_logits: true },
  'greedy-repetition-1.5-raw': { num_beams: 1, repetition_penalty: 1.5, renormalize_logits: false },
  'greedy-encoder-no-repeat-2': { num_beams: 1, encoder_no_repeat_ngram_size: 2, renormalize_logits: true },
  'beam-no-repeat-2': { num_beams: 4, no_repeat_ngram_size: 2 },
  'beam-repetition-1.5': { num_beams: 4, repetition_penalty: 1.5 },
  'beam-repetition-0.7': { num_beams: 4, repetition_penalty: 0.7 },
  'beam-encoder-no-repeat-2': { num_beams: 4, encoder_no_repeat_ngram_size: 2 },
  'beam-length-2-early-true': { num_beams: 4, length_penalty: 2.0, early_stopping: true },
  'beam-length-2-early-false': { num_beams: 4, length_penalty: 2.0, early_stopping: false },
  'beam-length-2-early-never': { num_beams: 4, length_penalty: 2.0, early_stopping: 'never' },
  'beam-length-0-early-never': { num_beams: 4, length_penalty: 0.0, early_stopping: 'never' },
  'beam-length--0.5-early-never': { num_beams: 4, length_penalty: -0.5, early_stopping: 'never' },
  'beam-2-length-3-early-false': { num_beams: 2, length_penalty: 3.0, early_stopping: false, max_length: 8 },
  'beam-2-length-3-early-never': { num_beams: 2, length_penalty: 3.0, early_stopping: 'never', max_length: 8 },
  'beam-max-30-early-false': { num_beams: 4, early_stopping: false, max_length: 30 },
  'beam-max-30-early-never': { num_beams: 4, early_stopping: 'never', max_length: 30 },
  'beam-min-length-6-max-new-8': { num_beams: 4, min_length: 6, max_new_tokens: 8 },
  'beam-forced-bos-eos': { num_beams: 4, forced_bos_token_id: 5, forced_eos_token_id: 1, max_length: 9 },
  'greedy-forced-bos-eos': {
    num_beams: 1,
    forced_bos_token_id: 5,
    forced_eos_token_id: 1,
    max_length: 9,
    renormalize_logits: true,
  },
};

test('rules.json holds the variants this test knows', () => {
  assert.deepEqual(R.variants, Object.keys(VARIANTS));
});

const readJson = (file: string) => JSON.parse(readFileSync(join(ROOT, file), 'utf8'));

/** The search options of `variant`: the folder's generation_config.json with the variant's keys set over it. */
function optionsOf(
  folder: string,
  ids: { decoderStartId: number; eosId: number; padId: number },
  variant: string,
): HfSearchOptions {
  const file = readJson(`${folder}/generation_config.json`);
  const g = hfSeq2SeqGeneration(readJson(`${folder}/config.json`), { ...file, ...VARIANTS[variant] }, 'config.json');
  return { ...hfRules(ids, g), numBeams: g.numBeams, lengthPenalty: g.lengthPenalty };
}

/** The ids and score against generate()'s: ids equal, scores as the file comment says. */
function check(what: string, variant: string, res: ReturnType<typeof generateHf>, want: Run, eosId: number): void {
  const got = [...res.tokens[0], ...(res.finished[0] ? [eosId] : [])];
  assert.deepEqual(got, want.ids.slice(1), `${what} ${variant}: ids`);
  const kw = VARIANTS[variant];
  if (kw.num_beams === 1 && !kw.renormalize_logits) return;
  // Where length_penalty is 0 or negative the score is not normalised (large sums): float32's relative bound.
  const [score, abs] = kw.num_beams === 1 ? [res.logProbs[0], 3e-5] : [res.scores[0], 1e-5];
  const bound = Math.max(abs, 1e-6 * Math.abs(want.score));
  assert.ok(Math.abs(score - want.score) < bound, `${what} ${variant}: score ${score} vs ${want.score}`);
}

test("T5: generate()'s rules as transformers applies them, greedy and beam-4, cached and uncached", async () => {
  const t5 = (await openFolder(dirSource(join(ROOT, 't5/t5')))) as OpenedT5;
  noGrad(() => {
    for (const variant of R.variants) {
      R.t5.ids.forEach((src, i) => {
        const srcT = new Tensor(Int32Array.from(src), [1, src.length], 'int32');
        const memory = t5.model.encode(srcT);
        const padding = F.eq(srcT, t5.ids.padId);
        for (const stepper of [t5Stepper(t5.model, memory, padding), new T5FullStepper(t5.model, memory, padding)]) {
          const res = generateHfSteps(stepper, 1, {
            ...optionsOf('t5/t5', t5.ids, variant),
            encoderIds: [src],
            padId: t5.ids.padId,
          });
          check(`t5 sentence ${i} (${stepper.constructor.name})`, variant, res, R.t5.runs[variant][i], t5.ids.eosId);
        }
      });
    }
    // encoder_no_repeat_ngram_size without the sources is an error, not a rule silently left out.
    const src = R.t5.ids[0];
    const srcT = new Tensor(Int32Array.from(src), [1, src.length], 'int32');
    const stepper = t5Stepper(t5.model, t5.model.encode(srcT), F.eq(srcT, t5.ids.padId));
    assert.throws(
      () => generateHfSteps(stepper, 1, { ...optionsOf('t5/t5', t5.ids, 'greedy-encoder-no-repeat-2'), padId: 0 }),
      /generateHf: encoderNoRepeatNgramSize 2 needs each sentence's source ids \(encoderIds, 1 of them\), got none/,
    );
  });
});

test("Marian: generate()'s rules as transformers applies them, greedy and beam-4", async () => {
  const m = (await openFolder(dirSource(join(ROOT, 'marian')))) as OpenedMarian;
  for (const variant of R.variants) {
    R.marian.ids.forEach((src, i) => {
      const srcT = new Tensor(Int32Array.from(src), [1, src.length], 'int32');
      const res = generateHf(m.model, srcT, optionsOf('marian', m.ids, variant));
      check(`marian sentence ${i}`, variant, res, R.marian.runs[variant][i], m.ids.eosId);
    });
  }
  // With a signal the steps pause (generateHfPausing): greedy's raw logits come through it too.
  for (const variant of ['greedy-repetition-1.5', 'greedy-repetition-0.7']) {
    const src = R.marian.ids[1];
    const srcT = new Tensor(Int32Array.from(src), [1, src.length], 'int32');
    const signal = new AbortController().signal;
    const res = await generateHfPausing(m.model, srcT, { ...optionsOf('marian', m.ids, variant), signal });
    check('marian sentence 1 (pausing)', variant, res, R.marian.runs[variant][1], m.ids.eosId);
  }
});

/** The T5 folder's files, its config.json given the fixture's task_specific_params. */
function t5WithTasks(): Record<string, Uint8Array | string> {
  const dir = join(ROOT, 't5/t5');
  const files: Record<string, Uint8Array | string> = {};
  for (const f of readdirSync(dir)) if (f !== 'expected.json') files[f] = new Uint8Array(readFileSync(join(dir, f)));
  files['config.json'] = JSON.stringify({
    ...readJson('t5/t5/config.json'),
    task_specific_params: R.task_specific_params,
  });
  return files;
}

test("T5 task pipelines: task_specific_params' prefix and generation keys, transformers' texts", async () => {
  const inputs = [...R.sources, ''];
  const sum = await pipeline('summarization', t5WithTasks());
  assert.equal(sum.prefix, 'summarize: ');
  assert.equal(sum.generation.numBeams, 4);
  assert.equal(sum.generation.noRepeatNgramSize, 3);
  assert.deepEqual(
    await sum(inputs),
    R.pipelines.summarization.outputs.map((o) => ({ summary_text: o.text })),
  );
  for (const task of ['translation_en_to_de', 'translation_en_to_fr'] as const) {
    const tr = await pipeline(task, t5WithTasks());
    assert.equal(tr.prefix, R.pipelines[task].prefix);
    assert.deepEqual(
      await tr(inputs),
      R.pipelines[task].outputs.map((o) => ({ translation_text: o.text })),
      task,
    );
  }
  const t2t = await pipeline('text2text-generation', t5WithTasks());
  assert.equal(t2t.prefix, '');
  assert.deepEqual(
    await t2t(inputs),
    R.pipelines['text2text-generation'].outputs.map((o) => ({ generated_text: o.text })),
  );
  assert.deepEqual(await sum(R.sources[0]), [{ summary_text: R.pipelines.summarization.outputs[0].text }]);
});

test('T5 task pipelines: a task the folder does not name runs as text2text; bad params are named', async () => {
  // transformers: no task_specific_params entry, no prefix, the folder's generation config.
  const de = await pipeline('translation_en_to_de', join(ROOT, 't5/t5'));
  assert.equal(de.prefix, '');
  const t2t = await pipeline('text2text-generation', join(ROOT, 't5/t5'));
  assert.deepEqual((await de(R.sources[0]))[0].translation_text, (await t2t(R.sources[0]))[0].generated_text);
  const files = t5WithTasks();
  const config = JSON.parse(files['config.json'] as string);
  config.task_specific_params.summarization.do_sample = true;
  files['config.json'] = JSON.stringify(config);
  await assert.rejects(
    pipeline('summarization', files),
    /pipeline\('summarization'\): .*task_specific_params\.summarization: do_sample true is not supported/,
  );
  config.task_specific_params.summarization = { prefix: 3 };
  files['config.json'] = JSON.stringify(config);
  await assert.rejects(
    pipeline('summarization', files),
    /task_specific_params\.summarization\.prefix: expected a string/,
  );
  await assert.rejects(
    pipeline('translation', join(ROOT, 't5/t5')),
    /describes a Hugging Face T5.*pipeline\('translation_en_to_de', folder\)/,
  );
  await assert.rejects(pipeline('summarization', join(ROOT, 'marian')), /describes a Hugging Face Marian/);
  await assert.rejects(
    pipeline('summarization', join(ROOT, 't5/t5'), { ensemble: false }),
    /pipeline\('summarization'\): ensemble takes qkv translation folders, not a T5 folder/,
  );
  await assert.rejects(
    pipeline('translation_en_to_de', join(ROOT, 't5/t5'), { srcLang: 'eng_Latn' }),
    /srcLang and tgtLang choose an NLLB \/ M2M100 folder's languages; a T5 folder's task does/,
  );
});
