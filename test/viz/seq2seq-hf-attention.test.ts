/**
 * The explorer's T5, Flan-T5 and NLLB translations (issue 59, point 4; src/viz/seq2seq-hf-attention.ts) on the
 * folders of scripts/fixtures/make_hf_seq2seq.py, against transformers (scripts/fixtures/make_hf_seq2seq_attention.py):
 * the output is generate()'s (greedy, NLLB's target language forced first), and every layer's encoder
 * self-attention, decoder self-attention and cross-attention per head, read from the decoder fed that output, equal
 * `output_attentions` (eager) of the same teacher-forced pass; the recorded pass's logits are transformers'; T5's
 * relative position bias per head is `compute_bias`'s with its buckets, by offset and over the positions, and its
 * pictures draw a row per head and a map per head; the async twins give the same numbers.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { noGrad } from '../../src/autograd/grad-mode.ts';
import { dirSource } from '../../src/folder/node.ts';
import { ofKind, openFolder } from '../../src/folder/open.ts';
import { readSafetensors } from '../../src/io/safetensors.ts';
import type { T5Weights } from '../../src/models/hf/t5.ts';
import * as F from '../../src/ops/index.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import type { AttentionStack, TranslationAttention } from '../../src/viz/attention-data.ts';
import {
  m2m100WithAttention,
  m2m100WithAttentionAsync,
  t5BiasMapSvg,
  t5BiasOffsetsSvg,
  t5WithAttention,
  t5WithAttentionAsync,
} from '../../src/viz/seq2seq-hf-attention.ts';
import { attentionHeatmapSvg, stackSize } from '../../src/viz/translation.ts';
import { assertClose } from '../helpers/assert.ts';

const ROOT = fileURLToPath(new URL('../fixtures/hf-seq2seq/', import.meta.url));
const open = async (name: string) => openFolder(dirSource(join(ROOT, name)), { ensemble: false });

interface Expected {
  text: string;
  src_lang: string | null;
  tgt_lang: string | null;
  generated: number[];
}

function fixture(name: string): { meta: Expected; want: Record<string, Tensor> } {
  return {
    meta: JSON.parse(readFileSync(join(ROOT, name, 'attention.json'), 'utf8')) as Expected,
    want: readSafetensors(new Uint8Array(readFileSync(join(ROOT, name, 'attention.safetensors')))).tensors,
  };
}

/**
 * Every map of a kind within 1e-5 of transformers' (1, h, L, S) per layer (float32 against the float64 reference,
 * through two layers of T5's wide random weights: about 2e-6 seen), the layers and heads all there.
 */
function sameMaps(got: AttentionStack, want: Record<string, Tensor>, kind: string, what: string): void {
  const layers = Object.keys(want).filter((k) => k.startsWith(`${kind}.`)).length;
  assert.ok(layers > 0, `${what}: the fixture has ${kind} maps`);
  assert.equal(got.length, layers, `${what}: every ${kind} layer`);
  got.forEach((heads, l) => {
    const w = want[`${kind}.${l}`];
    const [, H, L, S] = w.shape;
    assert.equal(heads.length, H, `${what}: every head of ${kind} layer ${l}`);
    assert.deepEqual([heads[0].length, heads[0][0].length], [L, S], `${what}: ${kind} layer ${l}'s shape`);
    assertClose(heads.flat(2), w.dataSync(), `${what}: ${kind} layer ${l}`, 1e-5, 0);
  });
}

/** The output and the maps of a translation against the fixture. */
function holds(t: TranslationAttention, meta: Expected, want: Record<string, Tensor>, what: string): void {
  assert.deepEqual(t.srcIds, Array.from(want.input_ids.dataSync()), `${what}: the tokenizer's ids`);
  assert.deepEqual(t.outIds, meta.generated.slice(1), `${what}: generate()'s output (EOS where it ended)`);
  assert.equal(t.tgtTokens.length, want.decoder_input_ids.shape[1], `${what}: the decoder's positions`);
  for (const kind of ['encoder', 'decoder', 'cross'] as const) sameMaps(t[kind], want, kind, what);
}

for (const name of ['t5/t5', 't5/flan-t5']) {
  test(`${name}: generate()'s output and every encoder, decoder and cross map as transformers; the bias per head`, async () => {
    const opened = ofKind(await open(name), 't5');
    const { meta, want } = fixture(name);
    const t = t5WithAttention(opened, meta.text, { beam: 1 });
    holds(t, meta, want, name);
    assert.equal(t.prefix, '');
    assert.deepEqual(await t5WithAttentionAsync(opened, meta.text, { beam: 1 }), t, `${name}: the async twin`);
    // The pass the maps come from gives transformers' logits.
    const c = opened.model.config;
    noGrad(() => {
      const s = new Tensor(Int32Array.from(want.input_ids.dataSync()), want.input_ids.shape, 'int32');
      const d = new Tensor(Int32Array.from(want.decoder_input_ids.dataSync()), want.decoder_input_ids.shape, 'int32');
      const rec: T5Weights = { self: [], cross: [] };
      const logits = opened.model.decode(d, opened.model.encode(s), F.eq(s, c.padId), rec);
      assertClose(logits, want.logits, `${name}: logits`, 2e-5, 1e-4);
      assert.equal(rec.self.length, c.numDecoderLayers);
    });
    // T5's relative position bias: compute_bias's values and buckets, by offset as over the positions.
    for (const stack of ['encoder', 'decoder'] as const) {
      const b = stack === 'encoder' ? t.bias.encoder : t.bias.decoder!;
      const w = want[`${stack}_bias`];
      const [, H, n] = w.shape;
      assert.equal(b.maps.length, H, `${name} ${stack}: a bias per head`);
      assertClose(b.maps.flat(2), w.dataSync(), `${name} ${stack} bias`, 0, 0);
      const buckets = want[`${stack}_buckets`].dataSync<Int32Array>();
      for (let i = 0; i < n; i++)
        for (let j = 0; j < n; j++) {
          const at = b.offsets.indexOf(j - i);
          if (stack === 'decoder' && j > i) {
            assert.equal(at, -1, 'the decoder draws no later key');
            continue;
          }
          assert.equal(b.buckets[at], buckets[i * n + j], `${name} ${stack}: the bucket of offset ${j - i}`);
          for (let a = 0; a < H; a++) assert.equal(b.values[a][at], b.maps[a][i][j], `${name} ${stack}: by offset`);
        }
      const svg = t5BiasOffsetsSvg(b);
      assert.match(svg, new RegExp(`data-rows="${H}"`));
      assert.match(svg, new RegExp(`data-cols="${b.offsets.length}"`));
      assert.match(t5BiasMapSvg(b, H - 1, []), new RegExp(`data-rows="${n}"`));
      assert.throws(() => t5BiasMapSvg(b, H, []), /head \d+ out of range/);
    }
    assert.equal(t.bias.encoder.offsets.length, 2 * t.srcIds.length - 1);
    // The Translate view's drawing of these maps: every layer and head.
    assert.deepEqual(stackSize(t, 'cross'), { layers: c.numDecoderLayers, heads: c.numHeads });
    assert.match(attentionHeatmapSvg(t, 'cross', 1, c.numHeads - 1), /data-rows=/);
  });
}

test("t5: a task's prefix goes before the text (config.json's task_specific_params)", async () => {
  const opened = ofKind(await open('t5/t5'), 't5');
  const config = {
    ...opened.config,
    task_specific_params: { summarization: { prefix: 'summarize: ' } },
  };
  const t = t5WithAttention({ ...opened, config }, 'A man is riding a bike.', { task: 'summarization' });
  assert.equal(t.prefix, 'summarize: ');
  assert.deepEqual(t.srcIds, opened.tokenizer.encodeInput('summarize: A man is riding a bike.').ids);
  assert.throws(() => t5WithAttention(opened, '  '), /^Error: translate: the sentence is empty$/);
});

test("nllb: generate()'s output with the target language forced, and every map as transformers", async () => {
  const opened = ofKind(await open('nllb'), 'm2m100');
  const { meta, want } = fixture('nllb');
  const options = { beam: 1, srcLang: meta.src_lang!, tgtLang: meta.tgt_lang! };
  const t = m2m100WithAttention(opened, meta.text, options);
  holds(t, meta, want, 'nllb');
  assert.equal(t.tgtTokens[1], meta.tgt_lang, "the decoder's second position: the target language's code");
  assert.deepEqual(await m2m100WithAttentionAsync(opened, meta.text, options), t, 'nllb: the async twin');
  noGrad(() => {
    const s = new Tensor(Int32Array.from(want.input_ids.dataSync()), want.input_ids.shape, 'int32');
    const d = new Tensor(Int32Array.from(want.decoder_input_ids.dataSync()), want.decoder_input_ids.shape, 'int32');
    assertClose(opened.model.forward(s, d), want.logits, 'nllb: logits of the pass', 2e-5, 1e-4);
  });
  assert.throws(
    () => m2m100WithAttention(opened, meta.text, { tgtLang: 'xxx_Xxxx' }),
    /tgtLang/,
    'an unknown language code is named',
  );
});
