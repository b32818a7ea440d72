// The searches on an asynchronous engine (as ONNX Runtime's) are the synchronous ones, step for step:
// the same results, the same steps and reorders, on a hand-made random distribution and on a model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  beamSearchAsync,
  beamSearchSteps,
  greedySearch,
  greedySearchAsync,
  type AsyncStepper,
  type Stepper,
} from '../../src/decode/index.ts';
import { generate, generateStreamAsync } from '../../src/decode/gpt.ts';
import { GPT, GPT_TINY } from '../../src/models/gpt.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { Tensor } from '../../src/tensor/tensor.ts';

const PAD = 0,
  BOS = 1,
  EOS = 2,
  V = 9;

/** Pseudo-random log-probabilities from each row's prefix; logs every call. */
class HashStepper implements Stepper {
  private prefixes: number[][];
  readonly calls: string[] = [];
  readonly vocabSize = V;
  constructor(sentences: number) {
    this.prefixes = Array.from({ length: sentences }, (_, s) => [s]);
  }
  get rows(): number {
    return this.prefixes.length;
  }
  step(last: Int32Array): Float32Array {
    this.calls.push(`step ${[...last].join(',')}`);
    const out = new Float32Array(this.rows * V);
    this.prefixes.forEach((p, r) => {
      p.push(last[r]);
      let h = p.reduce((a, x) => (a * 31 + x + 7) % 1000003, 17);
      let sum = 0;
      for (let v = 0; v < V; v++) {
        h = (h * 1103515245 + 12345) % 2147483648;
        out[r * V + v] = (v === EOS ? 0.15 * p.length : 0) + (h % 1000) / 1000;
        sum += Math.exp(out[r * V + v]);
      }
      for (let v = 0; v < V; v++) out[r * V + v] = v === PAD ? -Infinity : out[r * V + v] - Math.log(sum);
    });
    return out;
  }
  reorder(rows: Int32Array): void {
    this.calls.push(`reorder ${[...rows].join(',')}`);
    this.prefixes = Array.from(rows, (r) => this.prefixes[r].slice());
  }
}

/** The same stepper behind a promise that resolves on a later turn of the event loop. */
function later(s: HashStepper): AsyncStepper {
  return {
    get rows() {
      return s.rows;
    },
    vocabSize: s.vocabSize,
    step: (last) => new Promise((ok) => setImmediate(() => ok(s.step(last)))),
    reorder: (rows) => s.reorder(rows),
  };
}

const opts = { bosId: BOS, eosId: EOS, padId: PAD };
const maxLens = [7, 0, 12, 3, 9];

test('greedySearchAsync and beamSearchAsync equal greedySearch and beamSearchSteps, call for call', async () => {
  const a = new HashStepper(maxLens.length);
  const b = new HashStepper(maxLens.length);
  assert.deepEqual(await greedySearchAsync(later(b), maxLens, opts), greedySearch(a, maxLens, opts));
  assert.deepEqual(b.calls, a.calls);
  for (const beamSize of [1, 3, 4]) {
    const c = new HashStepper(maxLens.length);
    const d = new HashStepper(maxLens.length);
    const o = { ...opts, beamSize, lengthPenalty: 0.6 };
    const sync = beamSearchSteps(c, maxLens, o);
    assert.deepEqual(await beamSearchAsync(later(d), maxLens, o), sync, `beam ${beamSize}`);
    assert.deepEqual(d.calls, c.calls, `beam ${beamSize}: the same steps and reorders`);
    assert.ok(
      c.calls.some((x) => x.startsWith('reorder')),
      'beams were reordered',
    );
  }
});

test('generateStreamAsync on an asynchronous engine draws what generate draws (cache cut past the context, sampling)', async () => {
  manualSeed(2);
  const model = new GPT({ ...GPT_TINY, vocabSize: 30, blockSize: 16 }).eval();
  let calls = 0;
  // An engine that answers from qkv's model without a cache (the whole context each run), later.
  const ctx: number[] = [];
  const engine = {
    vocabSize: 30,
    blockSize: 16,
    run: (fed: number[], fresh: boolean) =>
      new Promise<Float32Array>((ok) =>
        setImmediate(() => {
          calls++;
          if (fresh) ctx.length = 0;
          ctx.push(...fed);
          const logits = noGrad(() =>
            model.forward(new Tensor(Int32Array.from(ctx), [1, ctx.length], 'int32')),
          ).dataSync() as Float32Array;
          ok(logits.slice((ctx.length - 1) * 30, ctx.length * 30));
        }),
      ),
  };
  for (const o of [
    { maxTokens: 40, temperature: 0 },
    { maxTokens: 25, temperature: 0.9, topK: 8, seed: 5 },
  ]) {
    const want = generate(model, [3, 4, 5], o).ids;
    const got: number[] = [];
    for await (const t of generateStreamAsync(engine, [3, 4, 5], o)) got.push(t.id);
    assert.deepEqual(got, want);
  }
  assert.ok(calls > 60);
  await assert.rejects(async () => {
    for await (const _ of generateStreamAsync(engine, [], { maxTokens: 3 })) void _;
  }, /generate: the prompt is empty/);
});
