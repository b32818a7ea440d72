/**
 * QLoRA steps equal PyTorch + PEFT's on the dequantized base (issue 60): scripts/fixtures/make_peft_qlora.py
 * quantized the tiny GPT-2 and Llama folders' linear layers as qkv does (int8 per row, q4 per block of 32), took
 * two AdamW steps of a PEFT LoRA adapter over the dequantized weights (float64), and dumped the losses, the
 * gradients and A and B. qkv holds the base quantized (nn/qlora.ts quantizeForLora: int8 or q4 storage, each
 * product through F.linearDequantized), attaches the same adapter and takes the same steps with its FineTuner,
 * with and without block recomputation: the same numbers at float32 tolerances, the quantized values untouched.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { readHfGpt2Dir } from '../../src/folder/node.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import type { GPT } from '../../src/models/gpt.ts';
import { gpt2LinearSites } from '../../src/models/hf/gpt2.ts';
import { llamaLinearSites } from '../../src/models/hf/llama.ts';
import { attachLora, loadLoraStateDict, loraConfig, peftKey, type AttachedLora } from '../../src/models/hf/peft.ts';
import { quantizeForLora } from '../../src/nn/qlora.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { FineTuner } from '../../src/train/finetune.ts';
import { StreamData, type FineTuneData } from '../../src/train/finetune-data.ts';
import { assertClose } from '../helpers/assert.ts';

const FIX = fileURLToPath(new URL('../fixtures/', import.meta.url));

interface Data {
  family: 'gpt2' | 'llama';
  dtype: 'int8' | 'q4';
  quantized: string[];
  batches: { ids: number[][] }[];
  optimizer: { lr: number; betas: [number, number]; eps: number; weightDecay: number; clipNorm: number };
  lora: { r: number; alpha: number; targets: string[]; steps: { loss: number; gradNorm: number }[] };
}

function fixture(name: string) {
  const dir = join(FIX, 'peft-qlora', name);
  const data = JSON.parse(readFileSync(join(dir, 'data.json'), 'utf8')) as Data;
  const expected = readSafetensors(new Uint8Array(readFileSync(join(dir, 'expected.safetensors')))).tensors;
  return { data, expected };
}

/** The folder's model, its base quantized for QLoRA, the fixture's adapter attached with its initial A and B. */
function qloraModel(data: Data, expected: Record<string, Tensor>): { model: GPT; attached: AttachedLora } {
  const folder = data.family === 'gpt2' ? 'hf-gpt2-tiny' : 'hf-llama/llama-gqa-tied';
  const model = readHfGpt2Dir(join(FIX, folder)).model;
  quantizeForLora(model, data.dtype);
  const sites = data.family === 'gpt2' ? gpt2LinearSites(model) : llamaLinearSites(model);
  const config = loraConfig({
    r: data.lora.r,
    loraAlpha: data.lora.alpha,
    targetModules: data.lora.targets,
    initLoraWeights: false,
  });
  const attached = attachLora(model, sites, config);
  const init: Record<string, Tensor> = {};
  for (const [k, t] of Object.entries(expected)) if (k.startsWith('init.')) init[k.slice(5)] = t;
  loadLoraStateDict(attached, init, 'init.*');
  return { model, attached };
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
  return out;
}

function compareAll(actual: Record<string, Tensor>, expected: Record<string, Tensor>, prefix: string): void {
  const keys = Object.keys(expected).filter((k) => k.startsWith(prefix));
  assert.equal(keys.length, Object.keys(actual).length, `${prefix}: the fixture's tensors are qkv's`);
  for (const k of keys) {
    const name = k.slice(prefix.length);
    assert.ok(actual[name], `${prefix}${name}: missing in qkv`);
    assertClose(actual[name], expected[k], `${prefix}${name}`, 1e-4, 1e-4);
  }
}

/** The bytes of every quantized buffer (values and scales), to show that training leaves them as they were. */
function quantizedBytes(model: GPT): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  for (const [n, t] of model.namedBuffers('', true))
    if (t.dtype === 'int8' || t.dtype === 'q4' || n.endsWith('_scale')) {
      const d = t.dataSync();
      out.set(n, new Uint8Array(d.buffer, d.byteOffset, d.byteLength).slice());
    }
  return out;
}

for (const name of ['gpt2-int8', 'gpt2-q4', 'llama-int8'])
  for (const recompute of [false, true])
    test(`QLoRA (${name}${recompute ? ', blocks recomputed' : ''}): two AdamW steps give PEFT's on the dequantized base`, () => {
      const { data, expected } = fixture(name);
      const { model, attached } = qloraModel(data, expected);
      model.recompute = recompute;
      // Every linear layer of the blocks is held quantized; only A and B are parameters that train.
      const stored = quantizedBytes(model);
      assert.equal(
        [...stored.keys()].filter((k) => !k.endsWith('_scale')).length,
        new Set(data.quantized.map((n) => n.replace(/\.[qkv]_proj\./, '.qkv.'))).size, // qkv packs q, k, v
        'as many quantized weights as the fixture quantized',
      );
      for (const [n, t] of model.namedBuffers('', true))
        if (t.dtype === 'int8' || t.dtype === 'q4') assert.equal(t.dtype, data.dtype, `${n} is ${data.dtype}`);
      const trainable = model.namedParameters().filter(([, p]) => p.requiresGrad);
      assert.equal(trainable.length, 2 * attached.pairs.length, 'only A and B train');
      assert.ok(attached.pairs.length >= 6, 'every targeted layer has a pair');

      const batches = data.batches.map(({ ids }) => {
        const B = ids.length;
        const T = ids[0].length - 1;
        const x = new Tensor(Int32Array.from(ids.flatMap((r) => r.slice(0, -1))), [B, T], 'int32');
        const y = new Tensor(Int32Array.from(ids.flatMap((r) => r.slice(1))), [B, T], 'int32');
        return { x, y };
      });
      model.eval();
      assertClose(
        noGrad(() => model.forward(batches[0].x)),
        expected['logits.init'],
        'logits with the initial adapter',
        1e-4,
        1e-4,
      );
      const o = data.optimizer;
      const task = new StreamData(new Int32Array(16), 1, 8) as FineTuneData<unknown>;
      const trainer = new FineTuner(model, task, {
        lr: o.lr,
        betas: o.betas,
        eps: o.eps,
        weightDecay: o.weightDecay,
        clipNorm: o.clipNorm,
        schedule: 'constant',
        warmup: 0,
      });
      for (let s = 1; s <= 2; s++) {
        const r = trainer.stepOn(batches[s - 1]);
        const want = data.lora.steps[s - 1];
        assert.ok(
          Math.abs(r.loss - want.loss) <= 1e-4 * Math.abs(want.loss),
          `step ${s} loss ${r.loss} vs ${want.loss}`,
        );
        assert.ok(
          Math.abs(r.gradNorm - want.gradNorm) <= 1e-4 * want.gradNorm,
          `step ${s} grad norm ${r.gradNorm} vs ${want.gradNorm}`,
        );
        compareAll(pairTensors(attached, true), expected, `step${s}.grad.`);
        compareAll(pairTensors(attached, false), expected, `step${s}.param.`);
      }
      for (const [n, bytes] of quantizedBytes(model))
        assert.deepEqual(bytes, stored.get(n), `${n}: the quantized base changed`);
      for (const [n, p] of model.namedParameters())
        if (!p.requiresGrad) assert.equal(p.grad, null, `${n} (frozen) has a gradient`);
    });
