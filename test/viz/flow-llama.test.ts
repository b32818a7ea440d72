/**
 * The flow of a Llama-family decoder (issue 58, point 4; viz/flow-gpt.ts) on the folders transformers wrote
 * (scripts/fixtures/make_hf_llama.py: a tied Llama with grouped-query attention, an untied Qwen2 with biases and one
 * KV head, a Llama 3 rope-scaled model, a Mistral with a sliding window of 4): its logits are model.forward's bit
 * for bit and transformers' at the Llama tests' tolerance; each block's output and the final norm equal the modules
 * called directly; the rotary stage holds the model's own tables, the turned queries and keys keep each head's norm
 * and are the projections themselves at position 0; every map is the one the explorer's other views read (and the
 * window's keys are 0); each query head of a group reads the same keys and values (its KV head), and the heads'
 * outputs, joined and projected by Wᴼ, give the stage; the SwiGLU stages multiply to the gated product, which
 * down_proj turns into the MLP's output; textFlow on the folder predicts transformers' greedy continuation; the
 * asynchronous flow reads the same numbers.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { dirSource } from '../../src/folder/node.ts';
import { ofKind, openFolder } from '../../src/folder/open.ts';
import type { SwiGLU } from '../../src/nn/layers.ts';
import * as F from '../../src/ops/index.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { flowSubject, modelFlow, textFlow, textFlowAsync, type FlowRun, type FlowStage } from '../../src/viz/flow.ts';
import { causalAttention } from '../../src/viz/gpt-attention.ts';
import { assertClose } from '../helpers/assert.ts';

const ROOT = fileURLToPath(new URL('../fixtures/hf-llama/', import.meta.url));
const FOLDERS = ['llama-gqa-tied', 'qwen2-bias-untied', 'llama3-rope', 'mistral-window'];

interface Case {
  prompt: string;
  ids: number[];
  logits: number[][];
  greedy: number[];
}

const open = async (name: string) => openFolder(dirSource(`${ROOT}${name}`), { ensemble: false });
const cases = (name: string) =>
  (JSON.parse(readFileSync(`${ROOT}${name}/expected.json`, 'utf8')) as { cases: Case[] }).cases;
const ids = (xs: readonly number[]) => new Tensor(Int32Array.from(xs), [1, xs.length], 'int32');
const flat = (rows: number[][]) => rows.flat();
const stage = (run: FlowRun, id: string): FlowStage => {
  const s = run.flow.stages.find((x) => x.id === id);
  assert.ok(s, `stage ${id}`);
  return s;
};

/** a and b hold the same float32 numbers, element for element. */
function same(a: ArrayLike<number>, b: ArrayLike<number>, what: string): void {
  assert.equal(a.length, b.length, `${what}: length`);
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) assert.fail(`${what}: element ${i} ${a[i]} ≠ ${b[i]}`);
}

for (const name of FOLDERS) {
  test(`${name}: the flow is the model's forward (bit for bit) and transformers' logits; its stages the modules'`, async () => {
    const lm = ofKind(await open(name), 'hf-gpt2', 'gpt');
    const m = lm.model;
    const c = m.config;
    const hKV = c.nKVHead ?? c.nHead;
    const g = c.nHead / hKV;
    const dK = c.headDim ?? c.nEmbd / c.nHead;
    for (const k of cases(name)) {
      const T = k.ids.length;
      const run = modelFlow(m, { ids: k.ids });
      same(run.logits.dataSync(), noGrad(() => m.forward(ids(k.ids))).dataSync(), `${name}: logits = forward`);
      assertClose(run.logits.reshape(T, -1), k.logits.flat(), `${name}: logits as transformers`, 2e-4, 1e-4);
      assert.deepEqual(run.flow.config, {
        dModel: c.nEmbd,
        heads: c.nHead,
        layers: [c.nLayer],
        dFF: c.dFf,
        vocabSize: c.vocabSize,
        norm: 'pre',
        ...(g > 1 && { kvHeads: hKV }),
        family: 'llama',
      });
      const ids0 = run.flow.stages.map((s) => s.id);
      assert.deepEqual(ids0.slice(0, 2), ['embed', 'pos'], 'no position table: the rotary angles');
      assert.deepEqual(
        ids0.filter((s) => s.startsWith('h.0.')),
        [
          'h.0.ln1',
          'h.0.q',
          'h.0.k',
          'h.0.attn',
          'h.0.add1',
          'h.0.ln2',
          'h.0.mlp.gate',
          'h.0.mlp.up',
          'h.0.mlp.hidden',
          'h.0.mlp.out',
          'h.0.add2',
        ],
      );
      assert.equal(stage(run, 'h.0.ln1').title, 'RMSNorm (input_layernorm)');
      assert.equal(
        stage(run, 'logits').formula,
        m.lmHead ? 'h · W_lm_headᵀ (its own head)' : 'h · Eᵀ (the tied embedding)',
      );
      const rope = m.rope!.tables(0, T);
      same(
        flat(run.vectors('pos')),
        Array.from({ length: T }, (_, t) => [
          ...rope.cos.dataSync().subarray((t * dK) / 2, ((t + 1) * dK) / 2),
          ...rope.sin.dataSync().subarray((t * dK) / 2, ((t + 1) * dK) / 2),
        ]).flat(),
        `${name}: the rotary stage is the model's cos and sin tables`,
      );
      const maps = causalAttention(m, k.ids);
      noGrad(() => {
        let x = m.embed(ids(k.ids));
        [...m.h].forEach((block, l) => {
          // The turned queries and keys: each head's norm kept per token, the projection itself at position 0.
          const h = block.ln1.forward(x);
          const raw = block.attn.projectSelf(h);
          for (const [part, t, heads] of [
            ['q', raw.q, c.nHead],
            ['k', raw.k, hKV],
          ] as const) {
            const turned = run.vectors(`h.${l}.${part}`);
            const d = t.dataSync(); // (1, heads, T, dK)
            for (let hd = 0; hd < heads; hd++)
              for (let tk = 0; tk < T; tk++) {
                const a = d.subarray((hd * T + tk) * dK, (hd * T + tk + 1) * dK);
                const b = turned[tk].slice(hd * dK, (hd + 1) * dK);
                const norm = (v: ArrayLike<number>) => Math.hypot(...Array.from(v));
                assert.ok(
                  Math.abs(norm(a) - norm(b)) <= 1e-5 * (1 + norm(a)),
                  `${name} ${part} layer ${l} head ${hd} token ${tk}: a rotation keeps the norm`,
                );
                if (tk === 0) same(b, a, `${name} ${part} layer ${l} head ${hd}: position 0 is not turned`);
              }
          }
          const s = stage(run, `h.${l}.attn`);
          assert.deepEqual(
            s.heads!.map((hd) => hd.weights),
            maps[l],
            `${name} layer ${l}: the maps of the other views`,
          );
          if (block.window !== null)
            for (const w of s.heads!)
              w.weights.forEach((row, i) =>
                row.forEach((v, j) => {
                  if (j <= i - block.window!) assert.equal(v, 0, `${name}: key ${j} outside the window of query ${i}`);
                }),
              );
          assert.equal(s.kvHeads, g > 1 ? hKV : undefined);
          s.heads!.forEach((hd, a) => {
            assert.equal(hd.kvHead, g > 1 ? Math.floor(a / g) : undefined, `${name}: head ${a}'s KV head`);
            const first = s.heads![Math.floor(a / g) * g];
            assert.deepEqual(hd.k, first.k, `${name} layer ${l} head ${a}: its group's keys`);
            assert.deepEqual(hd.v, first.v, `${name} layer ${l} head ${a}: its group's values`);
          });
          // The heads' full outputs (weights · V of their KV head), joined and projected by Wᴼ: the stage.
          const vv = raw.v.dataSync(); // (1, hKV, T, dK)
          const joined = new Float32Array(T * c.nHead * dK);
          s.heads!.forEach((hd, a) => {
            const kv = Math.floor(a / g);
            for (let i = 0; i < T; i++)
              for (let e = 0; e < dK; e++) {
                let sum = 0;
                for (let j = 0; j < T; j++) sum += hd.weights[i][j] * vv[(kv * T + j) * dK + e];
                joined[(i * c.nHead + a) * dK + e] = sum;
              }
          });
          const o = block.attn.outProj;
          const out = F.linear(new Tensor(joined, [T, c.nHead * dK]), o.weight, o.bias);
          assertClose(out.dataSync(), flat(run.vectors(`h.${l}.attn`)), `${name} layer ${l}: heads · Wᴼ`, 1e-5, 1e-4);
          s.heads!.forEach((hd, a) =>
            hd.out.forEach((r, i) =>
              assertClose(
                r.head,
                joined.subarray((i * c.nHead + a) * dK, (i * c.nHead + a) * dK + r.head.length),
                `${name} out`,
                1e-6,
                1e-4,
              ),
            ),
          );
          // SwiGLU: SiLU(gate) ⊙ up is the gated product; down_proj of it the MLP's output, the module's.
          const gate = flat(run.vectors(`h.${l}.mlp.gate`));
          const up = flat(run.vectors(`h.${l}.mlp.up`));
          assertClose(
            gate.map((v, i) => v * up[i]),
            flat(run.vectors(`h.${l}.mlp.hidden`)),
            `${name}: SiLU(gate) ⊙ up`,
            1e-6,
            1e-5,
          );
          same(
            flat(run.vectors(`h.${l}.mlp.out`)),
            (block.mlp as SwiGLU)
              .forward(new Tensor(Float32Array.from(flat(run.vectors(`h.${l}.ln2`))), [1, T, c.nEmbd]))
              .dataSync(),
            `${name} layer ${l}: the MLP's output is SwiGLU.forward's`,
          );
          x = block.forward(x, rope);
          same(flat(run.vectors(`h.${l}.add2`)), x.dataSync(), `${name}: block ${l}'s output`);
        });
        same(flat(run.vectors('ln_f')), m.lnF.forward(x).dataSync(), `${name}: the final norm`);
      });
    }
  });
}

test("textFlow on a Llama folder: its BOS first, transformers' greedy token predicted; the async flow the same", async () => {
  for (const name of ['llama-gqa-tied', 'qwen2-bias-untied']) {
    const subject = flowSubject(await open(name));
    for (const k of cases(name)) {
      const run = textFlow(subject, k.prompt);
      assert.deepEqual(run.flow.axes.tokens!.ids, k.ids, `${name}: the ids transformers' tokenizer gave`);
      const top = stage(run, 'softmax').top!;
      assert.equal(top[top.length - 1][0].id, k.greedy[0], `${name}: the first greedy token of generate()`);
      const later = await textFlowAsync(subject, k.prompt);
      assert.deepEqual(later.flow, run.flow, `${name}: the asynchronous reads`);
    }
  }
});
