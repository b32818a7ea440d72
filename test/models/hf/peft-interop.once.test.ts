/**
 * Both directions with the real libraries (issue 60): PEFT 0.21 loads adapters qkv wrote (on GPT-2's packed c_attn
 * and its Linear layers; on every linear layer of a Llama with grouped KV heads and on a Qwen2's k/v parts; on
 * Marian's q/v parts, self- and cross-attention, with rank_pattern, alpha_pattern and
 * rsLoRA) and computes qkv's logits; transformers 5.18 opens folders qkv wrote under Hugging Face's names (weights
 * moved off the base's, as a fine-tuned model's are) and computes qkv's logits. Runs scripts/fixtures/peft_interop.py
 * with the reference environment (.venv-ref).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { noGrad } from '../../../src/autograd/grad-mode.ts';
import { copyHfFiles, saveAdapterDir, saveHfWeights } from '../../../src/folder/node-hf.ts';
import { dirSource, readHfGpt2Dir, readMarianDir } from '../../../src/folder/node.ts';
import { openFolderSync } from '../../../src/folder/open.ts';
import { tunable, type Tunable } from '../../../src/folder/tunable.ts';
import { readSafetensors } from '../../../src/io/safetensors.ts';
import { attachLora, loraConfig, type PeftLoraConfig } from '../../../src/models/hf/peft.ts';
import { manualSeed } from '../../../src/tensor/random.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { tempDir } from '../../e2e/tiny-model.ts';
import { assertClose } from '../../helpers/assert.ts';
import { root } from '../../helpers/cli.ts';
import { REF_PYTHON, requireTool, toolSkip } from '../../helpers/tools.ts';

const skip = toolSkip('transformers');
const FIX = join(root, 'test/fixtures');
const GPT2 = join(FIX, 'hf-gpt2-tiny');
const MARIAN = join(FIX, 'marian-tiny');
const LLAMA = join(FIX, 'hf-llama/llama-gqa-tied');
const QWEN2 = join(FIX, 'hf-llama/qwen2-bias-untied'); // sharded; q/k/v biases; untied head
const CLASSIFIERS = ['bert', 'distilbert', 'xlm-roberta'] as const;
const IDS = [5, 17, 99, 3, 250, 41, 7, 8, 300, 2];
const SRC = [12, 40, 7, 88, 19, 0]; // ends with EOS (0)
const DEC = [58100, 33, 5, 71, 9]; // replaced by the folder's start id below

interface Case {
  name: string;
  family: Family;
  model: string;
  adapter: string | null;
  ids?: number[];
  src?: number[];
  dec?: number[];
}

type Family = 'gpt2' | 'marian' | 'llama' | 'qwen2' | 'classifier' | (typeof CLASSIFIERS)[number];
const BASE: Record<Family, string> = {
  gpt2: GPT2,
  marian: MARIAN,
  llama: LLAMA,
  qwen2: QWEN2,
  classifier: '',
  bert: join(FIX, 'hf-encoders/bert-cls'),
  distilbert: join(FIX, 'hf-encoders/distilbert-cls'),
  'xlm-roberta': join(FIX, 'hf-encoders/xlm-roberta-cls'),
};

/** The decoder and Marian cases of Tunable (what this file opens). */
type Tuned = Tunable;

function open(family: Family): Tuned {
  if ((CLASSIFIERS as readonly string[]).includes(family)) return tunable(openFolderSync(dirSource(BASE[family])));
  return family === 'marian'
    ? tunable({ kind: 'marian', ...readMarianDir(MARIAN) })
    : tunable({ kind: 'hf-gpt2', ...readHfGpt2Dir(BASE[family]) });
}

/** The script's family: the Llama-family folders all open with AutoModelForCausalLM, the classifiers with
 * AutoModelForSequenceClassification. */
function pyFamily(f: Family): Family {
  if ((CLASSIFIERS as readonly string[]).includes(f)) return 'classifier';
  return f === 'qwen2' ? 'llama' : f;
}

function logits(t: Tuned, c: Case): Tensor {
  t.model.eval();
  return noGrad(() => {
    const ids = () => new Tensor(Int32Array.from(c.ids!), [1, c.ids!.length], 'int32');
    if (t.task === 'lm') return t.model.forward(ids());
    if (t.task === 'classify') return t.model.classify(t.model.forward({ inputIds: ids() }).hidden);
    const src = new Tensor(Int32Array.from(c.src!), [1, c.src!.length], 'int32');
    if (t.kind !== 'marian') throw new Error('not a Marian folder');
    return t.model.forward(src, new Tensor(Int32Array.from(c.dec!), [1, c.dec!.length], 'int32'));
  });
}

test("PEFT loads qkv's adapters, transformers opens qkv's folders: the same logits", { skip }, () => {
  requireTool('transformers');
  const work = tempDir('qkv-peft-interop-');
  const cases: Case[] = [];
  const expected = new Map<string, Tensor>();
  const inputs = (family: Family, t: Tuned) =>
    family !== 'marian'
      ? { ids: IDS }
      : { src: SRC, dec: [t.kind === 'marian' ? t.opened.ids.decoderStartId : 0, ...DEC.slice(1)] };

  const adapters: [string, Family, Partial<PeftLoraConfig> & Pick<PeftLoraConfig, 'targetModules'>][] = [
    ['gpt2-lora', 'gpt2', { targetModules: ['c_attn', 'c_proj', 'c_fc'], r: 4, loraAlpha: 8 }],
    ['llama-lora', 'llama', { targetModules: 'all-linear', r: 4, loraAlpha: 8 }],
    ['qwen2-lora', 'qwen2', { targetModules: ['k_proj', 'v_proj', 'up_proj'], r: 2, loraAlpha: 8 }],
    // The classifiers' adapters as qkv finetune writes them (no task_type), the head's projection frozen.
    ['bert-lora', 'bert', { targetModules: ['query', 'key', 'value', 'dense'], r: 4, loraAlpha: 8 }],
    ['distilbert-lora', 'distilbert', { targetModules: 'all-linear', r: 2, loraAlpha: 8 }],
    ['xlm-roberta-lora', 'xlm-roberta', { targetModules: ['query', 'value'], r: 4, loraAlpha: 16 }],
    // PEFT's SEQ_CLS: the head trained in full beside the pairs (modules_to_save), its weights in the adapter.
    ...(['bert', 'distilbert', 'xlm-roberta'] as const).map(
      (f) =>
        [
          `${f}-seqcls`,
          f,
          {
            targetModules: f === 'distilbert' ? ['q_lin', 'v_lin'] : ['query', 'value'],
            r: 4,
            loraAlpha: 8,
            taskType: 'SEQ_CLS',
            modulesToSave: ['classifier', 'score'],
          },
        ] as [string, Family, Partial<PeftLoraConfig> & Pick<PeftLoraConfig, 'targetModules'>],
    ),
    [
      'marian-lora',
      'marian',
      {
        targetModules: ['q_proj', 'v_proj', 'out_proj', 'fc2'],
        r: 4,
        loraAlpha: 16,
        rankPattern: { fc2: 2 },
        alphaPattern: { 'encoder_attn.q_proj': 3 },
        useRslora: true,
      },
    ],
  ];
  for (const [name, family, over] of adapters) {
    const t = open(family);
    manualSeed(7);
    // Random A and B (PEFT's init_lora_weights false), so every adapter changes the logits.
    const a = attachLora(
      t.model,
      t.sites(),
      loraConfig({ taskType: null, ...over, initLoraWeights: false }),
      t.saveable(),
    );
    // The head's weights moved off the base's, as training moves them: PEFT must take them from the adapter.
    noGrad(() => {
      for (const m of a.saved)
        for (const [, p] of m.params) p.write(p.dataSync<Float32Array>().map((x, i) => x + 0.1 * Math.cos(i)));
    });
    assert.equal(a.saved.length > 0, over.modulesToSave !== undefined, `${name}: the head is saved where asked`);
    const dir = join(work, name);
    saveAdapterDir(dir, a);
    const c: Case = { name, family: pyFamily(family), model: BASE[family], adapter: dir, ...inputs(family, t) };
    cases.push(c);
    expected.set(name, logits(t, c));
    expected.set(`${name}-base`, logits(open(family), c));
  }
  for (const family of ['gpt2', 'marian', 'llama', 'qwen2', ...CLASSIFIERS] as const) {
    const t = open(family);
    noGrad(() => {
      for (const [, p] of t.model.namedParameters())
        p.write(p.dataSync<Float32Array>().map((x, i) => x + 0.05 * Math.sin(i)));
    });
    const dir = join(work, `${family}-full`);
    copyHfFiles(BASE[family], dir);
    saveHfWeights(dir, t);
    const c: Case = {
      name: `${family}-full`,
      family: pyFamily(family),
      model: dir,
      adapter: null,
      ...inputs(family, t),
    };
    cases.push(c);
    expected.set(c.name, logits(t, c));
  }
  const spec = join(work, 'spec.json');
  const out = join(work, 'out.safetensors');
  writeFileSync(spec, JSON.stringify(cases));
  const r = spawnSync(REF_PYTHON, [join(root, 'scripts/fixtures/peft_interop.py'), spec, out], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const got = readSafetensors(new Uint8Array(readFileSync(out))).tensors;
  for (const c of cases) {
    const want = expected.get(c.name)!;
    assertClose(got[c.name].reshape(want.shape), want, `${c.name}: transformers/PEFT vs qkv`);
    const base = expected.get(`${c.name}-base`);
    if (base) {
      const diff = Math.max(...want.dataSync<Float32Array>().map((x, i) => Math.abs(x - base.dataSync()[i])));
      assert.ok(diff > 1e-2, `${c.name}: the adapter changes the logits (by ${diff})`);
    }
  }
});
