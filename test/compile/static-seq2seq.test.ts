// The translation model over a static cache (src/decode/static-seq2seq.ts): greedy and beam search over it,
// eager and replayed, give today's tokens and scores bit for bit (the dynamic cache's), on a tiny random model and
// on the shipped Multi30K model, with batches whose live rows cross the wasm GEMM's four-row switch; replayed steps
// equal the eager static steps bit for bit (their logits' Uint32 bits).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { bytesInUse } from '../../src/backend/wasm/memory.ts';
import { loadModelDir } from '../../src/cli/files.ts';
import { encodeLines } from '../../src/decode/batch.ts';
import {
  beamSearch,
  greedy,
  greedySearch,
  maxLengths,
  type DecodeResult,
  type Hypothesis,
} from '../../src/decode/search.ts';
import { StaticSeq2SeqStepper } from '../../src/decode/static-seq2seq.ts';
import { CachedStepper } from '../../src/decode/stepper.ts';
import { Seq2Seq, type Seq2SeqConfig } from '../../src/models/seq2seq.ts';
import { normal_ } from '../../src/nn/init.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { multi30kLines, root } from '../helpers/cli.ts';

const bits = (a: Float32Array): Uint32Array =>
  new Uint32Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength));

/** Two search results the same: tokens, ends, log-probabilities and scores (numbers compared with Object.is). */
function assertSame(got: DecodeResult & { hypotheses?: Hypothesis[][] }, want: typeof got, what: string): void {
  assert.deepEqual(got.tokens, want.tokens, `${what}: tokens`);
  assert.deepEqual(got.finished, want.finished, `${what}: finished`);
  assert.deepEqual(got.logProbs, want.logProbs, `${what}: log-probabilities`);
  assert.deepEqual(got.scores, want.scores, `${what}: scores`);
  assert.deepEqual(got.hypotheses, want.hypotheses, `${what}: hypotheses`);
}

/** Rows of ids padded with `pad` to the longest, as (B, S) int32. */
function batch(rows: number[][], pad: number): Tensor {
  const S = Math.max(...rows.map((r) => r.length));
  const ids = new Int32Array(rows.length * S).fill(pad);
  rows.forEach((r, i) => ids.set(r, i * S));
  return new Tensor(ids, [rows.length, S], 'int32');
}

/** Greedy over the static stepper, eager and replayed: the tokens of each and every step's logits. */
function staticGreedy(
  model: Seq2Seq,
  src: Tensor,
  o: { bosId: number; eosId: number; maxLen?: number },
): { tokens: number[][]; trace: Float32Array[] }[] {
  const { padId, maxLen } = model.config;
  const maxLens = maxLengths(src.dataSync(), src.shape, padId, maxLen, o.maxLen);
  return [false, true].map((compiled) =>
    noGrad(() => {
      const srcPadding = model.paddingMask(src);
      const memory = model.encode(src, srcPadding);
      const stepper = new StaticSeq2SeqStepper(model, memory, srcPadding, src.shape[0], Math.max(...maxLens), {
        compiled,
        trace: true,
      });
      const r = greedySearch(stepper, maxLens, { ...o, padId });
      // One capture per live row count serves its steps (and one its reorders).
      if (compiled) {
        const n = stepper.captures!.length;
        assert.ok(n <= 2 * src.shape[0] && n < stepper.trace!.length, `${n} captures`);
      }
      return { tokens: r.tokens, trace: stepper.trace! };
    }),
  );
}

const TINY: Seq2SeqConfig = {
  vocabSize: 41,
  dModel: 16,
  nhead: 2,
  numEncoderLayers: 2,
  numDecoderLayers: 2,
  dimFeedforward: 32,
  dropout: 0,
  maxLen: 40,
  padId: 0,
  scaleEmbedding: false,
  normFirst: true,
  tgtVocabSize: 37,
  activation: 'gelu',
};

/**
 * A random model wide enough (std 1) that greedy decoding wanders (pre-norm: random post-norm models of this
 * size repeat one id; the shipped model below is post-norm).
 */
function wide(config: Seq2SeqConfig, seed: number): Seq2Seq {
  manualSeed(seed);
  const model = new Seq2Seq(config).eval();
  noGrad(() => {
    for (const [n, p] of model.namedParameters()) if (!n.includes('norm')) normal_(p, 0, 1);
  });
  return model;
}

const SRC = [
  [5, 9, 12, 7, 30, 3],
  [8, 4, 22],
  [17, 11, 6, 25, 33, 19, 14, 3],
];

{
  const config = TINY;
  const name = 'pre-norm, separate vocabularies, GELU';
  test(`tiny ${name}: static greedy, eager and replayed, gives the dynamic cache's tokens; replays bit-identical`, () => {
    const model = wide(config, 8);
    const src = batch(SRC, 0);
    const o = { bosId: 1, eosId: 2, maxLen: 20 };
    const today = greedy(model, src, o);
    assert.ok(new Set(today.tokens.flat()).size >= 8, `a degenerate draw: ${today.tokens}`);
    const [eager, replayed] = staticGreedy(model, src, o);
    assert.deepEqual(eager.tokens, today.tokens);
    assert.deepEqual(replayed.tokens, today.tokens);
    assert.equal(replayed.trace.length, eager.trace.length);
    eager.trace.forEach((l, i) => assert.deepEqual(bits(replayed.trace[i]), bits(l), `step ${i}`));
    // The option of the public searches: today's tokens and scores, bit for bit.
    assertSame(greedy(model, src, { ...o, staticCache: true }), today, 'replayed');
    assertSame(greedy(model, src, { ...o, staticCache: 'eager' }), today, 'eager');
    // An ensemble: one static stepper per member.
    const pair = [model, wide(config, 9)];
    assertSame(greedy(pair, src, { ...o, staticCache: true }), greedy(pair, src, o), 'ensemble');
  });

  test(`tiny ${name}: beam-4 over the static cache (its reorder a captured gather) gives today's tokens`, () => {
    const model = wide(config, 8);
    const src = batch(SRC, 0);
    const o = { bosId: 1, eosId: 2, maxLen: 16 }; // beamSize: the default, 4
    const today = beamSearch(model, src, o);
    const replayed = beamSearch(model, src, { ...o, staticCache: true });
    const eager = beamSearch(model, src, { ...o, staticCache: 'eager' });
    assertSame(replayed, today, 'replayed');
    assertSame(eager, today, 'eager');
  });
}

test("padding ids fed to some rows: the static steps, eager and replayed, equal the dynamic cache's bit for bit", () => {
  // The self-attention's key bias (−∞ at the positions a row was fed the padding id) is packed as (rows, p + 1)
  // and its row stride is the dynamic scalar: rows past the first read the right positions only if each replay
  // passes the stride anew.
  const model = wide(TINY, 5);
  noGrad(() => {
    const src = batch(SRC, 0);
    const pad = model.paddingMask(src);
    const memory = model.encode(src, pad);
    const dynamic = new CachedStepper(model, memory, pad);
    const eager = new StaticSeq2SeqStepper(model, memory, pad, 3, 8, { compiled: false });
    const replayed = new StaticSeq2SeqStepper(model, memory, pad, 3, 8);
    const feeds = [
      [1, 1, 1],
      [7, 0, 9],
      [0, 13, 4],
      [21, 0, 0],
      [5, 6, 0],
      [0, 8, 30],
    ];
    for (const [i, f] of feeds.entries()) {
      const last = Int32Array.from(f);
      const want = bits(dynamic.step(last));
      assert.deepEqual(bits(eager.step(last)), want, `step ${i}: eager static vs dynamic`);
      assert.deepEqual(bits(replayed.step(last)), want, `step ${i}: replayed vs dynamic`);
    }
    assert.ok(replayed.captures!.length >= 1);
    for (const s of [dynamic, eager, replayed]) s.release();
  });
});

test('the static stepper refuses a bad size, a wrong number of ids and rows out of range', () => {
  const model = wide(TINY, 3);
  noGrad(() => {
    const src = batch(SRC.slice(0, 2), 0);
    const pad = model.paddingMask(src);
    const memory = model.encode(src, pad);
    assert.throws(
      () => new StaticSeq2SeqStepper(model, memory, pad, 1, 8),
      /capacity must be an integer >= the batch 2, got 1/,
    );
    assert.throws(
      () => new StaticSeq2SeqStepper(model, memory, pad, 2, 41),
      /maxLength must be an integer in \[1, 40\]/,
    );
    const s = new StaticSeq2SeqStepper(model, memory, pad, 4, 2);
    assert.throws(() => s.step(Int32Array.of(1)), /last must hold 2 ids, got 1/);
    assert.throws(() => s.reorder(Int32Array.of(0, 2)), /row 2 is out of range for 2 live rows/);
    s.step(Int32Array.of(1, 1));
    s.step(Int32Array.of(1, 1));
    assert.throws(() => s.step(Int32Array.of(1, 1)), /position 2 exceeds the cache's maxLength 2/);
  });
});

test("the shipped model on Multi30K sentences: static greedy and beam-4 give today's results, replays bit-identical", () => {
  const { model, tokenizer, targetTokenizer: tt } = loadModelDir(join(root, 'models/multi30k-en-de'));
  // Six sentences: greedy's live rows go from six (the packed wasm GEMM) to four or fewer (its dot products).
  const lines = multi30kLines('val.en.gz').slice(0, 6);
  const src = batch(encodeLines(model, tokenizer, lines).ids, model.config.padId);
  const o = { bosId: tt.bosId, eosId: tt.eosId };
  const today = greedy(model, src, o);
  assert.ok(today.tokens.every((t) => t.length >= 5));
  const [eager, replayed] = staticGreedy(model, src, o);
  assert.deepEqual(eager.tokens, today.tokens);
  assert.deepEqual(replayed.tokens, today.tokens);
  eager.trace.forEach((l, i) => assert.deepEqual(bits(replayed.trace[i]), bits(l), `step ${i}`));
  assertSame(greedy(model, src, { ...o, staticCache: true }), today, 'greedy');
  const beam = beamSearch(model, src, { ...o, beamSize: 4 });
  assertSame(beamSearch(model, src, { ...o, beamSize: 4, staticCache: true }), beam, 'beam 4');
});

test('a search frees its static caches and captures when it ends (wasm memory back where it was)', () => {
  const model = wide(TINY, 8);
  const src = batch(SRC, 0);
  const o = { bosId: 1, eosId: 2, maxLen: 16, staticCache: true };
  beamSearch(model, src, o); // first use: whatever the kernels keep (scratch) is allocated here
  const before = bytesInUse();
  for (let i = 0; i < 3; i++) beamSearch(model, src, o);
  greedy(model, src, o);
  // Under js nothing lives in wasm memory (0 = 0); under wasm the caches and plans are blocks of it.
  assert.equal(bytesInUse(), before);
  // A released capture refuses to replay.
  noGrad(() => {
    const pad = model.paddingMask(src);
    const stepper = new StaticSeq2SeqStepper(model, model.encode(src, pad), pad, 3, 4);
    stepper.step(Int32Array.of(1, 1, 1));
    stepper.step(Int32Array.of(5, 6, 7)); // a replay
    const [captured] = stepper.captures!;
    stepper.release();
    assert.throws(() => captured.replay([]), /this capture was released/);
  });
});
