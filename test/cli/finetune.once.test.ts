/**
 * `qkv finetune`, `qkv merge` and `--adapter` end to end on the tiny GPT-2 and Marian folders (issue 60): a LoRA run
 * writes PEFT's adapter folder, a full run a Hugging Face folder that opens as the base does; a run killed after a
 * step (QKV_FAULT) and resumed ends with the files of an uninterrupted run; the weights written under Hugging Face's
 * names read back bit for bit; a merged folder and an adapter given with --adapter / `{ adapter }` compute what the
 * unmerged adapter computes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { applyAdapter, readAdapterSync } from '../../src/folder/adapter.ts';
import { copyHfFiles, saveHfWeights } from '../../src/folder/node-hf.ts';
import { dirSource, readHfGpt2Dir, readMarianDir } from '../../src/folder/node.ts';
import { tunable } from '../../src/folder/tunable.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import { pipeline } from '../../src/pipelines/index.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { tempDir } from '../e2e/tiny-model.ts';
import { assertClose } from '../helpers/assert.ts';
import { multi30kLines, root } from '../helpers/cli.ts';

const FIX = join(root, 'test/fixtures');
const GPT2 = join(FIX, 'hf-gpt2-tiny');
const MARIAN = join(FIX, 'marian-tiny');
const LLAMA = join(FIX, 'hf-llama/llama-gqa-tied');
const QWEN2 = join(FIX, 'hf-llama/qwen2-bias-untied');
const work = tempDir('qkv-finetune-');
const en = multi30kLines('train.en.gz').slice(0, 60);
const de = multi30kLines('train.de.gz').slice(0, 60);
writeFileSync(join(work, 'lm.txt'), `${en.join('\n')}\n`);
const LABELS = ['negative', 'positive', 'joy']; // test/fixtures/hf-encoders/bert-cls's id2label
writeFileSync(join(work, 'labelled.tsv'), `${en.map((e, i) => `${e}\t${LABELS[i % 3]}`).join('\n')}\n`);
// distilbert-cls has two labels.
writeFileSync(join(work, 'labelled2.tsv'), `${en.map((e, i) => `${e}\t${LABELS[i % 2]}`).join('\n')}\n`);
writeFileSync(join(work, 'pairs.tsv'), `${en.map((e, i) => `${e}\t${de[i]}`).join('\n')}\n`);

interface Run {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function qkv(args: string[], env: Record<string, string> = {}, input?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src/cli/main.ts'), ...args], {
      cwd: root,
      env: { ...process.env, QKV_THREADS: '1', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    if (input !== undefined) child.stdin.end(input);
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}

const read = (dir: string, f: string) => readFileSync(join(dir, f));
/** history.json without its timings. */
const history = (dir: string) =>
  (JSON.parse(read(dir, 'history.json').toString()) as Record<string, unknown>[]).map(({ seconds: _, ...h }) => h);

/** An uninterrupted run, and the same run killed after step `kill` and resumed: the same files. */
let runs = 0;
async function killAndResume(args: (out: string) => string[], kill: number, files: string[]): Promise<string> {
  // A folder pair of its own per call: two cases may kill at the same step and write the same first file.
  const id = `${++runs}-${kill}-${files[0]}`;
  const ref = join(work, `ref-${id}`);
  const crashed = join(work, `crashed-${id}`);
  const [a, b] = await Promise.all([qkv(args(ref)), qkv(args(crashed), { QKV_FAULT: `step:step=${kill}` })]);
  assert.equal(a.status, 0, a.stderr);
  assert.equal(b.signal, 'SIGKILL', `the faulted run was killed at step ${kill}: ${b.stderr}`);
  const c = await qkv([...args(crashed), '--resume']);
  assert.equal(c.status, 0, c.stderr);
  assert.match(c.stderr, /resumed at step \d+/);
  for (const f of [...files, 'train-state.safetensors'])
    assert.ok(read(ref, f).equals(read(crashed, f)), `${f}: the resumed run's differs from the uninterrupted run's`);
  assert.deepEqual(history(crashed), history(ref));
  return ref;
}

const lmArgs = (lora: string[]) => (out: string) => [
  'finetune',
  '--model',
  GPT2,
  '--data',
  join(work, 'lm.txt'),
  '--out',
  out,
  '--max-steps',
  '6',
  '--eval-every',
  '3',
  '--save-every',
  '2',
  '--batch-size',
  '2',
  '--seq-len',
  '16',
  '--warmup',
  '2',
  ...lora,
];

test('qkv finetune --lora (GPT-2): a PEFT adapter folder; killed after step 5 and resumed, the same files', async () => {
  const out = await killAndResume(lmArgs(['--lora', '--r', '4', '--target-modules', 'c_attn,c_fc']), 5, [
    'adapter_model.safetensors',
    'adapter_config.json',
  ]);
  const config = JSON.parse(read(out, 'adapter_config.json').toString());
  const peft = JSON.parse(readFileSync(join(FIX, 'peft/gpt2/adapter-init/adapter_config.json'), 'utf8'));
  assert.deepEqual(Object.keys(config).sort(), Object.keys(peft).sort(), "PEFT 0.21's keys");
  assert.deepEqual(
    [config.r, config.lora_alpha, config.target_modules, config.task_type, config.fan_in_fan_out],
    [4, 16, ['c_attn', 'c_fc'], 'CAUSAL_LM', true],
  );
  const keys = Object.keys(readSafetensors(new Uint8Array(read(out, 'adapter_model.safetensors'))).tensors).sort();
  assert.deepEqual(keys, [
    'base_model.model.transformer.h.0.attn.c_attn.lora_A.weight',
    'base_model.model.transformer.h.0.attn.c_attn.lora_B.weight',
    'base_model.model.transformer.h.0.mlp.c_fc.lora_A.weight',
    'base_model.model.transformer.h.0.mlp.c_fc.lora_B.weight',
    'base_model.model.transformer.h.1.attn.c_attn.lora_A.weight',
    'base_model.model.transformer.h.1.attn.c_attn.lora_B.weight',
    'base_model.model.transformer.h.1.mlp.c_fc.lora_A.weight',
    'base_model.model.transformer.h.1.mlp.c_fc.lora_B.weight',
  ]);
  assert.equal(history(out).length, 2);

  // Merged (qkv merge), given to the pipeline, or given to qkv generate: what the unmerged adapter computes.
  const merged = join(work, 'gpt2-merged');
  const m = await qkv(['merge', '--model', GPT2, '--adapter', out, '--out', merged]);
  assert.equal(m.status, 0, m.stderr);
  const ids = new Tensor(Int32Array.from([5, 17, 99, 3, 250, 41, 7, 8]), [1, 8], 'int32');
  const unmerged = tunable({ kind: 'hf-gpt2', ...readHfGpt2Dir(GPT2) });
  assert.ok(unmerged.kind === 'hf-gpt2');
  const attached = applyAdapter(unmerged, readAdapterSync(dirSource(out)), false);
  assert.ok(attached.pairs.length === 4);
  const want = noGrad(() => unmerged.model.forward(ids));
  const lm = readHfGpt2Dir(merged);
  assertClose(
    noGrad(() => lm.model.forward(ids)),
    want,
    'merged folder logits',
    1e-5,
    1e-5,
  );
  const base = noGrad(() => readHfGpt2Dir(GPT2).model.forward(ids));
  assert.ok(Math.abs(base.dataSync()[0] - want.dataSync()[0]) > 1e-6, 'the adapter changed the logits');

  const viaPipeline = await pipeline('text-generation', GPT2, { adapter: out });
  const viaMerged = await pipeline('text-generation', merged);
  const prompt = 'A man';
  assert.equal(await viaPipeline(prompt, { maxNewTokens: 8 }), await viaMerged(prompt, { maxNewTokens: 8 }));
  const [g1, g2] = await Promise.all([
    qkv(['generate', '--model', GPT2, '--adapter', out, '--prompt', prompt, '--max-tokens', '8', '--temperature', '0']),
    qkv(['generate', '--model', merged, '--prompt', prompt, '--max-tokens', '8', '--temperature', '0']),
  ]);
  assert.equal(g1.status, 0, g1.stderr);
  assert.equal(g1.stdout, g2.stdout);
});

test('qkv finetune --lora --quantize q4 --recompute (GPT-2): QLoRA resumes exactly; the adapter is a PEFT one', async () => {
  const args = lmArgs(['--lora', '--r', '4', '--target-modules', 'c_attn,c_fc', '--quantize', 'q4', '--recompute']);
  const out = await killAndResume(args, 3, ['adapter_model.safetensors', 'adapter_config.json']);
  const first = await qkv(args(join(work, 'qlora-log')));
  assert.equal(first.status, 0, first.stderr);
  assert.match(first.stderr, /LoRA \(4 layers, r 4\) over a frozen q4 base, blocks recomputed/);
  const keys = Object.keys(readSafetensors(new Uint8Array(read(out, 'adapter_model.safetensors'))).tensors);
  assert.equal(keys.length, 8, 'A and B of c_attn and c_fc in both blocks');
  // Trained over the q4 base: the adapter moved from its start (B is no longer zero).
  const t = readSafetensors(new Uint8Array(read(out, 'adapter_model.safetensors'))).tensors;
  const b = t['base_model.model.transformer.h.0.mlp.c_fc.lora_B.weight'].dataSync<Float32Array>();
  assert.ok(
    b.some((v) => v !== 0),
    "c_fc's B trained (its gradient came through the quantized c_proj above it)",
  );
});

test("qkv finetune --lora (Llama): q_proj,v_proj on LlamaForCausalLM's paths; the adapter and its merge generate alike", async () => {
  const out = join(work, 'llama-lora');
  const args = lmArgs(['--lora', '--r', '4', '--lr', '1e-2'])(out);
  args[2] = LLAMA;
  const r = await qkv(args);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /hf-llama LoRA \(4 layers, r 4\)/);
  const config = JSON.parse(read(out, 'adapter_config.json').toString());
  assert.deepEqual(
    [config.target_modules, config.task_type, config.fan_in_fan_out],
    [['q_proj', 'v_proj'], 'CAUSAL_LM', false],
  );
  const keys = Object.keys(readSafetensors(new Uint8Array(read(out, 'adapter_model.safetensors'))).tensors).sort();
  assert.deepEqual(
    keys,
    [0, 1].flatMap((i) =>
      ['q_proj', 'v_proj'].flatMap((m) =>
        ['A', 'B'].map((f) => `base_model.model.model.layers.${i}.self_attn.${m}.lora_${f}.weight`),
      ),
    ),
  );
  const merged = join(work, 'llama-merged');
  const m = await qkv(['merge', '--model', LLAMA, '--adapter', out, '--out', merged]);
  assert.equal(m.status, 0, m.stderr);
  const ids = new Tensor(Int32Array.from([5, 17, 99, 3, 250, 41, 7, 8]), [1, 8], 'int32');
  const unmerged = tunable({ kind: 'hf-gpt2', ...readHfGpt2Dir(LLAMA) });
  assert.ok(unmerged.kind === 'hf-llama');
  assert.equal(applyAdapter(unmerged, readAdapterSync(dirSource(out)), false).pairs.length, 4);
  const want = noGrad(() => unmerged.model.forward(ids));
  assertClose(
    noGrad(() => readHfGpt2Dir(merged).model.forward(ids)),
    want,
    'merged folder logits',
    1e-5,
    1e-5,
  );
  const base = noGrad(() => readHfGpt2Dir(LLAMA).model.forward(ids)).dataSync<Float32Array>();
  assert.ok(
    want.dataSync<Float32Array>().some((x, i) => Math.abs(x - base[i]) > 1e-4),
    'the adapter changed the logits',
  );
  const viaAdapter = await pipeline('text-generation', LLAMA, { adapter: out });
  const viaMerged = await pipeline('text-generation', merged);
  assert.equal(await viaAdapter('A man', { maxNewTokens: 8 }), await viaMerged('A man', { maxNewTokens: 8 }));
});

test("qkv finetune (Qwen2, full, sharded base): one model.safetensors under Qwen2's names; it opens and generates", async () => {
  const out = join(work, 'qwen2-full');
  const args = lmArgs(['--lr', '1e-2'])(out);
  args[2] = QWEN2;
  const r = await qkv(args);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /hf-llama full/);
  const names = Object.keys(readSafetensors(new Uint8Array(read(out, 'model.safetensors'))).tensors);
  assert.ok(
    names.includes('lm_head.weight') && names.includes('model.layers.1.self_attn.k_proj.bias'),
    'untied, biased',
  );
  assert.ok(!names.some((n) => /in_proj|^h\.|wte/.test(n)), 'no qkv names');
  const g = await qkv(['generate', '--model', out, '--prompt', 'A man', '--max-tokens', '6', '--temperature', '0']);
  assert.equal(g.status, 0, g.stderr);
  const tuned = await pipeline('text-generation', out);
  assert.equal(typeof (await tuned('A man', { maxNewTokens: 4 })), 'string');
});

const ENCODERS = join(FIX, 'hf-encoders');
const clsArgs = (model: string, out: string, more: string[] = []) => [
  'finetune',
  '--model',
  join(ENCODERS, model),
  '--data',
  join(work, 'labelled.tsv'),
  '--out',
  out,
  '--max-steps',
  '3',
  '--batch-size',
  '4',
  '--lr',
  '1e-2',
  ...more,
];

test("qkv finetune (BERT classifier, full): killed after step 3 and resumed, the same files; BERT's names; the pipeline opens it", async () => {
  const steps = ['--max-steps', '4', '--save-every', '2', '--eval-every', '2'];
  const out = await killAndResume((o) => clsArgs('bert-cls', o, steps), 3, ['model.safetensors', 'config.json']);
  const r = await qkv(clsArgs('bert-cls', join(work, 'bert-full-log')));
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /hf-encoder full: .* 54 labelled texts, 4 a batch/);
  const names = (dir: string) =>
    Object.keys(readSafetensors(new Uint8Array(read(dir, 'model.safetensors'))).tensors).sort();
  assert.deepEqual(names(out), names(join(ENCODERS, 'bert-cls')), "the base's tensor names");
  const tuned = await pipeline('text-classification', out);
  const base = await pipeline('text-classification', join(ENCODERS, 'bert-cls'));
  const a = (await tuned('A man rides a bike.', { topK: 3 })) as { label: string; score: number }[];
  const b = (await base('A man rides a bike.', { topK: 3 })) as { label: string; score: number }[];
  assert.deepEqual(a.map((x) => x.label).sort(), [...LABELS].sort());
  assert.notDeepEqual(a, b, 'training moved the scores');
});

test('qkv finetune --lora (DistilBERT classifier): SEQ_CLS, q_lin,v_lin and the head; the adapter and its merge classify alike', async () => {
  const out = join(work, 'distilbert-lora');
  const r = await qkv(clsArgs('distilbert-cls', out, ['--lora', '--r', '4', '--data', join(work, 'labelled2.tsv')]));
  assert.equal(r.status, 0, r.stderr);
  const config = JSON.parse(read(out, 'adapter_config.json').toString());
  assert.deepEqual(
    [config.target_modules, config.task_type, config.modules_to_save],
    [['q_lin', 'v_lin'], 'SEQ_CLS', ['classifier', 'score']],
  );
  // PEFT's SEQ_CLS: the head (pre_classifier and classifier, both ending in 'classifier') saved beside the pairs.
  const keys = Object.keys(readSafetensors(new Uint8Array(read(out, 'adapter_model.safetensors'))).tensors);
  for (const k of ['classifier.weight', 'classifier.bias', 'pre_classifier.weight', 'pre_classifier.bias'])
    assert.ok(keys.includes(`base_model.model.${k}`), `${k} in the adapter`);
  assert.equal(keys.length, 4 + 2 * 2 * 2, 'the head and the q_lin, v_lin pairs of two layers');
  const merged = join(work, 'distilbert-merged');
  const m = await qkv(['merge', '--model', join(ENCODERS, 'distilbert-cls'), '--adapter', out, '--out', merged]);
  assert.equal(m.status, 0, m.stderr);
  const text = 'Two dogs play in the snow.';
  const viaAdapter = await pipeline('text-classification', join(ENCODERS, 'distilbert-cls'), { adapter: out });
  const viaMerged = await pipeline('text-classification', merged);
  const a = (await viaAdapter(text, { topK: 3 })) as { label: string; score: number }[];
  const b = (await viaMerged(text, { topK: 3 })) as { label: string; score: number }[];
  assert.equal(a.length, 2);
  assert.deepEqual(
    a.map((x) => x.label),
    b.map((x) => x.label),
  );
  a.forEach((x, i) => assert.ok(Math.abs(x.score - b[i].score) < 1e-5, `${x.label}: ${x.score} vs ${b[i].score}`));
});

test('qkv finetune refuses the classifiers it cannot train, by name', async () => {
  writeFileSync(join(work, 'bad-label.tsv'), 'A dog runs.\tsad\n'.repeat(10));
  const cases: [string[], RegExp][] = [
    [clsArgs('roberta-cls', join(work, 'bad-c0')), /problem_type multi_label_classification is not supported/],
    [clsArgs('bert-mlm', join(work, 'bad-c1')), /takes a \*ForSequenceClassification folder .* head is masked-lm/],
    [
      [...clsArgs('bert-cls', join(work, 'bad-c2')), '--data', join(work, 'bad-label.tsv')],
      /line 1: label "sad" is not one of the model's \(config.json id2label: "negative", "positive", "joy"\)/,
    ],
  ];
  const runs = await Promise.all(cases.map(([args]) => qkv(args)));
  runs.forEach((r, i) => {
    assert.equal(r.status, 1, `${cases[i][0].join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, cases[i][1]);
  });
});

test('qkv finetune (Marian, full): a Hugging Face folder qkv translate opens; killed after step 3 and resumed, the same files', async () => {
  const args = (out: string) => [
    'finetune',
    '--model',
    MARIAN,
    '--data',
    join(work, 'pairs.tsv'),
    '--out',
    out,
    '--max-steps',
    '4',
    '--eval-every',
    '2',
    '--save-every',
    '2',
    '--max-tokens',
    '256',
    '--lr',
    '1e-3',
  ];
  const out = await killAndResume(args, 3, ['model.safetensors', 'config.json', 'vocab.json', 'source.spm']);
  const t = await qkv(['translate', '--model', out], {}, 'A man rides a bike.\nTwo dogs.\n');
  assert.equal(t.status, 0, t.stderr);
  assert.equal(t.stdout.split('\n').length, 3, 'two translations');
  // The folder's weights are Marian's names and layout: the base's tensor names exactly.
  const names = (dir: string) =>
    Object.keys(readSafetensors(new Uint8Array(read(dir, 'model.safetensors'))).tensors).sort();
  const written = names(out);
  assert.ok(
    written.includes('model.shared.weight') && written.includes('model.encoder.layers.0.self_attn.q_proj.weight'),
  );
  assert.ok(!written.some((n) => /in_proj|linear1|transformer\./.test(n)), 'no qkv names');
});

test('qkv finetune --lora (Marian): q_proj,v_proj by default, an adapter --adapter translates with', async () => {
  const out = join(work, 'marian-lora');
  const r = await qkv([
    'finetune',
    '--model',
    MARIAN,
    '--data',
    join(work, 'pairs.tsv'),
    '--out',
    out,
    '--lora',
    '--max-steps',
    '3',
    '--max-tokens',
    '256',
    '--lr',
    '1e-2',
  ]);
  assert.equal(r.status, 0, r.stderr);
  const config = JSON.parse(read(out, 'adapter_config.json').toString());
  assert.deepEqual(
    [config.target_modules, config.task_type, config.fan_in_fan_out],
    [['q_proj', 'v_proj'], 'SEQ_2_SEQ_LM', false],
  );
  const merged = join(work, 'marian-merged');
  assert.equal((await qkv(['merge', '--model', MARIAN, '--adapter', out, '--out', merged])).status, 0);
  const input = 'A man rides a bike.\nTwo dogs play in the snow.\n';
  const [a, b] = await Promise.all([
    qkv(['translate', '--model', MARIAN, '--adapter', out], {}, input),
    qkv(['translate', '--model', merged], {}, input),
  ]);
  assert.equal(a.status, 0, a.stderr);
  assert.equal(a.stdout, b.stdout);
  const bad = await qkv(['translate', '--model', join(root, 'models/multi30k-en-de'), '--adapter', out], {}, 'x\n');
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /--adapter takes a Hugging Face folder's adapter/);
});

test("weights written under Hugging Face's names read back bit for bit (GPT-2 and Marian, after a training step)", () => {
  for (const [kind, base] of [
    ['hf-gpt2', GPT2],
    ['marian', MARIAN],
  ] as const) {
    const t =
      kind === 'hf-gpt2' ? tunable({ kind, ...readHfGpt2Dir(base) }) : tunable({ kind, ...readMarianDir(base) });
    // Move every weight off the file's values, so a mix-up of names or a missed transpose shows.
    noGrad(() => {
      for (const [, p] of t.model.namedParameters()) {
        const v = p.dataSync<Float32Array>().map((x, i) => x + 1e-3 * Math.sin(i));
        p.write(v);
      }
    });
    const dir = join(work, `roundtrip-${kind}`);
    copyHfFiles(base, dir);
    saveHfWeights(dir, t);
    const back = kind === 'hf-gpt2' ? readHfGpt2Dir(dir) : readMarianDir(dir);
    const want = t.model.stateDict();
    for (const [k, v] of Object.entries(back.model.stateDict()))
      assert.deepEqual(v.dataSync(), want[k].dataSync(), `${kind}: ${k}`);
  }
});

test('qkv finetune refuses what it cannot do, by name', async () => {
  const cases: [string[], RegExp][] = [
    [['--model', join(root, 'models/multi30k-en-de')], /qkv's own seq2seq folder: continue it with qkv train/],
    [['--model', GPT2, '--lora', '--target-modules', 'q_proj'], /target_modules \["q_proj"\] match none/],
    [['--model', GPT2, '--lora', '--target-modules', 'wte'], /embeddings and the tied output projection/],
    [['--model', MARIAN, '--schedule', 'cosine'], /--schedule must be linear or constant/],
    [['--model', GPT2, '--out', GPT2], /--out must be another folder than --model/],
    [['--model', GPT2, '--quantize', 'q4'], /--quantize q4 needs --lora/],
    [['--model', GPT2, '--lora', '--quantize', 'q8'], /--quantize must be int8 or q4, got 'q8'/],
    [['--model', MARIAN, '--recompute'], /--recompute: only the language models .* not marian/],
  ];
  const runs = await Promise.all(
    cases.map(([args], i) =>
      qkv(['finetune', '--data', join(work, 'lm.txt'), '--out', join(work, `bad-${i}`), '--max-steps', '1', ...args]),
    ),
  );
  runs.forEach((r, i) => {
    assert.equal(r.status, 1, `${cases[i][0].join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, cases[i][1]);
  });
});
