/**
 * Fine-tuning steps equal PyTorch + PEFT's (issue 60): scripts/fixtures/make_peft_lora.py took two steps of
 * AdamW (Trainer's two groups, clipping at 1) on the tiny GPT-2 and Marian folders, with a PEFT LoRA adapter and
 * fully, and dumped the losses, the gradients, the parameters and the logits. qkv reads the same folders and PEFT's
 * adapter, takes the same steps with its FineTuner, and must land on the same numbers at float32 tolerances.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { makeBatch, type Pair } from '../../src/data/batching.ts';
import { applyAdapter, readAdapterSync } from '../../src/folder/adapter.ts';
import { dirSource, readHfGpt2Dir, readMarianDir } from '../../src/folder/node.ts';
import { tunable, type Tunable } from '../../src/folder/tunable.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { gpt2HfStateDict } from '../../src/models/hf/gpt2.ts';
import { marianHfStateDict } from '../../src/models/hf/marian.ts';
import { peftKey, type AttachedLora } from '../../src/models/hf/peft.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { FineTuner, fineTuneLrFactor } from '../../src/train/finetune.ts';
import { PairData, StreamData, type FineTuneData } from '../../src/train/finetune-data.ts';
import { noiseOnly } from '../helpers/adam-noise.ts';
import { assertClose } from '../helpers/assert.ts';

const FIX = fileURLToPath(new URL('../fixtures/', import.meta.url));

interface Data {
  batches: ({ ids: number[][] } | { pairs: Pair[] })[];
  optimizer: { lr: number; betas: [number, number]; eps: number; weightDecay: number; clipNorm: number };
  lora: { steps: { loss: number; gradNorm: number }[] };
  full: { steps: { loss: number; gradNorm: number }[] };
}

function fixture(family: 'gpt2' | 'marian') {
  const dir = join(FIX, 'peft', family);
  const data = JSON.parse(readFileSync(join(dir, 'data.json'), 'utf8')) as Data;
  const expected = readSafetensors(new Uint8Array(readFileSync(join(dir, 'expected.safetensors')))).tensors;
  return { dir, data, expected };
}

/** The GPT-2 and Marian cases of Tunable (what this file's fixtures open). */
type Tuned = Extract<Tunable, { kind: 'hf-gpt2' | 'marian' }>;

function open(family: 'gpt2' | 'marian'): Tuned {
  const t =
    family === 'gpt2'
      ? tunable({ kind: 'hf-gpt2', ...readHfGpt2Dir(join(FIX, 'hf-gpt2-tiny')) })
      : tunable({ kind: 'marian', ...readMarianDir(join(FIX, 'marian-tiny')) });
  assert.ok(t.kind === 'hf-gpt2' || t.kind === 'marian');
  return t;
}

/** The family's task data and the fixture's batches as the FineTuner takes them. */
function batchesOf(t: Tuned, data: Data): { task: FineTuneData<unknown>; batches: unknown[] } {
  if (t.kind === 'hf-gpt2') {
    const batches = data.batches.map((b) => {
      const ids = (b as { ids: number[][] }).ids;
      const B = ids.length;
      const T = ids[0].length - 1;
      // HF's labels = input_ids, shifted inside the model: inputs ids[:, :-1], targets ids[:, 1:].
      const x = new Tensor(Int32Array.from(ids.flatMap((r) => r.slice(0, -1))), [B, T], 'int32');
      const y = new Tensor(Int32Array.from(ids.flatMap((r) => r.slice(1))), [B, T], 'int32');
      return { x, y };
    });
    return { task: new StreamData(new Int32Array(16), 1, 8) as FineTuneData<unknown>, batches };
  }
  const { padId, eosId, decoderStartId } = t.opened.ids;
  const ids = { padId, bosId: decoderStartId, eosId };
  const all = data.batches.flatMap((b) => (b as { pairs: Pair[] }).pairs);
  const batches = data.batches.map((b) => {
    const pairs = (b as { pairs: Pair[] }).pairs;
    return makeBatch(pairs, [0, 1], ids);
  });
  return { task: new PairData(all, ids, 4096) as FineTuneData<unknown>, batches };
}

function logits(t: Tuned, batch: unknown): Tensor {
  t.model.eval();
  return noGrad(() => {
    if (t.kind === 'hf-gpt2') return t.model.forward((batch as { x: Tensor }).x);
    const b = batch as ReturnType<typeof makeBatch>;
    return t.model.forward(b.src, b.tgtIn);
  });
}

function tuner(t: Tunable, task: FineTuneData<unknown>, data: Data): FineTuner<unknown> {
  const o = data.optimizer;
  return new FineTuner(t.model, task, {
    lr: o.lr,
    betas: o.betas,
    eps: o.eps,
    weightDecay: o.weightDecay,
    clipNorm: o.clipNorm,
    schedule: 'constant',
    warmup: 0,
  });
}

/** Each pair's A and B (or their gradients) under PEFT's keys. */
function pairTensors(a: AttachedLora, grad: boolean): Record<string, Tensor> {
  const out: Record<string, Tensor> = {};
  for (const { site, lora } of a.pairs) {
    for (const [f, w] of [
      ['A', lora.loraA.weight],
      ['B', lora.loraB.weight],
    ] as const) {
      const t = grad ? w.grad : w;
      assert.ok(t, `${peftKey(site.path, f)}: no gradient`);
      out[peftKey(site.path, f)] = t;
    }
  }
  return out;
}

/** Every key of `expected` under `prefix`, compared with `actual`'s tensor of the same name (none may be missing). */
function compareAll(
  actual: Record<string, Tensor>,
  expected: Record<string, Tensor>,
  prefix: string,
  tol = 1e-4,
  noise?: { E: number; bound: number },
): void {
  const keys = Object.keys(expected).filter((k) => k.startsWith(prefix));
  assert.ok(keys.length > 0, `no ${prefix}* in the fixture`);
  const names = new Set(keys.map((k) => k.slice(prefix.length)));
  const extra = Object.keys(actual).filter((k) => !names.has(k));
  assert.deepEqual(extra, [], `${prefix}: qkv has tensors the fixture lacks`);
  for (const k of keys) {
    const name = k.slice(prefix.length);
    assert.ok(actual[name], `${prefix}${name}: missing in qkv`);
    const exempt = noise ? noiseOnly(name, noise.E) : null;
    if (!exempt) {
      assertClose(actual[name], expected[k], `${prefix}${name}`, tol, tol);
      continue;
    }
    const a = actual[name].dataSync<Float32Array>();
    const b = expected[k].dataSync<Float32Array>();
    const exact = [...a].flatMap((_, i) => (exempt(i) ? [] : [i]));
    assertClose(
      Float32Array.from(exact, (i) => a[i]),
      Float32Array.from(exact, (i) => b[i]),
      `${prefix}${name}`,
      tol,
      tol,
    );
    for (let i = 0; i < a.length; i++)
      if (exempt(i)) assert.ok(Math.abs(a[i] - b[i]) <= noise!.bound, `${prefix}${name}[${i}]: beyond Adam's step`);
  }
}

for (const family of ['gpt2', 'marian'] as const) {
  test(`LoRA (${family}): PEFT's adapter gives PEFT's logits; two AdamW steps give PEFT's losses, gradients, A and B`, () => {
    const { dir, data, expected } = fixture(family);
    const t = open(family);
    const adapter = readAdapterSync(dirSource(join(dir, 'adapter-init')));
    const attached = applyAdapter(t, adapter, false);
    assert.ok(attached.pairs.length >= 8, 'every targeted layer has a pair');
    const { task, batches } = batchesOf(t, data);
    assertClose(logits(t, batches[0]), expected['lora.logits.init'], 'logits with the initial adapter');
    const trainer = tuner(t, task, data);
    const trainable = trainer.decayed.params.length + trainer.undecayed.params.length;
    assert.equal(trainable, 2 * attached.pairs.length, 'only A and B train: the base is frozen');
    for (let s = 1; s <= 2; s++) {
      const r = trainer.stepOn(batches[s - 1]);
      const want = data.lora.steps[s - 1];
      assert.ok(Math.abs(r.loss - want.loss) <= 1e-4 * Math.abs(want.loss), `step ${s} loss ${r.loss} vs ${want.loss}`);
      assert.ok(Math.abs(r.gradNorm - want.gradNorm) <= 1e-4 * want.gradNorm, `step ${s} grad norm`);
      compareAll(pairTensors(attached, true), expected, `lora.step${s}.grad.`);
      compareAll(pairTensors(attached, false), expected, `lora.step${s}.param.`);
    }
    assertClose(logits(t, batches[0]), expected['lora.logits.trained'], 'logits after training');
    // The base did not move: every frozen weight has no gradient.
    for (const [n, p] of t.model.namedParameters())
      if (!p.requiresGrad) assert.equal(p.grad, null, `${n} has a gradient`);
  });

  test(`LoRA (${family}): PEFT's trained adapter, loaded and merged, gives PEFT's logits`, () => {
    const { dir, data, expected } = fixture(family);
    const t = open(family);
    const { batches } = batchesOf(t, data);
    const attached = applyAdapter(t, readAdapterSync(dirSource(join(dir, 'adapter-trained'))), true);
    assert.equal(
      t.model.namedModules().filter(([n]) => /lora/.test(n)).length,
      0,
      'merging leaves no adapter module behind',
    );
    assert.ok(attached.pairs.length > 0);
    assertClose(logits(t, batches[0]), expected['lora.logits.trained'], 'logits of the merged model');
  });

  test(`full fine-tuning (${family}): two AdamW steps give PyTorch's losses, every gradient and every parameter`, () => {
    const { data, expected } = fixture(family);
    const t = open(family);
    const { task, batches } = batchesOf(t, data);
    const trainer = tuner(t, task, data);
    const E = t.kind === 'hf-gpt2' ? t.model.config.nEmbd : t.model.config.dModel;
    /** A state dict with each parameter replaced by `pick(p)` (buffers as they are), under HF's names. */
    const hf = (pick: (p: Tensor) => Tensor | null): Record<string, Tensor> => {
      const own = t.model.stateDict();
      const params = new Map(t.model.namedParameters());
      const sd: Record<string, Tensor> = {};
      for (const [k, v] of Object.entries(own)) {
        const p = params.get(k);
        sd[k] = p ? (pick(p) ?? new Tensor(new Float32Array(p.size), p.shape, 'float32')) : v;
      }
      const out = t.kind === 'hf-gpt2' ? gpt2HfStateDict(sd) : marianHfStateDict(sd, t.model.config);
      delete out.final_logits_bias; // a buffer in both: never trained
      return out;
    };
    for (let s = 1; s <= 2; s++) {
      const r = trainer.stepOn(batches[s - 1]);
      const want = data.full.steps[s - 1];
      assert.ok(Math.abs(r.loss - want.loss) <= 1e-4 * Math.abs(want.loss), `step ${s} loss ${r.loss} vs ${want.loss}`);
      assert.ok(Math.abs(r.gradNorm - want.gradNorm) <= 1e-4 * want.gradNorm, `step ${s} grad norm`);
      if (s === 1) {
        const grads = hf((p) => p.grad);
        compareAll(grads, expected, 'full.step1.grad.');
        // The exempted elements' gradients are noise in both (else the exemption below would hide a bug).
        for (const [name, g] of Object.entries(grads)) {
          const exempt = noiseOnly(name, E);
          if (!exempt) continue;
          const a = g.dataSync<Float32Array>();
          const b = expected[`full.step1.grad.${name}`].dataSync<Float32Array>();
          for (let i = 0; i < a.length; i++)
            if (exempt(i)) assert.ok(Math.abs(a[i]) < 1e-6 && Math.abs(b[i]) < 1e-6, `${name}[${i}] is not noise`);
        }
      }
    }
    // Two Adam steps move an element by at most ~2·lr (bias-corrected m̂/√v̂ is ±1 at the first step).
    compareAll(
      hf((p) => p),
      expected,
      'full.step2.param.',
      1e-4,
      { E, bound: 4 * data.optimizer.lr },
    );
  });
}

test("the linear schedule is transformers' get_linear_schedule_with_warmup (warmup 3, 10 steps)", () => {
  const want = JSON.parse(readFileSync(join(FIX, 'peft', 'linear_schedule.json'), 'utf8')) as number[];
  want.forEach((w, i) => assert.ok(Math.abs(fineTuneLrFactor(i, 3, 10, 'linear') - w) < 1e-12, `step ${i}`));
  assert.equal(fineTuneLrFactor(5, 3, 10, 'constant'), 1);
  assert.equal(fineTuneLrFactor(1, 3, 10, 'constant'), 1 / 3);
});
