/**
 * Fine-tuning steps of the newer families equal PyTorch + PEFT's (issue 60): scripts/fixtures/
 * make_finetune_families.py took two AdamW steps (Trainer's two groups, clipping at 1) in float64 on the tiny Llama
 * (grouped KV heads, tied head) and Qwen2 (q/k/v biases, untied head) folders, with a PEFT LoRA adapter and fully,
 * and dumped the losses, the gradients and the parameters. qkv opens the same folders through its one door, takes
 * the fine-tuning view of them (folder/tunable.ts: LlamaForCausalLM's module paths and names, not GPT-2's), takes
 * the same steps with its FineTuner and must land on the same numbers at float32 tolerances. The folder a full run
 * writes (under Llama's names) reads back bit for bit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { copyHfFiles, saveHfWeights } from '../../src/folder/node-hf.ts';
import { dirSource, readHfGpt2Dir } from '../../src/folder/node.ts';
import { openFolderSync } from '../../src/folder/open.ts';
import { tunable, type Tunable } from '../../src/folder/tunable.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { llamaHfStateDict } from '../../src/models/hf/llama.ts';
import { attachLora, loadLoraStateDict, loraConfig, peftKey, type AttachedLora } from '../../src/models/hf/peft.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { encoderHfStateDict } from '../../src/models/hf/bert.ts';
import { FineTuner } from '../../src/train/finetune.ts';
import {
  ClassData,
  classBatch,
  StreamData,
  type FineTuneData,
  type LabelledText,
} from '../../src/train/finetune-data.ts';
import { PEFT_DEFAULT_TARGETS } from '../../src/train/finetune-run.ts';
import { assertClose } from '../helpers/assert.ts';

const FIX = fileURLToPath(new URL('../fixtures/', import.meta.url));

interface Steps {
  steps: { loss: number; gradNorm: number }[];
}
interface Data {
  folder: string;
  /** Token rows (a decoder) or labelled texts (a classifier). */
  batches: { ids: number[][]; texts: LabelledText[] }[];
  optimizer: { lr: number; betas: [number, number]; eps: number; weightDecay: number; clipNorm: number };
  lora: Steps & { r: number; alpha: number; targets: string[] };
  full: Steps;
}

function fixture(name: string) {
  const dir = join(FIX, 'finetune', name);
  const data = JSON.parse(readFileSync(join(dir, 'data.json'), 'utf8')) as Data;
  const expected = readSafetensors(new Uint8Array(readFileSync(join(dir, 'expected.safetensors')))).tensors;
  return { data, expected };
}

/** The folder as `qkv finetune` opens it. */
function open(data: Data): Extract<Tunable, { kind: 'hf-llama' }> {
  const t = tunable(openFolderSync(dirSource(join(FIX, data.folder))));
  assert.equal(t.kind, 'hf-llama', 'a Llama-family folder is fine-tuned under Llama names');
  return t as Extract<Tunable, { kind: 'hf-llama' }>;
}

/** HF's labels = input_ids, shifted inside the model: inputs ids[:, :-1], targets ids[:, 1:]. */
function batchesOf(data: Data): { x: Tensor; y: Tensor }[] {
  return data.batches.map(({ ids }) => {
    const B = ids.length;
    const T = ids[0].length - 1;
    const x = new Tensor(Int32Array.from(ids.flatMap((r) => r.slice(0, -1))), [B, T], 'int32');
    const y = new Tensor(Int32Array.from(ids.flatMap((r) => r.slice(1))), [B, T], 'int32');
    return { x, y };
  });
}

function tuner(t: Tunable, data: Data): FineTuner<unknown> {
  const o = data.optimizer;
  const task =
    t.kind === 'hf-encoder'
      ? (new ClassData(data.batches[0].texts, 3, t.model.config.padId) as FineTuneData<unknown>)
      : (new StreamData(new Int32Array(16), 1, 8) as FineTuneData<unknown>);
  return new FineTuner(t.model, task, { ...o, schedule: 'constant', warmup: 0 });
}

/** Each pair's A and B (or their gradients) under PEFT's keys. */
function pairTensors(a: AttachedLora, grad: boolean): Record<string, Tensor> {
  const out: Record<string, Tensor> = {};
  for (const { site, lora } of a.pairs)
    for (const [f, w] of [
      ['A', lora.loraA.weight],
      ['B', lora.loraB.weight],
    ] as const) {
      const t = grad ? w.grad : w;
      assert.ok(t, `${peftKey(site.path, f)}: no gradient`);
      out[peftKey(site.path, f)] = t;
    }
  for (const m of a.saved)
    for (const [name, p] of m.params) {
      const t = grad ? p.grad : p;
      assert.ok(t, `${m.path}.${name}: no gradient`);
      out[`base_model.model.${m.path}.${name}`] = t;
    }
  return out;
}

/**
 * Every key of `expected` under `prefix` against `actual`'s tensor of the same name (none missing, none extra);
 * the elements `noise` exempts (by name, index) within `bound` (Adam's step) instead.
 */
function compareAll(
  actual: Record<string, Tensor>,
  expected: Record<string, Tensor>,
  prefix: string,
  noise?: { exempt: (name: string) => ((i: number) => boolean) | null; bound: number },
): void {
  const keys = Object.keys(expected).filter((k) => k.startsWith(prefix));
  assert.ok(keys.length > 0, `no ${prefix}* in the fixture`);
  assert.deepEqual(Object.keys(actual).sort(), keys.map((k) => k.slice(prefix.length)).sort(), `${prefix}: names`);
  for (const k of keys) {
    const name = k.slice(prefix.length);
    const exempt = noise?.exempt(name);
    if (!exempt) {
      assertClose(actual[name], expected[k], k, 1e-4, 1e-4);
      continue;
    }
    const a = actual[name].dataSync<Float32Array>();
    const b = expected[k].dataSync<Float32Array>();
    for (let i = 0; i < a.length; i++) {
      const tol = exempt(i) ? noise!.bound : 1e-4 + 1e-4 * Math.abs(b[i]);
      assert.ok(Math.abs(a[i] - b[i]) <= tol, `${k}[${i}]: ${a[i]} vs ${b[i]}`);
    }
  }
}

function checkStep(r: { loss: number; gradNorm: number }, want: { loss: number; gradNorm: number }, s: number) {
  assert.ok(Math.abs(r.loss - want.loss) <= 1e-4 * Math.abs(want.loss), `step ${s} loss ${r.loss} vs ${want.loss}`);
  assert.ok(
    Math.abs(r.gradNorm - want.gradNorm) <= 1e-4 * want.gradNorm,
    `step ${s} grad norm ${r.gradNorm} vs ${want.gradNorm}`,
  );
}

for (const name of ['llama', 'qwen2']) {
  test(`LoRA (${name}): PEFT's adapter on LlamaForCausalLM's paths; two AdamW steps give PEFT's losses, gradients, A and B`, () => {
    const { data, expected } = fixture(name);
    const t = open(data);
    const config = loraConfig({
      r: data.lora.r,
      loraAlpha: data.lora.alpha,
      targetModules: data.lora.targets,
      initLoraWeights: false,
    });
    const attached = attachLora(t.model, t.sites(), config);
    assert.equal(attached.pairs.length, 2 * data.lora.targets.length, 'every targeted layer of both blocks');
    const init: Record<string, Tensor> = {};
    for (const [k, v] of Object.entries(expected)) if (k.startsWith('lora.init.')) init[k.slice(10)] = v;
    loadLoraStateDict(attached, init, 'lora.init.*');
    const batches = batchesOf(data);
    t.model.eval();
    assertClose(
      noGrad(() => t.model.forward(batches[0].x)),
      expected['lora.logits.init'],
      'logits with the initial adapter',
      1e-4,
      1e-4,
    );
    const trainer = tuner(t, data);
    assert.equal(
      trainer.decayed.params.length + trainer.undecayed.params.length,
      2 * attached.pairs.length,
      'only A and B train',
    );
    for (let s = 1; s <= 2; s++) {
      checkStep(trainer.stepOn(batches[s - 1]), data.lora.steps[s - 1], s);
      compareAll(pairTensors(attached, true), expected, `lora.step${s}.grad.`);
      compareAll(pairTensors(attached, false), expected, `lora.step${s}.param.`);
    }
    for (const [n, p] of t.model.namedParameters())
      if (!p.requiresGrad) assert.equal(p.grad, null, `${n} (frozen) has a gradient`);
  });

  test(`full fine-tuning (${name}): two AdamW steps give PyTorch's losses, every gradient and every parameter`, () => {
    const { data, expected } = fixture(name);
    const t = open(data);
    const batches = batchesOf(data);
    const trainer = tuner(t, data);
    /** The model's parameters, each replaced by `pick(p)`, under Llama's names. */
    const hf = (pick: (p: Tensor) => Tensor | null): Record<string, Tensor> => {
      const sd: Record<string, Tensor> = {};
      for (const [k, p] of t.model.namedParameters()) {
        const v = pick(p);
        assert.ok(v, `${k}: no gradient`);
        sd[k] = v;
      }
      return llamaHfStateDict(sd, t.model.config);
    };
    for (let s = 1; s <= 2; s++) {
      checkStep(trainer.stepOn(batches[s - 1]), data.full.steps[s - 1], s);
      if (s === 1)
        compareAll(
          hf((p) => p.grad),
          expected,
          'full.step1.grad.',
        );
    }
    // No gradient here is rounding noise alone: the keys' bias (Qwen2) is rotated with its position before the
    // product, so q·R(j)b differs from key to key and softmax does not cancel it (test/helpers/adam-noise.ts's
    // exemption is for unrotated keys): every element is compared at float32 tolerances.
    compareAll(
      hf((p) => p),
      expected,
      'full.step2.param.',
    );
  });
}

test("a Llama-family folder's fine-tuned weights are written under its own names and read back bit for bit", () => {
  for (const folder of ['hf-llama/llama-gqa-tied', 'hf-llama/qwen2-bias-untied', 'hf-llama/mistral-window']) {
    const base = join(FIX, folder);
    const t = tunable(openFolderSync(dirSource(base)));
    assert.equal(t.kind, 'hf-llama');
    // Move every weight off the file's values, so a mix-up of names or rows shows.
    noGrad(() => {
      for (const [, p] of t.model.namedParameters())
        p.write(p.dataSync<Float32Array>().map((x, i) => x + 1e-3 * Math.sin(i)));
    });
    const dir = mkdtempSync(join(tmpdir(), 'qkv-ft-llama-'));
    try {
      copyHfFiles(base, dir);
      saveHfWeights(dir, t);
      const names = (d: string) =>
        readdirSync(d)
          .filter((f) => f.endsWith('.safetensors'))
          .flatMap((f) => Object.keys(readSafetensors(new Uint8Array(readFileSync(join(d, f)))).tensors));
      const written = names(dir);
      const original = names(base); // one file, or shards (Qwen2's): the written folder holds one
      assert.deepEqual(
        written.sort(),
        original.filter((k) => !/rotary_emb/.test(k)).sort(),
        `${folder}: the base's names`,
      );
      const back = readHfGpt2Dir(dir).model.stateDict();
      for (const [k, v] of Object.entries(t.model.stateDict()))
        assert.deepEqual(back[k].dataSync(), v.dataSync(), `${folder}: ${k}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

test("a Llama-family folder takes PEFT's default targets (q_proj, v_proj) on its own module paths", () => {
  const t = tunable(openFolderSync(dirSource(join(FIX, 'hf-llama/llama-gqa-tied'))));
  assert.equal(t.kind, 'hf-llama');
  const a = attachLora(t.model, t.sites(), loraConfig({ targetModules: PEFT_DEFAULT_TARGETS[t.kind] }));
  assert.deepEqual(
    a.pairs.map((p) => p.site.path),
    [0, 1].flatMap((i) => [`model.layers.${i}.self_attn.q_proj`, `model.layers.${i}.self_attn.v_proj`]),
  );
  assert.throws(
    () => attachLora(t.model, t.sites(), loraConfig({ targetModules: ['c_attn'] })),
    /target_modules \["c_attn"\] match none/,
  );
});

test("a decoder of neither GPT-2's layout nor the Llama family's is refused by name, not trained under wrong names", () => {
  const opened = openFolderSync(dirSource(join(FIX, 'hf-gpt2-tiny')));
  assert.equal(tunable(opened).kind, 'hf-gpt2');
  const model = { config: { ...(opened.model as { config: object }).config, norm: 'rms' } };
  assert.throws(
    () => tunable({ ...opened, model } as unknown as typeof opened),
    /positions learned, norm rms, mlp gelu\) is neither GPT-2's layout nor the Llama family's/,
  );
});

// ---- BERT-style classifiers: text<TAB>label, the cross-entropy of the head's logits ----------------------------

/** The keys' bias: softmax cancels q·b_k (no rotation here), so its gradient is rounding noise in both libraries. */
const KEY_BIAS = /(\.attention\.self\.key|\.attention\.k_lin)\.bias$/;

function openClassifier(data: Data): Extract<Tunable, { kind: 'hf-encoder' }> {
  const t = tunable(openFolderSync(dirSource(join(FIX, data.folder))));
  assert.equal(t.kind, 'hf-encoder');
  return t as Extract<Tunable, { kind: 'hf-encoder' }>;
}

function classBatches(t: Extract<Tunable, { kind: 'hf-encoder' }>, data: Data) {
  return data.batches.map(({ texts }) => classBatch(texts, [0, 1, 2], t.model.config.padId));
}

function classLogits(t: Extract<Tunable, { kind: 'hf-encoder' }>, b: ReturnType<typeof classBatch>): Tensor {
  t.model.eval();
  return noGrad(() =>
    t.model.classify(t.model.forward({ inputIds: b.inputIds, attentionMask: b.attentionMask }).hidden),
  );
}

for (const name of ['bert', 'distilbert', 'xlm-roberta']) {
  test(`LoRA (${name} classifier): PEFT's pairs on its own paths, the head's projection frozen; two AdamW steps give PEFT's`, () => {
    const { data, expected } = fixture(name);
    const t = openClassifier(data);
    const config = loraConfig({
      r: data.lora.r,
      loraAlpha: data.lora.alpha,
      targetModules: data.lora.targets,
      initLoraWeights: false,
    });
    const attached = attachLora(t.model, t.sites(), config);
    // Six linear layers in each of two blocks, and the head's first layer.
    assert.equal(attached.pairs.length, 13, 'every targeted layer');
    const init: Record<string, Tensor> = {};
    for (const [k, v] of Object.entries(expected)) if (k.startsWith('lora.init.')) init[k.slice(10)] = v;
    loadLoraStateDict(attached, init, 'lora.init.*');
    const batches = classBatches(t, data);
    assertClose(
      classLogits(t, batches[0]),
      expected['lora.logits.init'],
      'logits with the initial adapter',
      1e-4,
      1e-4,
    );
    const trainer = tuner(t, data);
    for (let s = 1; s <= 2; s++) {
      checkStep(trainer.stepOn(batches[s - 1]), data.lora.steps[s - 1], s);
      compareAll(pairTensors(attached, true), expected, `lora.step${s}.grad.`);
      compareAll(pairTensors(attached, false), expected, `lora.step${s}.param.`);
    }
  });

  test(`full fine-tuning (${name} classifier): two AdamW steps give PyTorch's losses, every gradient and every parameter`, () => {
    const { data, expected } = fixture(name);
    const t = openClassifier(data);
    const batches = classBatches(t, data);
    const trainer = tuner(t, data);
    const family = t.opened.hf.family;
    const hf = (pick: (p: Tensor) => Tensor | null): Record<string, Tensor> => {
      const sd: Record<string, Tensor> = {};
      for (const [k, p] of t.model.namedParameters()) {
        const v = pick(p);
        assert.ok(v, `${k}: no gradient`);
        sd[k] = v;
      }
      return encoderHfStateDict(sd, family, t.model.config);
    };
    for (let s = 1; s <= 2; s++) {
      checkStep(trainer.stepOn(batches[s - 1]), data.full.steps[s - 1], s);
      if (s === 1) {
        const grads = hf((p) => p.grad);
        compareAll(grads, expected, 'full.step1.grad.');
        // The exempted gradients are noise in both (else the exemption below would hide a bug).
        for (const [n, g] of Object.entries(grads))
          if (KEY_BIAS.test(n))
            for (const [i, x] of g.dataSync<Float32Array>().entries())
              assert.ok(Math.abs(x) < 1e-6 && Math.abs(expected[`full.step1.grad.${n}`].dataSync()[i]) < 1e-6, n);
      }
    }
    // Adam's first update is g/(|g| + ε) per element: where PyTorch's first gradient is below 1e-7 (ten ε), an
    // absolute difference in float32 of ~1e-9 (already checked above, at 1e-4, with every other gradient) moves
    // that update by a visible part of lr. Those elements, and the keys' bias, are compared within Adam's two
    // steps, which move an element by at most ~2·lr; every other element at float32 tolerances.
    const tiny = (n: string) => {
      if (KEY_BIAS.test(n)) return () => true;
      const g = expected[`full.step1.grad.${n}`].dataSync<Float32Array>();
      return g.some((x) => Math.abs(x) < 1e-7) ? (i: number) => Math.abs(g[i]) < 1e-7 : null;
    };
    compareAll(
      hf((p) => p),
      expected,
      'full.step2.param.',
      { exempt: tiny, bound: 4 * data.optimizer.lr },
    );
  });
}

for (const [name, saved] of [
  ['bert-seqcls', ['classifier']],
  ['distilbert-seqcls', ['pre_classifier', 'classifier']],
] as const) {
  test(`LoRA with PEFT's SEQ_CLS (${name}): modules_to_save trains ${saved.join(' and ')} in full; two steps give PEFT's`, () => {
    const { data, expected } = fixture(name);
    const t = openClassifier(data);
    const config = loraConfig({
      r: data.lora.r,
      loraAlpha: data.lora.alpha,
      targetModules: data.lora.targets,
      initLoraWeights: false,
      taskType: 'SEQ_CLS',
      modulesToSave: ['classifier', 'score'],
    });
    const attached = attachLora(t.model, t.sites(), config, t.saveable());
    // PEFT matches the names as suffixes of the path: 'classifier' takes DistilBERT's pre_classifier too.
    assert.deepEqual(
      attached.saved.map((m) => m.path),
      saved,
    );
    const init: Record<string, Tensor> = {};
    for (const [k, v] of Object.entries(expected)) if (k.startsWith('lora.init.')) init[k.slice(10)] = v;
    loadLoraStateDict(attached, init, 'lora.init.*');
    const batches = classBatches(t, data);
    assertClose(
      classLogits(t, batches[0]),
      expected['lora.logits.init'],
      'logits with the initial adapter',
      1e-4,
      1e-4,
    );
    const trainer = tuner(t, data);
    const trainable = trainer.decayed.params.length + trainer.undecayed.params.length;
    assert.equal(trainable, 2 * attached.pairs.length + 2 * saved.length, 'the pairs and the head train');
    for (let s = 1; s <= 2; s++) {
      checkStep(trainer.stepOn(batches[s - 1]), data.lora.steps[s - 1], s);
      compareAll(pairTensors(attached, true), expected, `lora.step${s}.grad.`);
      compareAll(pairTensors(attached, false), expected, `lora.step${s}.param.`);
    }
  });
}

test('modules_to_save is refused where it names no module qkv trains in full, or a module that holds a pair', () => {
  const t = tunable(openFolderSync(dirSource(join(FIX, 'hf-llama/llama-gqa-tied'))));
  assert.throws(
    () =>
      attachLora(
        t.model,
        t.sites(),
        loraConfig({ targetModules: ['q_proj'], modulesToSave: ['lm_head'] }),
        t.saveable(),
      ),
    /modules_to_save \["lm_head"\] match no module qkv trains in full \(this model offers none\)/,
  );
  const c = openClassifier({ folder: 'hf-encoders/xlm-roberta-cls' } as Data);
  assert.throws(
    () =>
      attachLora(
        c.model,
        c.sites(),
        loraConfig({ targetModules: ['dense'], modulesToSave: ['classifier'] }),
        c.saveable(),
      ),
    /modules_to_save trains classifier in full and target_modules adapts classifier\.dense: choose one of the two/,
  );
});
