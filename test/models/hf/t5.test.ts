/**
 * Hugging Face T5 (models/hf/t5.ts over nn's MultiheadAttention, RMSNorm and RelativePositionBias) against the real
 * transformers 5.18 (scripts/fixtures/make_hf_seq2seq.py, case t5): a T5 v1.0-style model (ReLU, head scaled by
 * d_model^-0.5) and a Flan-T5-style one (gated-GELU, inner width num_heads·d_kv = 6·4 = 24 ≠ d_model 16, no output
 * scaling), as save_pretrained writes them, run by transformers in float64: the encoder's last hidden states within
 * 2e-5, greedy (with renormalize_logits: ids, and summed scores within 2e-5) and beam-4 (ids, and sequences_scores
 * within 1e-5) under generate()'s rules (decode/hf-search.ts over decode/t5-stepper.ts). d_kv is 4, as real T5s' 64 a
 * power of 4: q's projection × √d_kv is then exact.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { noGrad } from '../../../src/autograd/grad-mode.ts';
import { generateHfSteps } from '../../../src/decode/hf-search.ts';
import { T5Stepper } from '../../../src/decode/t5-stepper.ts';
import { dirSource } from '../../../src/folder/node.ts';
import { openFolder } from '../../../src/folder/open.ts';
import { pipeline } from '../../../src/pipelines/index.ts';
import { readSafetensors } from '../../../src/io/safetensors.ts';
import { T5, t5ConfigFromHf, t5StateDict } from '../../../src/models/hf/t5.ts';
import * as F from '../../../src/ops/index.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';

const ROOT = fileURLToPath(new URL('../../fixtures/hf-seq2seq/t5/', import.meta.url));

interface Run {
  ids: number[];
  score: number;
}
interface Case {
  text: string;
  generated_text: string;
  ids: number[];
  encoder_states: number[];
  greedy: Run;
  beam: Run;
}

function load(name: string): { model: T5; cases: Case[] } {
  const dir = join(ROOT, name);
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
  const { tensors } = readSafetensors(new Uint8Array(readFileSync(join(dir, 'model.safetensors'))));
  const c = t5ConfigFromHf(config, 'lm_head.weight' in tensors);
  const model = new T5(c);
  model.loadStateDict(t5StateDict(tensors, c));
  model.eval();
  return { model, cases: JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')).cases };
}

const ids = (x: number[]) => new Tensor(Int32Array.from(x), [1, x.length], 'int32');

for (const name of ['t5', 'flan-t5']) {
  test(`${name}: encoder states, greedy and beam-4 as transformers' generate()`, () => {
    const { model, cases } = load(name);
    noGrad(() => {
      for (const c of cases) {
        const memory = model.encode(ids(c.ids));
        const h = memory.dataSync<Float32Array>();
        let worst = 0;
        for (let i = 0; i < h.length; i++) worst = Math.max(worst, Math.abs(h[i] - c.encoder_states[i]));
        assert.ok(worst < 2e-5, `${name} ${c.ids}: encoder states differ by ${worst}`);
        const padding = F.eq(ids(c.ids), model.config.padId);
        for (const [numBeams, want] of [
          [1, c.greedy],
          [4, c.beam],
        ] as const) {
          const res = generateHfSteps(new T5Stepper(model, memory, padding), 1, {
            decoderStartId: 0,
            eosId: 1,
            padId: 0,
            numBeams,
            maxLength: 12,
            renormalizeLogits: numBeams === 1,
          });
          const got = [...res.tokens[0], ...(res.finished[0] ? [1] : [])];
          assert.deepEqual(got, want.ids.slice(1), `${name} beams ${numBeams} ${c.ids}`);
          // Beam search's sequences_scores are length-normalised; greedy's is a plain sum of up to 11 float32
          // log-probabilities (about −12 here), hence its wider bound.
          const score = numBeams === 1 ? res.logProbs[0] : res.scores[0];
          const bound = numBeams === 1 ? 2e-5 : 1e-5;
          assert.ok(Math.abs(score - want.score) < bound, `${name} beams ${numBeams}: ${score} vs ${want.score}`);
        }
      }
    });
  });
}

test("T5 folders through the door and pipeline('text2text-generation'): transformers' ids and decoded text", async () => {
  for (const name of ['t5', 'flan-t5']) {
    const dir = join(ROOT, name);
    const opened = await openFolder(dirSource(dir));
    assert.equal(opened.kind, 't5');
    const { cases } = load(name);
    const t2t = await pipeline('text2text-generation', dir);
    assert.equal(t2t.task, 'text2text-generation');
    for (const c of cases) assert.deepEqual(t2t.tokenizer.encodeInput(c.text).ids, c.ids, c.text);
    assert.deepEqual(
      await t2t(cases.map((c) => c.text)),
      cases.map((c) => ({ generated_text: c.generated_text })),
    );
    assert.deepEqual(await t2t(cases[0].text), [{ generated_text: cases[0].generated_text }]);
    await assert.rejects(t2t('x', { beams: 2 } as never), /unknown option 'beams'/);
  }
  // A T5 folder is not a translation folder (yet), and a translation folder is not a T5 one.
  await assert.rejects(pipeline('translation', join(ROOT, 't5')), /describes a Hugging Face T5/);
});
