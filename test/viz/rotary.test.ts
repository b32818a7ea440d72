/**
 * The Llama family in the explorer's views (issue 58, point 4): the rotary angles the picture draws are the model's
 * own (RotaryEmbedding's tables, and θᵢ = base^(−2i/D) for the default scaling), and the neuron view of a
 * rotary, grouped-query decoder (its queries and keys turned, each query head reading its group's KV head) gives
 * the attention rows the model's own pass gives, in every layer and head, on the folders transformers wrote
 * (scripts/fixtures/make_hf_llama.py).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dirSource } from '../../src/folder/node.ts';
import { ofKind, openFolder } from '../../src/folder/open.ts';
import { promptContext } from '../../src/folder/gpt.ts';
import { causalAttention } from '../../src/viz/gpt-attention.ts';
import { neuronView } from '../../src/viz/neuron.ts';
import { rotaryAngles, rotaryHeatmapSvg } from '../../src/viz/rotary.ts';

const ROOT = fileURLToPath(new URL('../fixtures/hf-llama/', import.meta.url));
const open = async (name: string) =>
  ofKind(await openFolder(dirSource(`${ROOT}${name}`), { ensemble: false }), 'hf-gpt2', 'gpt');

test("rotary angles: the model's own, t·θᵢ with θᵢ = base^(−2i/D); cos as its tables", async () => {
  const lm = await open('llama-gqa-tied');
  const c = lm.model.config;
  const r = rotaryAngles(c, 12);
  const D = c.headDim!;
  assert.equal(r.inverseFrequencies.length, D / 2);
  r.inverseFrequencies.forEach((th, i) => assert.ok(Math.abs(th - (c.rope?.base ?? 10000) ** (-(2 * i) / D)) < 1e-6));
  const { cos } = lm.model.rope!.tables(0, 12);
  const want = cos.dataSync<Float32Array>();
  r.angles.forEach((row, t) => row.forEach((a, i) => assert.equal(Math.fround(Math.cos(a)), want[t * (D / 2) + i])));
  const svg = rotaryHeatmapSvg(r, ['a', 'b']);
  assert.match(svg, /data-rows="12"/);
  assert.match(svg, />0 a</);
  // Llama 3's rescaled frequencies: the long wavelengths divided, as the model's.
  const l3 = await open('llama3-rope');
  assert.deepEqual(rotaryAngles(l3.model.config, 2).inverseFrequencies, Array.from(l3.model.rope!.inverseFrequencies));
  assert.throws(() => rotaryAngles({ ...c, positions: 'learned' }, 3), /not 'rotary'/);
});

test("the neuron view of a rotary, grouped-query decoder is the model's attention row, every layer and head", async () => {
  for (const name of ['llama-gqa-tied', 'qwen2-bias-untied', 'llama3-rope']) {
    const lm = await open(name);
    const ids = promptContext(lm, 'A man in a blue shirt rides');
    const attn = causalAttention(lm.model, ids);
    const { nLayer, nHead } = lm.model.config;
    for (let l = 0; l < nLayer; l++)
      for (let hd = 0; hd < nHead; hd++) {
        const q = ids.length - 1;
        const nv = neuronView(lm.model, ids, l, hd, q);
        nv.weights.forEach((w, j) =>
          assert.ok(Math.abs(w - attn[l][hd][q][j]) < 1e-5, `${name} layer ${l} head ${hd} key ${j}: ${w}`),
        );
      }
  }
});
