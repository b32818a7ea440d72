/**
 * python/qkv_torch/train.py against qkv: the same 5 steps in qkv and in PyTorch (one process, two
 * processes under torchrun with gloo, and --accum 2), the folder it writes loading in qkv with
 * PyTorch's logits, the round trip qkv → torchrun → `qkv train --resume`, and bad input.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModelDir } from '../../src/cli/files.ts';
import { epochOrder, makeBatch, planBatches, type Pair } from '../../src/data/batching.ts';
import { Trainer, evaluateLoss } from '../../src/train/trainer.ts';
import { readSafetensors, writeSafetensors } from '../../src/io/safetensors.ts';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { Seq2Seq } from '../../src/models/seq2seq.ts';
import type { Tensor } from '../../src/tensor/tensor.ts';
import { requireTool, toolSkip } from '../helpers/tools.ts';
import {
  RECIPE,
  isKeyBias,
  makeCorpus,
  makeRun,
  python,
  qkvCli,
  readLog,
  readTensors,
  torchrun,
  worstExcess,
  type Fixture,
} from './setup.ts';

const skip = toolSkip('torch');
const dir = mkdtempSync(join(tmpdir(), 'qkv-torch-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let fx: Fixture;
const qkvLosses: number[] = [];
let qkvWeights: Record<string, Tensor> = {};

/** 5 qkv steps from the run folder's step 0, in this process. */
function setup(): void {
  if (fx) return;
  fx = makeRun(dir, makeCorpus(join(dir, 'corpus')));
  copyFileSync(join(fx.run, 'train-state.safetensors'), join(dir, 'qkv-run-step0.safetensors'));
  for (let i = 0; i < 5; i++) qkvLosses.push(fx.trainer.step().loss);
  qkvWeights = Object.fromEntries(Object.entries(fx.model.stateDict()).map(([k, v]) => [k, v.clone()]));
}

const train = (out: string, extra: string[] = []) =>
  python([
    'python/qkv_torch/train.py',
    '--init-from',
    fx.run,
    '--data',
    fx.trainIds,
    '--out',
    out,
    '--max-steps',
    '5',
    ...extra,
  ]);
/** train.py's one-process run of 5 steps with validation, made once by whichever test needs it first (each test runs alone too). */
let oneRun: ReturnType<typeof train> | undefined;
function trainOne(): { out: string; r: ReturnType<typeof train> } {
  const out = join(dir, 'one');
  oneRun ??= train(out, ['--val', fx.valIds]);
  return { out, r: oneRun };
}
const step5 = (out: string) => readTensors(join(out, 'checkpoints', 'step-0000005.safetensors'));

/** qkv's logits (flattened) for the first training batch with these weights (in a model apart from the trainer's). */
function qkvLogits(model: Seq2Seq, weights: Record<string, Tensor>): Float32Array {
  model.loadStateDict(weights);
  model.eval();
  const b = makeBatch(fx.trainer.pairs, fx.trainer.batches[0], {
    padId: fx.tokenizer.padId,
    bosId: fx.tokenizer.bosId,
    eosId: fx.tokenizer.eosId,
  });
  return noGrad(() => model.forward(b.src, b.tgtIn).dataSync().slice() as Float32Array);
}

function maxRelDiff(a: ArrayLike<number>, b: ArrayLike<number>, atol: number): number {
  let worst = 0;
  for (let i = 0; i < b.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / (atol + Math.abs(b[i])));
  return worst;
}

test("data.py plans qkv's batches and epoch orders; qkv data encode (the command) writes qkv train's ids", {
  skip,
}, () => {
  requireTool('torch');
  setup();
  // The batch plan and the shuffled order of several epochs and seeds, from Python's port.
  const script = [
    'import json, sys',
    'from qkv_torch.data import read_pairs, plan_batches, epoch_order',
    'pairs, meta = read_pairs(sys.argv[1])',
    'plans = {m: plan_batches(pairs, m) for m in (64, 300, 1024)}',
    'orders = [epoch_order(len(plans[64]), s, e) for s in (1, 7, 123456789) for e in (0, 1, 5)]',
    'print(json.dumps({"plans": plans, "orders": orders, "pairs": pairs, "ids": [meta["padId"], meta["bosId"], meta["eosId"]]}))',
  ].join('\n');
  const r = python(['-c', script, fx.trainIds]);
  assert.equal(r.status, 0, r.stderr);
  const got = JSON.parse(r.stdout) as {
    plans: Record<string, number[][]>;
    orders: number[][];
    pairs: [number[], number[]][];
    ids: number[];
  };
  const pairs = fx.trainer.pairs;
  assert.deepEqual(
    got.pairs,
    pairs.map((p) => [p.src, p.tgt]),
  );
  assert.deepEqual(got.ids, [fx.tokenizer.padId, fx.tokenizer.bosId, fx.tokenizer.eosId]);
  for (const m of [64, 300, 1024]) assert.deepEqual(got.plans[m], planBatches(pairs, m), `maxTokens ${m}`);
  const n = planBatches(pairs, 64).length;
  assert.deepEqual(
    got.orders,
    [1, 7, 123456789].flatMap((s) => [0, 1, 5].map((e) => epochOrder(n, s, e))),
  );
  // The command writes the same file as the function the fixture used.
  const out = join(dir, 'train-cli.ids');
  const c = qkvCli([
    'data',
    'encode',
    '--model',
    fx.run,
    '--data',
    join(dir, 'corpus'),
    '--split',
    'train',
    '--out',
    out,
  ]);
  assert.equal(c.status, 0, c.stderr);
  assert.match(c.stderr, /wrote .*: 160 pairs, \d+ source and \d+ target ids \(train\.en-de, vocabulary 300\)/);
  assert.deepEqual(readFileSync(out), readFileSync(fx.trainIds));
  const bad = qkvCli([
    'data',
    'encode',
    '--model',
    fx.run,
    '--data',
    join(dir, 'corpus'),
    '--split',
    'nosuch',
    '--out',
    join(dir, 'x.ids'),
  ]);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /^qkv: corpus file not found: .*nosuch\.en/);
  assert.ok(!existsSync(join(dir, 'x.ids')));
});

test("train.py, one process: the 5 losses and weights of qkv's own 5 steps (same initial weights and batches, dropout 0)", {
  skip,
}, () => {
  requireTool('torch');
  setup();
  const { out, r } = trainOne();
  assert.equal(r.status, 0, r.stderr);
  const log = readLog(out);
  assert.deepEqual(
    log.map((e) => e.step),
    [1, 2, 3, 4, 5],
  );
  log.forEach((e, i) =>
    assert.ok(
      Math.abs(e.loss - qkvLosses[i]) <= 1e-5 * qkvLosses[i],
      `step ${i + 1}: loss ${e.loss} vs qkv ${qkvLosses[i]}`,
    ),
  );
  const d = fx.model.config.dModel;
  const w = step5(out);
  const { excess, where } = worstExcess(w, qkvWeights, 1e-4, 1e-4, (n, i) => isKeyBias(n, i, d));
  assert.ok(excess <= 0, `weights differ beyond 1e-4 + 1e-4·|w|: ${where}`);
  // The key biases (skipped above) change no output: the two models' logits agree.
  const probe = new Seq2Seq(fx.model.config);
  assert.ok(maxRelDiff(qkvLogits(probe, w), qkvLogits(probe, qkvWeights), 1) < 1e-4);
  // The validation loss train.py reports for its weights is qkv's evaluateLoss of them.
  const final = readFileSync(join(out, 'train-log.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { valLoss?: number; final?: boolean })
    .find((e) => e.final);
  probe.loadStateDict(w);
  const val = readPairsOf(fx.valIds);
  const expected = evaluateLoss(
    probe,
    val,
    { padId: fx.tokenizer.padId, bosId: fx.tokenizer.bosId, eosId: fx.tokenizer.eosId },
    fx.trainer.options.maxTokens,
  );
  assert.ok(
    final && Math.abs(final.valLoss! - expected) <= 1e-5 * expected,
    `val loss ${final?.valLoss} vs qkv ${expected}`,
  );
});

test("torchrun --nproc_per_node 2 (gloo) ends with the weights of one process with --accum 2 (the same 2 batches a step); qkv loads the folder with PyTorch's logits", {
  skip,
}, () => {
  requireTool('torch');
  setup();
  const ddp = join(dir, 'ddp');
  const r = torchrun(2, ['--init-from', fx.run, '--data', fx.trainIds, '--out', ddp, '--max-steps', '5']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /world size 2 × accum 1 = 2 batches per step on cpu/);
  const acc = join(dir, 'accum');
  const a = train(acc, ['--accum', '2']);
  assert.equal(a.status, 0, a.stderr);
  assert.match(a.stderr, /world size 1 × accum 2 = 2 batches per step on cpu/);
  const d = fx.model.config.dModel;
  const { excess, where } = worstExcess(step5(ddp), step5(acc), 1e-5, 0, (n, i) => isKeyBias(n, i, d));
  assert.ok(excess <= 0, `2 processes and --accum 2 differ beyond 1e-5: ${where}`);
  const [la, lb] = [readLog(ddp), readLog(acc)];
  assert.deepEqual(
    la.map((e) => e.targetTokens),
    lb.map((e) => e.targetTokens),
  );
  la.forEach((e, i) =>
    assert.ok(Math.abs(e.loss - lb[i].loss) <= 1e-6 * e.loss, `step ${i + 1}: ${e.loss} vs ${lb[i].loss}`),
  );
  // The steps differ from one batch per step: 2 batches each, the next two of qkv's order.
  const one = trainOne();
  assert.equal(one.r.status, 0, one.r.stderr);
  const oneLog = readLog(one.out);
  assert.notEqual(lb[0].targetTokens, oneLog[0].targetTokens);
  // The folder torchrun wrote opens in qkv; qkv's logits equal PyTorch's.
  const { model } = loadModelDir(ddp);
  const b = makeBatch(fx.trainer.pairs, fx.trainer.batches[1], {
    padId: fx.tokenizer.padId,
    bosId: fx.tokenizer.bosId,
    eosId: fx.tokenizer.eosId,
  });
  const ours = noGrad(() => model.forward(b.src, b.tgtIn));
  const ids = join(dir, 'ids.safetensors');
  const logitsOut = join(dir, 'logits.safetensors');
  writeFileSafetensors(ids, { src: b.src, tgt: b.tgtIn });
  const p = python(['-m', 'qkv_torch.model', ddp, '--logits', ids, logitsOut]);
  assert.equal(p.status, 0, p.stderr);
  const theirs = readTensors(logitsOut).logits;
  assert.deepEqual(theirs.shape, ours.shape);
  assert.ok(maxRelDiff(ours.dataSync<Float32Array>(), theirs.dataSync<Float32Array>(), 1) < 1e-4);
});

test("train.py --accum 2 takes qkv's accum-2 steps: losses and weights of qkv's Trainer with accum 2", { skip }, () => {
  requireTool('torch');
  setup();
  // qkv's Trainer from the run's step-0 weights (a fresh Adam, as at step 0), two batches a step.
  const m = new Seq2Seq(fx.model.config);
  const step0 = readTensors(join(dir, 'qkv-run-step0.safetensors'));
  m.loadStateDict(Object.fromEntries(Object.keys(m.stateDict()).map((k) => [k, step0[`model.${k}`]])));
  const t = new Trainer(
    m,
    fx.trainer.pairs,
    { padId: fx.tokenizer.padId, bosId: fx.tokenizer.bosId, eosId: fx.tokenizer.eosId },
    { ...RECIPE, accum: 2 },
  );
  const losses = Array.from({ length: 5 }, () => t.step().loss);
  const acc = join(dir, 'accum');
  if (!existsSync(join(acc, 'train-state.safetensors'))) assert.equal(train(acc, ['--accum', '2']).status, 0);
  readLog(acc).forEach((e, i) =>
    assert.ok(Math.abs(e.loss - losses[i]) <= 1e-5 * losses[i], `step ${i + 1}: ${e.loss} vs qkv ${losses[i]}`),
  );
  const { excess, where } = worstExcess(step5(acc), m.stateDict(), 1e-4, 1e-4, (n, i) =>
    isKeyBias(n, i, m.config.dModel),
  );
  assert.ok(excess <= 0, where);
});

/** The pairs of an encoded split, read back in TypeScript. */
function readPairsOf(path: string): Pair[] {
  const t = readTensors(path);
  const side = (k: string, i: number) =>
    Array.from(
      t[`${k}.ids`]
        .dataSync<Int32Array>()
        .subarray(t[`${k}.offsets`].dataSync()[i], t[`${k}.offsets`].dataSync()[i + 1]),
    );
  return Array.from({ length: t['src.offsets'].size - 1 }, (_, i) => ({ src: side('src', i), tgt: side('tgt', i) }));
}

function writeFileSafetensors(path: string, t: Record<string, Tensor>): void {
  writeFileSync(path, writeSafetensors(t));
}

test('round trip: qkv run → torchrun --init-from (3 more steps) → qkv train --resume continues, where qkv alone would be; bad input is one line', {
  skip,
}, () => {
  requireTool('torch');
  setup();
  // A qkv run at step 2 (qkv train --preset tiny on the fixture's folder, which is such a run at step 0).
  const corpus = join(dir, 'corpus');
  const q = qkvCli([
    'train',
    '--preset',
    'tiny',
    '--out',
    fx.run,
    '--data',
    corpus,
    '--resume',
    '--max-steps',
    '2',
    '--save-every',
    '2',
    '--eval-every',
    '100',
    '--bleu-sentences',
    '2',
  ]);
  assert.equal(q.status, 0, q.stderr);
  const tr = join(dir, 'trip');
  // One process, one batch a step as in qkv, so that the end can be compared with qkv alone.
  const r = torchrun(1, [
    '--init-from',
    fx.run,
    '--data',
    fx.trainIds,
    '--out',
    tr,
    '--max-steps',
    '5',
    '--save-every',
    '5',
  ]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /from step 2/);
  assert.deepEqual(
    readLog(tr).map((e) => e.step),
    [3, 4, 5],
  );
  // The folder opens directly in qkv's tools.
  const info = qkvCli(['info', '--model', tr]);
  assert.equal(info.status, 0, info.stderr);
  const svg = join(dir, 'attention.svg');
  const att = qkvCli(['attention', 'A man rides a bike.', '--model', tr, '--out', svg, '--layer', '1']);
  assert.equal(att.status, 0, att.stderr);
  assert.ok(
    readFileSync(svg, 'utf8').includes('aria-label="layer 1 · head 1"'),
    'the SVG has the heatmap of layer 1, head 1',
  );
  const back = qkvCli([
    'train',
    '--preset',
    'tiny',
    '--out',
    tr,
    '--data',
    corpus,
    '--resume',
    '--max-steps',
    '7',
    '--save-every',
    '7',
    '--eval-every',
    '100',
    '--bleu-sentences',
    '2',
  ]);
  assert.equal(back.status, 0, back.stderr);
  assert.match(back.stderr, /resumed at step 5 \(epoch \d+\)/);
  const meta = JSON.parse(readSafetensors(readFileSync(join(tr, 'train-state.safetensors'))).metadata.trainer) as {
    position: { step: number };
    adamStep: number;
  };
  assert.equal(meta.position.step, 7);
  assert.equal(meta.adamStep, 7);
  // qkv 2 steps → PyTorch 3 → qkv 2 lands where qkv's own 7 steps land (dropout 0): the hand-overs lose nothing.
  const losses = [fx.trainer.step().loss, fx.trainer.step().loss];
  assert.ok(losses.every(Number.isFinite));
  const state = readTensors(join(tr, 'train-state.safetensors'));
  const ours = Object.fromEntries(Object.entries(fx.model.stateDict()).map(([k, v]) => [`model.${k}`, v]));
  const d = fx.model.config.dModel;
  const { excess, where } = worstExcess(state, ours, 1e-4, 1e-4, (n, i) => isKeyBias(n, i, d));
  assert.ok(excess <= 0, `qkv → torchrun → qkv differs from qkv alone beyond 1e-4 + 1e-4·|w|: ${where}`);

  // A run that takes 3 batches a step cannot be split over 2 processes: one line, exit 1, nothing written.
  const three = join(dir, 'accum3');
  cpSync(tr, three, { recursive: true });
  const st = readSafetensors(readFileSync(join(three, 'train-state.safetensors')));
  const trainerMeta = JSON.parse(st.metadata.trainer) as { options: Record<string, unknown> };
  trainerMeta.options.accum = 3;
  writeFileSync(
    join(three, 'train-state.safetensors'),
    writeSafetensors(st.tensors, { metadata: { trainer: JSON.stringify(trainerMeta) } }),
  );
  const bad = join(dir, 'bad');
  const w = torchrun(2, ['--init-from', three, '--data', fx.trainIds, '--out', bad, '--max-steps', '9']);
  assert.notEqual(w.status, 0);
  assert.match(
    w.stderr,
    /error: world size 2 does not divide the run's 3 batches per step \(accum 3\); use a world size that divides it, or --accum K/,
  );
  assert.ok(!existsSync(bad));
  // Starting over an existing run without --resume.
  const again = train(tr);
  assert.equal(again.status, 1);
  assert.match(again.stderr, /^error: .* already holds a training run; pass --resume/);
});

test("separate vocabularies (qkv train --separate-vocab): qkv data encode writes the target side with target_tokenizer.json; train.py takes qkv's 5 steps and writes a folder qkv reads", {
  skip,
}, () => {
  requireTool('torch');
  setup();
  const sdir = join(dir, 'separate');
  const sx = makeRun(sdir, join(dir, 'corpus'), {}, RECIPE, { separate: true });
  assert.equal(sx.model.config.tgtVocabSize, sx.targetTokenizer.vocabSize);
  assert.notEqual(sx.targetTokenizer.vocabSize, sx.tokenizer.vocabSize);
  // The encoded file holds the target ids of target_tokenizer.json, and says so.
  const meta = readSafetensors(readFileSync(sx.trainIds)).metadata;
  assert.equal(meta.tgtVocabSize, String(sx.targetTokenizer.vocabSize));
  assert.deepEqual(readPairsOf(sx.trainIds), sx.trainer.pairs);
  const tables = (t: Record<string, Tensor>) => ({
    'embedding.weight': t['embedding.weight'],
    'tgtEmbedding.weight': t['tgtEmbedding.weight'],
  });
  const losses = [sx.trainer.step().loss];
  const qkvStep1 = Object.fromEntries(Object.entries(sx.model.stateDict()).map(([k, v]) => [k, v.clone()]));
  for (let i = 1; i < 5; i++) losses.push(sx.trainer.step().loss);
  const out = join(sdir, 'torch');
  const r = python([
    'python/qkv_torch/train.py',
    '--init-from',
    sx.run,
    '--data',
    sx.trainIds,
    '--out',
    out,
    '--max-steps',
    '5',
    '--save-every',
    '1',
  ]);
  assert.equal(r.status, 0, r.stderr);
  readLog(out).forEach((e, i) =>
    assert.ok(Math.abs(e.loss - losses[i]) <= 1e-5 * losses[i], `step ${i + 1}: loss ${e.loss} vs qkv ${losses[i]}`),
  );
  // Weights are compared after the first step, taken from the same weights: the two embedding tables
  // (what separate vocabularies add) to 1e-4 + 1e-4·|w| (a source id looked up in the target table, or
  // the output tied to the wrong one, moves rows by a whole learning rate), and the model's output.
  // Not after 5 steps: Adam's first update of an element is ±lr whatever its gradient's size, so an
  // element whose first gradient is at rounding level lands lr apart in any two implementations. Here a
  // source row first seen at step 3 had a gradient of 1e-6 in one place, while two steps of different
  // rounding had left qkv-js and qkv-wasm 1e-5 apart there: 0.024 apart after step 5, with logits
  // beyond 1e-4. From one state, qkv-wasm's and qkv-js's next gradients agree to 1e-6 of their size.
  // The 5 losses agree to 1e-5 above.
  const w = readTensors(join(out, 'checkpoints', 'step-0000001.safetensors'));
  const { excess, where } = worstExcess(tables(w), tables(qkvStep1), 1e-4, 1e-4);
  assert.ok(excess <= 0, `embedding tables after step 1 differ beyond 1e-4 + 1e-4·|w|: ${where}`);
  const probe = new Seq2Seq(sx.model.config);
  const logitsOf = (weights: Record<string, Tensor>) => {
    probe.loadStateDict(weights);
    probe.eval();
    const b = makeBatch(sx.trainer.pairs, sx.trainer.batches[0], {
      padId: sx.tokenizer.padId,
      bosId: sx.targetTokenizer.bosId,
      eosId: sx.targetTokenizer.eosId,
    });
    return noGrad(() => probe.forward(b.src, b.tgtIn).dataSync().slice() as Float32Array);
  };
  assert.ok(maxRelDiff(logitsOf(w), logitsOf(qkvStep1), 1) < 1e-4, 'logits after step 1');
  assert.ok(existsSync(join(out, 'checkpoints', 'step-0000005.safetensors')), 'train.py took 5 steps');
  assert.equal(
    readFileSync(join(out, 'target_tokenizer.json'), 'utf8'),
    readFileSync(join(sx.run, 'target_tokenizer.json'), 'utf8'),
  );
  assert.equal(loadModelDir(out).targetTokenizer.vocabSize, sx.targetTokenizer.vocabSize);
  // A file without the target side's size and tokenizer (as a shared-vocabulary encoding says) does not train it: one line, exit 1.
  const f = readSafetensors(readFileSync(sx.trainIds));
  const { tgtVocabSize: _v, targetTokenizerSha256: _h, ...sharedMeta } = f.metadata;
  const noTarget = join(sdir, 'no-target.ids');
  writeFileSync(noTarget, writeSafetensors(f.tensors, { metadata: sharedMeta }));
  const bad = python([
    'python/qkv_torch/train.py',
    '--init-from',
    sx.run,
    '--data',
    noTarget,
    '--out',
    join(sdir, 'bad'),
    '--max-steps',
    '1',
  ]);
  assert.equal(bad.status, 1);
  assert.match(
    bad.stderr,
    new RegExp(
      `^error: .*no-target\\.ids: encoded with a target vocabulary of the shared one, the model has ${sx.targetTokenizer.vocabSize} \\(re-run qkv data encode --model .*\\)$`,
      'm',
    ),
  );
});
