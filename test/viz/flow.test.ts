/**
 * viz/flow.ts, the whole forward pass as stages: its logits are model.forward's bit for bit (the
 * shipped translator and GPT, and random models of every switch: pre-norm, GELU/SiLU, separate
 * vocabularies, no final norm, unscaled embeddings, sinusoidal positions); its stages equal the
 * modules called directly (encode, decode, each layer's forward, each block's); its attention maps and
 * logits match the PyTorch-side fixtures (hf-gpt2-tiny, marian-tiny) at their tests' tolerances; its
 * summaries are the vectors' own numbers; the per-head pieces put back together give the stage's output.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { readLm, readMarianDir, readSeq2Seq } from '../../src/folder/node.ts';
import { promptContext } from '../../src/folder/gpt.ts';
import { readHfGpt2 } from '../../src/io/hf.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { GPT } from '../../src/models/gpt.ts';
import { Seq2Seq } from '../../src/models/seq2seq.ts';
import { withEvalMode } from '../../src/nn/module.ts';
import * as F from '../../src/ops/index.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { encoderAttention } from '../../src/viz/attention-data.ts';
import { modelFlow, rowsOf, textFlow, type FlowRun, type FlowStage } from '../../src/viz/flow.ts';
import { assertClose } from '../helpers/assert.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURES = `${ROOT}test/fixtures/`;
const ids = (xs: readonly number[]) => new Tensor(Int32Array.from(xs), [1, xs.length], 'int32');

/** a and b hold the same float32 numbers, element for element. */
function same(a: ArrayLike<number>, b: ArrayLike<number>, what: string): void {
  assert.equal(a.length, b.length, `${what}: length`);
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) assert.fail(`${what}: element ${i} ${a[i]} ≠ ${b[i]}`);
}

const flat = (rows: number[][]) => rows.flat();
const stage = (run: FlowRun, id: string): FlowStage => {
  const s = run.flow.stages.find((x) => x.id === id);
  assert.ok(s, `stage ${id}`);
  return s;
};

const shippedDe = readSeq2Seq(`${ROOT}models/multi30k-en-de`);
const shippedGpt = readLm(`${ROOT}models/gpt-multi30k-char`);

function randomSeq2Seq(over: Partial<ConstructorParameters<typeof Seq2Seq>[0]>): Seq2Seq {
  manualSeed(7);
  return new Seq2Seq({
    vocabSize: 40,
    dModel: 16,
    nhead: 4,
    numEncoderLayers: 2,
    numDecoderLayers: 2,
    dimFeedforward: 24,
    dropout: 0.3,
    activation: 'relu',
    normFirst: false,
    maxLen: 32,
    padId: 0,
    ...over,
  });
}

function seq2seqForward(model: Seq2Seq, src: number[], tgt: number[]): Tensor {
  return withEvalMode(model, () => noGrad(() => model.forward(ids(src), ids(tgt))));
}

test("a Seq2Seq's flow: logits = model.forward's bit for bit, for the shipped EN→DE and every switch", () => {
  const { model, tokenizer } = shippedDe;
  const src = tokenizer.encode('Two young men are playing soccer in a park.');
  const tgt = [tokenizer.bosId, ...tokenizer.encode('Zwei junge Männer spielen')];
  const run = modelFlow(model, { src, tgt });
  same(run.logits.dataSync(), seq2seqForward(model, src, tgt).dataSync(), 'shipped EN→DE');
  same(flat(run.vectors('logits')), run.logits.dataSync(), 'the logits stage is the logits');
  assert.deepEqual(run.flow.config, { dModel: 128, heads: 4, layers: [4, 4], dFF: 512, vocabSize: 8000, norm: 'post' });
  const variants: [string, Partial<ConstructorParameters<typeof Seq2Seq>[0]>][] = [
    ['pre-norm GELU', { normFirst: true, activation: 'gelu' }],
    [
      'separate vocabularies, SiLU, no final norm, unscaled, halves, logits bias',
      {
        tgtVocabSize: 30,
        activation: 'silu',
        finalNorm: false,
        scaleEmbedding: false,
        positionLayout: 'halves',
        finalLogitsBias: true,
        maskTargetPadding: false,
      },
    ],
  ];
  for (const [what, over] of variants) {
    const m = randomSeq2Seq(over);
    if (m.finalLogitsBias) m.finalLogitsBias.dataSync<Float32Array>().forEach((_, i, a) => (a[i] = 0.01 * i));
    assert.equal(m.training, true);
    const s = [5, 9, 3, 17, 0, 0];
    const t = [1, 4, 8, 2];
    const r = modelFlow(m, { src: s, tgt: t });
    same(r.logits.dataSync(), seq2seqForward(m, s, t).dataSync(), what);
    assert.equal(m.training, true, `${what}: the model's mode is given back`);
  }
});

test("a GPT's flow: logits = model.forward's bit for bit (shipped, sinusoidal)", () => {
  const { model } = shippedGpt;
  const x = promptContext(shippedGpt, 'A dog runs in the park');
  const run = modelFlow(model, { ids: x });
  same(run.logits.dataSync(), noGrad(() => model.forward(ids(x))).dataSync(), 'shipped GPT');
  manualSeed(3);
  const sin = new GPT({
    vocabSize: 30,
    blockSize: 16,
    nLayer: 2,
    nHead: 2,
    nEmbd: 8,
    dropout: 0.2,
    positions: 'sinusoidal',
  });
  const r = modelFlow(sin, { ids: [1, 5, 7, 2] });
  const want = withEvalMode(sin, () => noGrad(() => sin.forward(ids([1, 5, 7, 2]))));
  same(r.logits.dataSync(), want.dataSync(), 'sinusoidal GPT');
  assert.throws(
    () => modelFlow(sin, { src: [1], tgt: [1] }),
    /^Error: flow: a GPT takes \{ ids \}, got \{ src, tgt \}$/,
  );
  assert.throws(() => modelFlow(sin, { ids: [] }), /^Error: flow: the text has no tokens$/);
});

test('the stages equal the modules called directly: encode, each layer, decode; each block; attention maps', () => {
  for (const [what, model] of [
    ['shipped post-norm', shippedDe.model],
    ['pre-norm', randomSeq2Seq({ normFirst: true, activation: 'gelu' })],
  ] as const) {
    const src = [126, 177, 168, 727, 107, 860, 16].map((i) => i % model.config.vocabSize);
    const tgt = [2, 129, 175, 575].map((i) => i % model.config.vocabSize);
    const run = modelFlow(model, { src, tgt });
    const last = model.config.normFirst ? 'add' : 'norm';
    withEvalMode(model, () =>
      noGrad(() => {
        const s = ids(src);
        const pad = model.paddingMask(s);
        let x = model.embed(s);
        same(flat(run.vectors('src.input')), x.dataSync(), `${what}: embedding + position`);
        [...model.transformer.encoder.layers].forEach((layer, i) => {
          x = layer.forward(x, { srcKeyPaddingMask: pad });
          same(flat(run.vectors(`enc.${i}.${last}2`)), x.dataSync(), `${what}: encoder layer ${i}`);
        });
        const memory = model.encode(s, pad);
        same(flat(run.vectors('enc.norm')), memory.dataSync(), `${what}: encoder output`);
        same(flat(run.vectors('dec.norm')), model.decode(ids(tgt), memory, pad).dataSync(), `${what}: decoder output`);
        const { weights } = encoderAttention(model, s);
        weights.forEach((heads, i) => {
          assert.deepEqual(
            stage(run, `enc.${i}.attn`).heads!.map((h) => h.weights),
            heads,
            `${what}: encoder maps, layer ${i}`,
          );
        });
      }),
    );
  }
  const { model } = shippedGpt;
  const x0 = promptContext(shippedGpt, 'Two dogs');
  const run = modelFlow(model, { ids: x0 });
  noGrad(() => {
    let x = model.embed(ids(x0));
    [...model.h].forEach((block, i) => {
      x = block.forward(x);
      same(flat(run.vectors(`h.${i}.add2`)), x.dataSync(), `GPT block ${i}`);
    });
    same(flat(run.vectors('ln_f')), model.lnF.forward(x).dataSync(), 'ln_f');
  });
});

test('the PyTorch-side fixtures: hf-gpt2-tiny logits and maps (1e-4), marian-tiny states, maps, logits', () => {
  const dir = `${FIXTURES}hf-gpt2-tiny/`;
  const expected = readSafetensors(new Uint8Array(readFileSync(`${dir}expected.safetensors`))).tensors;
  const gpt2 = readHfGpt2(
    JSON.parse(readFileSync(`${dir}config.json`, 'utf8')),
    readFileSync(`${dir}model.safetensors`),
  );
  const x = Array.from(expected.input_ids.dataSync<Int32Array>());
  const run = modelFlow(gpt2, { ids: x });
  assertClose(run.logits.dataSync(), expected.logits.dataSync(), 'GPT-2 logits');
  for (let i = 0; i < 2; i++) {
    const maps = stage(run, `h.${i}.attn`).heads!.map((h) => h.weights);
    assertClose(maps.flat(2), expected[`attn.${i}`].dataSync(), `GPT-2 attention of layer ${i}`);
  }
  const m = readMarianDir(`${FIXTURES}marian-tiny`);
  const want = JSON.parse(readFileSync(`${FIXTURES}marian-tiny/expected.json`, 'utf8')) as {
    sentences: { sourceIds: number[]; decoderInput: number[] }[];
  };
  const arrays = readSafetensors(new Uint8Array(readFileSync(`${FIXTURES}marian-tiny/expected.safetensors`))).tensors;
  const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol: number, what: string) => {
    assert.equal(a.length, b.length, what);
    let worst = 0;
    for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
    assert.ok(worst <= tol, `${what}: max |diff| ${worst} > ${tol}`);
  };
  const L = m.model.config.numEncoderLayers;
  want.sentences.forEach((s, n) => {
    const r = modelFlow(m.model, { src: s.sourceIds, tgt: s.decoderInput });
    assert.equal(
      r.flow.stages.some((st) => st.id === 'enc.norm'),
      false,
      'Marian has no final norm',
    );
    close(flat(r.vectors(`enc.${L - 1}.norm2`)), arrays[`${n}.encoder`].dataSync(), 2e-4, `${n}: encoder states`);
    close(mapsOf(r, 'enc', 'attn', L), arrays[`${n}.encoder_attentions`].dataSync(), 2e-5, `${n}: encoder maps`);
    close(r.logits.dataSync(), arrays[`${n}.logits`].dataSync(), 5e-4, `${n}: logits`);
    const D = m.model.config.numDecoderLayers;
    close(mapsOf(r, 'dec', 'attn', D), arrays[`${n}.decoder_attentions`].dataSync(), 2e-5, `${n}: decoder maps`);
    close(mapsOf(r, 'dec', 'cross', D), arrays[`${n}.cross_attentions`].dataSync(), 2e-5, `${n}: cross maps`);
  });
});

/** Every layer's maps of one attention stage, (layer, head, query, key) flattened. */
function mapsOf(run: FlowRun, stack: string, name: string, layers: number): number[] {
  return Array.from({ length: layers }, (_, i) =>
    stage(run, `${stack}.${i}.${name}`).heads!.map((h) => h.weights),
  ).flat(3);
}

test('summaries are the vectors’ own numbers; the heads put back together give the attention output', () => {
  assert.deepEqual(rowsOf(Float32Array.from([3, -4, 0, 1]), 1, 4, 2), [
    { norm: Math.sqrt(26), mean: 0, std: Math.sqrt(26 / 4), min: -4, max: 3, head: [3, -4] },
  ]);
  const model = shippedDe.model;
  const run = modelFlow(model, { src: [126, 177, 168, 16], tgt: [2, 129, 175] }, { dims: 32, top: 3 });
  for (const s of run.flow.stages) {
    const v = run.vectors(s.id);
    assert.equal(s.width, v[0].length, s.id);
    assert.deepEqual(s.rows, rowsOf(Float32Array.from(v.flat()), v.length, s.width, 32), s.id);
  }
  const dK = model.config.dModel / model.config.nhead; // 32: each head's `head` holds its whole rows
  for (const [id, mha] of [
    ['enc.1.attn', model.transformer.encoder.layers.at(1).selfAttn],
    ['dec.0.attn', model.transformer.decoder.layers.at(0).selfAttn],
    ['dec.2.cross', model.transformer.decoder.layers.at(2).multiheadAttn],
  ] as const) {
    const s = stage(run, id);
    const T = s.rows.length;
    const joined = Float32Array.from(
      Array.from({ length: T }, (_, t) => s.heads!.flatMap((h) => h.out[t].head)).flat(),
    );
    assert.equal(joined.length, T * dK * model.config.nhead);
    const out = noGrad(() =>
      F.linear(new Tensor(joined, [T, model.config.dModel]), mha.outProj.weight, mha.outProj.bias),
    );
    assertClose(out.dataSync(), flat(run.vectors(id)), `${id}: heads' outputs · Wᴼ + b`, 1e-5, 1e-5);
    for (const h of s.heads!) {
      for (const [i, row] of h.weights.entries()) {
        assert.ok(Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-5, `${id}: row ${i} sums to 1`);
        if (s.causal) for (let j = i + 1; j < row.length; j++) assert.equal(row[j], 0, `${id}: masked (${i}, ${j})`);
      }
    }
    assert.equal(s.causal, id === 'dec.0.attn');
    assert.equal(s.keys, id === 'dec.0.attn' ? 'target' : 'source');
  }
  const logits = run.vectors('logits');
  const probs = run.vectors('softmax');
  for (const [t, top] of stage(run, 'logits').top!.entries()) {
    const best = [...logits[t].keys()].sort((a, b) => logits[t][b] - logits[t][a] || a - b).slice(0, 3);
    assert.deepEqual(
      top.map((x) => x.id),
      best,
      `position ${t}: the three highest logits`,
    );
    for (const x of top) {
      assert.equal(x.logit, logits[t][x.id]);
      assert.equal(x.p, probs[t][x.id]);
    }
  }
});

test('textFlow: a translator fed its greedy translation predicts it, or a given prefix; a GPT its prompt', () => {
  const { model, tokenizer, targetTokenizer } = shippedDe;
  const subject = { kind: 'seq2seq' as const, model, tokenizer, targetTokenizer };
  const run = textFlow(subject, '  A man is riding a bike. ');
  assert.deepEqual(run.text, {
    text: 'A man is riding a bike.',
    target: 'Ein Mann fährt auf einem Fahrrad.',
    translated: true,
  });
  const tgt = run.flow.axes.target!;
  assert.equal(tgt.ids[0], targetTokenizer.bosId);
  assert.deepEqual(tgt.tokens.slice(0, 3), ['<s>', '▁Ein', '▁Mann']);
  assert.deepEqual(
    stage(run, 'softmax').top!.map((t) => t[0].id),
    [...tgt.ids.slice(1), targetTokenizer.eosId],
    'each position’s most probable token is the next one of the greedy translation, EOS last',
  );
  assert.deepEqual(
    run.flow.axes.source!.tokens,
    tokenizer.encode('A man is riding a bike.').map((i) => tokenizer.idToToken(i)),
  );
  const given = textFlow(subject, 'A man is riding a bike.', { target: 'Ein Mann', dims: 3, top: 2 });
  assert.deepEqual(given.text, { text: 'A man is riding a bike.', target: 'Ein Mann', translated: false });
  assert.deepEqual(given.flow.axes.target!.ids, [targetTokenizer.bosId, ...targetTokenizer.encode('Ein Mann')]);
  assert.equal(stage(given, 'enc.0.attn').rows[0].head.length, 3);
  assert.equal(stage(given, 'logits').top![0].length, 2);
  const lm = { kind: 'gpt' as const, lm: shippedGpt };
  const g = textFlow(lm, 'A dog');
  assert.deepEqual(g.flow.axes.tokens!.tokens, ['⏎', 'A', '␣', 'd', 'o', 'g']);
  assert.deepEqual(g.text, { text: 'A dog' });
  assert.throws(() => textFlow(subject, '   '), /^Error: flow: the sentence is empty$/);
  assert.throws(
    () => textFlow(lm, 'A dog', { target: 'x' }),
    /^Error: flow: a GPT has no target: give the prompt alone$/,
  );
  assert.throws(
    () => textFlow(lm, 'a'.repeat(70)),
    /^Error: flow: the prompt is 71 tokens long; the flow shows at most 64$/,
  );
  assert.throws(
    () => textFlow(subject, 'A dog.', { dims: 0 }),
    /^Error: flow: dims must be a positive integer, got 0$/,
  );
});
