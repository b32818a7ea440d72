/**
 * Hugging Face T5 (models/hf/t5.ts over nn's MultiheadAttention, RMSNorm and RelativePositionBias) against the real
 * transformers 5.18 (scripts/fixtures/make_hf_seq2seq.py, case t5): a T5 v1.0-style model (ReLU, head scaled by
 * d_model^-0.5) and a Flan-T5-style one (gated-GELU, inner width num_heads·d_kv = 6·4 = 24 ≠ d_model 16, no output
 * scaling), as save_pretrained writes them, run by transformers in float64: the encoder's last hidden states within
 * 2e-5, greedy (with renormalize_logits: ids, and summed scores within 2e-5) and beam-4 (ids, and sequences_scores
 * within 1e-5) under generate()'s rules (decode/hf-search.ts over decode/t5-stepper.ts), with T5's key/value cache
 * and without it (the whole prefix re-run each step). d_kv is 4, as real T5s' 64 a power of 4: q's projection × √d_kv
 * is then exact. The cached steps' logits equal the The largest |cached − full| / (1e-5 + 1e-4·|full|) (at most 1 within float32's rounding) over the logits-prefix recomputation at every position, through a beam
 * reorder, on two padded sources; a cached step whose position bias is taken from the wrong position fails that.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { noGrad } from '../../../src/autograd/grad-mode.ts';
import { generateHfSteps } from '../../../src/decode/hf-search.ts';
import { T5FullStepper, t5Stepper } from '../../../src/decode/t5-stepper.ts';
import { dirSource } from '../../../src/folder/node.ts';
import { openFolder } from '../../../src/folder/open.ts';
import { pipeline } from '../../../src/pipelines/index.ts';
import { readSafetensors } from '../../../src/io/safetensors.ts';
import { gatherRows } from '../../../src/nn/kv-cache.ts';
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
          for (const stepper of [t5Stepper(model, memory, padding), new T5FullStepper(model, memory, padding)]) {
            const what = `${name} beams ${numBeams} ${c.ids} (${stepper.constructor.name})`;
            const res = generateHfSteps(stepper, 1, {
              decoderStartId: 0,
              eosId: 1,
              padId: 0,
              numBeams,
              maxLength: 12,
              renormalizeLogits: numBeams === 1,
            });
            const got = [...res.tokens[0], ...(res.finished[0] ? [1] : [])];
            assert.deepEqual(got, want.ids.slice(1), what);
            // Beam search's sequences_scores are length-normalised; greedy's is a plain sum of up to 11 float32
            // log-probabilities (about −12 here), hence its wider bound.
            const score = numBeams === 1 ? res.logProbs[0] : res.scores[0];
            const bound = numBeams === 1 ? 2e-5 : 1e-5;
            assert.ok(Math.abs(score - want.score) < bound, `${what}: ${score} vs ${want.score}`);
          }
        }
      }
    });
  });
}

/**
 * Float32 rounding apart: |cached − full| ≤ 1e-5 + 1e-4·|full|, the bound test/decode/cache.test.ts holds Seq2Seq's
 * cache to. The two sum the same terms in another order (on js they are bit-equal; wasm's kernels treat a one-row
 * product and a many-row one differently).
 */
const [STEP_ATOL, STEP_RTOL] = [1e-5, 1e-4];

/**
 * The largest |cached − full| / (1 + |full|) over the logits|cached − full| over the logits of every step of a 24-id target on two padded sources (the distances
 * past relative_attention_max_distance 20), the rows reordered as beam search does after step 5 (rows [1, 0, 1]).
 * The full-prefix logits come first; `cachedOffset`, where given, moves the query of the cached step at position t to
 * position cachedOffset(t) in its decoder bias (a wrong bias, which the comparison must catch).
 */
function cachedVersusFull(model: T5, sources: number[][], cachedOffset?: (t: number) => number): number {
  const S = Math.max(...sources.map((s) => s.length));
  const padded = sources.flatMap((s) => [...s, ...new Array<number>(S - s.length).fill(model.config.padId)]);
  const src = new Tensor(Int32Array.from(padded), [sources.length, S], 'int32');
  const memory = model.encode(src);
  const padding = F.eq(src, model.config.padId);
  // The target rows (ids below the fixtures' vocabulary of 130), and the same rows after the reorder.
  const before = sources.map((_, b) => [0, ...Array.from({ length: 23 }, (_, t) => 2 + ((7 * t + 31 * b) % 120))]);
  const reorderAt = 5;
  const rows = Int32Array.from([1, 0, 1]);
  const after = Array.from(rows, (r) => before[r]);
  const T = before[0].length;
  const prefixesAt = (t: number) => (t < reorderAt ? before : after);
  // Full-prefix logits at each step, the rows as the cache holds them then.
  const full: Float32Array[] = [];
  for (let t = 0; t < T; t++) {
    const [mem, pad] = t < reorderAt ? [memory, padding] : [gatherRows(memory, rows), gatherRows(padding, rows)];
    const prefixes = prefixesAt(t);
    const N = prefixes.length;
    const tgt = new Tensor(Int32Array.from(prefixes.flatMap((p) => p.slice(0, t + 1))), [N, t + 1], 'int32');
    full.push(
      F.narrow(model.decode(tgt, mem, pad), 1, t, 1)
        .dataSync<Float32Array>()
        .slice(),
    );
  }
  const rpb = model.decoderBias;
  const original = rpb.forward;
  if (cachedOffset)
    rpb.forward = (L: number, S: number, offset = 0) =>
      original.call(rpb, L, S, L === 1 && S === offset + 1 ? cachedOffset(offset) : offset);
  try {
    const cache = model.initCache(memory, padding);
    let worst = 0;
    for (let t = 0; t < T; t++) {
      if (t === reorderAt) cache.reorder(rows);
      const last = Int32Array.from(prefixesAt(t), (p) => p[t]);
      const got = model.decodeStep(new Tensor(last, [last.length, 1], 'int32'), cache).dataSync<Float32Array>();
      assert.equal(got.length, full[t].length);
      const want = full[t];
      for (let i = 0; i < got.length; i++)
        worst = Math.max(worst, Math.abs(got[i] - want[i]) / (STEP_ATOL + STEP_RTOL * Math.abs(want[i])));
      if (Number.isNaN(worst)) worst = Infinity;
    }
    assert.equal(cache.length, T);
    return worst;
  } finally {
    rpb.forward = original;
  }
}

for (const name of ['t5', 'flan-t5']) {
  test(`${name}: the cached steps' logits equal the full prefix re-run at every position (float32)`, () => {
    const { model, cases } = load(name);
    const sources = [cases[0].ids, cases[1].ids];
    assert.notEqual(sources[0].length, sources[1].length, 'the sources must differ in length (padding)');
    noGrad(() => {
      const worst = cachedVersusFull(model, sources);
      assert.ok(worst <= 1, `${name}: cached and full-prefix logits differ by ${worst} times the bound`);
      // The query at position t biased as if at 0 (compute_bias without cache_position), or one position off: each
      // must show.
      for (const [what, offset] of [
        ['at position 0', (_t: number) => 0],
        ['one position early', (t: number) => Math.max(0, t - 1)],
        ['one position late', (t: number) => t + 1],
      ] as const) {
        const wrong = cachedVersusFull(model, sources, offset);
        assert.ok(
          wrong > 100,
          `${name}: a cached bias taken ${what} must change the logits, differs by only ${wrong} times the bound`,
        );
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
