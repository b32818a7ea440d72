/**
 * The flow's pictures (viz/flow-svg.ts): a stage's vectors as a heatmap (tokens × components, the
 * colour scale symmetric about 0), an attention stage's head as the attention heatmap (masked above
 * the diagonal when causal), thumbnails; and textFlow on every folder kind opened through the folder
 * module as the page opens it (flowSubject): qkv's translator and GPT, Hugging Face GPT-2 and Marian.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openFolder } from '../../src/folder/open.ts';
import { GPT } from '../../src/models/gpt.ts';
import { manualSeed } from '../../src/tensor/random.ts';
import { flowOutline, flowSubject, gptFlow, textFlow } from '../../src/viz/flow.ts';
import { blues, rdbu } from '../../src/viz/color.ts';
import { flowHeadSvg, flowThumbColors, flowVectorsSvg } from '../../src/viz/flow-svg.ts';
import { formatValue } from '../../src/viz/svg.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const count = (s: string, re: RegExp) => (s.match(re) ?? []).length;

/** A folder's files as contents, for openFolder (the page's way in). */
function contents(dir: string, files: string[]): Map<string, Uint8Array> {
  return new Map(files.map((f) => [f, new Uint8Array(readFileSync(`${dir}/${f}`))]));
}

const DE = contents(`${ROOT}models/multi30k-en-de`, ['config.json', 'tokenizer.json', 'model.safetensors']);

test('a stage as a heatmap: tokens × leading components, or every component; a head; a thumbnail', async () => {
  const run = textFlow(flowSubject(await openFolder(DE, { ensemble: false })), 'A dog runs.', { dims: 8 });
  const { flow } = run;
  const s = flow.stages.find((x) => x.id === 'enc.0.add1')!;
  const T = s.rows.length;
  const svg = flowVectorsSvg(flow, s);
  assert.equal(count(svg, /<rect class="cell/g), T * 8);
  assert.match(svg, /first 8 of 128 components/);
  const m = Math.max(...s.rows.flatMap((r) => r.head.map(Math.abs)));
  assert.match(svg, new RegExp(`data-rows="${T}" data-cols="8"`));
  for (const v of [m, -m]) assert.ok(svg.includes(`>${formatValue(v)}</text>`), `the scale runs from -${m} to ${m}`);
  for (const tok of flow.axes.source!.tokens) assert.ok(svg.includes(`>${tok}</text>`), tok);
  const all = flowVectorsSvg(flow, s, run.vectors(s.id));
  assert.equal(count(all, /<rect class="cell/g), T * 128);
  assert.doesNotMatch(all, /first/);
  const cross = flow.stages.find((x) => x.id === 'dec.1.cross')!;
  const head = flowHeadSvg(flow, cross, 2);
  assert.equal(count(head, /<rect class="cell/g), cross.rows.length * T);
  assert.match(head, /decoder layer 2 · cross-attention · head 3/);
  assert.equal(count(head, /class="cell masked"/g), 0);
  const self = flow.stages.find((x) => x.id === 'dec.0.attn')!;
  const U = self.rows.length;
  assert.equal(count(flowHeadSvg(flow, self, 'mean'), /class="cell masked"/g), (U * (U - 1)) / 2, 'causal');
  assert.throws(() => flowHeadSvg(flow, s, 0), /^Error: flow: stage 'enc.0.add1' is not an attention stage$/);
  const outline = flowOutline(flow);
  const o = outline.stages.find((x) => x.id === s.id)!;
  const colors = flowThumbColors(o);
  assert.equal(colors.length, T);
  assert.equal(colors[0].length, 8);
  const big = Math.max(...o.thumb.flat().map(Math.abs));
  assert.equal(colors[1][2], rdbu((o.thumb[1][2] / big + 1) / 2));
  const oSelf = outline.stages.find((x) => x.id === self.id)!;
  const mean = flowThumbColors(oSelf);
  assert.equal(mean.length, U, 'an attention stage: the mean map');
  assert.equal(mean[U - 1][0], blues(oSelf.thumb[U - 1][0]));
});

test('textFlow on every folder kind as the page opens it: qkv GPT, Hugging Face GPT-2 and Marian', async () => {
  const gpt = flowSubject(
    await openFolder(
      contents(`${ROOT}models/gpt-multi30k-char`, ['config.json', 'tokenizer.json', 'model.safetensors']),
    ),
  );
  assert.equal(gpt.kind, 'gpt');
  assert.equal(textFlow(gpt, 'A dog').flow.stages.length, 3 + 4 * 7 + 1 + 2);
  const hf = flowSubject(
    await openFolder(
      contents(`${ROOT}test/fixtures/hf-gpt2-tiny`, ['config.json', 'tokenizer.json', 'model.safetensors']),
    ),
  );
  const h = textFlow(hf, 'A man is riding a bike');
  // The prompt alone, as pipeline('text-generation') feeds a GPT-2 folder (no <|endoftext|> first).
  assert.deepEqual(h.flow.axes.tokens!.tokens.slice(0, 3), ['A', '␣man', '␣is']);
  assert.equal(h.flow.stages.find((s) => s.id === 'h.1.mlp.hidden')!.title, 'MLP: GELU (tanh)');
  const marianFiles = [
    'config.json',
    'generation_config.json',
    'tokenizer_config.json',
    'source.spm',
    'target.spm',
    'vocab.json',
    'model.safetensors',
  ];
  const marian = flowSubject(await openFolder(contents(`${ROOT}test/fixtures/marian-tiny`, marianFiles)));
  assert.equal(marian.kind, 'marian');
  const m = textFlow(marian, 'A man is riding a bike', { target: 'blue sit' });
  assert.ok(marian.kind === 'marian');
  const { ids, tokenizer } = marian.marian;
  const tgt = m.flow.axes.target!;
  assert.equal(tgt.ids[0], ids.decoderStartId, 'Marian starts from its decoder start id');
  const prefix = tokenizer.encodeTarget('blue sit');
  assert.equal(prefix.at(-1), ids.eosId);
  assert.deepEqual(tgt.ids.slice(1), prefix.slice(0, -1), 'the prefix without the EOS encodeTarget appends');
  assert.equal(m.flow.axes.source!.tokens.at(-1), '</s>');
  assert.equal(
    m.flow.stages.some((s) => s.id === 'enc.norm' || s.id === 'dec.norm'),
    false,
    'no final norms',
  );
  const greedy = textFlow(marian, 'A man is riding a bike');
  assert.equal(greedy.text.translated, true);
});

/** The numbers in a value, however nested. */
function numbers(x: unknown): number {
  if (typeof x === 'number') return 1;
  if (Array.isArray(x)) return x.reduce((n: number, y) => n + numbers(y), 0);
  if (x && typeof x === 'object') return Object.values(x).reduce((n: number, y) => n + numbers(y), 0);
  return 0;
}

test("a flow's outline: every stage but not its numbers, small for GPT-2's 12 layers × 12 heads over 64 tokens", () => {
  manualSeed(5);
  const model = new GPT({
    vocabSize: 50,
    blockSize: 64,
    nLayer: 12,
    nHead: 12,
    nEmbd: 48,
    dropout: 0,
    positions: 'learned',
  });
  const { flow } = gptFlow(
    model,
    Array.from({ length: 64 }, (_, i) => i % 50),
  );
  const outline = flowOutline(flow);
  assert.deepEqual(
    outline.stages.map((s) => s.id),
    flow.stages.map((s) => s.id),
  );
  assert.ok(numbers(flow) > 1e6, `the flow: ${numbers(flow)} numbers`);
  assert.ok(numbers(outline) < 4e4, `the outline: ${numbers(outline)} numbers`);
  for (const [i, o] of outline.stages.entries()) {
    const s = flow.stages[i];
    assert.equal(o.tokens, 64);
    assert.deepEqual(
      Object.keys(o).sort(),
      [...Object.keys(s).filter((k) => !['rows', 'heads', 'top'].includes(k)), 'tokens', 'thumb'].sort(),
    );
    if (s.heads) {
      assert.equal(o.thumb.length, 24);
      const mean = s.heads.reduce((a, h) => a + h.weights[5][3] / s.heads!.length, 0);
      assert.equal(o.thumb[5][3], mean, `${s.id}: the mean of the heads`);
    } else {
      assert.deepEqual(
        o.thumb,
        s.rows.slice(0, 24).map((r) => r.head.slice(0, 16)),
      );
    }
  }
});
